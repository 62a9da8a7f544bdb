/*
 * fuzz/fuzz_http1.c: libFuzzer target for the one HTTP/1.1 module (http/http1.c) and what the
 * gateway reads after it. The corpus carries both earlier ones: the API server's head and
 * chunked seeds (api-*) and the gateway's request seeds.
 *
 * Properties checked (a violation aborts):
 *   - a parsed head lies inside the input, its views too, and parsing it again gives the same
 *     length (the parser is a function of the bytes);
 *   - every prefix of a complete head is "incomplete" (-EAGAIN), never an error or a success;
 *   - the chunked decoder consumes no more than it is given, and fed whole or byte by byte it
 *     gives the same verdict, the same consumed count and the same payload; a complete body
 *     never holds a bare LF in its framing (every LF the decoder consumed outside the payload
 *     follows a CR);
 *   - the body scanner's views lie inside the body; a failure always says why;
 *   - prefix hashing of the scanned prompt is bounded by its block count.
 */
#include "base/compat.h"

#include "base/buf.h"
#include "base/error.h"
#include "gateway/prefix.h"
#include "gateway/reqbody.h"
#include "http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "fuzz_http1: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                      \
        }                                                                                 \
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

static void collect(void *ud, const char *p, size_t n)
{
    fatia_buf_append(ud, p, n);
}

/* Marks the payload bytes' positions so that the framing can be checked for bare LFs. */
struct span_ud {
    const char *base;
    uint8_t *is_payload;
    struct fatia_buf *out;
};

static void mark(void *ud, const char *p, size_t n)
{
    struct span_ud *s = ud;

    memset(s->is_payload + (p - s->base), 1, n);
    fatia_buf_append(s->out, p, n);
}

static void check_chunked(const char *p, size_t size)
{
    struct fatia_http_chunked c1, c2;
    struct fatia_buf b1 = FATIA_BUF_INIT, b2 = FATIA_BUF_INIT;
    uint8_t *is_payload = calloc(1, size + 1);
    struct span_ud su = {p, is_payload, &b1};
    ssize_t r1, r2 = 0;
    size_t used2 = 0;

    CHECK(is_payload);
    fatia_http_chunked_init(&c1);
    fatia_http_chunked_init(&c2);
    r1 = fatia_http_chunked_feed(&c1, p, size, mark, &su);
    CHECK(r1 < 0 || (size_t)r1 <= size);
    for (size_t i = 0; i < size && !fatia_http_chunked_done(&c2); i++) {
        r2 = fatia_http_chunked_feed(&c2, p + i, 1, collect, &b2);
        if (r2 < 0)
            break;
        used2 += (size_t)r2;
    }
    CHECK((r1 < 0) == (r2 < 0));
    CHECK(fatia_http_chunked_done(&c1) == fatia_http_chunked_done(&c2));
    if (r1 >= 0) {
        CHECK((size_t)r1 == used2);
        CHECK(b1.len == b2.len && (b1.len == 0 || !memcmp(b1.p, b2.p, b1.len)));
    }
    if (fatia_http_chunked_done(&c1))
        for (size_t i = 0; i < (size_t)r1; i++)
            if (!is_payload[i] && p[i] == '\n')
                CHECK(i > 0 && p[i - 1] == '\r' && !is_payload[i - 1]);
    free(is_payload);
    fatia_buf_release(&b1);
    fatia_buf_release(&b2);
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
    check_chunked(p, size);
    if (r > 0)
        check_chunked(p + r, size - (size_t)r);
    r = fatia_http_parse_response(p, size, false, &h);
    if (r > 0) {
        check_head(p, size, &h, r);
        CHECK(h.status >= 100 && h.status <= 999);
    }
    return 0;
}
