/*
 * apiserver/stream_ws.h: a server-side WebSocket (RFC 6455) over two evbuffers, framed by
 * Debian's libwslay, and the handshake's pieces (stream_ws.c).
 */
#ifndef FATIA_APISERVER_STREAM_WS_H
#define FATIA_APISERVER_STREAM_WS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct fatia_ws;

struct fatia_ws_cbs {
    /* a whole binary (or text) message */
    void (*on_message)(void *arg, bool binary, const uint8_t *p, size_t n);
    /* the peer sent a close frame (wslay answers it) */
    void (*on_close)(void *arg);
};

/* A session reading frames from in and writing frames to out (the connection's buffers).
 * Messages are limited to max_msg bytes (a longer one closes the connection with 1009). */
int fatia_api_ws_new(const struct fatia_ws_cbs *cb, void *arg, struct evbuffer *in,
                     struct evbuffer *out, size_t max_msg, struct fatia_ws **ret);
void fatia_api_ws_free(struct fatia_ws *w);
/* Parses what in holds. 0, or -EPROTO / -ENOMEM: the connection must be dropped. */
int fatia_api_ws_read(struct fatia_ws *w);
/* One binary message of a channel byte and n bytes (n may be 0), framed into out. */
int fatia_api_ws_send_channel(struct fatia_ws *w, uint8_t channel, const void *p, size_t n);
/* One binary message of n bytes, as they are (the port-forward tunnel's SPDY bytes). */
int fatia_api_ws_send(struct fatia_ws *w, const void *p, size_t n);
/* A close frame with that status code (1000: normal). */
int fatia_api_ws_close(struct fatia_ws *w, uint16_t code);
/* Both sides closed, or an error: nothing more will be read or written. */
bool fatia_api_ws_done(const struct fatia_ws *w);

/* Sec-WebSocket-Accept of a Sec-WebSocket-Key: base64(SHA-1(key + the RFC's GUID)), 28
 * characters and a NUL into out. -EINVAL for a key that is not 16 bytes in base64. */
int fatia_api_ws_accept(const char *key, size_t n, char out[29]);

/* The first of supported (in its order of preference) that the comma-separated offered list
 * names, or NULL. */
const char *fatia_api_ws_pick(const char *offered, size_t n, const char *const *supported);

#endif
