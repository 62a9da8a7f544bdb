/*
 * http/relay.c: a byte relay between two bufferevents (relay.h), factored out of the Service
 * proxy (controller/svcproxy.c) for the node proxy (apiserver/nodeproxy.c).
 *
 * Model: each side's input is moved (not copied) to the other's output. The end of one side
 * (EOF) stops reading it; once the other side's output is flushed both are freed (no half-close:
 * the two users' protocols end with a close of the whole connection). An error on either side
 * frees both at once.
 *
 * Invariant: at most RELAY_HIGH bytes wait in one side's output: above it the other side is not
 * read until the output drained below half of it (a client that reads nothing pauses the
 * upstream instead of costing memory without end).
 */
#include "base/compat.h"

#include "http/relay.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "base/alloc.h"
#include "base/error.h"

#define RELAY_HIGH (1u << 20)

struct relay {
    struct bufferevent *side[2];
    bool eof[2];
};

static void relay_free(struct relay *c)
{
    for (int i = 0; i < 2; i++)
        if (c->side[i])
            bufferevent_free(c->side[i]);
    fatia_free(c);
}

static int side_of(const struct relay *c, const struct bufferevent *bev)
{
    return c->side[0] == bev ? 0 : 1;
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct relay *c = arg;
    int s = side_of(c, bev);
    struct evbuffer *out = bufferevent_get_output(c->side[!s]);

    evbuffer_add_buffer(out, bufferevent_get_input(bev));
    if (!c->eof[s] && evbuffer_get_length(out) > RELAY_HIGH)
        bufferevent_disable(bev, EV_READ);
}

static void on_write(struct bufferevent *bev, void *arg)
{
    struct relay *c = arg;
    int s = side_of(c, bev);

    /* bev's output drained to its low watermark: read the other side again, or finish */
    if (c->eof[0] || c->eof[1]) {
        if (!evbuffer_get_length(bufferevent_get_output(c->side[0])) &&
            !evbuffer_get_length(bufferevent_get_output(c->side[1])))
            relay_free(c);
        return;
    }
    bufferevent_enable(c->side[!s], EV_READ);
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct relay *c = arg;
    int s = side_of(c, bev);

    if (what & BEV_EVENT_CONNECTED)
        return;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        c->eof[s] = true;
        on_read(bev, c); /* what it sent last */
        if (what & BEV_EVENT_ERROR || c->eof[!s] ||
            evbuffer_get_length(bufferevent_get_output(c->side[!s])) == 0) {
            relay_free(c);
            return;
        }
        /* flush what the other side still has to receive, then close both */
        bufferevent_disable(bev, EV_READ);
        bufferevent_setwatermark(c->side[!s], EV_WRITE, 0, 0);
    }
}

int fatia_http_relay_new(struct bufferevent *a, struct bufferevent *b)
{
    struct relay *c = fatia_calloc(1, sizeof(*c));

    if (!c) {
        bufferevent_free(a);
        bufferevent_free(b);
        return -ENOMEM;
    }
    c->side[0] = a;
    c->side[1] = b;
    for (int i = 0; i < 2; i++) {
        bufferevent_setcb(c->side[i], on_read, on_write, on_event, c);
        bufferevent_setwatermark(c->side[i], EV_WRITE, RELAY_HIGH / 2, 0);
        bufferevent_enable(c->side[i], EV_READ | EV_WRITE);
    }
    /* input that came before the relay (after an HTTP head) */
    for (int i = 0; i < 2; i++)
        if (evbuffer_get_length(bufferevent_get_input(c->side[i])))
            on_read(c->side[i], c);
    return 0;
}
