/*
 * fuzz/fuzz_wsframe.c: the exec stream's WebSocket framing (apiserver/stream_ws.h, libwslay) on
 * hostile bytes from a client: fed in pieces (the first byte picks the piece size), answered as
 * the exec session answers (an echo of each message on channel 1, a close at the end).
 * Invariants: no crash, no read past the input (ASan), a message never exceeds the limit, and
 * once the session failed it stays failed.
 */
#include "base/compat.h"

#include <event2/buffer.h>
#include <stdlib.h>

#include "apiserver/stream_ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct st {
    struct fatia_ws *ws;
    size_t msgs;
};

static void on_message(void *arg, bool binary, const uint8_t *p, size_t n)
{
    struct st *s = arg;

    (void)binary;
    if (n > 4096)
        abort();
    s->msgs++;
    (void)fatia_api_ws_send_channel(s->ws, 1, p, n);
}

static void on_close(void *arg)
{
    (void)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
    struct st s = {0};
    size_t piece;
    bool failed = false;

    if (!in || !out || size < 1 || size > 1 << 16)
        goto out;
    piece = (size_t)data[0] % 64 + 1;
    if (fatia_api_ws_new(&(struct fatia_ws_cbs){on_message, on_close}, &s, in, out, 4096, &s.ws) <
        0)
        goto out;
    for (size_t off = 1; off < size; off += piece) {
        size_t n = size - off < piece ? size - off : piece;
        int rc;
        evbuffer_add(in, data + off, n);
        rc = fatia_api_ws_read(s.ws);
        if (failed && rc == 0)
            abort();
        failed = rc < 0;
        evbuffer_drain(out, evbuffer_get_length(out));
    }
    (void)fatia_api_ws_close(s.ws, 1000);
    (void)fatia_api_ws_done(s.ws);
    fatia_api_ws_free(s.ws);
out:
    if (in)
        evbuffer_free(in);
    if (out)
        evbuffer_free(out);
    return 0;
}
