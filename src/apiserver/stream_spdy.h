/*
 * apiserver/stream_spdy.h: the server side of a SPDY/3.1 connection as Kubernetes streams use
 * it (moby/spdystream under k8s.io/apimachinery httpstream/spdy), over two evbuffers
 * (stream_spdy.c).
 */
#ifndef FATIA_APISERVER_STREAM_SPDY_H
#define FATIA_APISERVER_STREAM_SPDY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;
struct fatia_spdy;

extern const unsigned char fatia_api_spdy_dict[];
extern const size_t fatia_api_spdy_dict_len;

struct fatia_spdy_hdrs {
    char type[32];       /* streamtype: error, stdin, stdout, stderr, resize, data */
    char port[16];       /* port-forward */
    char request_id[32]; /* port-forward: pairs a connection's error and data streams */
};

struct fatia_spdy_cbs {
    /* a new stream from the client; hd: its headers that Kubernetes streams use ("" where
     * absent); fin: the client sends nothing on it */
    void (*on_stream)(void *arg, uint32_t id, const struct fatia_spdy_hdrs *hd, bool fin);
    /* data on a stream; fin: the client's half is closed */
    void (*on_data)(void *arg, uint32_t id, const uint8_t *p, size_t n, bool fin);
    /* the client reset a stream, or went away (id 0: GOAWAY) */
    void (*on_reset)(void *arg, uint32_t id);
};

int fatia_api_spdy_new(const struct fatia_spdy_cbs *cb, void *arg, struct evbuffer *in,
                       struct evbuffer *out, struct fatia_spdy **ret);
void fatia_api_spdy_free(struct fatia_spdy *s);
/* Parses what in holds (frames are taken whole: a partial one waits). 0, or -EPROTO/-ENOMEM:
 * drop the connection. */
int fatia_api_spdy_read(struct fatia_spdy *s);
/* SYN_REPLY (no headers) to stream id. */
int fatia_api_spdy_reply(struct fatia_spdy *s, uint32_t id);
/* A DATA frame (n may be 0 with fin). */
int fatia_api_spdy_data(struct fatia_spdy *s, uint32_t id, const void *p, size_t n, bool fin);

#endif
