/*
 * fuzz/fuzz_sse_relay.c: libFuzzer target for what the gateway reads from a model server while
 * relaying a streamed answer: the chunked decoder (gateway/http1.c) and the SSE scanner
 * (gateway/sse.c), which both see the stream split wherever reads happened to return.
 *
 * The first byte chooses a split step; the rest is a chunked body. Properties (a violation
 * aborts):
 *   - decoding the input whole and in pieces of the chosen step agree on the bytes consumed,
 *     on the decoded payload and on whether the message ended;
 *   - scanning the payload whole and in pieces agrees on the event count, on [DONE], and on the
 *     data of every event;
 *   - no event's data exceeds FATIA_SSE_MAX_EVENT.
 */
#include "base/compat.h"

#include "base/buf.h"
#include "gateway/sse.h"
#include "http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                           \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz_sse_relay: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

static void collect(void *ud, const char *p, size_t n)
{
    fatia_buf_append(ud, p, n);
}

static void events(void *ud, const char *d, size_t n, bool trunc)
{
    struct fatia_buf *b = ud;
    CHECK(n <= FATIA_SSE_MAX_EVENT);
    fatia_buf_printf(b, "%zu%c:", n, trunc ? 't' : '-');
    fatia_buf_append(b, d, n);
}

/* Decodes in pieces of step; returns consumed bytes or -1 on error. */
static ssize_t decode(const char *p, size_t n, size_t step, struct fatia_buf *out, bool *done)
{
    struct fatia_http_chunked c;
    size_t off = 0;

    fatia_http_chunked_init(&c);
    while (off < n && !fatia_http_chunked_done(&c)) {
        size_t len = n - off < step ? n - off : step;
        ssize_t r = fatia_http_chunked_feed(&c, p + off, len, collect, out);
        if (r < 0)
            return -1;
        CHECK((size_t)r <= len);
        off += (size_t)r;
        if ((size_t)r < len)
            break;
    }
    *done = fatia_http_chunked_done(&c);
    return (ssize_t)off;
}

static void scan(const char *p, size_t n, size_t step, struct fatia_buf *ev, uint64_t *count,
                 bool *done)
{
    struct fatia_sse s, s0;

    fatia_sse_init(&s, events, ev);
    fatia_sse_init(&s0, NULL, NULL);
    for (size_t off = 0; off < n; off += step) {
        size_t len = n - off < step ? n - off : step;
        CHECK(fatia_sse_feed(&s, p + off, len) == 0);
        CHECK(fatia_sse_feed(&s0, p + off, len) == 0);
    }
    CHECK(s.events == s0.events && s.done == s0.done);
    *count = s.events;
    *done = s.done;
    fatia_sse_release(&s);
    fatia_sse_release(&s0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_buf a = FATIA_BUF_INIT, b = FATIA_BUF_INIT, ea = FATIA_BUF_INIT,
                     eb = FATIA_BUF_INIT;
    const char *p = (const char *)data + 1;
    size_t n, step;
    bool da, db;
    ssize_t ra, rb;
    uint64_t ca, cb;

    if (size < 1)
        return 0;
    step = (size_t)data[0] % 17 + 1;
    n = size - 1;
    ra = decode(p, n, SIZE_MAX, &a, &da);
    rb = decode(p, n, step, &b, &db);
    CHECK(ra == rb);
    if (ra >= 0) {
        CHECK(da == db && a.len == b.len && memcmp(a.p, b.p, a.len) == 0);
        scan(a.p, a.len, a.len ? a.len : 1, &ea, &ca, &da);
        scan(a.p, a.len, step, &eb, &cb, &db);
        CHECK(ca == cb && da == db);
        CHECK(ea.len == eb.len && memcmp(ea.p, eb.p, ea.len) == 0);
    }
    /* the raw input as an SSE stream too */
    fatia_buf_reset(&ea);
    fatia_buf_reset(&eb);
    scan(p, n, n ? n : 1, &ea, &ca, &da);
    scan(p, n, step, &eb, &cb, &db);
    CHECK(ca == cb && da == db && ea.len == eb.len && memcmp(ea.p, eb.p, ea.len) == 0);
    fatia_buf_release(&a);
    fatia_buf_release(&b);
    fatia_buf_release(&ea);
    fatia_buf_release(&eb);
    return 0;
}
