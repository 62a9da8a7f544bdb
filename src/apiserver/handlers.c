/*
 * apiserver/handlers.c: HTTP requests -> routes, authentication, operations, answers.
 *
 * One function, fatia_api_handle_http, sees every complete request: it parses the target, routes it,
 * authenticates the bearer token (everything but /version and the health checks needs one),
 * negotiates the answer's form (JSON, or a Table when the Accept header asks `as=Table`), reads
 * the body (JSON or YAML, nesting bounded) and calls the operation. Writes answer from their
 * completion callback, once durable; reads answer at once. /readyz answers 503 while the store's
 * NOSPACE alarm is raised; /healthz and /livez answer 200 while the process serves.
 */
#include "base/compat.h"

#include <event2/buffer.h>

#include "apiserver/internal.h"
#include "apiserver/patch.h"
#include "apiserver/protobuf.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/doc.h"
#include "model/kinds/kinds.h"
#include "rbac/rbac.h"

/* ---- answering ---- */

static void add_warnings(struct fatia_api_http_req *req, const struct opres *r)
{
    for (size_t i = 0; i < r->n_warnings; i++) {
        struct fatia_buf b = FATIA_BUF_INIT;
        (void)fatia_buf_puts(&b, "299 - \"");
        for (const char *p = r->warnings[i]; *p; p++) {
            if (*p == '"' || *p == '\\')
                (void)fatia_buf_putc(&b, '\\');
            (void)fatia_buf_putc(&b, *p);
        }
        (void)fatia_buf_putc(&b, '"');
        fatia_api_http_add_header(req, "Warning", b.p);
        fatia_buf_release(&b);
    }
}

/* The answer's JSON in out, sent as protobuf instead when the request's Accept chooses it
 * and the object has a message (protobuf.c); otherwise as it is. */
static void reply_evbuf(struct fatia_api_http_req *req, int code, struct evbuffer *out)
{
    const struct fatia_str *acc = fatia_http_header_get(fatia_api_http_req_head(req), "Accept");
    struct fatia_buf pb = FATIA_BUF_INIT;
    json_t *v = NULL;
    size_t n;
    const char *text;

    if (!acc || !fatia_api_pb_accepted(acc->p, acc->n))
        goto json;
    n = evbuffer_get_length(out);
    text = (const char *)evbuffer_pullup(out, -1);
    v = text ? fatia_json_loadb(text, n, 0, NULL) : NULL;
    if (!v || fatia_api_pb_wrap(v, &pb) < 0)
        goto json;
    json_decref(v);
    fatia_api_http_reply(req, code, FATIA_API_PB_MEDIA, pb.p, pb.len);
    fatia_buf_release(&pb);
    return;
json:
    json_decref(v);
    fatia_buf_release(&pb);
    fatia_api_http_reply_evbuf(req, code, "application/json", out);
}

static void reply_json(struct fatia_api_http_req *req, int code, const json_t *v)
{
    struct evbuffer *out = evbuffer_new();

    if (!out || fatia_api_evbuffer_add_json(out, v) < 0) {
        if (out)
            evbuffer_free(out);
        fatia_api_http_reply(req, 500, "text/plain", "out of memory\n", 14);
        return;
    }
    reply_evbuf(req, code, out);
    evbuffer_free(out);
}

static void reply_status(struct fatia_api_http_req *req, int code, const char *reason,
                         const char *fmt, ...) FATIA_PRINTF(4, 5);

static void reply_status(struct fatia_api_http_req *req, int code, const char *reason,
                         const char *fmt, ...)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    va_list ap;
    json_t *st;

    va_start(ap, fmt);
    (void)fatia_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    st = fatia_api_status_new(code, reason, b.p);
    reply_json(req, code, st);
    json_decref(st);
    fatia_buf_release(&b);
}

/* The answer of an operation, in the request's version. */
static void reply_opres(struct fatia_api_http_req *req, const struct rtable *t,
                        const struct fatia_kind_version *ver, const struct opres *r)
{
    add_warnings(req, r);
    if (ver && ver->warning) {
        /* the version's own text (a CRD's deprecationWarning), as kube-apiserver sends it */
        struct opres w = {.n_warnings = 1};
        w.warnings[0] = (char *)ver->warning;
        add_warnings(req, &w);
    }
    if (r->status || !r->ver) {
        if (r->status)
            reply_json(req, r->code ? r->code : 500, r->status);
        else
            reply_status(req, 500, "InternalError", "no answer");
        return;
    }
    struct evbuffer *out = evbuffer_new();
    if (!out || fatia_api_render_object(t, ver, r->ver, out) < 0) {
        if (out)
            evbuffer_free(out);
        reply_status(req, 500, "InternalError", "out of memory");
        return;
    }
    reply_evbuf(req, r->code, out);
    evbuffer_free(out);
}

struct http_wait {
    struct fatia_api_http_req *req;
    const struct rtable *t;
    const struct fatia_kind_version *ver;
    struct fatia_apiserver *s;
    json_t *audit; /* the audit event of the write (audit.c), or NULL */
};

static void http_wait_drop(struct http_wait *w);

static void http_op_done(void *arg, struct opres *r)
{
    struct http_wait *w = arg;

    if (fatia_api_rerun(w->s, w->req, r)) {
        /* the rerun begins its own audit event; this run's is not written */
        http_wait_drop(w);
        return;
    }
    fatia_api_audit_end(w->s, w->audit, r,
                        r->ver ? fatia_json_str(json_object_get(r->ver->tree, "metadata"), "name")
                               : NULL);
    reply_opres(w->req, w->t, w->ver, r);
    fatia_free(w);
}

/* A write answered before it reached an operation (a bad body, an unknown patch type). */
static void http_wait_drop(struct http_wait *w)
{
    json_decref(w->audit);
    fatia_free(w);
}

/* ---- request helpers ---- */

static bool head_get(const struct fatia_http_head *h, const char *name, struct fatia_str *ret)
{
    const struct fatia_str *v = fatia_http_header_get(h, name);

    if (v)
        *ret = *v;
    return v != NULL;
}

static bool header_contains(const struct fatia_http_head *h, const char *name, const char *needle)
{
    struct fatia_str v;
    size_t n = strlen(needle);

    if (!head_get(h, name, &v))
        return false;
    for (size_t i = 0; i + n <= v.n; i++)
        if (!strncasecmp(v.p + i, needle, n))
            return true;
    return false;
}

/* Does the client accept JSON? (everything we answer is JSON) */
static bool accepts_json(const struct fatia_http_head *h)
{
    struct fatia_str v;

    if (!head_get(h, "Accept", &v) || v.n == 0)
        return true;
    return header_contains(h, "Accept", "json") || header_contains(h, "Accept", "*/*");
}

static bool wants_table(const struct fatia_http_head *h)
{
    return header_contains(h, "Accept", "as=Table");
}

/* The look before parsing (limits.c): true when refused, the answer sent. */
static bool body_refused(struct fatia_apiserver *s, struct fatia_api_http_req *req, const char *p,
                         size_t n)
{
    static const char *const reasons[] = {
        [0] = "BadRequest", [1] = "RequestEntityTooLarge", [2] = "Invalid"};
    char why[400];
    int code = 400;

    if (fatia_api_body_check(p, n, s->o.max_json_depth, why, sizeof(why), &code) == 0)
        return false;
    reply_status(req, code, reasons[code == 413 ? 1 : code == 422 ? 2 : 0], "%s", why);
    return true;
}

/* A protobuf body (protobuf.c) -> the JSON tree a JSON body would give, held to the same
 * limits (the tree's JSON text goes through the look before parsing). A kind without a
 * message (a custom resource) is 415, as kube-apiserver answers. */
static json_t *read_pb_body(struct fatia_apiserver *s, struct fatia_api_http_req *req,
                            const char *body, size_t n)
{
    struct fatia_buf text = FATIA_BUF_INIT;
    char why[300];
    json_t *v;
    int rc = fatia_api_pb_unwrap(body, n, &v, why, sizeof(why));

    if (rc == -ENOENT) {
        reply_status(req, 415, "UnsupportedMediaType",
                     "the body of the request was in an unknown format - accepted media types "
                     "include: application/json, application/yaml (%s)",
                     why);
        return NULL;
    }
    if (rc < 0) {
        reply_status(req, rc == -ENOMEM ? 500 : 400, rc == -ENOMEM ? "InternalError" : "BadRequest",
                     "error decoding protobuf body: %s", why);
        return NULL;
    }
    {
        const struct fatia_kind *k =
            fatia_kind_find(fatia_json_str(v, "apiVersion"), fatia_json_str(v, "kind"), NULL);
        if (k)
            fatia_api_pb_prune_zeros(v, k->schema);
    }
    if (fatia_json_dump_buf(v, &text, JSON_COMPACT) < 0 || body_refused(s, req, text.p, text.len)) {
        if (!text.len)
            reply_status(req, 500, "InternalError", "out of memory");
        fatia_buf_release(&text);
        json_decref(v);
        return NULL;
    }
    fatia_buf_release(&text);
    return v;
}

/* Parses the request body as JSON or YAML. NULL with a failure answered. */
static json_t *read_body(struct fatia_apiserver *s, struct fatia_api_http_req *req, bool allow_yaml)
{
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    size_t n;
    const char *body = fatia_api_http_req_body(req, &n);
    json_error_t jerr;
    json_t *v;

    if (n == 0) {
        reply_status(req, 400, "BadRequest", "the request has no body");
        return NULL;
    }
    if (header_contains(h, "Content-Type", "protobuf"))
        return read_pb_body(s, req, body, n);
    if (body_refused(s, req, body, n))
        return NULL;
    if (allow_yaml && header_contains(h, "Content-Type", "yaml")) {
        char why[256];
        if (fatia_yaml_parse(body, n, &v, why, sizeof(why)) < 0) {
            reply_status(req, 400, "BadRequest", "error decoding YAML body: %s", why);
            return NULL;
        }
        return v;
    }
    v = fatia_json_loadb(body, n, JSON_REJECT_DUPLICATES, &jerr);
    if (!v) {
        reply_status(req, 400, "BadRequest", "error decoding JSON body: %s (line %d, column %d)",
                     jerr.text, jerr.line, jerr.column);
        return NULL;
    }
    return v;
}

static const struct fatia_user *authenticate(struct fatia_apiserver *s,
                                             struct fatia_api_http_req *req)
{
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    const struct fatia_user *u;
    struct fatia_str v;
    char token[4096]; /* a ServiceAccount token (a JWT) is longer than the tokens file's */

    if (!s->auth)
        return &fatia_user_system;
    if (!head_get(h, "Authorization", &v) || v.n < 8 || strncasecmp(v.p, "Bearer ", 7) ||
        v.n - 7 >= sizeof(token))
        return NULL;
    memcpy(token, v.p + 7, v.n - 7);
    token[v.n - 7] = '\0';
    if (strchr(token, '.'))
        return fatia_api_satoken_authenticate(s, token);
    u = fatia_auth_lookup(s->auth, token);
    return u ? u : fatia_api_nodetoken_authenticate(s, token); /* a recorded node token */
}

/* ---- endpoints ---- */

/* A protobuf field reader: the next (number, wire type, payload) of [*p, end). */
struct pbfield_view {
    int num;
    int wire;
    uint64_t varint;
    const unsigned char *data;
    size_t len;
};

static bool pb_varint(const unsigned char **p, const unsigned char *end, uint64_t *ret)
{
    uint64_t v = 0;

    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        unsigned char c = *(*p)++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *ret = v;
            return true;
        }
    }
    return false;
}

static bool pb_next(const unsigned char **p, const unsigned char *end, struct pbfield_view *f)
{
    uint64_t tag, len;

    if (*p >= end || !pb_varint(p, end, &tag))
        return false;
    f->num = (int)(tag >> 3);
    f->wire = (int)(tag & 7);
    switch (f->wire) {
    case 0:
        return pb_varint(p, end, &f->varint);
    case 1:
        if (end - *p < 8)
            return false;
        *p += 8;
        return true;
    case 2:
        if (!pb_varint(p, end, &len) || len > (uint64_t)(end - *p))
            return false;
        f->data = *p;
        f->len = (size_t)len;
        *p += len;
        return true;
    case 5:
        if (end - *p < 4)
            return false;
        *p += 4;
        return true;
    default:
        return false;
    }
}

/* The length-delimited field num of a message, or false. */
static bool pb_find(const unsigned char *p, size_t n, int num, const unsigned char **ret,
                    size_t *ret_len)
{
    const unsigned char *end = p + n;
    struct pbfield_view f;

    while (pb_next(&p, end, &f)) {
        if (f.num == num && f.wire == 2) {
            *ret = f.data;
            *ret_len = f.len;
            return true;
        }
    }
    return false;
}

/* kubectl 1.32+ sends its reviews as Kubernetes protobuf: the "k8s\0" envelope (runtime.Unknown:
 * raw = 2) around the object (spec = 2). A SelfSubjectAccessReview's spec holds
 * resourceAttributes (= 1: namespace 1, verb 2, group 3, version 4, resource 5, subresource 6,
 * name 7) or nonResourceAttributes (= 2: path 1, verb 2); a SelfSubjectRulesReview's spec holds
 * namespace (= 1). */
static json_t *review_from_protobuf(const char *kind, const char *body, size_t n)
{
    static const char *const names[] = {NULL,      "namespace", "verb",        "group",
                                        "version", "resource",  "subresource", "name"};
    const unsigned char *raw, *spec, *attrs, *p, *end;
    size_t raw_n, spec_n, attrs_n;
    struct pbfield_view f;
    json_t *sp = json_object();

    if (n < 4 || memcmp(body, "k8s\0", 4) ||
        !pb_find((const unsigned char *)body + 4, n - 4, 2, &raw, &raw_n) ||
        !pb_find(raw, raw_n, 2, &spec, &spec_n)) {
        json_decref(sp);
        return NULL;
    }
    if (!strcmp(kind, "SelfSubjectRulesReview")) {
        if (pb_find(spec, spec_n, 1, &attrs, &attrs_n))
            json_object_set_new(sp, "namespace", json_stringn((const char *)attrs, attrs_n));
    } else if (pb_find(spec, spec_n, 1, &attrs, &attrs_n)) {
        json_t *ra = json_object();
        for (p = attrs, end = attrs + attrs_n; pb_next(&p, end, &f);)
            if (f.wire == 2 && f.num >= 1 && f.num <= 7)
                json_object_set_new(ra, names[f.num], json_stringn((const char *)f.data, f.len));
        json_object_set_new(sp, "resourceAttributes", ra);
    } else if (pb_find(spec, spec_n, 2, &attrs, &attrs_n)) {
        json_t *na = json_object();
        for (p = attrs, end = attrs + attrs_n; pb_next(&p, end, &f);)
            if (f.wire == 2 && (f.num == 1 || f.num == 2))
                json_object_set_new(na, f.num == 1 ? "path" : "verb",
                                    json_stringn((const char *)f.data, f.len));
        json_object_set_new(sp, "nonResourceAttributes", na);
    }
    return json_pack("{s:s,s:s,s:{},s:o}", "kind", kind, "apiVersion", "authorization.k8s.io/v1",
                     "metadata", "spec", sp);
}

/* POST authentication.k8s.io/{v1,v1beta1} selfsubjectreviews (`kubectl auth whoami`): the
 * requester's UserInfo; the body is not read (its spec is empty). */
static void handle_whoami(struct fatia_apiserver *s, const struct fatia_user *u,
                          struct fatia_api_http_req *req, const char *version)
{
    struct fatia_rbac_attrs a = {.verb = "create",
                                 .resource_request = true,
                                 .group = "authentication.k8s.io",
                                 .resource = "selfsubjectreviews"};
    char av[64];
    json_t *out;

    if (!fatia_api_may(s, u, &a, NULL, 0)) {
        reply_status(req, 403, "Forbidden",
                     "selfsubjectreviews.authentication.k8s.io is forbidden: User \"%s\" cannot "
                     "create resource \"selfsubjectreviews\" in API group "
                     "\"authentication.k8s.io\" at the cluster scope",
                     u->name);
        return;
    }
    snprintf(av, sizeof(av), "authentication.k8s.io/%s", version);
    out = json_pack("{s:s,s:s,s:{s:n},s:{s:o}}", "kind", "SelfSubjectReview", "apiVersion", av,
                    "metadata", "creationTimestamp", "status", "userInfo", fatia_api_user_info(u));
    reply_json(req, 201, out);
    json_decref(out);
}

/* POST of an authorization.k8s.io/v1 review (rbac_review.c answers). */
static void handle_review(struct fatia_apiserver *s, const struct fatia_user *u,
                          struct fatia_api_http_req *req, const char *kind, const char *ns)
{
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    json_t *body, *out = NULL;
    char why[512];
    int code;

    if (header_contains(h, "Content-Type", "protobuf")) {
        size_t n;
        const char *raw = fatia_api_http_req_body(req, &n);
        body = review_from_protobuf(kind, raw, n);
        if (!body) {
            reply_status(req, 400, "BadRequest", "cannot decode the %s", kind);
            return;
        }
    } else {
        body = read_body(s, req, true);
    }
    if (!body)
        return;
    code = fatia_api_review(s, u, kind, ns, body, &out, why, sizeof(why));
    if (out) {
        reply_json(req, code, out);
        json_decref(out);
        return;
    }
    reply_status(req, code,
                 code == 403   ? "Forbidden"
                 : code == 404 ? "NotFound"
                 : code == 400 ? "BadRequest"
                               : "InternalError",
                 "%s", why);
}

/* kubectl 1.32+'s TokenRequest in protobuf (authentication/v1, not in the generated tables):
 * spec = 2 {audiences = 1 (repeated), boundObjectRef = 3 {kind 1, apiVersion 2, name 3, uid 4},
 * expirationSeconds = 4 (varint)}. */
static json_t *token_request_from_protobuf(const char *body, size_t n)
{
    static const char *const ref_names[] = {NULL, "kind", "apiVersion", "name", "uid"};
    const unsigned char *raw, *spec, *p, *end, *q, *qend;
    size_t raw_n, spec_n;
    struct pbfield_view f, g;
    json_t *sp = json_object(), *auds = json_array();

    if (n < 4 || memcmp(body, "k8s\0", 4) ||
        !pb_find((const unsigned char *)body + 4, n - 4, 2, &raw, &raw_n) ||
        !pb_find(raw, raw_n, 2, &spec, &spec_n)) {
        json_decref(sp);
        json_decref(auds);
        return NULL;
    }
    for (p = spec, end = spec + spec_n; pb_next(&p, end, &f);) {
        if (f.num == 1 && f.wire == 2)
            json_array_append_new(auds, json_stringn((const char *)f.data, f.len));
        else if (f.num == 4 && f.wire == 0)
            json_object_set_new(sp, "expirationSeconds", json_integer((json_int_t)f.varint));
        else if (f.num == 3 && f.wire == 2) {
            json_t *ref = json_object();
            for (q = f.data, qend = f.data + f.len; pb_next(&q, qend, &g);)
                if (g.wire == 2 && g.num >= 1 && g.num <= 4 && g.len)
                    json_object_set_new(ref, ref_names[g.num],
                                        json_stringn((const char *)g.data, g.len));
            json_object_set_new(sp, "boundObjectRef", ref);
        }
    }
    if (json_array_size(auds))
        json_object_set_new(sp, "audiences", auds);
    else
        json_decref(auds);
    return json_pack("{s:s,s:s,s:{},s:o}", "kind", "TokenRequest", "apiVersion",
                     "authentication.k8s.io/v1", "metadata", "spec", sp);
}

/* POST serviceaccounts/NAME/token: a TokenRequest (satoken.c answers). */
static void handle_token_request(struct fatia_apiserver *s, const struct fatia_user *u,
                                 struct fatia_api_http_req *req, const struct fatia_api_route *rt)
{
    json_t *body, *out = NULL;
    char why[512];
    int code;

    if (header_contains(fatia_api_http_req_head(req), "Content-Type", "protobuf")) {
        size_t n;
        const char *raw = fatia_api_http_req_body(req, &n);
        body = token_request_from_protobuf(raw, n);
        if (!body) {
            reply_status(req, 400, "BadRequest", "cannot decode the TokenRequest");
            return;
        }
    } else {
        body = read_body(s, req, true);
    }
    if (!body)
        return;
    code = fatia_api_token_request(s, u, rt->ns, rt->name, body, &out, why, sizeof(why));
    if (out) {
        reply_json(req, code, out);
        json_decref(out);
        return;
    }
    reply_status(req, code,
                 code == 403   ? "Forbidden"
                 : code == 404 ? "NotFound"
                 : code == 409 ? "Conflict"
                 : code == 422 ? "Invalid"
                               : "InternalError",
                 "%s", why);
}

/* ---- the scale subresource (scale.c builds and applies the Scale) ---- */

static void http_scale_done(void *arg, struct opres *r)
{
    struct http_wait *w = arg;

    if (fatia_api_rerun(w->s, w->req, r)) {
        /* the rerun begins its own audit event; this run's is not written */
        http_wait_drop(w);
        return;
    }
    fatia_api_audit_end(w->s, w->audit, r,
                        r->ver ? fatia_json_str(json_object_get(r->ver->tree, "metadata"), "name")
                               : NULL);
    if (r->code >= 200 && r->code < 300 && r->ver) {
        json_t *scale = fatia_api_scale_of(w->t->kind, r->ver->tree, r->ver->rv);
        reply_json(w->req, r->code, scale);
        json_decref(scale);
    } else {
        reply_opres(w->req, w->t, w->ver, r);
    }
    fatia_free(w);
}

static void handle_scale(struct fatia_apiserver *s, const struct fatia_user *u,
                         struct fatia_api_http_req *req, const struct fatia_api_route *rt,
                         struct opctx *c, const char *method)
{
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    struct opres r = {0};
    struct entry *e;
    json_t *scale = NULL, *next = NULL, *obj = NULL;
    struct http_wait *w;
    char key[600], why[256];
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

    c->subresource = "scale"; /* authorized as deployments/scale, as upstream's roles grant it */
    if (fatia_api_authorize(c, get ? "get" : "update", &r) < 0)
        goto reply;
    c->subresource = NULL; /* the write is an update of the object's spec */
    fatia_api_entry_key(c->t, rt->ns, rt->name, key, sizeof(key));
    e = fatia_api_rtable_find(c->t, key);
    if (!e || !e->committed) {
        fatia_api_opres_not_found(&r, c->t, rt->name);
        goto reply;
    }
    scale = fatia_api_scale_of(c->t->kind, e->committed->tree, e->committed->rv);
    if (get) {
        reply_json(req, 200, scale);
        json_decref(scale);
        return;
    }
    if (!strcmp(method, "PUT")) {
        if (!(next = read_body(s, req, true)))
            goto out;
    } else if (!strcmp(method, "PATCH")) {
        size_t n;
        const char *p = fatia_api_http_req_body(req, &n);
        json_error_t jerr;
        json_t *patch = p && n ? fatia_json_loadb(p, n, 0, &jerr) : NULL;
        int pr = -EINVAL;
        why[0] = '\0';
        if (patch && header_contains(h, "Content-Type", "application/json-patch+json"))
            pr = fatia_patch_json(scale, patch, &next, why, sizeof(why));
        else if (patch && header_contains(h, "Content-Type", "application/merge-patch+json"))
            pr = fatia_patch_merge(scale, patch, &next, why, sizeof(why));
        else if (patch &&
                 header_contains(h, "Content-Type", "application/strategic-merge-patch+json"))
            pr = fatia_patch_strategic(scale, patch, NULL, &next, why, sizeof(why));
        json_decref(patch);
        if (pr < 0) {
            fatia_api_opres_fail(&r, patch ? 422 : 400, patch ? "Invalid" : "BadRequest",
                                 "the patch of the Scale of %s \"%s\" failed: %s",
                                 c->t->kind->singular, rt->name, why[0] ? why : "not a patch");
            goto reply;
        }
    } else {
        reply_status(req, 405, "MethodNotAllowed",
                     "the server does not allow this method on the requested resource");
        goto out;
    }
    if (fatia_api_scale_apply(c->t->kind, e->committed->tree, e->committed->rv, next, &obj, why,
                              sizeof(why)) < 0) {
        fatia_api_opres_fail(&r, 422, "Invalid", "Scale.autoscaling \"%s\" is invalid: %s",
                             rt->name, why);
        goto reply;
    }
    w = fatia_calloc(1, sizeof(*w));
    if (!w) {
        reply_status(req, 500, "InternalError", "out of memory");
        goto out;
    }
    *w = (struct http_wait){req, c->t, c->ver, s, NULL};
    if (s->audit) {
        struct fatia_str ua = {0};
        (void)head_get(h, "User-Agent", &ua);
        w->audit =
            fatia_api_audit_begin(s, u, !strcmp(method, "PUT") ? "update" : "patch", h->target.p,
                                  h->target.n, fatia_api_http_req_peer(req), ua.p, ua.n, c->t->kind,
                                  rt->version, rt->ns, rt->name, rt->sub);
    }
    fatia_api_op_update(c, obj, http_scale_done, w);
    goto out;
reply:
    reply_opres(req, c->t, c->ver, &r);
    fatia_api_opres_release(&r);
out:
    json_decref(scale);
    json_decref(next);
    json_decref(obj);
}

static void handle_resource(struct fatia_apiserver *s, const struct fatia_user *u,
                            struct fatia_api_http_req *req, const struct fatia_api_route *rt,
                            const struct fatia_api_query *q, const char *method,
                            const struct fatia_api_target *tgt)
{
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    struct rtable *t = fatia_api_server_table_by_resource(s, rt->group, rt->resource);
    const struct fatia_kind_version *ver = NULL;
    struct opctx c;
    struct opres r = {0};
    bool table = wants_table(h);
    char ua_manager[129];

    if (t && t->gone)
        t = NULL; /* a deleted CRD's kind */
    if (!t) {
        static const char *const reviews[][2] = {
            {"selfsubjectaccessreviews", "SelfSubjectAccessReview"},
            {"selfsubjectrulesreviews", "SelfSubjectRulesReview"},
            {"subjectaccessreviews", "SubjectAccessReview"},
            {"localsubjectaccessreviews", "LocalSubjectAccessReview"},
        };
        if (!strcmp(rt->group, "authentication.k8s.io") &&
            !strcmp(rt->resource, "selfsubjectreviews") &&
            (!strcmp(rt->version, "v1") || !strcmp(rt->version, "v1beta1")) && !rt->name &&
            !strcmp(method, "POST")) {
            handle_whoami(s, u, req, rt->version);
            return;
        }
        if (!strcmp(rt->group, "authentication.k8s.io") && !strcmp(rt->resource, "tokenreviews") &&
            !strcmp(rt->version, "v1") && !rt->name && !strcmp(method, "POST")) {
            json_t *body = read_body(s, req, true), *out = NULL;
            char why[512];
            int code;
            if (!body)
                return;
            code = fatia_api_token_review(s, u, body, &out, why, sizeof(why));
            if (out) {
                reply_json(req, code, out);
                json_decref(out);
            } else {
                reply_status(req, code, code == 403 ? "Forbidden" : "Invalid", "%s", why);
            }
            return;
        }
        for (size_t i = 0;
             !strcmp(rt->group, "authorization.k8s.io") && !strcmp(rt->version, "v1") &&
             !rt->name && !strcmp(method, "POST") && i < FATIA_ARRAY_SIZE(reviews);
             i++)
            if (!strcmp(rt->resource, reviews[i][0]) && (!rt->ns) == (i != 3)) {
                handle_review(s, u, req, reviews[i][1], rt->ns);
                return;
            }
        reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        return;
    }
    if (strcmp(rt->version, t->kind->version)) {
        const struct fatia_kind_version *o = t->kind->others;
        while (o && o->version && strcmp(o->version, rt->version))
            o++;
        if (!o || !o->version) {
            reply_status(req, 404, "NotFound", "the server could not find the requested resource");
            return;
        }
        ver = o;
    }
    if ((!t->kind->namespaced && rt->ns) || (t->kind->namespaced && rt->name && !rt->ns) ||
        (rt->sub && !rt->name)) {
        reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        return;
    }
    c = (struct opctx){.s = s,
                       .user = u,
                       .t = t,
                       .ver = ver,
                       .ns = rt->ns,
                       .name = rt->name,
                       .subresource = rt->sub,
                       .dry_run = q->dry_run,
                       .fv = q->fv,
                       .manager = q->field_manager,
                       .force = q->force};
    if (!c.manager) {
        /* kube-apiserver's default manager: the User-Agent up to its first '/' */
        struct fatia_str ua = {0};
        if (head_get(h, "User-Agent", &ua) && ua.n) {
            size_t n = 0;
            while (n < ua.n && n + 1 < sizeof(ua_manager) && ua.p[n] != '/')
                n++;
            memcpy(ua_manager, ua.p, n);
            ua_manager[n] = '\0';
            c.manager = ua_manager;
        }
    }
    if (rt->sub && !strcmp(rt->sub, "token") && t->kind == &fatia_kind_serviceaccount &&
        !strcmp(method, "POST")) {
        handle_token_request(s, u, req, rt);
        return;
    }
    if (rt->sub && !strcmp(rt->sub, "eviction") && t->kind == &fatia_kind_pod &&
        !strcmp(method, "POST")) {
        struct http_wait *w = fatia_calloc(1, sizeof(*w));
        json_t *body;
        if (!w) {
            reply_status(req, 500, "InternalError", "out of memory");
            return;
        }
        *w = (struct http_wait){req, t, ver, s, NULL};
        if (!(body = read_body(s, req, true))) {
            http_wait_drop(w);
            return;
        }
        if (s->audit) {
            struct fatia_str ua = {0};
            (void)head_get(h, "User-Agent", &ua);
            w->audit = fatia_api_audit_begin(s, u, "create", h->target.p, h->target.n,
                                             fatia_api_http_req_peer(req), ua.p, ua.n, t->kind,
                                             rt->version, rt->ns, rt->name, rt->sub);
        }
        fatia_api_op_evict(&c, body, http_op_done, w);
        json_decref(body);
        return;
    }
    if (rt->sub && !strcmp(rt->sub, "scale") && fatia_api_kind_has_scale(t->kind)) {
        handle_scale(s, u, req, rt, &c, method);
        return;
    }
    if (rt->sub && !(!strcmp(rt->sub, "status") && t->kind->has_status) &&
        !((!strcmp(rt->sub, "log") || !strcmp(rt->sub, "exec") || !strcmp(rt->sub, "attach") ||
           !strcmp(rt->sub, "portforward")) &&
          !strcmp(t->kind->kind, "Pod") && !t->kind->group[0])) {
        reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        return;
    }

    if (rt->sub && !strcmp(rt->sub, "exec") &&
        (!strcmp(method, "GET") || !strcmp(method, "POST"))) {
        /* GET with Upgrade: websocket; POST is SPDY's (refused there with a reason) */
        fatia_api_exec_start(&c, tgt, req, &r);
        if (r.code)
            reply_opres(req, t, ver, &r);
        fatia_api_opres_release(&r);
        return;
    }
    if (rt->sub && !strcmp(rt->sub, "attach") &&
        (!strcmp(method, "GET") || !strcmp(method, "POST"))) {
        fatia_api_attach_start(&c, tgt, req, &r);
        if (r.code)
            reply_opres(req, t, ver, &r);
        fatia_api_opres_release(&r);
        return;
    }
    if (rt->sub && !strcmp(rt->sub, "portforward") &&
        (!strcmp(method, "GET") || !strcmp(method, "POST"))) {
        fatia_api_portforward_start(&c, tgt, req, &r);
        if (r.code)
            reply_opres(req, t, ver, &r);
        fatia_api_opres_release(&r);
        return;
    }
    if (!strcmp(method, "GET") || !strcmp(method, "HEAD")) {
        if (rt->sub && !strcmp(rt->sub, "log")) {
            fatia_api_logs_start(&c, q, req, &r);
            if (r.code)
                reply_opres(req, t, ver, &r);
            fatia_api_opres_release(&r);
            return;
        }
        if (q->watch || rt->watch_prefix) {
            fatia_api_watch_start_http(&c, q, rt->name, table, req, &r);
            if (r.code)
                reply_opres(req, t, ver, &r);
            fatia_api_opres_release(&r);
            return;
        }
        if (rt->name) {
            char key[600];
            struct entry *e;
            if (fatia_api_authorize(&c, "get", &r) < 0) {
                reply_opres(req, t, ver, &r);
                fatia_api_opres_release(&r);
                return;
            }
            fatia_api_entry_key(t, rt->ns, rt->name, key, sizeof(key));
            e = fatia_api_rtable_find(t, key);
            if (!e || !e->committed) {
                fatia_api_opres_not_found(&r, t, rt->name);
                reply_opres(req, t, ver, &r);
                fatia_api_opres_release(&r);
                return;
            }
            if (table) {
                char rvs[24];
                json_t *tbl =
                    json_pack("{s:s,s:s,s:{s:s},s:o,s:[o]}", "kind", "Table", "apiVersion",
                              "meta.k8s.io/v1", "metadata", "resourceVersion", "",
                              "columnDefinitions", fatia_api_table_columns(t->kind), "rows",
                              fatia_api_table_row(t, ver, e->committed, q->include_object,
                                                  fatia_now_real_usec()));
                snprintf(rvs, sizeof(rvs), "%" PRIu64, e->committed->rv);
                json_object_set_new(json_object_get(tbl, "metadata"), "resourceVersion",
                                    json_string(rvs));
                reply_json(req, 200, tbl);
                json_decref(tbl);
                return;
            }
            r.code = 200;
            r.ver = fatia_api_objver_ref(e->committed);
            reply_opres(req, t, ver, &r);
            fatia_api_opres_release(&r);
            return;
        }
        {
            struct evbuffer *out = evbuffer_new();
            if (!out) {
                reply_status(req, 500, "InternalError", "out of memory");
                return;
            }
            if (fatia_api_op_list(&c, q, table, out, &r) < 0) {
                evbuffer_free(out);
                reply_opres(req, t, ver, &r);
                fatia_api_opres_release(&r);
                return;
            }
            reply_evbuf(req, 200, out);
            evbuffer_free(out);
            return;
        }
    }

    if (rt->sub && !strcmp(rt->sub, "log")) {
        reply_status(req, 405, "MethodNotAllowed",
                     "the server does not allow this method on "
                     "the requested resource");
        return;
    }
    {
        struct http_wait *w = fatia_calloc(1, sizeof(*w));
        json_t *body = NULL;
        if (!w) {
            reply_status(req, 500, "InternalError", "out of memory");
            return;
        }
        *w = (struct http_wait){req, t, ver, s, NULL};
        if (s->audit) {
            const char *verb = !strcmp(method, "POST")    ? "create"
                               : !strcmp(method, "PUT")   ? "update"
                               : !strcmp(method, "PATCH") ? "patch"
                               : rt->name                 ? "delete"
                                                          : "deletecollection";
            struct fatia_str ua = {0};
            (void)head_get(h, "User-Agent", &ua);
            w->audit = fatia_api_audit_begin(s, u, verb, h->target.p, h->target.n,
                                             fatia_api_http_req_peer(req), ua.p, ua.n, t->kind,
                                             rt->version, rt->ns, rt->name, rt->sub);
        }
        if (!strcmp(method, "POST") && !rt->name) {
            if ((body = read_body(s, req, true))) {
                const char *bn = fatia_json_str(json_object_get(body, "metadata"), "name");
                if (w->audit && bn) /* a refused create still names its object */
                    json_object_set_new(json_object_get(w->audit, "objectRef"), "name",
                                        json_string(bn));
                fatia_api_op_create_take(&c, body, http_op_done, w);
                body = NULL;
            } else
                http_wait_drop(w);
        } else if (!strcmp(method, "PUT") && rt->name) {
            if ((body = read_body(s, req, true)))
                fatia_api_op_update(&c, body, http_op_done, w);
            else
                http_wait_drop(w);
        } else if (!strcmp(method, "PATCH") && rt->name &&
                   header_contains(h, "Content-Type", "application/apply-patch+yaml")) {
            c.manager = q->field_manager; /* required: no User-Agent default for apply */
            if ((body = read_body(s, req, true)))
                fatia_api_op_apply(&c, body, http_op_done, w);
            else
                http_wait_drop(w);
        } else if (!strcmp(method, "PATCH") && rt->name) {
            size_t n;
            const char *p = fatia_api_http_req_body(req, &n);
            enum fatia_patch_type type;
            if (header_contains(h, "Content-Type", "application/json-patch+json")) {
                type = FATIA_PATCH_JSON;
            } else if (header_contains(h, "Content-Type", "application/merge-patch+json")) {
                type = FATIA_PATCH_MERGE;
            } else if (header_contains(h, "Content-Type",
                                       "application/strategic-merge-patch+json")) {
                type = FATIA_PATCH_STRATEGIC;
            } else {
                http_wait_drop(w);
                reply_status(req, 415, "UnsupportedMediaType",
                             "the body of the request was in an unknown format - accepted "
                             "media types include: application/json-patch+json, "
                             "application/merge-patch+json, application/apply-patch+yaml, "
                             "application/strategic-merge-patch+json");
                return;
            }
            if (body_refused(s, req, p, n)) {
                http_wait_drop(w);
                return;
            }
            fatia_api_op_patch(&c, type, p, n, http_op_done, w);
        } else if (!strcmp(method, "DELETE")) {
            size_t n;
            json_t *opts = NULL;
            fatia_api_http_req_body(req, &n);
            if (n && !(opts = read_body(s, req, false))) {
                http_wait_drop(w);
                return;
            }
            if (opts && json_is_array(json_object_get(opts, "dryRun")) &&
                json_array_size(json_object_get(opts, "dryRun")))
                c.dry_run = true;
            if (rt->name)
                fatia_api_op_delete(&c, opts, http_op_done, w);
            else
                fatia_api_op_delete_collection(&c, q, opts, http_op_done, w);
            json_decref(opts);
        } else {
            http_wait_drop(w);
            reply_status(req, 405, "MethodNotAllowed",
                         "the server does not allow this method on the requested resource");
        }
        json_decref(body);
    }
}

void fatia_api_handle_http(void *arg, struct fatia_api_http_req *req)
{
    struct fatia_apiserver *s = arg;
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    struct fatia_api_target tgt;
    struct fatia_api_route rt;
    struct fatia_api_query q;
    const struct fatia_user *u;
    char method[16], why[256];
    int r;

    snprintf(method, sizeof(method), "%.*s", (int)FATIA_MIN(h->method.n, 15), h->method.p);
    fatia_debug("%s %s %.*s", fatia_api_http_req_peer(req), method, (int)h->target.n, h->target.p);
    r = fatia_api_target_parse(h->target.p, h->target.n, &tgt);
    if (r < 0) {
        reply_status(req, r == -E2BIG ? 414 : 400, "BadRequest", "malformed request target");
        return;
    }
    if (fatia_api_route_parse(&tgt, &rt) < 0) {
        bool served = fatia_api_dashboard_serve(s, req, method, &tgt);
        fatia_api_target_release(&tgt);
        if (served)
            return;
        reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        return;
    }
    if (s->shutting_down) {
        fatia_api_target_release(&tgt);
        reply_status(req, 503, "ServiceUnavailable", "the server is shutting down");
        return;
    }
    if (rt.type == FATIA_ROUTE_HEALTH) {
        /* /readyz (and its sub-checks) is 503 while the store's NOSPACE alarm is raised: writes
         * are refused, so a load balancer should send them elsewhere. /healthz and /livez stay
         * 200: the process is alive, and reads and deletes work. */
        bool ready = strcmp(tgt.seg[0], "readyz") || !fatia_store_nospace(s->store);
        fatia_api_target_release(&tgt);
        if (!ready) {
            static const char msg[] =
                "[-]store failed: the store is out of disk space (NOSPACE alarm): writes are "
                "refused until space is freed; reads and deletes still work\n"
                "readyz check failed\n";
            fatia_api_http_reply(req, 503, "text/plain; charset=utf-8", msg, sizeof(msg) - 1);
            return;
        }
        fatia_api_http_reply(req, 200, "text/plain; charset=utf-8", "ok", 2);
        return;
    }
    if (rt.type == FATIA_ROUTE_VERSION) {
        json_t *v = fatia_api_discovery_version();
        fatia_api_target_release(&tgt);
        reply_json(req, 200, v);
        json_decref(v);
        return;
    }
    u = authenticate(s, req);
    if (!u) {
        fatia_api_target_release(&tgt);
        reply_status(req, 401, "Unauthorized", "Unauthorized");
        return;
    }
    if (rt.type == FATIA_ROUTE_METRICS) {
        struct fatia_buf out = FATIA_BUF_INIT;
        struct fatia_rbac_attrs na = {.verb = "get", .path = "/metrics"};
        fatia_api_target_release(&tgt);
        if (!fatia_api_may(s, u, &na, NULL, 0)) {
            reply_status(req, 403, "Forbidden",
                         "forbidden: User \"%s\" cannot get path \"/metrics\"", u->name);
            return;
        }
        if (!s->metrics_provider) {
            reply_status(req, 404, "NotFound", "the server could not find the requested resource");
            return;
        }
        if (s->metrics_provider(s->metrics_arg, &out) < 0) {
            fatia_buf_release(&out);
            reply_status(req, 500, "InternalError", "metrics could not be rendered");
            return;
        }
        fatia_api_http_reply(req, 200, "text/plain; version=0.0.4; charset=utf-8", out.p, out.len);
        fatia_buf_release(&out);
        return;
    }
    if (!accepts_json(h) && !header_contains(h, "Accept", FATIA_API_PB_MEDIA) &&
        rt.type != FATIA_ROUTE_OPENAPI_V2) {
        fatia_api_target_release(&tgt);
        reply_status(req, 406, "NotAcceptable",
                     "only the following media types are accepted: application/json, "
                     "application/yaml, " FATIA_API_PB_MEDIA);
        return;
    }
    r = fatia_api_query_parse(&tgt, &q, why, sizeof(why));
    if (r < 0) {
        fatia_api_target_release(&tgt);
        reply_status(req, 400, "BadRequest", "%s", why);
        return;
    }
    switch (rt.type) {
    case FATIA_ROUTE_API: {
        char addr[80];
        snprintf(addr, sizeof(addr), "%s", "127.0.0.1");
        json_t *v = fatia_api_discovery_api(addr);
        reply_json(req, 200, v);
        json_decref(v);
        break;
    }
    case FATIA_ROUTE_API_V1:
    case FATIA_ROUTE_GROUP_VERSION: {
        json_t *v = fatia_api_discovery_resources(rt.group, rt.version);
        if (v)
            reply_json(req, 200, v);
        else
            reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        json_decref(v);
        break;
    }
    case FATIA_ROUTE_APIS: {
        json_t *v = fatia_api_discovery_groups();
        reply_json(req, 200, v);
        json_decref(v);
        break;
    }
    case FATIA_ROUTE_GROUP: {
        json_t *v = fatia_api_discovery_group(rt.group);
        if (v)
            reply_json(req, 200, v);
        else
            reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        json_decref(v);
        break;
    }
    case FATIA_ROUTE_OPENAPI_V2:
        if (header_contains(h, "Accept", "protobuf"))
            fatia_api_http_reply(req, 200, "application/octet-stream", s->openapi_v2_pb,
                                 s->openapi_v2_pb_len);
        else if (accepts_json(h))
            fatia_api_http_reply(req, 200, "application/json", s->openapi_v2, s->openapi_v2_len);
        else
            reply_status(req, 406, "NotAcceptable",
                         "only the following media types are accepted: application/json, "
                         "application/com.github.proto-openapi.spec.v2@v1.0+protobuf");
        break;
    case FATIA_ROUTE_OPENAPI_V3:
        fatia_api_http_reply(req, 200, "application/json", s->openapi_v3_root,
                             s->openapi_v3_root_len);
        break;
    case FATIA_ROUTE_OPENAPI_V3_GV: {
        char key[200];
        size_t n;
        const char *hash, *doc;
        if (rt.group[0])
            snprintf(key, sizeof(key), "apis/%s/%s", rt.group, rt.version);
        else
            snprintf(key, sizeof(key), "api/%s", rt.version);
        doc = fatia_api_openapi_v3_doc(s, key, &n, &hash);
        if (!doc) {
            reply_status(req, 404, "NotFound", "the server could not find the requested resource");
            break;
        }
        fatia_api_http_add_header(req, "Etag", hash);
        fatia_api_http_reply(req, 200, "application/json", doc, n);
        break;
    }
    case FATIA_ROUTE_RESOURCE:
        handle_resource(s, u, req, &rt, &q, method, &tgt);
        break;
    default:
        reply_status(req, 404, "NotFound", "the server could not find the requested resource");
        break;
    }
    fatia_api_target_release(&tgt);
}
