/*
 * apiserver/stream_spdy.c: SPDY/3.1 framing, the server side, for kubectl's SPDY streams
 * (exec in kubectl 1.27 to 1.29, and 1.30+ when the WebSocket upgrade fails).
 *
 * Model: like stream_ws.c, bytes in an input evbuffer become callbacks and calls become frames
 * in an output evbuffer: no socket, no clock, fuzzed (fuzz/fuzz_spdyframe.c). Debian has no
 * SPDY library (SPDY was withdrawn for HTTP/2; libspdylay is gone from Debian), so the framing
 * is written here, after the SPDY/3 draft's frame layout; header blocks are zlib streams preset
 * with the SPDY/3 dictionary (spdy_dict.c), one inflater for everything the client sends and
 * one deflater for what we send, as the draft requires.
 *
 * Frames: control frames `1 | version 3 | type | flags | length(24)`; data frames `0 | stream
 * id(31) | flags | length(24)`. Handled: SYN_STREAM (a new stream: its headers are inflated and
 * its streamtype, port and requestid reported), DATA, RST_STREAM, PING (echoed), GOAWAY;
 * SETTINGS, HEADERS and WINDOW_UPDATE are read and ignored. Sent: SYN_REPLY, DATA, PING,
 * WINDOW_UPDATE.
 * Flow control (SPDY/3.1): the client's windows, per stream and for the session, are given back
 * as its data arrives: every DATA frame of n > 0 bytes is answered with WINDOW_UPDATE(stream,
 * n) (not once the client ended the stream: FIN) and WINDOW_UPDATE(0, n), so a client that
 * honours the 64 KiB windows never stalls; the exec and port-forward sessions pace a client that
 * sends faster than the process reads by their own buffers (stream_exec.c). Our sending side
 * does not wait for the client's window (kubectl's moby/spdystream grants none it enforces; the
 * tests move 2 MB of exec output and 1 MiB of port-forward data each way). Rejected: updates
 * only as the process consumes the input (the session would need a per-stream credit the
 * callbacks return; the buffers bound memory already).
 *
 * Invariants: a frame is parsed only once it is whole; a control frame is at most 1 MiB and an
 * inflated header block at most 64 KiB with at most 100 pairs (else the connection is dropped),
 * so a hostile client bounds what it costs; after an error every call fails.
 */
#include "base/compat.h"

#include "apiserver/stream_spdy.h"

#include <event2/buffer.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"

#define SPDY_VERSION     3
#define SPDY_MAX_CONTROL (1u << 20)
#define SPDY_MAX_HEADERS (64u << 10)
#define SPDY_MAX_PAIRS   100
#define FLAG_FIN         0x01

enum {
    SYN_STREAM = 1,
    SYN_REPLY = 2,
    RST_STREAM = 3,
    SETTINGS = 4,
    PING = 6,
    GOAWAY = 7,
    HEADERS = 8,
    WINDOW_UPDATE = 9,
};

struct fatia_spdy {
    struct fatia_spdy_cbs cb;
    void *arg;
    struct evbuffer *in, *out;
    z_stream inf, def;
    bool inf_ok, def_ok, failed;
};

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

int fatia_api_spdy_new(const struct fatia_spdy_cbs *cb, void *arg, struct evbuffer *in,
                       struct evbuffer *out, struct fatia_spdy **ret)
{
    struct fatia_spdy *s = fatia_calloc(1, sizeof(*s));

    if (!s)
        return -ENOMEM;
    s->cb = *cb;
    s->arg = arg;
    s->in = in;
    s->out = out;
    if (inflateInit(&s->inf) != Z_OK)
        goto fail;
    s->inf_ok = true;
    if (deflateInit(&s->def, Z_DEFAULT_COMPRESSION) != Z_OK ||
        deflateSetDictionary(&s->def, fatia_api_spdy_dict, (uInt)fatia_api_spdy_dict_len) != Z_OK)
        goto fail;
    s->def_ok = true;
    *ret = s;
    return 0;
fail:
    fatia_api_spdy_free(s);
    return -ENOMEM;
}

void fatia_api_spdy_free(struct fatia_spdy *s)
{
    if (!s)
        return;
    if (s->inf_ok)
        inflateEnd(&s->inf);
    if (s->def_ok)
        deflateEnd(&s->def);
    fatia_free(s);
}

/* Inflates one header block (the connection's one zlib stream) into out. */
static int inflate_block(struct fatia_spdy *s, const uint8_t *p, size_t n, struct fatia_buf *out)
{
    unsigned char chunk[4096];

    s->inf.next_in = (Bytef *)p;
    s->inf.avail_in = (uInt)n;
    while (s->inf.avail_in) {
        int rc;
        s->inf.next_out = chunk;
        s->inf.avail_out = sizeof(chunk);
        rc = inflate(&s->inf, Z_SYNC_FLUSH);
        if (rc == Z_NEED_DICT) {
            if (inflateSetDictionary(&s->inf, fatia_api_spdy_dict, (uInt)fatia_api_spdy_dict_len) !=
                Z_OK)
                return -EPROTO;
            continue;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return -EPROTO;
        if (fatia_buf_append(out, chunk, sizeof(chunk) - s->inf.avail_out) < 0)
            return -EPROTO; /* past the limit */
        if (rc == Z_BUF_ERROR && s->inf.avail_out)
            break;
    }
    return 0;
}

/* The value of header name in an inflated block, or "" (value bytes into val). */
static int header_value(const uint8_t *b, size_t n, const char *name, char *val, size_t val_n)
{
    size_t off = 4, pairs;

    val[0] = '\0';
    if (n < 4)
        return -EPROTO;
    pairs = be32(b);
    if (pairs > SPDY_MAX_PAIRS)
        return -EPROTO;
    for (size_t i = 0; i < pairs; i++) {
        uint32_t nl, vl;
        const uint8_t *nm, *vv;
        if (n - off < 4 || (nl = be32(b + off)) > n - off - 4)
            return -EPROTO;
        nm = b + off + 4;
        off += 4 + nl;
        if (n - off < 4 || (vl = be32(b + off)) > n - off - 4)
            return -EPROTO;
        vv = b + off + 4;
        off += 4 + vl;
        if (nl == strlen(name) && !strncasecmp((const char *)nm, name, nl) && vl < val_n) {
            memcpy(val, vv, vl);
            val[vl] = '\0';
        }
    }
    return 0;
}

static int control_frame(struct fatia_spdy *s, unsigned type, unsigned flags, const uint8_t *p,
                         size_t n)
{
    switch (type) {
    case SYN_STREAM: {
        struct fatia_buf hb;
        struct fatia_spdy_hdrs hd;
        uint32_t id;
        int rc;
        if (n < 10)
            return -EPROTO;
        id = be32(p) & 0x7fffffff;
        if (!id)
            return -EPROTO;
        fatia_buf_init(&hb, SPDY_MAX_HEADERS);
        rc = inflate_block(s, p + 10, n - 10, &hb);
        if (!rc)
            rc =
                header_value((const uint8_t *)hb.p, hb.len, "streamtype", hd.type, sizeof(hd.type));
        if (!rc)
            rc = header_value((const uint8_t *)hb.p, hb.len, "port", hd.port, sizeof(hd.port));
        if (!rc)
            rc = header_value((const uint8_t *)hb.p, hb.len, "requestid", hd.request_id,
                              sizeof(hd.request_id));
        fatia_buf_release(&hb);
        if (rc < 0)
            return rc;
        if (s->cb.on_stream)
            s->cb.on_stream(s->arg, id, &hd, flags & FLAG_FIN);
        return 0;
    }
    case RST_STREAM:
        if (n < 8)
            return -EPROTO;
        if (s->cb.on_reset)
            s->cb.on_reset(s->arg, be32(p) & 0x7fffffff);
        return 0;
    case PING: {
        uint8_t f[12] = {0x80, SPDY_VERSION, 0, PING, 0, 0, 0, 4};
        if (n != 4)
            return -EPROTO;
        memcpy(f + 8, p, 4);
        return evbuffer_add(s->out, f, sizeof(f)) < 0 ? -ENOMEM : 0;
    }
    case GOAWAY:
        if (s->cb.on_reset)
            s->cb.on_reset(s->arg, 0);
        return 0;
    case SYN_REPLY:
    case HEADERS: {
        /* their header blocks still advance the shared zlib stream */
        struct fatia_buf hb;
        int rc;
        if (n < 4)
            return -EPROTO;
        fatia_buf_init(&hb, SPDY_MAX_HEADERS);
        rc = inflate_block(s, p + 4, n - 4, &hb);
        fatia_buf_release(&hb);
        return rc;
    }
    default: /* SETTINGS, WINDOW_UPDATE, and unknown types are ignored, as the draft says */
        return 0;
    }
}

/* WINDOW_UPDATE: delta more bytes the client may send on stream id (0: the session). */
static int window_update(struct fatia_spdy *s, uint32_t id, uint32_t delta)
{
    uint8_t f[16] = {0x80, SPDY_VERSION, 0, WINDOW_UPDATE, 0, 0, 0, 8};

    put32(f + 8, id & 0x7fffffff);
    put32(f + 12, delta & 0x7fffffff);
    return evbuffer_add(s->out, f, sizeof(f)) < 0 ? -ENOMEM : 0;
}

int fatia_api_spdy_read(struct fatia_spdy *s)
{
    while (!s->failed) {
        uint8_t h[8], *payload;
        size_t len, have = evbuffer_get_length(s->in);
        int rc;

        if (have < 8)
            return 0;
        evbuffer_copyout(s->in, h, 8);
        len = (size_t)h[5] << 16 | (size_t)h[6] << 8 | h[7];
        if ((h[0] & 0x80) && len > SPDY_MAX_CONTROL)
            goto fail;
        if (have < 8 + len)
            return 0;
        payload = evbuffer_pullup(s->in, (ssize_t)(8 + len));
        if (!payload)
            goto fail;
        payload += 8;
        if (h[0] & 0x80) {
            unsigned version = ((unsigned)(h[0] & 0x7f) << 8) | h[1];
            if (version != SPDY_VERSION)
                goto fail;
            rc = control_frame(s, (unsigned)h[2] << 8 | h[3], h[4], payload, len);
        } else {
            uint32_t id = be32(h) & 0x7fffffff;
            rc = 0;
            if (len && ((!(h[4] & FLAG_FIN) && window_update(s, id, (uint32_t)len) < 0) ||
                        window_update(s, 0, (uint32_t)len) < 0))
                rc = -ENOMEM;
            if (s->cb.on_data)
                s->cb.on_data(s->arg, id, payload, len, h[4] & FLAG_FIN);
        }
        evbuffer_drain(s->in, 8 + len);
        if (rc < 0)
            goto fail;
    }
    return -EPROTO;
fail:
    s->failed = true;
    return -EPROTO;
}

int fatia_api_spdy_reply(struct fatia_spdy *s, uint32_t id)
{
    uint8_t f[8 + 4 + 64], empty[4] = {0, 0, 0, 0};
    size_t n;

    if (s->failed)
        return -EPROTO;
    s->def.next_in = empty;
    s->def.avail_in = sizeof(empty);
    s->def.next_out = f + 12;
    s->def.avail_out = sizeof(f) - 12;
    if (deflate(&s->def, Z_SYNC_FLUSH) != Z_OK || s->def.avail_in) {
        s->failed = true;
        return -EPROTO;
    }
    n = sizeof(f) - 12 - s->def.avail_out;
    f[0] = 0x80;
    f[1] = SPDY_VERSION;
    f[2] = 0;
    f[3] = SYN_REPLY;
    f[4] = 0;
    f[5] = (uint8_t)((4 + n) >> 16);
    f[6] = (uint8_t)((4 + n) >> 8);
    f[7] = (uint8_t)(4 + n);
    put32(f + 8, id & 0x7fffffff);
    return evbuffer_add(s->out, f, 12 + n) < 0 ? -ENOMEM : 0;
}

int fatia_api_spdy_data(struct fatia_spdy *s, uint32_t id, const void *p, size_t n, bool fin)
{
    const uint8_t *b = p;

    if (s->failed)
        return -EPROTO;
    do { /* frames of at most 16 KiB */
        size_t k = n > 16384 ? 16384 : n;
        uint8_t h[8];
        put32(h, id & 0x7fffffff);
        h[4] = fin && k == n ? FLAG_FIN : 0;
        h[5] = (uint8_t)(k >> 16);
        h[6] = (uint8_t)(k >> 8);
        h[7] = (uint8_t)k;
        if (evbuffer_add(s->out, h, 8) < 0 || (k && evbuffer_add(s->out, b, k) < 0))
            return -ENOMEM;
        b += k;
        n -= k;
    } while (n);
    return 0;
}
