/*
 * fuzz/fuzz_http.c: the HTTP/1.1 request-head parser and the chunked-body decoder
 * (apiserver/http.h). Invariants: no crash; a parsed head's views lie inside the input; the
 * decoder consumes no more than it is given, fed whole or byte by byte, and both ways agree.
 */
#include "base/compat.h"

#include "apiserver/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool inside(struct fatia_str s, const char *p, size_t n)
{
    return s.n == 0 || (s.p >= p && s.p + s.n <= p + n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct fatia_api_http_head h;
    struct fatia_api_http_chunked c1 = {0}, c2 = {0};
    struct fatia_buf b1, b2;
    size_t used = 0, total = 0;
    int r1, r2 = 0;

    int n = fatia_api_http_parse_head(p, size, &h);
    if (n > 0) {
        if ((size_t)n > size || !inside(h.method, p, size) || !inside(h.target, p, size))
            abort();
        for (size_t i = 0; i < h.n_headers; i++)
            if (!inside(h.headers[i].name, p, size) || !inside(h.headers[i].value, p, size))
                abort();
    }
    fatia_buf_init(&b1, 1 << 20);
    fatia_buf_init(&b2, 1 << 20);
    r1 = fatia_api_http_chunked_feed(&c1, p, size, &used, &b1);
    if (used > size)
        abort();
    for (size_t i = 0; i < size && r2 == 0; i++) {
        size_t u = 0;
        r2 = fatia_api_http_chunked_feed(&c2, p + i, 1, &u, &b2);
        total += u;
    }
    if (r1 == 1 && (r2 != 1 || b1.len != b2.len || memcmp(b1.p, b2.p, b1.len)))
        abort();
    (void)total;
    fatia_buf_release(&b1);
    fatia_buf_release(&b2);
    return 0;
}
