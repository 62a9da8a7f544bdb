/*
 * tests/unit/test_spdy.c: the SPDY/3.1 framing of the exec stream (apiserver/stream_spdy.h):
 * the dictionary is the SPDY/3 one (1,423 bytes, its SHA-256), a client's SYN_STREAM made with
 * zlib's own deflate and that dictionary is read with its streamtype, data and FIN reach the
 * stream, PING is echoed, our SYN_REPLY's header block inflates (with the dictionary) to zero
 * pairs, a frame of another version or an oversized control frame drops the connection; a
 * client that honours SPDY/3.1's windows gets them back as its data arrives (1.5 MiB, no stall).
 */
#include "base/compat.h"

#include <event2/buffer.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <zlib.h>

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include "apiserver/stream_spdy.h"

struct seen {
    uint32_t id[8];
    char type[8][32];
    size_t n;
    char data[256];
    size_t data_n;
    bool fin;
};

static void on_stream(void *arg, uint32_t id, const struct fatia_spdy_hdrs *hd, bool fin)
{
    struct seen *s = arg;
    (void)fin;
    if (s->n < 8) {
        s->id[s->n] = id;
        snprintf(s->type[s->n++], 32, "%s", hd->type);
    }
}

static void on_data(void *arg, uint32_t id, const uint8_t *p, size_t n, bool fin)
{
    struct seen *s = arg;
    (void)id;
    if (s->data_n + n < sizeof(s->data)) {
        memcpy(s->data + s->data_n, p, n);
        s->data_n += n;
    }
    s->fin |= fin;
}

static void on_reset(void *arg, uint32_t id)
{
    (void)arg;
    (void)id;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* a client's SYN_STREAM: stream id, one header pair, deflated with the dictionary on zs */
static size_t syn_stream(z_stream *zs, uint32_t id, const char *k, const char *v, uint8_t *f)
{
    uint8_t raw[128];
    size_t kl = strlen(k), vl = strlen(v), rn = 0, n;

    put32(raw, 1);
    put32(raw + 4, (uint32_t)kl);
    memcpy(raw + 8, k, kl);
    put32(raw + 8 + kl, (uint32_t)vl);
    memcpy(raw + 12 + kl, v, vl);
    rn = 12 + kl + vl;
    zs->next_in = raw;
    zs->avail_in = (uInt)rn;
    zs->next_out = f + 18;
    zs->avail_out = 256;
    assert_int_equal(deflate(zs, Z_SYNC_FLUSH), Z_OK);
    n = 256 - zs->avail_out;
    f[0] = 0x80;
    f[1] = 3;
    f[2] = 0;
    f[3] = 1;
    f[4] = 0;
    f[5] = 0;
    f[6] = (uint8_t)((10 + n) >> 8);
    f[7] = (uint8_t)(10 + n);
    put32(f + 8, id);
    put32(f + 12, 0);
    f[16] = f[17] = 0;
    return 18 + n;
}

static void test_dictionary(void **state)
{
    static const char want[] = "51d27341373f923f3cd88e1eb7162aeaa3723d7585ff2399201dc06498407f02";
    unsigned char md[SHA256_DIGEST_LENGTH];
    char hex[65];
    (void)state;

    assert_int_equal(fatia_api_spdy_dict_len, 1423);
    SHA256(fatia_api_spdy_dict, fatia_api_spdy_dict_len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    assert_string_equal(hex, want);
}

static void test_frames(void **state)
{
    struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
    struct fatia_spdy *sp;
    struct seen s = {0};
    z_stream zs = {0};
    uint8_t f[512];
    size_t n;
    (void)state;

    assert_int_equal(deflateInit(&zs, Z_DEFAULT_COMPRESSION), Z_OK);
    assert_int_equal(deflateSetDictionary(&zs, fatia_api_spdy_dict, (uInt)fatia_api_spdy_dict_len),
                     Z_OK);
    assert_int_equal(fatia_api_spdy_new(&(struct fatia_spdy_cbs){on_stream, on_data, on_reset}, &s,
                                        in, out, &sp),
                     0);
    n = syn_stream(&zs, 1, "streamtype", "error", f);
    evbuffer_add(in, f, n);
    n = syn_stream(&zs, 3, "streamtype", "stdin", f);
    /* a frame in two halves: nothing until it is whole */
    evbuffer_add(in, f, n / 2);
    assert_int_equal(fatia_api_spdy_read(sp), 0);
    assert_int_equal(s.n, 1);
    evbuffer_add(in, f + n / 2, n - n / 2);
    /* data with FIN, then a PING */
    memcpy(f, "\x00\x00\x00\x03\x01\x00\x00\x05hello", 13);
    memcpy(f + 13, "\x80\x03\x00\x06\x00\x00\x00\x04\x00\x00\x00\x07", 12);
    evbuffer_add(in, f, 25);
    assert_int_equal(fatia_api_spdy_read(sp), 0);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.type[0], "error");
    assert_string_equal(s.type[1], "stdin");
    assert_int_equal(s.id[1], 3);
    assert_int_equal(s.data_n, 5);
    assert_memory_equal(s.data, "hello", 5);
    assert_true(s.fin);
    /* the session's window given back (not the stream's: it ended), then the PING back */
    assert_int_equal(evbuffer_get_length(out), 16 + 12);
    assert_memory_equal(evbuffer_pullup(out, 16),
                        "\x80\x03\x00\x09\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00\x05", 16);
    evbuffer_drain(out, 16 + 12);

    /* our SYN_REPLY: its block inflates (with the dictionary) to zero pairs */
    assert_int_equal(fatia_api_spdy_reply(sp, 3), 0);
    {
        size_t len = evbuffer_get_length(out);
        uint8_t *r = evbuffer_pullup(out, -1), raw[16];
        z_stream zi = {0};
        int rc;
        assert_true(len > 12);
        assert_int_equal(r[3], 2);
        assert_int_equal(r[11], 3);
        assert_int_equal(inflateInit(&zi), Z_OK);
        zi.next_in = r + 12;
        zi.avail_in = (uInt)(len - 12);
        zi.next_out = raw;
        zi.avail_out = sizeof(raw);
        rc = inflate(&zi, Z_SYNC_FLUSH);
        if (rc == Z_NEED_DICT) {
            assert_int_equal(
                inflateSetDictionary(&zi, fatia_api_spdy_dict, (uInt)fatia_api_spdy_dict_len),
                Z_OK);
            rc = inflate(&zi, Z_SYNC_FLUSH);
        }
        assert_true(rc == Z_OK);
        assert_int_equal(sizeof(raw) - zi.avail_out, 4);
        assert_memory_equal(raw, "\0\0\0\0", 4);
        inflateEnd(&zi);
        evbuffer_drain(out, len);
    }
    /* a large DATA goes out in frames of 16 KiB */
    {
        static char big[40000];
        assert_int_equal(fatia_api_spdy_data(sp, 5, big, sizeof(big), true), 0);
        assert_int_equal(evbuffer_get_length(out), sizeof(big) + 3 * 8);
    }
    /* another version: the connection is dropped, and stays so */
    evbuffer_add(in, "\x80\x02\x00\x01\x00\x00\x00\x00", 8);
    assert_int_equal(fatia_api_spdy_read(sp), -EPROTO);
    assert_int_equal(fatia_api_spdy_reply(sp, 3), -EPROTO);
    fatia_api_spdy_free(sp);
    deflateEnd(&zs);

    /* a control frame of 16 MiB is refused at its header */
    assert_int_equal(fatia_api_spdy_new(&(struct fatia_spdy_cbs){on_stream, on_data, on_reset}, &s,
                                        in, out, &sp),
                     0);
    evbuffer_drain(in, evbuffer_get_length(in));
    evbuffer_add(in, "\x80\x03\x00\x01\x00\xff\xff\xff", 8);
    assert_int_equal(fatia_api_spdy_read(sp), -EPROTO);
    fatia_api_spdy_free(sp);
    evbuffer_free(in);
    evbuffer_free(out);
}

/* The WINDOW_UPDATE frames in out, drained: the deltas credited to stream id and to the
 * session (stream 0); any other frame fails the test. */
static void take_updates(struct evbuffer *out, uint32_t id, uint64_t *stream, uint64_t *session)
{
    while (evbuffer_get_length(out) >= 16) {
        uint8_t *f = evbuffer_pullup(out, 16);
        uint32_t sid = (uint32_t)f[8] << 24 | (uint32_t)f[9] << 16 | (uint32_t)f[10] << 8 | f[11];
        uint32_t d = (uint32_t)f[12] << 24 | (uint32_t)f[13] << 16 | (uint32_t)f[14] << 8 | f[15];
        assert_memory_equal(f, "\x80\x03\x00\x09\x00\x00\x00\x08", 8);
        if (sid == 0)
            *session += d;
        else {
            assert_int_equal(sid, id);
            *stream += d;
        }
        evbuffer_drain(out, 16);
    }
    assert_int_equal(evbuffer_get_length(out), 0);
}

/* SPDY/3.1 flow control from a client that honours its windows (64 KiB per stream and for the
 * session, as the draft starts them): it sends 16 KiB frames only while both windows allow and
 * takes our WINDOW_UPDATEs back; 1.5 MiB must get through without a stall. */
static void test_window(void **state)
{
    struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
    struct fatia_spdy *sp;
    struct seen s = {0};
    z_stream zs = {0};
    static uint8_t frame[8 + 16384];
    uint8_t f[512];
    int64_t win = 65536, swin = 65536;
    uint64_t sent = 0, got_stream = 0, got_session = 0;
    size_t n;
    (void)state;

    assert_int_equal(deflateInit(&zs, Z_DEFAULT_COMPRESSION), Z_OK);
    assert_int_equal(deflateSetDictionary(&zs, fatia_api_spdy_dict, (uInt)fatia_api_spdy_dict_len),
                     Z_OK);
    assert_int_equal(fatia_api_spdy_new(&(struct fatia_spdy_cbs){on_stream, on_data, on_reset}, &s,
                                        in, out, &sp),
                     0);
    n = syn_stream(&zs, 3, "streamtype", "stdin", f);
    evbuffer_add(in, f, n);
    assert_int_equal(fatia_api_spdy_read(sp), 0);
    put32(frame, 3);
    frame[4] = 0;
    frame[5] = 0;
    frame[6] = 0x40; /* 16,384 bytes */
    frame[7] = 0;
    while (sent < (3u << 19)) {
        int rounds = 0;
        while (win >= 16384 && swin >= 16384) {
            evbuffer_add(in, frame, sizeof(frame));
            win -= 16384;
            swin -= 16384;
            sent += 16384;
            assert_true(++rounds <= 4); /* the windows hold 64 KiB at most */
        }
        assert_true(rounds > 0); /* else the client stalls */
        assert_int_equal(fatia_api_spdy_read(sp), 0);
        {
            uint64_t a = got_stream, b = got_session;
            take_updates(out, 3, &got_stream, &got_session);
            win += (int64_t)(got_stream - a);
            swin += (int64_t)(got_session - b);
        }
    }
    assert_int_equal(got_stream, sent);
    assert_int_equal(got_session, sent);
    /* the last frame with FIN: the session's window only */
    frame[4] = 1;
    evbuffer_add(in, frame, sizeof(frame));
    assert_int_equal(fatia_api_spdy_read(sp), 0);
    take_updates(out, 3, &got_stream, &got_session);
    assert_int_equal(got_stream, sent);
    assert_int_equal(got_session, sent + 16384);
    fatia_api_spdy_free(sp);
    deflateEnd(&zs);
    evbuffer_free(in);
    evbuffer_free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary),
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
