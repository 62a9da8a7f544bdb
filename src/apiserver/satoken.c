/*
 * apiserver/satoken.c: ServiceAccount tokens: the TokenRequest subresource (`kubectl create
 * token SA`) and the bearer tokens it makes, verified by fatiad.
 *
 * Model: a token is a JWT (RFC 7519) with kube-apiserver's claims: iss, sub
 * ("system:serviceaccount:NS:NAME"), aud (the request's spec.audiences, else fatiad's own
 * audience, which equals the issuer as kube-apiserver's --api-audiences defaults), iat, nbf,
 * exp, jti, and the private claim "kubernetes.io" {namespace, serviceaccount {name, uid}, pod
 * {name, uid}} when it is bound to a pod. fatiad accepts a token as a bearer token when:
 * its signature is right; now is within [nbf, exp); its aud names fatiad's audience (a token
 * made for another audience is for someone else and is refused here: 401); the ServiceAccount
 * still exists with the uid of the token; and a bound pod still exists with its uid and is not
 * being deleted. The identity is the user system:serviceaccount:NS:NAME with the groups
 * system:serviceaccounts and system:serviceaccounts:NS (authz.c adds system:authenticated) and
 * no token-file grant: what it may do is what RBAC binds to it.
 *
 * Signing: HMAC-SHA256 (alg HS256) with a 256-bit key made at first start in DIR/sa-signing.key
 * (0600, beside the tokens file), or read from --service-account-signing-key-file (opts
 * sa_key_path, as kube-apiserver's flag: the file must exist; control replicas on one etcd share
 * it, so a token made by one is accepted by all: tests/e2e/fleet-leader.sh). Rejected: RS256 as upstream (its point is that others verify
 * tokens through OIDC discovery; fatiad is the only verifier here, and a symmetric key halves the
 * code); storing tokens (a bound token is checked against the live objects instead, so deleting
 * the pod or the ServiceAccount revokes it at once).
 *
 * TokenReview (authentication.k8s.io/v1 tokenreviews, for whoever may create them: cluster-admin,
 * or a binding of upstream's system:auth-delegator) answers for a token and the audiences a
 * service names (spec.audiences; default fatiad's own): the token's user and groups, or
 * authenticated false. A tokens-file token speaks for fatiad's audience only.
 *
 * Limits, as upstream's validation: expirationSeconds at least 600 (default 3600) and at most
 * 2^32; boundObjectRef kind Pod only (Secret and Node tokens are not made: 422), and a pod
 * running as the service account asked for (400, upstream's TokenRequest REST). A node's request
 * is held to its own pods by node-restriction (apiserver/nodeauth.c, fatia_api_node_token_check:
 * bound to a pod of the node, with its uid, for that pod's audiences and expiry). Verified
 * identities are kept by jti until their expiry (the users the write path borrows must outlive
 * the request), at most SA_CACHE_MAX of them.
 */
#include "base/compat.h"

#include <sys/random.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/kinds/kinds.h"
#include "rbac/rbac.h"

#define SA_ISSUER    "https://kubernetes.default.svc.cluster.local"
#define SA_PREFIX    "system:serviceaccount:"
#define SA_CACHE_MAX 10000
#define SA_MIN_EXP   600
#define SA_DEF_EXP   3600
#define JWT_HEADER   "{\"alg\":\"HS256\",\"kid\":\"fatia\",\"typ\":\"JWT\"}"

struct sa_user {
    struct fatia_user u;
    char *name, *group_ns, *jti; /* jti: the cache's key */
    const char *groups[3];
    fatia_usec_t expires;
};

static const char *const no_namespaces[] = {"-", NULL};

/* ---- base64url (RFC 4648 §5, no padding) ---- */

static int b64url_encode(struct fatia_buf *out, const void *p, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const unsigned char *s = p;
    size_t i;
    int r = 0;

    for (i = 0; r == 0 && i + 2 < n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        char c[4] = {tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63]};
        r = fatia_buf_append(out, c, 4);
    }
    if (r == 0 && n - i == 1) {
        unsigned v = (unsigned)s[i] << 16;
        char c[2] = {tab[v >> 18], tab[(v >> 12) & 63]};
        r = fatia_buf_append(out, c, 2);
    } else if (r == 0 && n - i == 2) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8;
        char c[3] = {tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63]};
        r = fatia_buf_append(out, c, 3);
    }
    return r;
}

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

/* Decodes into out (at least n bytes); the length, or -1. */
static long b64url_decode(const char *s, size_t n, unsigned char *out)
{
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;

    if (n % 4 == 1)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int v = b64val(s[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    if (acc & ((1u << bits) - 1))
        return -1; /* the unused low bits must be zero: one spelling per byte string */
    return (long)o;
}

/* ---- the key ---- */

int fatia_api_satoken_init(struct fatia_apiserver *s)
{
    char path[4096];
    const char *slash;
    unsigned char key[32];
    int fd;
    ssize_t n;

    if (!s->o.tokens_path)
        return 0;
    if (s->o.sa_key_path) {
        /* given: it must exist (a replica making its own would sign what the others refuse) */
        fd = open(s->o.sa_key_path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            int e = -errno;
            fatia_error("--service-account-signing-key-file '%s': %s (make one with `head -c 32 "
                        "/dev/urandom > FILE`, and give every replica the same)",
                        s->o.sa_key_path, fatia_strerror(e));
            return e;
        }
        n = read(fd, s->sa_key, sizeof(s->sa_key));
        ssize_t more = n == (ssize_t)sizeof(s->sa_key) ? read(fd, key, 1) : 0;
        close(fd);
        if (n != (ssize_t)sizeof(s->sa_key) || more != 0) {
            fatia_error("--service-account-signing-key-file '%s': not a service-account signing "
                        "key (want exactly %zu bytes)",
                        s->o.sa_key_path, sizeof(s->sa_key));
            return -FATIA_E_PARSE;
        }
        s->sa_enabled = true;
        return 0;
    }
    slash = strrchr(s->o.tokens_path, '/');
    if (slash)
        snprintf(path, sizeof(path), "%.*s/sa-signing.key", (int)(slash - s->o.tokens_path),
                 s->o.tokens_path);
    else
        snprintf(path, sizeof(path), "sa-signing.key");
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, s->sa_key, sizeof(s->sa_key));
        close(fd);
        if (n != (ssize_t)sizeof(s->sa_key)) {
            fatia_error("%s: not a service-account signing key (want %zu bytes)", path,
                        sizeof(s->sa_key));
            return -FATIA_E_PARSE;
        }
        s->sa_enabled = true;
        return 0;
    }
    if (errno != ENOENT)
        return -errno;
    if (getrandom(key, sizeof(key), 0) != (ssize_t)sizeof(key))
        return -EIO;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return -errno;
    if (write(fd, key, sizeof(key)) != (ssize_t)sizeof(key) || fsync(fd) < 0) {
        int e = errno ? -errno : -EIO;
        close(fd);
        unlink(path);
        return e;
    }
    close(fd);
    memcpy(s->sa_key, key, sizeof(key));
    s->sa_enabled = true;
    return 0;
}

static void sa_user_free(void *p)
{
    struct sa_user *x = p;

    if (!x)
        return;
    fatia_free(x->name);
    fatia_free(x->group_ns);
    fatia_free(x->jti);
    fatia_free(x);
}

void fatia_api_satoken_release(struct fatia_apiserver *s)
{
    for (size_t i = 0; i < s->sa_users.cap; i++)
        if (s->sa_users.slots[i].key)
            sa_user_free(s->sa_users.slots[i].val);
    fatia_strmap_release(&s->sa_users);
}

static int sign(const struct fatia_apiserver *s, const char *p, size_t n, unsigned char mac[32])
{
    unsigned len = 32;

    return HMAC(EVP_sha256(), s->sa_key, (int)sizeof(s->sa_key), (const unsigned char *)p, n, mac,
                &len) &&
                   len == 32
               ? 0
               : -EIO;
}

/* ---- verification ---- */

static const struct entry *find(struct fatia_apiserver *s, const struct fatia_kind *k,
                                const char *ns, const char *name)
{
    struct rtable *t = fatia_api_server_table_for(s, k);
    char key[600];

    if (!t || !ns || !name)
        return NULL;
    fatia_api_entry_key(t, ns, name, key, sizeof(key));
    return fatia_api_rtable_find(t, key);
}

static const char *uid_of(const struct entry *e)
{
    return e && e->committed
               ? fatia_json_str(json_object_get(e->committed->tree, "metadata"), "uid")
               : NULL;
}

/* Does the token's aud (a string or a list) name one of want (NULL: fatiad's own audience)? */
static bool aud_ok(const json_t *aud, const json_t *want)
{
    const json_t *v, *w;
    size_t i, j;

    if (!want) {
        json_t *self = json_pack("[s]", SA_ISSUER);
        bool ok = aud_ok(aud, self);
        json_decref(self);
        return ok;
    }
    json_array_foreach(want, j, w)
    {
        if (!json_is_string(w))
            continue;
        if (json_is_string(aud) && !strcmp(json_string_value(aud), json_string_value(w)))
            return true;
        json_array_foreach(aud, i, v)
        {
            if (json_is_string(v) && !strcmp(json_string_value(v), json_string_value(w)))
                return true;
        }
    }
    return false;
}

static const struct fatia_user *verify(struct fatia_apiserver *s, const char *token,
                                       const json_t *want);

const struct fatia_user *fatia_api_satoken_authenticate(struct fatia_apiserver *s,
                                                        const char *token)
{
    return verify(s, token, NULL);
}

static const struct fatia_user *verify(struct fatia_apiserver *s, const char *token,
                                       const json_t *want)
{
    const char *d1 = strchr(token, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    unsigned char mac[32], got[48], *payload = NULL;
    json_t *claims = NULL, *k8s;
    const char *ns, *sa, *sa_uid, *pod, *pod_uid, *jti, *sub;
    json_int_t exp, nbf;
    fatia_usec_t now = fatia_now_real_usec();
    struct sa_user *x = NULL;
    long n;
    size_t plen;
    const struct fatia_user *ret = NULL;

    if (!s->sa_enabled || !d1 || !d2 || strchr(d2 + 1, '.'))
        return NULL;
    if (sign(s, token, (size_t)(d2 - token), mac) < 0 || strlen(d2 + 1) != 43 ||
        b64url_decode(d2 + 1, 43, got) != 32 || CRYPTO_memcmp(mac, got, 32))
        return NULL;
    plen = (size_t)(d2 - d1 - 1);
    payload = fatia_malloc(plen + 1);
    if (!payload || (n = b64url_decode(d1 + 1, plen, payload)) < 0)
        goto out;
    claims = json_loadb((const char *)payload, (size_t)n, 0, NULL);
    k8s = json_object_get(claims, "kubernetes.io");
    ns = fatia_json_str(k8s, "namespace");
    sa = fatia_json_str(json_object_get(k8s, "serviceaccount"), "name");
    sa_uid = fatia_json_str(json_object_get(k8s, "serviceaccount"), "uid");
    pod = fatia_json_str(json_object_get(k8s, "pod"), "name");
    pod_uid = fatia_json_str(json_object_get(k8s, "pod"), "uid");
    jti = fatia_json_str(claims, "jti");
    sub = fatia_json_str(claims, "sub");
    exp = json_integer_value(json_object_get(claims, "exp"));
    nbf = json_integer_value(json_object_get(claims, "nbf"));
    if (!claims || !ns || !sa || !sa_uid || !jti || !sub ||
        strcmp(nz(fatia_json_str(claims, "iss")), SA_ISSUER) ||
        !aud_ok(json_object_get(claims, "aud"), want))
        goto out;
    if ((fatia_usec_t)exp * FATIA_USEC_PER_SEC <= now ||
        (fatia_usec_t)(nbf - 60) * FATIA_USEC_PER_SEC > now)
        goto out; /* expired, or not yet valid (a minute of clock skew allowed) */
    /* the ServiceAccount, and the pod it is bound to, must still be the ones it was made for */
    if (strcmp(nz(uid_of(find(s, &fatia_kind_serviceaccount, ns, sa))), sa_uid))
        goto out;
    if (pod) {
        const struct entry *e = find(s, &fatia_kind_pod, ns, pod);
        if (!pod_uid || strcmp(nz(uid_of(e)), pod_uid) ||
            json_object_get(json_object_get(e->committed->tree, "metadata"), "deletionTimestamp"))
            goto out;
    }
    x = fatia_strmap_get(&s->sa_users, jti);
    if (x) {
        ret = &x->u;
        goto out;
    }
    if (s->sa_users.n >= SA_CACHE_MAX) {
        /* drop what expired ten minutes ago (no request in flight borrows it any more) */
        struct sa_user **old = fatia_calloc(s->sa_users.n, sizeof(*old));
        size_t n_old = 0;
        for (size_t i = 0; old && i < s->sa_users.cap; i++) {
            struct sa_user *v = s->sa_users.slots[i].val;
            if (s->sa_users.slots[i].key && v->expires + 600 * FATIA_USEC_PER_SEC < now)
                old[n_old++] = v;
        }
        for (size_t i = 0; i < n_old; i++) {
            fatia_strmap_del(&s->sa_users, old[i]->jti);
            sa_user_free(old[i]);
        }
        fatia_free(old);
        if (s->sa_users.n >= SA_CACHE_MAX)
            goto out;
    }
    x = fatia_calloc(1, sizeof(*x));
    if (!x)
        goto out;
    x->name = fatia_strdup(sub);
    x->jti = fatia_strdup(jti);
    if (!x->name || !x->jti || asprintf(&x->group_ns, "system:serviceaccounts:%s", ns) < 0) {
        x->group_ns = NULL;
        sa_user_free(x);
        goto out;
    }
    x->groups[0] = "system:serviceaccounts";
    x->groups[1] = x->group_ns;
    x->u.name = x->name;
    x->u.groups = x->groups;
    x->u.namespaces = no_namespaces;
    x->expires = (fatia_usec_t)exp * FATIA_USEC_PER_SEC;
    if (fatia_strmap_put(&s->sa_users, x->jti, x) < 0) {
        sa_user_free(x);
        goto out;
    }
    ret = &x->u;
out:
    json_decref(claims);
    fatia_free(payload);
    return ret;
}

/* ---- TokenRequest ---- */

int fatia_api_token_request(struct fatia_apiserver *s, const struct fatia_user *u, const char *ns,
                            const char *name, json_t *body, json_t **ret, char *why, size_t why_n)
{
    const json_t *spec = json_object_get(body, "spec"), *auds = json_object_get(spec, "audiences");
    const json_t *ref = json_object_get(spec, "boundObjectRef");
    const struct entry *sae, *pe = NULL;
    json_int_t exp_s = SA_DEF_EXP;
    const char *pod = NULL, *pod_uid = NULL, *psa;
    struct fatia_buf tok = FATIA_BUF_INIT;
    json_t *claims = NULL, *k8s, *aud;
    char jti[37], sub[600], when[40];
    unsigned char mac[32];
    fatia_usec_t now = fatia_now_real_usec();
    char *text = NULL;
    int code = 500;

    *ret = NULL;
    if (!fatia_api_may_resource(s, u, "create", &fatia_kind_serviceaccount, "token", ns, name)) {
        snprintf(why, why_n,
                 "serviceaccounts \"%s\" is forbidden: User \"%s\" cannot create resource "
                 "\"serviceaccounts/token\" in API group \"\" in the namespace \"%s\"",
                 name, u->name, ns);
        code = 403;
        goto out;
    }
    if (!s->sa_enabled) {
        snprintf(why, why_n, "service-account tokens need authentication (a tokens file)");
        code = 404;
        goto out;
    }
    sae = find(s, &fatia_kind_serviceaccount, ns, name);
    if (!uid_of(sae)) {
        snprintf(why, why_n, "serviceaccounts \"%s\" not found", name);
        code = 404;
        goto out;
    }
    if (json_integer_value(json_object_get(spec, "expirationSeconds"))) { /* null, 0: default */
        exp_s = json_integer_value(json_object_get(spec, "expirationSeconds"));
        if (exp_s < SA_MIN_EXP || exp_s > ((json_int_t)1 << 32)) {
            snprintf(
                why, why_n,
                "TokenRequest.authentication.k8s.io \"%s\" is invalid: spec.expirationSeconds: "
                "Invalid value: %lld: may not specify a duration %s",
                name, (long long)exp_s,
                exp_s < SA_MIN_EXP ? "less than 10 minutes" : "larger than 2^32 seconds");
            code = 422;
            goto out;
        }
    }
    if (!nz(fatia_json_str(ref, "kind"))[0] && !nz(fatia_json_str(ref, "name"))[0])
        ref = NULL; /* kubectl 1.27 sends an empty one */
    /* a node's: bound to a pod of its own, for what that pod's projection asks (nodeauth.c) */
    code = fatia_api_node_token_check(s, u, ns, name, ref, auds, SA_ISSUER, exp_s, why, why_n);
    if (code)
        goto out;
    code = 500;
    if (ref) {
        const char *kind = fatia_json_str(ref, "kind");
        pod = fatia_json_str(ref, "name");
        if (!kind || strcmp(kind, "Pod") || !pod || !*pod) {
            snprintf(why, why_n,
                     "TokenRequest.authentication.k8s.io \"%s\" is invalid: spec.boundObjectRef: "
                     "fatiad binds tokens to a Pod (kind Pod and a name) only",
                     name);
            code = 422;
            goto out;
        }
        pe = find(s, &fatia_kind_pod, ns, pod);
        pod_uid = uid_of(pe);
        if (!pod_uid) {
            snprintf(why, why_n, "pods \"%s\" not found", pod);
            code = 404;
            goto out;
        }
        psa = fatia_json_str(json_object_get(pe->committed->tree, "spec"), "serviceAccountName");
        if (strcmp(psa && *psa ? psa : "default", name)) {
            snprintf(why, why_n,
                     "cannot bind token for serviceaccount \"%s\" to pod running with different "
                     "serviceaccount name.",
                     name);
            code = 400;
            goto out;
        }
        if (fatia_json_str(ref, "uid") && *fatia_json_str(ref, "uid") &&
            strcmp(fatia_json_str(ref, "uid"), pod_uid)) {
            snprintf(why, why_n,
                     "the UID in the bound object reference (%s) does not match the UID in "
                     "record (%s). The object might have been deleted and then recreated",
                     fatia_json_str(ref, "uid"), pod_uid);
            code = 409;
            goto out;
        }
    }
    aud = json_array_size(auds) ? json_deep_copy(auds) : json_pack("[s]", SA_ISSUER);
    fatia_api_random_uid(jti);
    snprintf(sub, sizeof(sub), SA_PREFIX "%s:%s", ns, name);
    k8s = json_pack("{s:s,s:{s:s,s:s}}", "namespace", ns, "serviceaccount", "name", name, "uid",
                    uid_of(sae));
    if (pod)
        json_object_set_new(k8s, "pod", json_pack("{s:s,s:s}", "name", pod, "uid", pod_uid));
    {
        json_int_t iat = (json_int_t)(now / FATIA_USEC_PER_SEC);
        claims = json_pack("{s:o,s:I,s:I,s:s,s:s,s:o,s:I,s:s}", "aud", aud, "exp", iat + exp_s,
                           "iat", iat, "iss", SA_ISSUER, "jti", jti, "kubernetes.io", k8s, "nbf",
                           iat, "sub", sub);
    }
    text = claims ? json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (!text || b64url_encode(&tok, JWT_HEADER, strlen(JWT_HEADER)) < 0 ||
        fatia_buf_putc(&tok, '.') < 0 || b64url_encode(&tok, text, strlen(text)) < 0 ||
        sign(s, tok.p, tok.len, mac) < 0 || fatia_buf_putc(&tok, '.') < 0 ||
        b64url_encode(&tok, mac, sizeof(mac)) < 0 || fatia_buf_putc(&tok, '\0') < 0) {
        snprintf(why, why_n, "out of memory");
        goto out;
    }
    fatia_time_format_rfc3339((now / FATIA_USEC_PER_SEC + exp_s) * FATIA_USEC_PER_SEC, false, when,
                              sizeof(when));
    json_object_set_new(body, "apiVersion", json_string("authentication.k8s.io/v1"));
    json_object_set_new(body, "kind", json_string("TokenRequest"));
    if (!json_is_object(json_object_get(body, "metadata")))
        json_object_set_new(body, "metadata", json_object());
    json_object_set_new(json_object_get(body, "metadata"), "name", json_string(name));
    json_object_set_new(json_object_get(body, "metadata"), "namespace", json_string(ns));
    if (!json_is_object(json_object_get(body, "spec")))
        json_object_set_new(body, "spec", json_object());
    json_object_set_new(json_object_get(body, "spec"), "expirationSeconds", json_integer(exp_s));
    json_object_set(json_object_get(body, "spec"), "audiences", json_object_get(claims, "aud"));
    if (pod)
        json_object_set_new(json_object_get(json_object_get(body, "spec"), "boundObjectRef"), "uid",
                            json_string(pod_uid));
    json_object_set_new(body, "status",
                        json_pack("{s:s,s:s}", "token", tok.p, "expirationTimestamp", when));
    *ret = json_incref(body);
    code = 201;
out:
    fatia_free(text);
    json_decref(claims);
    fatia_buf_release(&tok);
    json_decref(body);
    return code;
}

/* ---- TokenReview ---- */

int fatia_api_token_review(struct fatia_apiserver *s, const struct fatia_user *u, json_t *body,
                           json_t **ret, char *why, size_t why_n)
{
    const json_t *spec = json_object_get(body, "spec");
    const char *token = fatia_json_str(spec, "token");
    const json_t *want = json_array_size(json_object_get(spec, "audiences"))
                             ? json_object_get(spec, "audiences")
                             : NULL;
    const struct fatia_user *who = NULL;
    struct fatia_rbac_attrs a = {.verb = "create",
                                 .resource_request = true,
                                 .group = "authentication.k8s.io",
                                 .resource = "tokenreviews"};
    json_t *st;

    *ret = NULL;
    if (!fatia_api_may(s, u, &a, NULL, 0)) {
        snprintf(why, why_n,
                 "tokenreviews.authentication.k8s.io is forbidden: User \"%s\" cannot create "
                 "resource \"tokenreviews\" in API group \"authentication.k8s.io\" at the "
                 "cluster scope",
                 u->name);
        json_decref(body);
        return 403;
    }
    if (!token || !*token) {
        snprintf(why, why_n,
                 "TokenReview.authentication.k8s.io is invalid: spec.token: Required value");
        json_decref(body);
        return 422;
    }
    if (!strchr(token, '.') && s->auth) {
        /* a tokens-file token speaks for fatiad's own audience only */
        json_t *self = json_string(SA_ISSUER);
        who = aud_ok(self, want) ? fatia_auth_lookup(s->auth, token) : NULL;
        if (!who && aud_ok(self, want))
            who = fatia_api_nodetoken_authenticate(s, token); /* a recorded node token */
        json_decref(self);
    } else {
        who = verify(s, token, want);
    }
    if (who) {
        json_t *auds = want ? json_deep_copy(want) : json_pack("[s]", SA_ISSUER);
        st = json_pack("{s:b,s:o,s:o}", "authenticated", true, "user", fatia_api_user_info(who),
                       "audiences", auds);
    } else {
        st = json_pack("{s:b,s:s}", "authenticated", false, "error", "invalid bearer token");
    }
    json_object_set_new(body, "apiVersion", json_string("authentication.k8s.io/v1"));
    json_object_set_new(body, "kind", json_string("TokenReview"));
    if (!json_is_object(json_object_get(body, "metadata")))
        json_object_set_new(body, "metadata", json_object());
    json_object_set_new(body, "status", st);
    *ret = body;
    return 201;
}
