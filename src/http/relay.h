/*
 * http/relay.h: a byte relay between two bufferevents (see relay.c): the Service proxy's
 * connections (controller/svcproxy.c) and the control plane's proxy to a node's endpoint
 * (apiserver/nodeproxy.c).
 */
#ifndef FATIA_HTTP_RELAY_H
#define FATIA_HTTP_RELAY_H

struct bufferevent;

/* Copies every byte that arrives on one side to the other until either ends, then flushes what
 * the other still has to receive and frees both. Takes a and b (their callbacks are the relay's
 * from now on; each may be connecting still: its output waits for the connection). 0, or
 * -ENOMEM (a and b freed). */
int fatia_http_relay_new(struct bufferevent *a, struct bufferevent *b);

#endif
