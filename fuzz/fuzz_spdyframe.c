/*
 * fuzz/fuzz_spdyframe.c: the exec stream's SPDY/3.1 framing (apiserver/stream_spdy.h) on hostile
 * bytes from a client, fed in pieces (the first byte picks the piece size), answered as the exec
 * session answers (a SYN_REPLY to each new stream, an echo of its data). Invariants: no crash,
 * no read past the input (ASan), bounded memory (the header-block and frame limits), and once
 * the session failed it stays failed.
 */
#include "base/compat.h"

#include <event2/buffer.h>
#include <stdlib.h>

#include "apiserver/stream_spdy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fatia_spdy *cur;

static void on_stream(void *arg, uint32_t id, const struct fatia_spdy_hdrs *hd, bool fin)
{
    (void)arg;
    (void)hd;
    (void)fin;
    (void)fatia_api_spdy_reply(cur, id);
}

static void on_data(void *arg, uint32_t id, const uint8_t *p, size_t n, bool fin)
{
    (void)arg;
    (void)fatia_api_spdy_data(cur, id, p, n, fin);
}

static void on_reset(void *arg, uint32_t id)
{
    (void)arg;
    (void)id;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
    size_t piece;
    bool failed = false;

    if (!in || !out || size < 1 || size > 1 << 16)
        goto out;
    piece = (size_t)data[0] % 64 + 1;
    if (fatia_api_spdy_new(&(struct fatia_spdy_cbs){on_stream, on_data, on_reset}, NULL, in, out,
                           &cur) < 0)
        goto out;
    for (size_t off = 1; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        int rc;
        evbuffer_add(in, data + off, n);
        rc = fatia_api_spdy_read(cur);
        if (failed && rc == 0)
            abort();
        failed = rc < 0;
        evbuffer_drain(out, evbuffer_get_length(out));
    }
    fatia_api_spdy_free(cur);
    cur = NULL;
out:
    if (in)
        evbuffer_free(in);
    if (out)
        evbuffer_free(out);
    return 0;
}
