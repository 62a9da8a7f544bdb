/*
 * gateway/netaddr.h: socket addresses and endpoint URLs.
 *
 * "HOST:PORT", "[IPv6]:PORT" and ":PORT" (every address, for listening) become a sockaddr;
 * "http://HOST:PORT[/PREFIX]" becomes an endpoint URL. Host names are resolved with getaddrinfo,
 * which blocks: call these at start-up or from a thread, never on a loop serving traffic (pods of
 * an InferencePool come as IP literals and need no resolver).
 */
#ifndef FATIA_GATEWAY_NETADDR_H
#define FATIA_GATEWAY_NETADDR_H

#include "base/compat.h"

#include <sys/socket.h>

/* passive: an empty host means every address (listening). 0, -EINVAL, -ENOENT (no such host). */
int fatia_netaddr_parse(const char *s, bool passive, struct sockaddr_storage *ret,
                        socklen_t *ret_len);

struct fatia_url {
    char host[256];     /* as written (no brackets) */
    int port;           /* 80 when absent */
    char hostport[280]; /* "host:port" ("[v6]:port"): the x-gateway-destination-endpoint value */
    char prefix[256];   /* path prefix without the trailing '/', "" for none */
    struct sockaddr_storage addr;
    socklen_t addr_len;
};

/* Parses and resolves "http://host:port[/prefix]" (the scheme may be omitted). 0, -EINVAL (with
 * why), -ENOENT (unresolvable host). https is refused: model servers are reached in the clear
 * inside the cluster. */
int fatia_url_parse(const char *s, struct fatia_url *ret, char *why, size_t why_n);

/* The URL a server listening on `listen` ("HOST:PORT", "[v6]:PORT", ":PORT") is reached at, with
 * the port actually bound: "http://HOST:port"; an empty host prints as 0.0.0.0. */
void fatia_gateway_listen_url(const char *listen, int port, char *out, size_t n);

#endif
