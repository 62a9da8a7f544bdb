/*
 * apiserver/nbproxy.c: the workbench proxy (nbproxy.h): a browser reaches a Notebook's Jupyter
 * through fatiad, on an origin of its own, with a per-notebook session cookie.
 *
 * Why an origin of its own: a tenant controls what its Jupyter serves (it is the tenant's code),
 * so a page of the notebook origin is hostile to whoever opens it. On the API's origin that page
 * could read the dashboard's token from its storage and call the API as the admin who opened it.
 * On its own port it is another origin: it sees neither the dashboard's storage nor its
 * requests. The session cookie is HttpOnly (no script reads it), SameSite=Strict, Secure, scoped
 * by Path to one notebook, and is a random id that only this proxy maps to a token: the token
 * never travels to the notebook origin's pages nor to Jupyter, and the proxy strips the cookie
 * and any Authorization header before forwarding, so even a Jupyter replaced by the tenant's own
 * server never sees them. A session is checked on every request against the tokens file
 * (a revoked token ends its sessions) and the token's right to write in the namespace.
 *
 * Upstream, where the daemon's callback says (fatia_nbproxy_upstream_fn):
 *   - a workbench in a container: its pod's own address on its namespace's bridge, port 8888
 *     (agent/nbaddr.c: the address the shim's CNI result gave, never the Pod's status); the
 *     connect is asynchronous, and a refusal before any byte came back is answered 502;
 *   - in the process mode: a unix socket in the workbench's home (agent/nbhome.c), never a TCP
 *     port, so no other pod can connect to it; the home is 0700 and the namespace's uid's. The
 *     proxy runs as root and would follow a symlink the tenant put there, so after connecting
 *     it checks the peer's uid (SO_PEERCRED) against the namespace's uid: a socket of another
 *     namespace, reached through a planted link, is refused.
 *
 * Model of a connection (client side parsed, upstream side piped):
 *
 *     HEAD ──request for /notebook/<ns>/<name>/, session ok──► forward head ──► BODY (bytes of
 *      ▲                                                        Content-Length) ──┐
 *      └───────────────────────────────────────────────────────────────────────────┘
 *     HEAD ──Upgrade (WebSocket)──► forward head ──► TUNNEL (bytes both ways, no parsing)
 *     login, errors: answered here, then the connection closes
 *
 * At most MAX_CONNS client connections; an idle one (no byte for 5 min) is closed, except an
 * upgraded one (a kernel's WebSocket is quiet while nothing runs).
 *
 * One upstream connection per client connection, bound to the first request's notebook (a
 * request for another notebook on it is refused): responses come back from one Jupyter in the
 * order of the requests, so they are piped without parsing. Every request head is parsed and
 * its session checked. Chunked request bodies are refused (501): browsers and Jupyter's client
 * send Content-Length. Each direction stops reading while the other side has more than
 * HIGH_WATER bytes unsent.
 *
 * Sessions live in memory: a restart of fatiad asks users to log in again. Rejected: the token as
 * the cookie (a Jupyter replaced by the tenant would get it if a header were missed), a bearer
 * token in the URL (logged, and kept in the history).
 */
#include "base/compat.h"

#include "apiserver/nbproxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <fcntl.h>
#include <openssl/ssl.h>
#include <strings.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"
#include "base/map.h"
#include "http/http1.h"
#include "model/kinds/kinds.h"

#define COOKIE       "fatia-nb"
#define HIGH_WATER   (1u << 20)
#define MAX_LOGIN    8192
#define DEFAULT_TTL  (12 * 3600 * FATIA_USEC_PER_SEC)
#define LOGIN_PREFIX "/_fatia/login/"
#define NB_PREFIX    "/notebook/"
#define MAX_CONNS    4096

struct session {
    char id[FATIA_TOKEN_LEN + 1]; /* the map's key */
    char token[256];
    char ns[64], name[64];
    fatia_usec_t expires;
};

enum pstate {
    P_HEAD,
    P_BODY,
    P_TUNNEL,
    P_CLOSING /* flushing a local answer or the upstream's last bytes, then closed */
};

struct pconn {
    struct fatia_nbproxy *p;
    struct bufferevent *bev, *up;
    enum pstate st;
    int64_t body_left;
    bool upgrade;       /* the request being forwarded asked for an Upgrade */
    bool up_connecting; /* a TCP upstream (a container's address) not connected yet */
    char ns[64], name[64];
    struct pconn *prev, *next;
};

struct fatia_nbproxy {
    struct event_base *base;
    struct fatia_apiserver *api;
    struct fatia_client *client;
    struct fatia_nbproxy_opts o;
    const struct fatia_kind *nb_kind;
    struct evconnlistener *listener;
    struct fatia_strmap sessions; /* id -> struct session */
    struct pconn *conns;
    size_t n_conns;
};

static bool name_is(struct fatia_str s, const char *z)
{
    size_t n = strlen(z);

    return s.n == n && strncasecmp(s.p, z, n) == 0;
}

/* ---- connections ---- */

static void pconn_free(struct pconn *c)
{
    struct fatia_nbproxy *p = c->p;

    if (c->prev)
        c->prev->next = c->next;
    else if (p->conns == c)
        p->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    p->n_conns--;
    if (c->bev)
        bufferevent_free(c->bev);
    if (c->up)
        bufferevent_free(c->up);
    fatia_free(c);
}

/* Closes once what is queued for the client is sent. */
static void pconn_close_after_flush(struct pconn *c)
{
    c->st = P_CLOSING;
    if (c->up) {
        bufferevent_free(c->up);
        c->up = NULL;
    }
    bufferevent_disable(c->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
        pconn_free(c);
}

static void reply(struct pconn *c, int status, const char *extra_headers, const char *ctype,
                  const char *body)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);

    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                        "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n"
                        "Connection: close\r\n%s\r\n%s",
                        status, fatia_http_reason(status), ctype, strlen(body),
                        extra_headers ? extra_headers : "", body);
    pconn_close_after_flush(c);
}

static void reply_text(struct pconn *c, int status, const char *msg)
{
    char body[700];

    snprintf(body, sizeof(body), "%s\n", msg);
    reply(c, status, NULL, "text/plain; charset=utf-8", body);
}

/* ---- paths, cookies, sessions ---- */

static bool dns_label(const char *s, size_t n)
{
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
            return false;
    return true;
}

/* "<prefix><ns>/<name>[/rest]" of target: ns and name copied out; *ret_slash whether a "/"
 * follows the name. false when target is not of that shape. */
static bool split_target(struct fatia_str t, const char *prefix, char ns[64], char name[64],
                         bool *ret_slash)
{
    size_t pl = strlen(prefix), i, j;

    if (t.n < pl || memcmp(t.p, prefix, pl))
        return false;
    for (i = pl; i < t.n && t.p[i] != '/' && t.p[i] != '?'; i++)
        ;
    if (i >= t.n || t.p[i] != '/' || !dns_label(t.p + pl, i - pl))
        return false;
    memcpy(ns, t.p + pl, i - pl);
    ns[i - pl] = '\0';
    for (j = i + 1; j < t.n && t.p[j] != '/' && t.p[j] != '?'; j++)
        ;
    if (!dns_label(t.p + i + 1, j - i - 1))
        return false;
    memcpy(name, t.p + i + 1, j - i - 1);
    name[j - i - 1] = '\0';
    *ret_slash = j < t.n && t.p[j] == '/';
    return true;
}

static bool user_may_use(struct fatia_nbproxy *p, const struct fatia_user *u, const char *ns)
{
    /* a workbench runs code in the namespace: who may not update its Notebooks (a read-only
     * token: view) may not open one */
    return u && fatia_api_may_resource(p->api, u, "update", &fatia_kind_notebook, NULL, ns, NULL);
}

/* The session named by one of the request's fatia-nb cookies that is valid for ns/name. */
static const struct session *find_session(struct fatia_nbproxy *p, const struct fatia_http_head *h,
                                          const char *ns, const char *name)
{
    fatia_usec_t now = fatia_now_real_usec();

    for (size_t i = 0; i < h->n_headers; i++) {
        struct fatia_str v = h->headers[i].value;
        size_t k = 0;
        if (!name_is(h->headers[i].name, "cookie"))
            continue;
        while (k < v.n) {
            size_t e = k;
            char id[128];
            struct session *s;
            while (e < v.n && v.p[e] != ';')
                e++;
            while (k < e && v.p[k] == ' ')
                k++;
            if (e - k > strlen(COOKIE) + 1 && e - k - strlen(COOKIE) - 1 < sizeof(id) &&
                !memcmp(v.p + k, COOKIE "=", strlen(COOKIE) + 1)) {
                size_t n = e - k - strlen(COOKIE) - 1;
                memcpy(id, v.p + k + strlen(COOKIE) + 1, n);
                id[n] = '\0';
                s = fatia_strmap_get(&p->sessions, id);
                if (s && s->expires <= now) {
                    fatia_strmap_del(&p->sessions, id);
                    fatia_free(s);
                    s = NULL;
                }
                if (s && !strcmp(s->ns, ns) && !strcmp(s->name, name) &&
                    user_may_use(p, fatia_auth_lookup(p->api->auth, s->token), ns))
                    return s;
            }
            k = e + 1;
        }
    }
    return NULL;
}

/* The Cookie header's value without the fatia-nb pairs, into out (empty when nothing is left). */
static void strip_cookie(struct fatia_str v, struct evbuffer *out)
{
    size_t k = 0;
    bool first = true;

    while (k < v.n) {
        size_t e = k;
        while (e < v.n && v.p[e] != ';')
            e++;
        while (k < e && v.p[k] == ' ')
            k++;
        if (e > k &&
            !(e - k >= strlen(COOKIE) + 1 && !memcmp(v.p + k, COOKIE "=", strlen(COOKIE) + 1))) {
            if (!first)
                evbuffer_add(out, "; ", 2);
            evbuffer_add(out, v.p + k, e - k);
            first = false;
        }
        k = e + 1;
    }
}

/* ---- login ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The form field "token" of an application/x-www-form-urlencoded body, decoded into out. */
static bool form_token(const char *body, size_t n, char *out, size_t out_n)
{
    size_t k = 0;

    while (k < n) {
        size_t e = k, o = 0;
        while (e < n && body[e] != '&')
            e++;
        if (e - k > 6 && !memcmp(body + k, "token=", 6)) {
            for (size_t i = k + 6; i < e && o + 1 < out_n; i++) {
                if (body[i] == '+') {
                    out[o++] = ' ';
                } else if (body[i] == '%' && i + 2 < e && hexval(body[i + 1]) >= 0 &&
                           hexval(body[i + 2]) >= 0) {
                    out[o++] = (char)(hexval(body[i + 1]) * 16 + hexval(body[i + 2]));
                    i += 2;
                } else {
                    out[o++] = body[i];
                }
            }
            out[o] = '\0';
            return o > 0;
        }
        k = e + 1;
    }
    return false;
}

static void login_form(struct pconn *c, const char *ns, const char *name)
{
    char body[1500];

    snprintf(body, sizeof(body),
             "<!doctype html><meta charset=utf-8><title>Open workbench %s/%s</title>"
             "<form method=post><label>Token for workbench %s/%s: "
             "<input name=token type=password autocomplete=off autofocus></label> "
             "<button>Open</button></form>\n",
             ns, name, ns, name);
    reply(c, 200,
          "Content-Security-Policy: default-src 'none'; form-action 'self'\r\n"
          "X-Frame-Options: DENY\r\n",
          "text/html; charset=utf-8", body);
}

static void login(struct pconn *c, const struct fatia_http_head *h, const char *body, size_t n,
                  const char *ns, const char *name)
{
    struct fatia_nbproxy *p = c->p;
    const struct fatia_str *auth = fatia_http_header_get(h, "authorization");
    char token[256] = "", id[FATIA_TOKEN_LEN + 1], hdr[700];
    const struct fatia_user *u;
    struct session *s;

    if (auth && auth->n > 7 && !strncasecmp(auth->p, "Bearer ", 7) && auth->n - 7 < sizeof(token)) {
        memcpy(token, auth->p + 7, auth->n - 7);
        token[auth->n - 7] = '\0';
    } else if (!form_token(body, n, token, sizeof(token))) {
        reply_text(c, 400, "a token is needed: the form field token, or Authorization: Bearer");
        return;
    }
    u = fatia_auth_lookup(p->api->auth, token);
    if (!u) {
        reply_text(c, 401, "Unauthorized: the token is unknown, expired or revoked");
        return;
    }
    if (!user_may_use(p, u, ns)) {
        char msg[300];
        snprintf(msg, sizeof(msg),
                 "Forbidden: user \"%s\" may not open workbenches in namespace \"%s\"", u->name,
                 ns);
        reply_text(c, 403, msg);
        return;
    }
    if (!fatia_client_cached(p->client, p->nb_kind, ns, name)) {
        reply_text(c, 404, "no such workbench (notebooks.kubeflow.org)");
        return;
    }
    s = fatia_calloc(1, sizeof(*s));
    if (!s || fatia_token_generate(id) < 0 ||
        (memcpy(s->id, id, sizeof(id)), fatia_strmap_put(&p->sessions, s->id, s) < 0)) {
        fatia_free(s);
        reply_text(c, 500, "out of memory");
        return;
    }
    snprintf(s->token, sizeof(s->token), "%s", token);
    snprintf(s->ns, sizeof(s->ns), "%s", ns);
    snprintf(s->name, sizeof(s->name), "%s", name);
    s->expires = fatia_now_real_usec() + p->o.session_ttl;
    snprintf(hdr, sizeof(hdr),
             "Location: " NB_PREFIX "%s/%s/\r\nSet-Cookie: " COOKIE "=%s; Path=" NB_PREFIX
             "%s/%s/; HttpOnly; SameSite=Strict; Max-Age=%lld%s\r\n",
             ns, name, id, ns, name, (long long)(p->o.session_ttl / FATIA_USEC_PER_SEC),
             p->o.tls_ctx ? "; Secure" : "");
    fatia_info("nbproxy: user %s opened workbench %s/%s", u->name, ns, name);
    reply(c, 303, hdr, "text/plain; charset=utf-8", "");
}

/* ---- upstream ---- */

static void up_read_cb(struct bufferevent *bev, void *arg);
static void up_write_cb(struct bufferevent *bev, void *arg);
static void up_event_cb(struct bufferevent *bev, short what, void *arg);

static int connect_upstream(struct pconn *c, char *why, size_t why_n)
{
    struct fatia_nbproxy *p = c->p;
    struct sockaddr_storage sa = {0};
    socklen_t sl = 0;
    struct ucred cred;
    socklen_t cl = sizeof(cred);
    uid_t want;
    int fd, r, one = 1;

    r = p->o.upstream(p->o.arg, c->ns, c->name, &sa, &sl, &want);
    if (r < 0) {
        snprintf(why, why_n, "the workbench has no home here (%s)", fatia_strerror(r));
        return r;
    }
    if (sa.ss_family != AF_UNIX) {
        /* the pod's own address (a container): connected on the loop, a refusal answered 502 */
        c->up = bufferevent_socket_new(p->base, -1, BEV_OPT_CLOSE_ON_FREE);
        if (!c->up)
            return -ENOMEM;
        bufferevent_setcb(c->up, up_read_cb, up_write_cb, up_event_cb, c);
        bufferevent_setwatermark(c->up, EV_WRITE, HIGH_WATER / 4, 0);
        c->up_connecting = true;
        if (bufferevent_socket_connect(c->up, (struct sockaddr *)&sa, (int)sl) < 0) {
            bufferevent_free(c->up);
            c->up = NULL;
            snprintf(why, why_n, "the workbench's Jupyter is not listening");
            return -ECONNREFUSED;
        }
        (void)setsockopt(bufferevent_getfd(c->up), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        bufferevent_enable(c->up, EV_READ | EV_WRITE);
        return 0;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    /* a local socket connects at once or not at all: no need to wait on the loop */
    if (connect(fd, (struct sockaddr *)&sa, sl) < 0) {
        r = -errno;
        snprintf(why, why_n, "the workbench's Jupyter is not listening (%s)", fatia_strerror(r));
        close(fd);
        return r;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != want) {
        snprintf(why, why_n, "the workbench's socket is not served by its namespace's uid");
        fatia_warn("nbproxy: %s/%s: socket served by uid %u, not %u: refused", c->ns, c->name,
                   (unsigned)cred.uid, (unsigned)want);
        close(fd);
        return -EPERM;
    }
    evutil_make_socket_nonblocking(fd);
    c->up = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!c->up) {
        close(fd);
        return -ENOMEM;
    }
    bufferevent_setcb(c->up, up_read_cb, up_write_cb, up_event_cb, c);
    bufferevent_setwatermark(c->up, EV_WRITE, HIGH_WATER / 4, 0);
    bufferevent_enable(c->up, EV_READ | EV_WRITE);
    return 0;
}

/* Moves what src has read to dst, and stops src while dst is full. */
static void pipe_to(struct bufferevent *src, struct bufferevent *dst, size_t max)
{
    struct evbuffer *in = bufferevent_get_input(src), *out = bufferevent_get_output(dst);
    size_t n = evbuffer_get_length(in);

    if (n > max)
        n = max;
    if (n == evbuffer_get_length(in))
        evbuffer_add_buffer(out, in);
    else
        evbuffer_remove_buffer(in, out, n);
    if (evbuffer_get_length(out) > HIGH_WATER)
        bufferevent_disable(src, EV_READ);
}

static void up_read_cb(struct bufferevent *bev, void *arg)
{
    struct pconn *c = arg;

    pipe_to(bev, c->bev, SIZE_MAX);
}

static void up_write_cb(struct bufferevent *bev, void *arg)
{
    struct pconn *c = arg;

    (void)bev;
    if (c->st != P_CLOSING)
        bufferevent_enable(c->bev, EV_READ);
}

static void up_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct pconn *c = arg;

    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        c->up_connecting = false;
        return;
    }
    if (c->up_connecting && (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))) {
        /* nothing came back yet: the client gets an answer, not a closed connection */
        fatia_warn("nbproxy: %s/%s: cannot connect to the workbench's Jupyter: %s", c->ns, c->name,
                   fatia_strerror(-EVUTIL_SOCKET_ERROR()));
        reply_text(c, 502, "the workbench's Jupyter is not listening");
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        /* what Jupyter sent last still goes out, then the client's connection closes */
        pipe_to(c->up, c->bev, SIZE_MAX);
        pconn_close_after_flush(c);
    }
}

/* ---- client side ---- */

static int forward_head(struct pconn *c, const char *buf, const struct fatia_http_head *h)
{
    struct evbuffer *out = bufferevent_get_output(c->up);

    evbuffer_add(out, buf, h->first_line_len);
    for (size_t i = 0; i < h->n_headers; i++) {
        struct fatia_str n = h->headers[i].name, v = h->headers[i].value;
        if (name_is(n, "authorization") || name_is(n, "proxy-authorization"))
            continue;
        if (name_is(n, "cookie")) {
            struct evbuffer *cv = evbuffer_new();
            if (!cv)
                return -ENOMEM;
            strip_cookie(v, cv);
            if (evbuffer_get_length(cv)) {
                evbuffer_add_printf(out, "Cookie: ");
                evbuffer_add_buffer(out, cv);
                evbuffer_add(out, "\r\n", 2);
            }
            evbuffer_free(cv);
            continue;
        }
        evbuffer_add(out, n.p, n.n);
        evbuffer_add(out, ": ", 2);
        evbuffer_add(out, v.p, v.n);
        evbuffer_add(out, "\r\n", 2);
    }
    evbuffer_add_printf(out, "X-Forwarded-Proto: %s\r\n\r\n", c->p->o.tls_ctx ? "https" : "http");
    return 0;
}

/* One request head at the start of the input. false: wait for more bytes (or the connection was
 * answered and is closing). */
static bool handle_head(struct pconn *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    size_t len = evbuffer_get_length(in),
           avail = len < FATIA_HTTP_MAX_HEAD ? len : FATIA_HTTP_MAX_HEAD;
    const char *buf = (const char *)evbuffer_pullup(in, (ssize_t)avail);
    struct fatia_http_head h;
    char ns[64], name[64], why[300];
    const char *ewhy;
    bool slash;
    int r;

    r = fatia_http_parse_request(buf, avail, &h);
    if (r == -EAGAIN) {
        if (len >= FATIA_HTTP_MAX_HEAD)
            reply_text(c, 431, "request head too large");
        return false;
    }
    if (r < 0) {
        int st = fatia_http_request_error_status(r, &ewhy);
        reply_text(c, st, ewhy);
        return false;
    }
    if (h.target.n >= strlen(LOGIN_PREFIX) &&
        !memcmp(h.target.p, LOGIN_PREFIX, strlen(LOGIN_PREFIX))) {
        /* /_fatia/login/<ns>/<name>: the name ends the path */
        struct fatia_str t = h.target;
        char tb[300];
        if (t.n + 1 >= sizeof(tb)) {
            reply_text(c, 404, "not found");
            return false;
        }
        memcpy(tb, t.p, t.n);
        tb[t.n] = '/';
        t.p = tb;
        t.n++;
        if (!split_target(t, LOGIN_PREFIX, ns, name, &slash)) {
            reply_text(c, 404, "not found: /_fatia/login/<namespace>/<notebook>");
            return false;
        }
        if (fatia_str_eqz(h.method, "GET")) {
            login_form(c, ns, name);
            return false;
        }
        if (!fatia_str_eqz(h.method, "POST")) {
            reply_text(c, 405, "GET or POST");
            return false;
        }
        if (h.flags & FATIA_HTTP_CHUNKED || h.content_length > MAX_LOGIN) {
            reply_text(c, 413, "the login form is small");
            return false;
        }
        if (h.content_length > 0 && len < h.head_len + (size_t)h.content_length)
            return false; /* the body is not here yet */
        buf = (const char *)evbuffer_pullup(
            in, (ssize_t)(h.head_len + (size_t)(h.content_length > 0 ? h.content_length : 0)));
        login(c, &h, buf + h.head_len, h.content_length > 0 ? (size_t)h.content_length : 0, ns,
              name);
        return false;
    }
    if (!split_target(h.target, NB_PREFIX, ns, name, &slash)) {
        reply_text(c, 404, "not found: workbenches are under /notebook/<namespace>/<notebook>/");
        return false;
    }
    if (!find_session(c->p, &h, ns, name)) {
        char hdr[400];
        snprintf(hdr, sizeof(hdr), "Location: " LOGIN_PREFIX "%s/%s\r\n", ns, name);
        if (fatia_str_eqz(h.method, "GET") && !fatia_http_header_get(&h, "upgrade"))
            reply(c, 303, hdr, "text/plain; charset=utf-8", "");
        else
            reply_text(c, 401,
                       "Unauthorized: open the workbench from the dashboard (a session "
                       "of this notebook is needed)");
        return false;
    }
    if (c->up && (strcmp(c->ns, ns) || strcmp(c->name, name))) {
        reply_text(c, 421, "one connection serves one workbench");
        return false;
    }
    if (h.flags & FATIA_HTTP_CHUNKED) {
        reply_text(c, 501, "chunked request bodies are not forwarded: send Content-Length");
        return false;
    }
    if (!c->up) {
        snprintf(c->ns, sizeof(c->ns), "%s", ns);
        snprintf(c->name, sizeof(c->name), "%s", name);
        if ((r = connect_upstream(c, why, sizeof(why))) < 0) {
            reply_text(c, 502, why);
            return false;
        }
    }
    if (forward_head(c, buf, &h) < 0) {
        reply_text(c, 500, "out of memory");
        return false;
    }
    c->upgrade = fatia_http_header_get(&h, "upgrade") != NULL;
    evbuffer_drain(in, h.head_len);
    c->body_left = h.content_length > 0 ? h.content_length : 0;
    c->st = c->body_left ? P_BODY : (c->upgrade ? P_TUNNEL : P_HEAD);
    if (c->upgrade) {
        /* a kernel's WebSocket may be quiet for hours: no idle timeout once upgraded */
        bufferevent_set_timeouts(c->bev, NULL, NULL);
    }
    return true;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct pconn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    while (evbuffer_get_length(in)) {
        switch (c->st) {
        case P_CLOSING:
            evbuffer_drain(in, evbuffer_get_length(in));
            return;
        case P_TUNNEL:
            pipe_to(bev, c->up, SIZE_MAX);
            return;
        case P_BODY: {
            size_t n = evbuffer_get_length(in);
            if ((int64_t)n > c->body_left)
                n = (size_t)c->body_left;
            pipe_to(bev, c->up, n);
            c->body_left -= (int64_t)n;
            if (c->body_left)
                return;
            c->st = c->upgrade ? P_TUNNEL : P_HEAD;
            break;
        }
        case P_HEAD:
            if (!handle_head(c))
                return;
            break;
        }
    }
}

static void write_cb(struct bufferevent *bev, void *arg)
{
    struct pconn *c = arg;

    (void)bev;
    if (c->st == P_CLOSING) {
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            pconn_free(c);
        return;
    }
    if (c->up)
        bufferevent_enable(c->up, EV_READ);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct pconn *c = arg;

    (void)bev;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
        pconn_free(c);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct fatia_nbproxy *p = arg;
    struct pconn *c = fatia_calloc(1, sizeof(*c));
    struct timeval idle = {300, 0};
    int one = 1;

    (void)l;
    (void)sa;
    (void)salen;
    if (c && p->n_conns >= MAX_CONNS) {
        fatia_free(c);
        c = NULL;
    }
    if (!c) {
        evutil_closesocket(fd);
        return;
    }
    c->p = p;
    if (p->o.tls_ctx) {
        SSL *ssl = SSL_new(p->o.tls_ctx);
        c->bev = ssl ? bufferevent_openssl_socket_new(p->base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                                      BEV_OPT_CLOSE_ON_FREE)
                     : NULL;
        if (!c->bev)
            SSL_free(ssl);
        else
            bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
    } else {
        c->bev = bufferevent_socket_new(p->base, fd, BEV_OPT_CLOSE_ON_FREE);
    }
    if (!c->bev) {
        evutil_closesocket(fd);
        fatia_free(c);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->next = p->conns;
    if (p->conns)
        p->conns->prev = c;
    p->conns = c;
    p->n_conns++;
    bufferevent_setcb(c->bev, read_cb, write_cb, event_cb, c);
    /* a head that never ends costs at most this much; an idle connection goes after 5 min */
    bufferevent_setwatermark(c->bev, EV_READ, 0, FATIA_HTTP_MAX_HEAD + MAX_LOGIN);
    bufferevent_setwatermark(c->bev, EV_WRITE, HIGH_WATER / 4, 0);
    bufferevent_set_timeouts(c->bev, &idle, &idle);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* ---- life ---- */

int fatia_api_nbproxy_new(struct event_base *base, struct fatia_apiserver *api,
                          struct fatia_client *client, const struct fatia_nbproxy_opts *opts,
                          struct fatia_nbproxy **ret)
{
    struct fatia_nbproxy *p;

    if (!opts || !opts->upstream || !api->auth)
        return -EINVAL;
    p = fatia_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->base = base;
    p->api = api;
    p->client = client;
    p->o = *opts;
    if (!p->o.session_ttl)
        p->o.session_ttl = DEFAULT_TTL;
    p->nb_kind = fatia_kind_find("kubeflow.org/v1", "Notebook", NULL);
    if (!p->nb_kind) {
        fatia_free(p);
        return -EINVAL;
    }
    *ret = p;
    return 0;
}

int fatia_api_nbproxy_listen(struct fatia_nbproxy *p, const char *host, uint16_t port,
                             uint16_t *ret_port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    socklen_t len = sizeof(a);
    int fd, one = 1;

    if (inet_pton(AF_INET, host, &a.sin_addr) != 1)
        return -EINVAL;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 511) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    p->listener = evconnlistener_new(p->base, accept_cb, p, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    if (!p->listener) {
        close(fd);
        return -ENOMEM;
    }
    if (ret_port)
        *ret_port = ntohs(a.sin_port);
    return 0;
}

void fatia_api_nbproxy_free(struct fatia_nbproxy *p)
{
    if (!p)
        return;
    if (p->listener)
        evconnlistener_free(p->listener);
    while (p->conns)
        pconn_free(p->conns);
    for (size_t i = 0; i < p->sessions.cap; i++)
        if (p->sessions.slots[i].key)
            fatia_free(p->sessions.slots[i].val);
    fatia_strmap_release(&p->sessions);
    fatia_free(p);
}
