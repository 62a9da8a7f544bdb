/*
 * apiserver/stream_ws.c: a server-side WebSocket over evbuffers, framed by libwslay.
 *
 * Model: the connection (plain or TLS bufferevent) belongs to the stream code (stream_exec.c);
 * this file only turns the bytes of its input buffer into messages and messages into frames in
 * its output buffer, so it has no socket and no clock, and the fuzz target drives it with
 * arbitrary bytes (fuzz/fuzz_wsframe.c). wslay does the framing (masking, fragmentation,
 * control frames, the close handshake, UTF-8 of close reasons); its recv callback reads from
 * the input buffer and says WOULDBLOCK when it is empty, its send callback appends to the
 * output buffer (which never blocks: the caller bounds the buffer by pausing its producers).
 *
 * Rejected: a hand-written framer (the issue asks for a maintained library, and wslay is in
 * Debian, small, callback-driven and does no I/O of its own); libwebsockets (it wants to own
 * the event loop and the sockets, which fatiad's HTTP server already owns).
 */
#include "base/compat.h"

#include "apiserver/stream_ws.h"

#include <event2/buffer.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <string.h>
#include <strings.h>
#include <wslay/wslay.h>

#include "base/alloc.h"
#include "base/error.h"

struct fatia_ws {
    wslay_event_context_ptr ctx;
    struct fatia_ws_cbs cb;
    void *arg;
    struct evbuffer *in, *out;
    bool failed;
};

static ssize_t recv_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
    struct fatia_ws *w = ud;
    int n;

    (void)flags;
    n = evbuffer_remove(w->in, buf, len);
    if (n <= 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
        return -1;
    }
    return n;
}

static ssize_t send_cb(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *ud)
{
    struct fatia_ws *w = ud;

    (void)flags;
    if (evbuffer_add(w->out, data, len) < 0) {
        wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
        return -1;
    }
    return (ssize_t)len;
}

static int genmask_cb(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
    (void)ctx;
    (void)ud;
    memset(buf, 0, len); /* a server does not mask */
    return 0;
}

static void msg_cb(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *a,
                   void *ud)
{
    struct fatia_ws *w = ud;

    (void)ctx;
    if (a->opcode == WSLAY_BINARY_FRAME || a->opcode == WSLAY_TEXT_FRAME) {
        if (w->cb.on_message)
            w->cb.on_message(w->arg, a->opcode == WSLAY_BINARY_FRAME, a->msg, a->msg_length);
    } else if (a->opcode == WSLAY_CONNECTION_CLOSE) {
        if (w->cb.on_close)
            w->cb.on_close(w->arg);
    }
}

int fatia_api_ws_new(const struct fatia_ws_cbs *cb, void *arg, struct evbuffer *in,
                     struct evbuffer *out, size_t max_msg, struct fatia_ws **ret)
{
    static const struct wslay_event_callbacks cbs = {
        .recv_callback = recv_cb,
        .send_callback = send_cb,
        .genmask_callback = genmask_cb,
        .on_msg_recv_callback = msg_cb,
    };
    struct fatia_ws *w = fatia_calloc(1, sizeof(*w));

    if (!w)
        return -ENOMEM;
    w->cb = *cb;
    w->arg = arg;
    w->in = in;
    w->out = out;
    if (wslay_event_context_server_init(&w->ctx, &cbs, w) != 0) {
        fatia_free(w);
        return -ENOMEM;
    }
    wslay_event_config_set_max_recv_msg_length(w->ctx, max_msg);
    *ret = w;
    return 0;
}

void fatia_api_ws_free(struct fatia_ws *w)
{
    if (!w)
        return;
    wslay_event_context_free(w->ctx);
    fatia_free(w);
}

static int flush(struct fatia_ws *w)
{
    if (wslay_event_want_write(w->ctx) && wslay_event_send(w->ctx) != 0) {
        w->failed = true;
        return -EPROTO;
    }
    return 0;
}

int fatia_api_ws_read(struct fatia_ws *w)
{
    if (w->failed)
        return -EPROTO;
    while (evbuffer_get_length(w->in) && wslay_event_want_read(w->ctx)) {
        if (wslay_event_recv(w->ctx) != 0) {
            w->failed = true;
            return -EPROTO;
        }
    }
    return flush(w); /* pongs and the answer to a close */
}

int fatia_api_ws_send_channel(struct fatia_ws *w, uint8_t channel, const void *p, size_t n)
{
    struct wslay_event_msg m;
    uint8_t *buf;
    int rc;

    if (w->failed || wslay_event_get_close_sent(w->ctx))
        return -EPIPE;
    buf = fatia_malloc(n + 1);
    if (!buf)
        return -ENOMEM;
    buf[0] = channel;
    if (n)
        memcpy(buf + 1, p, n);
    m = (struct wslay_event_msg){WSLAY_BINARY_FRAME, buf, n + 1};
    rc = wslay_event_queue_msg(w->ctx, &m); /* copies the message */
    fatia_free(buf);
    if (rc != 0) {
        w->failed = true;
        return -EPROTO;
    }
    return flush(w);
}

int fatia_api_ws_send(struct fatia_ws *w, const void *p, size_t n)
{
    struct wslay_event_msg m = {WSLAY_BINARY_FRAME, p, n};

    if (w->failed || wslay_event_get_close_sent(w->ctx))
        return -EPIPE;
    if (wslay_event_queue_msg(w->ctx, &m) != 0) {
        w->failed = true;
        return -EPROTO;
    }
    return flush(w);
}

int fatia_api_ws_close(struct fatia_ws *w, uint16_t code)
{
    if (w->failed)
        return -EPROTO;
    if (!wslay_event_get_close_sent(w->ctx) &&
        wslay_event_queue_close(w->ctx, code, NULL, 0) != 0) {
        w->failed = true;
        return -EPROTO;
    }
    return flush(w);
}

bool fatia_api_ws_done(const struct fatia_ws *w)
{
    return w->failed || (!wslay_event_want_read(w->ctx) && !wslay_event_want_write(w->ctx));
}

int fatia_api_ws_accept(const char *key, size_t n, char out[29])
{
    static const char guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
    unsigned char raw[32], md[SHA_DIGEST_LENGTH];
    char buf[64 + sizeof(guid)];

    /* a key is 16 random bytes in base64: 24 characters */
    if (n != 24 || EVP_DecodeBlock(raw, (const unsigned char *)key, 24) != 18)
        return -EINVAL;
    memcpy(buf, key, n);
    memcpy(buf + n, guid, sizeof(guid) - 1);
    SHA1((const unsigned char *)buf, n + sizeof(guid) - 1, md);
    EVP_EncodeBlock((unsigned char *)out, md, SHA_DIGEST_LENGTH);
    return 0;
}

const char *fatia_api_ws_pick(const char *offered, size_t n, const char *const *supported)
{
    for (const char *const *s = supported; *s; s++) {
        size_t sl = strlen(*s);
        const char *p = offered, *end = offered + n;
        while (p < end) {
            const char *comma = memchr(p, ',', (size_t)(end - p)), *e = comma ? comma : end;
            while (p < e && (*p == ' ' || *p == '\t'))
                p++;
            while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            if ((size_t)(e - p) == sl && !strncasecmp(p, *s, sl))
                return *s;
            p = comma ? comma + 1 : end;
        }
    }
    return NULL;
}
