/*
 * store/etcd_client.c: etcd v3 through its JSON gateway over libcurl (see etcd_client.h).
 *
 * Model: every call is one POST of a JSON body to /v3/<service>/<method> and one JSON reply;
 * etcd's gateway (on by default, same port as gRPC) translates it to the gRPC call. int64 fields
 * come back as JSON strings, bytes fields as base64, zero values are omitted; an error is an
 * HTTP status >= 400 with {"error", "code" (the gRPC status), "message"}.
 *
 * Endpoints: a list; the handle stays on one until a connection to it cannot be made, then moves
 * to the next and retries the request there (it was never sent, so any request may be retried).
 * A request that was sent and got no complete answer (timeout, connection reset) is reported as
 * unsure: a write may or may not have been applied, and only the caller (who knows what it
 * wrote) can find out.
 *
 * Rejected: gRPC from C (libgrpc's C core is meant for language wrappers and has no stable API;
 * protobuf-c emits messages, no stubs: a hand-framed HTTP/2 client would be the larger part of
 * this backend); etcd's v2 API (no transactions on several keys, removed in 3.6).
 */
#include "base/compat.h"

#include "store/etcd_client.h"

#include <curl/curl.h>
#include <pthread.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/str.h"

#define MAX_ENDPOINTS 16

struct fatia_store_etcdc {
    CURL *h;
    char *ep[MAX_ENDPOINTS];
    size_t n_ep, cur;
    struct curl_slist *headers;
    struct fatia_buf reply;
    char errbuf[CURL_ERROR_SIZE];
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void curl_init_once(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
    struct fatia_buf *b = arg;

    if (fatia_buf_append(b, p, size * n) < 0)
        return 0; /* libcurl: a short count fails the transfer */
    return size * n;
}

static void say(char *why, size_t n, const char *fmt, ...) FATIA_PRINTF(3, 4);

static void say(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;

    if (!why || !n)
        return;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
}

int fatia_store_etcdc_new(const struct fatia_store_etcdc_opts *o, struct fatia_store_etcdc **ret,
                          char *why, size_t why_n)
{
    struct fatia_store_etcdc *c;
    const char *p;

    pthread_once(&curl_once, curl_init_once);
    c = fatia_calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    fatia_buf_init(&c->reply, 0);
    for (p = o->endpoints; p && *p;) {
        size_t n = strcspn(p, ",");
        if (n) {
            if (c->n_ep == MAX_ENDPOINTS) {
                say(why, why_n, "--etcd-endpoints: more than %d endpoints", MAX_ENDPOINTS);
                goto out_inval;
            }
            c->ep[c->n_ep] = fatia_strndup(p, n);
            if (!c->ep[c->n_ep])
                goto out_nomem;
            if (!fatia_str_has_prefix(c->ep[c->n_ep], "http://") &&
                !fatia_str_has_prefix(c->ep[c->n_ep], "https://")) {
                say(why, why_n, "--etcd-endpoints: '%s' is not an http:// or https:// URL",
                    c->ep[c->n_ep]);
                c->n_ep++;
                goto out_inval;
            }
            /* no trailing slash: paths are appended */
            while (n > 0 && c->ep[c->n_ep][n - 1] == '/')
                c->ep[c->n_ep][--n] = '\0';
            c->n_ep++;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (!c->n_ep) {
        say(why, why_n, "--etcd-endpoints: no endpoint given");
        goto out_inval;
    }
    c->h = curl_easy_init();
    c->headers = curl_slist_append(NULL, "Content-Type: application/json");
    if (!c->h || !c->headers)
        goto out_nomem;
    curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c->h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, o->timeout_ms ? o->timeout_ms : 10000L);
    curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &c->reply);
    curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, c->errbuf);
    curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http,https");
    if (o->cafile)
        curl_easy_setopt(c->h, CURLOPT_CAINFO, o->cafile);
    if (o->certfile)
        curl_easy_setopt(c->h, CURLOPT_SSLCERT, o->certfile);
    if (o->keyfile)
        curl_easy_setopt(c->h, CURLOPT_SSLKEY, o->keyfile);
    *ret = c;
    return 0;

out_nomem:
    fatia_store_etcdc_free(c);
    return -ENOMEM;
out_inval:
    fatia_store_etcdc_free(c);
    return -EINVAL;
}

void fatia_store_etcdc_free(struct fatia_store_etcdc *c)
{
    if (!c)
        return;
    if (c->h)
        curl_easy_cleanup(c->h);
    curl_slist_free_all(c->headers);
    for (size_t i = 0; i < c->n_ep; i++)
        fatia_free(c->ep[i]);
    fatia_buf_release(&c->reply);
    fatia_free(c);
}

const char *fatia_store_etcdc_endpoint(const struct fatia_store_etcdc *c)
{
    return c->ep[c->cur];
}

/* The request never left: no connection could be made. */
static bool not_sent(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
           rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PEER_FAILED_VERIFICATION;
}

/* gRPC codes etcd answers before a proposal enters raft: nothing was applied. */
static bool sure_refusal(int64_t code)
{
    switch (code) {
    case 3:  /* InvalidArgument */
    case 5:  /* NotFound */
    case 6:  /* AlreadyExists */
    case 7:  /* PermissionDenied */
    case 8:  /* ResourceExhausted (NOSPACE, too many requests, gRPC's size limit) */
    case 9:  /* FailedPrecondition */
    case 11: /* OutOfRange */
    case 16: /* Unauthenticated */
        return true;
    default:
        return false;
    }
}

/* etcd's NOSPACE alarm ("etcdserver: mvcc: database space exceeded", ResourceExhausted). Only
 * this answer may raise fatia's alarm: the alarm refuses every write but deletes, so taking any
 * other ResourceExhausted for it turns one refused request into a store-wide outage. */
static bool is_nospace(int64_t code, const char *msg)
{
    return code == 8 && msg && strstr(msg, "database space exceeded");
}

/* ResourceExhausted from gRPC itself, not from etcd: a request over the server's receive limit
 * (etcd's --max-request-bytes + 512 KiB): "grpc: received message larger than max (N vs. M)".
 * Between the limit and limit + 512 KiB etcd answers InvalidArgument, "request is too large". */
static bool is_too_large(int64_t code, const char *msg)
{
    return code == 8 && msg && strstr(msg, "message larger than max");
}

static int map_grpc(int64_t code, const char *msg)
{
    if (is_nospace(code, msg))
        return -ENOSPC;
    if (is_too_large(code, msg))
        return -EFBIG;
    switch (code) {
    case 11: /* OutOfRange: compacted, future revision */
        return -FATIA_E_GONE;
    case 3: /* InvalidArgument: too large, too many ops, duplicate key */
        return -EFBIG;
    default: /* any other ResourceExhausted (HTTP 429) too: not NOSPACE */
        return -EIO;
    }
}

int fatia_store_etcdc_call(struct fatia_store_etcdc *c, const char *path, const char *body,
                           size_t body_len, json_t **ret_reply, bool *ret_unsure)
{
    char url[1024];
    size_t tries = 0;
    unsigned busy = 0;
    CURLcode rc;
    long http = 0;
    json_t *reply;
    int r;

    *ret_reply = NULL;
    *ret_unsure = false;
retry:
    for (;;) {
        snprintf(url, sizeof(url), "%s%s", c->ep[c->cur], path);
        fatia_buf_reset(&c->reply);
        c->errbuf[0] = '\0';
        curl_easy_setopt(c->h, CURLOPT_URL, url);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
        rc = curl_easy_perform(c->h);
        if (rc == CURLE_OK)
            break;
        if (!not_sent(rc)) {
            fatia_warn("etcd %s%s: %s", c->ep[c->cur], path,
                       c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
            *ret_unsure = true;
            return -EIO;
        }
        if (++tries >= c->n_ep) {
            fatia_warn("etcd: no endpoint reachable (last %s: %s)", c->ep[c->cur],
                       c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc));
            return -ECONNREFUSED;
        }
        c->cur = (c->cur + 1) % c->n_ep;
    }
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &http);
    reply = json_loadb(c->reply.p, c->reply.len, 0, NULL);
    if (http >= 400 || !json_is_object(reply)) {
        int64_t code = -1;
        const char *msg = reply ? fatia_json_str(reply, "message") : NULL;
        bool too_many;
        if (reply)
            fatia_json_int(reply, "code", &code);
        /* "etcdserver: too many requests" is ResourceExhausted too, but it is not NOSPACE: the
         * member's apply is behind its commits (a burst of writes), and it refused the request
         * before raft. Retried here after 50 ms doubling to 1.6 s (about 3 s in all), as etcd's
         * own client does; taken for NOSPACE, it raised fatia's alarm at a 1,000-node start. */
        too_many = code == 8 && msg && strstr(msg, "too many requests");
        if (too_many && busy < 6) {
            json_decref(reply);
            usleep((useconds_t)(50000u << busy++));
            goto retry;
        }
        if (code != 11 && !is_nospace(code, msg))
            fatia_warn("etcd %s%s: HTTP %ld: %s", c->ep[c->cur], path, http,
                       msg ? msg : "(no JSON error in the reply)");
        r = map_grpc(code, msg); /* still too many requests: -EIO, not NOSPACE */
        json_decref(reply);      /* msg points into it */
        /* "request timed out", "leader changed" (Unavailable, DeadlineExceeded, Unknown, ...):
         * the proposal may still commit. Only refusals before raft are sure. */
        *ret_unsure = !sure_refusal(code);
        return r;
    }
    *ret_reply = reply;
    return 0;
}

uint64_t fatia_store_etcdc_u64(const json_t *obj, const char *key)
{
    const json_t *v = json_object_get(obj, key);
    uint64_t u = 0;

    if (json_is_string(v)) {
        if (fatia_parse_u64(json_string_value(v), &u) < 0)
            return 0;
        return u;
    }
    if (json_is_integer(v) && json_integer_value(v) > 0)
        return (uint64_t)json_integer_value(v);
    return 0;
}

static const char b64_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int fatia_store_etcdc_b64(struct fatia_buf *out, const void *data, size_t n)
{
    const unsigned char *p = data;
    size_t need = (n + 2) / 3 * 4;
    char *q;

    if (fatia_buf_reserve(out, need + 1) < 0)
        return -ENOMEM;
    q = out->p + out->len;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        if (i + 2 < n)
            v |= p[i + 2];
        *q++ = b64_chars[(v >> 18) & 63];
        *q++ = b64_chars[(v >> 12) & 63];
        *q++ = i + 1 < n ? b64_chars[(v >> 6) & 63] : '=';
        *q++ = i + 2 < n ? b64_chars[v & 63] : '=';
    }
    out->len += need;
    out->p[out->len] = '\0';
    return 0;
}

static int b64_val(unsigned char ch)
{
    if (ch >= 'A' && ch <= 'Z')
        return ch - 'A';
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9')
        return ch - '0' + 52;
    if (ch == '+')
        return 62;
    if (ch == '/')
        return 63;
    return -1;
}

int fatia_store_etcdc_unb64(struct fatia_buf *out, const char *s)
{
    size_t n = strlen(s);
    uint32_t acc = 0;
    int bits = 0;
    char *q;

    if (fatia_buf_reserve(out, n / 4 * 3 + 4) < 0)
        return -ENOMEM;
    q = out->p + out->len;
    for (size_t i = 0; i < n; i++) {
        int v;
        if (s[i] == '=')
            break;
        v = b64_val((unsigned char)s[i]);
        if (v < 0)
            return -EINVAL;
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            *q++ = (char)((acc >> bits) & 0xff);
        }
    }
    out->len = (size_t)(q - out->p);
    out->p[out->len] = '\0';
    return 0;
}
