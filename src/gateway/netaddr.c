/*
 * gateway/netaddr.c: address and URL parsing (see netaddr.h).
 */
#include "base/compat.h"

#include "gateway/netaddr.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <netdb.h>

#include "base/error.h"
#include "base/str.h"

int fatia_netaddr_parse(const char *s, bool passive, struct sockaddr_storage *ret,
                        socklen_t *ret_len)
{
    char host[256];
    const char *colon, *port;
    struct addrinfo hints = {0}, *res = NULL;
    int pn;

    if (!s)
        return -EINVAL;
    if (s[0] == '[') {
        const char *rb = strchr(s, ']');
        if (!rb || rb[1] != ':' || (size_t)(rb - s - 1) >= sizeof(host))
            return -EINVAL;
        memcpy(host, s + 1, (size_t)(rb - s - 1));
        host[rb - s - 1] = 0;
        port = rb + 2;
    } else {
        colon = strrchr(s, ':');
        if (!colon || (size_t)(colon - s) >= sizeof(host))
            return -EINVAL;
        memcpy(host, s, (size_t)(colon - s));
        host[colon - s] = 0;
        port = colon + 1;
    }
    if (fatia_parse_int(port, 0, 65535, &pn) < 0)
        return -EINVAL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    if (getaddrinfo(host[0] ? host : NULL, port, &hints, &res) != 0 || !res)
        return -ENOENT;
    memcpy(ret, res->ai_addr, res->ai_addrlen);
    *ret_len = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

int fatia_url_parse(const char *s, struct fatia_url *ret, char *why, size_t why_n)
{
    struct fatia_url u = {0};
    const char *p = s, *slash, *hp_end;
    char hp[256];
    int r;

    if (!strncmp(p, "https://", 8)) {
        snprintf(why, why_n, "'%s': https endpoints are not supported", s);
        return -EINVAL;
    }
    if (!strncmp(p, "http://", 7))
        p += 7;
    slash = strchr(p, '/');
    hp_end = slash ? slash : p + strlen(p);
    if (hp_end == p || (size_t)(hp_end - p) >= sizeof(hp)) {
        snprintf(why, why_n, "'%s': expected http://HOST:PORT", s);
        return -EINVAL;
    }
    memcpy(hp, p, (size_t)(hp_end - p));
    hp[hp_end - p] = 0;
    if (slash) {
        size_t n = strlen(slash);
        while (n > 0 && slash[n - 1] == '/')
            n--;
        if (n >= sizeof(u.prefix)) {
            snprintf(why, why_n, "'%s': path prefix too long", s);
            return -EINVAL;
        }
        memcpy(u.prefix, slash, n);
        u.prefix[n] = 0;
    }
    if (hp[0] == '[') {
        char *rb = strchr(hp, ']');
        if (!rb) {
            snprintf(why, why_n, "'%s': unterminated IPv6 address", s);
            return -EINVAL;
        }
        *rb = 0;
        snprintf(u.host, sizeof(u.host), "%s", hp + 1);
        u.port = 80;
        if (rb[1] == ':' && fatia_parse_int(rb + 2, 1, 65535, &u.port) < 0) {
            snprintf(why, why_n, "'%s': invalid port", s);
            return -EINVAL;
        }
        snprintf(u.hostport, sizeof(u.hostport), "[%s]:%d", u.host, u.port);
    } else {
        char *colon = strrchr(hp, ':');
        u.port = 80;
        if (colon) {
            *colon = 0;
            if (fatia_parse_int(colon + 1, 1, 65535, &u.port) < 0) {
                snprintf(why, why_n, "'%s': invalid port", s);
                return -EINVAL;
            }
        }
        snprintf(u.host, sizeof(u.host), "%s", hp);
        snprintf(u.hostport, sizeof(u.hostport), "%s:%d", u.host, u.port);
    }
    {
        char a[300];
        snprintf(a, sizeof(a), "%s%s%s:%d", strchr(u.host, ':') ? "[" : "", u.host,
                 strchr(u.host, ':') ? "]" : "", u.port);
        r = fatia_netaddr_parse(a, false, &u.addr, &u.addr_len);
    }
    if (r < 0) {
        snprintf(why, why_n, "'%s': cannot resolve host '%s'", s, u.host);
        return r;
    }
    *ret = u;
    return 0;
}

void fatia_gateway_listen_url(const char *listen, int port, char *out, size_t n)
{
    const char *colon = strrchr(listen, ':');
    size_t hn = colon ? (size_t)(colon - listen) : strlen(listen);

    if (hn == 0)
        snprintf(out, n, "http://0.0.0.0:%d", port);
    else
        snprintf(out, n, "http://%.*s:%d", (int)hn, listen, port);
}
