/*
 * fuzz/fuzz_http_request.c: libFuzzer target for what the gateway reads from a client: the
 * request head (gateway/http1.c) and the body scanner (gateway/reqbody.c), and for the response
 * head parser the proxy runs on model servers' answers.
 *
 * Properties checked (a violation aborts):
 *   - a parsed head lies inside the input, its views too, and parsing it again gives the same
 *     length (the parser is a function of the bytes);
 *   - every prefix of a complete head is "incomplete" (-EAGAIN), never an error or a success;
 *   - the body scanner's views lie inside the body; a failure always says why;
 *   - prefix hashing of the scanned prompt is bounded by its block count.
 */
#include "base/compat.h"

#include "base/error.h"
#include "gateway/http1.h"
#include "gateway/prefix.h"
#include "gateway/reqbody.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                              \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "fuzz_http_request: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

static bool inside(const char *base, size_t n, struct fatia_str s)
{
    return s.n == 0 || (s.p >= base && s.p + s.n <= base + n);
}

static void check_head(const char *p, size_t n, const struct fatia_http_head *h, int r)
{
    CHECK((size_t)r <= n && h->head_len == (size_t)r);
    CHECK(inside(p, n, h->method) && inside(p, n, h->target) && inside(p, n, h->reason));
    CHECK(h->n_headers <= FATIA_HTTP_MAX_HEADERS);
    for (size_t i = 0; i < h->n_headers; i++)
        CHECK(inside(p, n, h->headers[i].name) && h->headers[i].name.n > 0 &&
              inside(p, n, h->headers[i].value));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    struct fatia_http_head h, h2;
    struct fatia_reqbody rb;
    char why[128];
    int r;

    r = fatia_http_parse_request(p, size, &h);
    if (r > 0) {
        check_head(p, size, &h, r);
        CHECK(fatia_http_parse_request(p, (size_t)r, &h2) == r);
        for (size_t cut = 1; cut < 8 && cut <= (size_t)r; cut++) {
            int r2 = fatia_http_parse_request(p, (size_t)r - cut, &h2);
            /* leading empty lines may be skipped, so a cut can only make it incomplete */
            CHECK(r2 == -EAGAIN || r2 == -FATIA_E_PARSE);
        }
        /* the body after the head */
        why[0] = 0;
        if (fatia_reqbody_scan(p + r, size - (size_t)r, &rb, why, sizeof(why)) == 0) {
            uint64_t hashes[64];
            CHECK(inside(p + r, size - (size_t)r, rb.model));
            CHECK(inside(p + r, size - (size_t)r, rb.prompt));
            CHECK(inside(p + r, size - (size_t)r, rb.cache_salt));
            CHECK(fatia_prefix_hash(fatia_prefix_seed(rb.model, rb.cache_salt), rb.prompt.p,
                                    rb.prompt.n, 0, hashes, 64) <= rb.prompt.n / 64);
        } else {
            CHECK(why[0]);
        }
    } else {
        CHECK(r == -EAGAIN || r == -FATIA_E_PARSE || r == -FATIA_E_LIMIT ||
              r == -FATIA_E_UNSUPPORTED);
    }
    /* the whole input as a body, and as a response head */
    why[0] = 0;
    if (fatia_reqbody_scan(p, size, &rb, why, sizeof(why)) < 0)
        CHECK(why[0]);
    r = fatia_http_parse_response(p, size, false, &h);
    if (r > 0) {
        check_head(p, size, &h, r);
        CHECK(h.status >= 100 && h.status <= 999);
    }
    return 0;
}
