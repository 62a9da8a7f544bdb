/*
 * gateway/kubepool.c: an InferencePool's pods through the Kubernetes API (see kubepool.h).
 *
 * The API thread's loop (api_main):
 *
 *     LIST pods?labelSelector=S  -> pods by name, resourceVersion RV, publish
 *     WATCH pods?labelSelector=S&resourceVersion=RV&allowWatchBookmarks=true&watch=1
 *         ADDED / MODIFIED  -> pods[name] = object        (RV = object's resourceVersion)
 *         DELETED           -> remove pods[name]
 *         BOOKMARK          -> RV only
 *         ERROR 410         -> LIST again
 *       stream ends         -> WATCH again from RV; errors back off 0.5 s .. 8 s
 *
 * "publish" computes the endpoint set and, when it changed, hands it to the loop thread. Stop:
 * a flag read by curl's progress callback (aborting a watch in flight) and by the back-off wait.
 */
#include "base/compat.h"

#include "gateway/kubepool.h"

#include <curl/curl.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "gateway/gateway.h"
#include "gateway/pd.h"
#include "model/diag.h"
#include "model/doc.h"
#include "model/object.h"

struct blob {
    char *p;
    size_t n;
};

struct fatia_kubepool {
    struct event_base *base;
    struct fatia_gateway *g;
    struct event *ev_update;
    pthread_t thread;
    bool started;
    atomic_bool stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    json_t *pending;      /* endpoints for the loop thread, under mu */
    json_t *pending_idle; /* idle pools for the loop thread, under mu */
    json_t *demand;       /* pools ("ns/name") a held request asks a replica for, under mu */
    json_t *demand_sent;  /* loop thread: pool -> when last signalled (mono usec) */
    json_t *published_idle;
    /* API thread only */
    char server[512];
    char *token;
    char *ca_file, *cert_file, *key_file;
    struct blob ca, cert, key;
    bool insecure;
    char ns[254], name[254];
    json_t *pool;
    char selector[2048];
    json_t *pods; /* name -> pod */
    char rv[128];
    bool relist; /* the watch said 410 Gone */
    json_t *published;
    struct fatia_buf line;
    bool all; /* every InferencePool of the cluster, polled (kubepool.h) */
};

/* ---- small helpers ---- */

static int b64val(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

static int b64decode(const char *s, struct blob *ret)
{
    size_t n = strlen(s), k = 0;
    uint32_t acc = 0;
    int bits = 0;
    char *out = fatia_malloc(n / 4 * 3 + 4);

    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int v;
        if (s[i] == '=' || s[i] == '\n' || s[i] == '\r' || s[i] == ' ')
            continue;
        if ((v = b64val(s[i])) < 0) {
            fatia_free(out);
            return -EINVAL;
        }
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[k++] = (char)(acc >> bits & 0xff);
        }
    }
    ret->p = out;
    ret->n = k;
    return 0;
}

static char *read_file(const char *path, size_t *ret_n)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    char tmp[4096];
    size_t n;
    FILE *f = fopen(path, "re");

    if (!f)
        return NULL;
    fatia_buf_init(&b, 16u << 20);
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        if (fatia_buf_append(&b, tmp, n) < 0)
            break;
    fclose(f);
    if (ret_n)
        *ret_n = b.len;
    return fatia_buf_steal(&b);
}

static json_t *named(const json_t *list, const char *name)
{
    size_t i;
    json_t *v;

    json_array_foreach(list, i, v)
    {
        const char *n = fatia_json_str(v, "name");
        if (n && name && !strcmp(n, name))
            return v;
    }
    return NULL;
}

/* Reads the kubeconfig's current context into kp (flags already set win). */
static int load_kubeconfig(struct fatia_kubepool *kp, const struct fatia_kube_config *kc, char *why,
                           size_t why_n)
{
    char def[4096];
    const char *path = kc->kubeconfig;
    char *text;
    size_t n;
    json_t *root = NULL, *ctx, *cluster, *user;
    const char *cur, *v;
    int r = 0;

    if (!path)
        path = getenv("KUBECONFIG");
    if (!path && getenv("HOME")) {
        snprintf(def, sizeof(def), "%s/.kube/config", getenv("HOME"));
        path = def;
    }
    if (!path || !(text = read_file(path, &n))) {
        if (kc->kubeconfig) {
            snprintf(why, why_n, "cannot read kubeconfig '%s'", kc->kubeconfig);
            return -ENOENT;
        }
        return 0; /* no kubeconfig: flags only */
    }
    if (fatia_yaml_parse(text, n, &root, why, why_n) < 0) {
        fatia_free(text);
        return -EINVAL;
    }
    fatia_free(text);
    cur = fatia_json_str(root, "current-context");
    ctx = json_object_get(named(json_object_get(root, "contexts"), cur), "context");
    cluster = json_object_get(
        named(json_object_get(root, "clusters"), fatia_json_str(ctx, "cluster")), "cluster");
    user =
        json_object_get(named(json_object_get(root, "users"), fatia_json_str(ctx, "user")), "user");
    if (!cluster) {
        snprintf(why, why_n, "kubeconfig '%s': no cluster for current-context '%s'", path,
                 cur ? cur : "");
        r = -EINVAL;
        goto out;
    }
    if (!kp->server[0] && (v = fatia_json_str(cluster, "server")))
        snprintf(kp->server, sizeof(kp->server), "%s", v);
    if (fatia_json_bool(cluster, "insecure-skip-tls-verify", false))
        kp->insecure = true;
    if (!kp->ca_file && !kp->ca.p) {
        if ((v = fatia_json_str(cluster, "certificate-authority-data")))
            r = b64decode(v, &kp->ca);
        else if ((v = fatia_json_str(cluster, "certificate-authority")))
            kp->ca_file = fatia_strdup(v);
    }
    if (!kp->token && (v = fatia_json_str(user, "token")))
        kp->token = fatia_strdup(v);
    if (!kp->token && (v = fatia_json_str(user, "tokenFile"))) {
        kp->token = read_file(v, NULL);
        if (!kp->token) {
            snprintf(why, why_n, "cannot read token file '%s'", v);
            r = -ENOENT;
            goto out;
        }
    }
    if ((v = fatia_json_str(user, "client-certificate-data")))
        r = r ? r : b64decode(v, &kp->cert);
    else if ((v = fatia_json_str(user, "client-certificate")))
        kp->cert_file = fatia_strdup(v);
    if ((v = fatia_json_str(user, "client-key-data")))
        r = r ? r : b64decode(v, &kp->key);
    else if ((v = fatia_json_str(user, "client-key")))
        kp->key_file = fatia_strdup(v);
    if (json_object_get(user, "exec"))
        fatia_log(FATIA_LOG_WARNING, "gateway: kubeconfig exec credential plugins are not "
                                     "supported, ignoring");
    if (r < 0)
        snprintf(why, why_n, "kubeconfig '%s': invalid base64 data", path);
out:
    json_decref(root);
    return r;
}

/* ---- HTTP through libcurl ---- */

struct xfer {
    struct fatia_kubepool *kp;
    struct fatia_buf *body;                             /* whole body, or */
    void (*on_line)(struct fatia_kubepool *, json_t *); /* one JSON object per line */
    const char *method, *send, *content_type;           /* a write (PATCH): NULL for a GET */
};

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud)
{
    struct xfer *x = ud;
    size_t n = size * nmemb;

    if (x->body)
        return fatia_buf_append(x->body, p, n) < 0 ? 0 : n;
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '\n') {
            if (fatia_buf_putc(&x->kp->line, p[i]) < 0)
                return 0;
            continue;
        }
        if (x->kp->line.len) {
            json_t *ev = json_loadb(x->kp->line.p, x->kp->line.len, 0, NULL);
            if (ev)
                x->on_line(x->kp, ev);
            json_decref(ev);
        }
        fatia_buf_reset(&x->kp->line);
    }
    return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    struct fatia_kubepool *kp = ud;
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    return atomic_load(&kp->stop) ? 1 : 0;
}

/* GET path; returns the HTTP status (> 0) or a negative error. */
static long api_get(struct fatia_kubepool *kp, const char *path, struct xfer *x, long timeout_s)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdr = NULL;
    char url[4096], auth[8192];
    long status = 0;
    CURLcode cr;

    if (!h)
        return -ENOMEM;
    snprintf(url, sizeof(url), "%s%s", kp->server, path);
    curl_easy_setopt(h, CURLOPT_URL, url);
    if (x->method) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, x->method);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, x->send ? x->send : "");
        if (x->content_type)
            hdr = curl_slist_append(hdr, x->content_type);
    }
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, kp);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, timeout_s);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    hdr = curl_slist_append(hdr, "Accept: application/json");
    if (kp->token) {
        size_t tl = strlen(kp->token);
        while (tl && (kp->token[tl - 1] == '\n' || kp->token[tl - 1] == '\r'))
            kp->token[--tl] = 0;
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", kp->token);
        hdr = curl_slist_append(hdr, auth);
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    if (kp->insecure) {
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    if (kp->ca_file)
        curl_easy_setopt(h, CURLOPT_CAINFO, kp->ca_file);
    if (kp->ca.p) {
        struct curl_blob b = {kp->ca.p, kp->ca.n, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &b);
    }
    if (kp->cert_file)
        curl_easy_setopt(h, CURLOPT_SSLCERT, kp->cert_file);
    if (kp->cert.p) {
        struct curl_blob b = {kp->cert.p, kp->cert.n, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &b);
    }
    if (kp->key_file)
        curl_easy_setopt(h, CURLOPT_SSLKEY, kp->key_file);
    if (kp->key.p) {
        struct curl_blob b = {kp->key.p, kp->key.n, CURL_BLOB_COPY};
        curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &b);
    }
    cr = curl_easy_perform(h);
    if (cr == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    else
        fatia_log(FATIA_LOG_DEBUG, "gateway: GET %s: %s", url, curl_easy_strerror(cr));
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return cr == CURLE_OK ? status : cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
}

/* ---- the endpoint set ---- */

static bool pod_ready(const json_t *pod)
{
    json_t *conds = fatia_json_path(pod, "status.conditions"), *c;
    size_t i;

    if (json_object_get(fatia_json_path(pod, "metadata"), "deletionTimestamp"))
        return false;
    json_array_foreach(conds, i, c)
    {
        const char *t = fatia_json_str(c, "type"), *s = fatia_json_str(c, "status");
        if (t && s && !strcmp(t, "Ready"))
            return !strcmp(s, "True");
    }
    return false;
}

json_t *fatia_kubepool_endpoints(const json_t *pool, const json_t *pods)
{
    json_t *out = json_array(), *ports = fatia_json_path(pool, "spec.targetPorts"), *pod, *port;
    json_t *match = fatia_json_path(pool, "spec.selector.matchLabels");
    size_t i, k;

    json_array_foreach(pods, i, pod)
    {
        const char *ip = fatia_json_path(pod, "status.podIP")
                             ? json_string_value(fatia_json_path(pod, "status.podIP"))
                             : NULL;
        json_t *labels = fatia_json_path(pod, "metadata.labels"), *lv;
        const char *lk;
        bool ok = true;
        if (!ip || !*ip || !pod_ready(pod))
            continue;
        /* the API filtered by selector already; check again, the set must never widen */
        json_object_foreach(match, lk, lv)
        {
            const char *have = fatia_json_str(labels, lk);
            ok = ok && have && json_is_string(lv) && !strcmp(have, json_string_value(lv));
        }
        if (!ok)
            continue;
        const char *only =
            fatia_json_str(fatia_json_path(pod, "metadata.annotations"), "serving.fatia.io/port");
        json_array_foreach(ports, k, port)
        {
            int64_t num;
            char url[300], nb[24];
            if (!fatia_json_int(port, "number", &num))
                continue;
            /* process mode: pods share 127.0.0.1 and each workload has its own port, which the
             * pod names (controller/llmisvc.c); only that target port is this pod's */
            snprintf(nb, sizeof(nb), "%" PRId64, num);
            if (only && strcmp(only, nb))
                continue;
            snprintf(url, sizeof(url),
                     strchr(ip, ':') ? "http://[%s]:%" PRId64 : "http://%s:%" PRId64, ip, num);
            json_array_append_new(
                out, json_pack("{s:s,s:O}", "url", url, "labels", labels ? labels : json_object()));
        }
    }
    return out;
}

/* Hands eps (a new reference, taken) to the loop thread when it differs from the last set. */
static void publish_eps(struct fatia_kubepool *kp, json_t *eps)
{
    if (!eps)
        return;
    if (kp->published && json_equal(eps, kp->published)) {
        json_decref(eps);
        return;
    }
    json_decref(kp->published);
    kp->published = json_incref(eps);
    pthread_mutex_lock(&kp->mu);
    json_decref(kp->pending);
    kp->pending = eps;
    pthread_mutex_unlock(&kp->mu);
    event_active(kp->ev_update, EV_TIMEOUT, 0);
}

static void publish(struct fatia_kubepool *kp)
{
    json_t *list = json_array(), *eps;
    const char *name;
    json_t *pod;

    json_object_foreach(kp->pods, name, pod) json_array_append(list, pod);
    eps = fatia_kubepool_endpoints(kp->pool, list);
    json_decref(list);
    publish_eps(kp, eps);
}

static json_t *get_list(struct fatia_kubepool *kp, const char *path)
{
    struct fatia_buf body = FATIA_BUF_INIT;
    struct xfer x = {kp, &body, NULL};
    json_t *o;
    long st;

    fatia_buf_init(&body, 256u << 20);
    st = api_get(kp, path, &x, 30);
    if (st != 200) {
        fatia_log(FATIA_LOG_WARNING, "gateway: GET %s: %s%ld", path, st < 0 ? "error " : "HTTP ",
                  st);
        fatia_buf_release(&body);
        return NULL;
    }
    o = json_loadb(body.p, body.len, 0, NULL);
    fatia_buf_release(&body);
    if (!json_is_array(json_object_get(o, "items"))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* Oldest pool first (creationTimestamp, RFC 3339 in UTC sorts as text), then namespace/name. */
static int cmp_pools(const void *x, const void *y)
{
    const json_t *a = *(const json_t *const *)x, *b = *(const json_t *const *)y;
    const char *ta = json_string_value(fatia_json_path(a, "metadata.creationTimestamp"));
    const char *tb = json_string_value(fatia_json_path(b, "metadata.creationTimestamp"));
    const char *na = json_string_value(fatia_json_path(a, "metadata.namespace"));
    const char *nb = json_string_value(fatia_json_path(b, "metadata.namespace"));
    const char *ma = json_string_value(fatia_json_path(a, "metadata.name"));
    const char *mb = json_string_value(fatia_json_path(b, "metadata.name"));
    int c = strcmp(ta ? ta : "", tb ? tb : "");

    if (!c)
        c = strcmp(na ? na : "", nb ? nb : "");
    return c ? c : strcmp(ma ? ma : "", mb ? mb : "");
}

json_t *fatia_kubepool_all_endpoints(const json_t *pools, const json_t *pods)
{
    json_t *out = json_array(), *pool, *byns = json_object(), *pod, *cand = json_array();
    json_t *owner = json_object(), *c;
    size_t i, j, np = json_array_size(pools);
    const json_t **order = fatia_calloc(np ? np : 1, sizeof(*order));

    json_array_foreach(pods, i, pod)
    {
        const char *ns = json_string_value(fatia_json_path(pod, "metadata.namespace"));
        json_t *l;
        if (!ns)
            continue;
        l = json_object_get(byns, ns);
        if (!l) {
            l = json_array();
            json_object_set_new(byns, ns, l);
        }
        json_array_append(l, pod);
    }
    if (!order) {
        json_decref(byns);
        json_decref(cand);
        json_decref(owner);
        return out;
    }
    for (i = 0; i < np; i++)
        order[i] = json_array_get(pools, i);
    qsort(order, np, sizeof(*order), cmp_pools);
    /* candidates: every pool's endpoints, from the pods of the pool's own namespace only; an
     * address belongs to the oldest pool that claims it (a newcomer from another namespace
     * cannot take a model server's address from its pool, nor share it) */
    for (size_t pi = 0; pi < np; pi++) {
        pool = (json_t *)order[pi];
        const char *name = json_string_value(fatia_json_path(pool, "metadata.name"));
        const char *ns = json_string_value(fatia_json_path(pool, "metadata.namespace"));
        /* the served model: the pool's name, or the name its owner serves under
         * (LLMInferenceService's spec.model.name, controller/llmisvc.c) */
        const char *model = fatia_json_str(fatia_json_path(pool, "metadata.annotations"),
                                           "serving.fatia.io/model-name");
        const char *decider =
            fatia_json_str(fatia_json_path(pool, "metadata.annotations"), FATIA_PD_DECIDER_LABEL);
        json_t *eps, *ep;
        char key[600];
        if (!name || !ns)
            continue;
        if (!model || !*model)
            model = name;
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        eps = fatia_kubepool_endpoints(pool, json_object_get(byns, ns));
        json_array_foreach(eps, j, ep)
        {
            const char *url = fatia_json_str(ep, "url");
            const char *first;
            if (!url)
                continue;
            first = fatia_json_str(owner, url);
            if (!first)
                json_object_set_new(owner, url, json_string(key));
            json_array_append_new(cand, json_pack("{s:s,s:s,s:s,s:s,s:s,s:O}", "url", url, "pool",
                                                  key, "name", name, "model", model, "decider",
                                                  decider ? decider : "", "labels",
                                                  json_object_get(ep, "labels")));
        }
        json_decref(eps);
    }
    json_array_foreach(cand, i, c)
    {
        const char *url = fatia_json_str(c, "url"), *key = fatia_json_str(c, "pool");
        const char *own = fatia_json_str(owner, url);
        json_t *labels;
        /* one endpoint serves one pool: the first pool that names it keeps it */
        if (!own || strcmp(own, key))
            continue;
        labels = json_deep_copy(json_object_get(c, "labels"));
        if (!labels)
            continue;
        json_object_set_new(labels, FATIA_GATEWAY_POOL_LABEL, json_string(key));
        json_object_set_new(labels, FATIA_GATEWAY_MODEL_LABEL,
                            json_string(fatia_json_str(c, "model")));
        if (*fatia_json_str(c, "decider"))
            json_object_set_new(labels, FATIA_PD_DECIDER_LABEL,
                                json_string(fatia_json_str(c, "decider")));
        json_array_append_new(out, json_pack("{s:s,s:o}", "url", url, "labels", labels));
        json_object_set_new(owner, url, json_string("")); /* once */
    }
    fatia_free(order);
    json_decref(cand);
    json_decref(owner);
    json_decref(byns);
    return out;
}

/* Scale from zero: the pools an InferenceService owns (the pool has its name) that have no
 * endpoint, handed to the loop thread when they change. */
static void publish_idle(struct fatia_kubepool *kp, const json_t *pools, const json_t *eps)
{
    json_t *idle = json_array(), *served = json_object(), *ep, *pool;
    size_t i;

    json_array_foreach(eps, i, ep)
    {
        const char *k = fatia_json_str(json_object_get(ep, "labels"), FATIA_GATEWAY_POOL_LABEL);
        if (k)
            json_object_set_new(served, k, json_true());
    }
    json_array_foreach(pools, i, pool)
    {
        const char *name = json_string_value(fatia_json_path(pool, "metadata.name"));
        const char *ns = json_string_value(fatia_json_path(pool, "metadata.namespace"));
        const json_t *refs = fatia_json_path(pool, "metadata.ownerReferences"), *ref;
        bool isvc = false;
        size_t j;
        char key[600];
        json_array_foreach(refs, j, ref)
        {
            const char *kind = fatia_json_str(ref, "kind"), *rn = fatia_json_str(ref, "name");
            isvc = isvc || (kind && rn && name && !strcmp(kind, "InferenceService") &&
                            !strcmp(rn, name) && json_is_true(json_object_get(ref, "controller")));
        }
        if (!name || !ns || !isvc)
            continue;
        snprintf(key, sizeof(key), "%s/%s", ns, name);
        if (!json_object_get(served, key))
            json_array_append_new(idle, json_pack("{s:s,s:s}", "pool", key, "name", name));
    }
    json_decref(served);
    if (kp->published_idle && json_equal(idle, kp->published_idle)) {
        json_decref(idle);
        return;
    }
    json_decref(kp->published_idle);
    kp->published_idle = json_incref(idle);
    pthread_mutex_lock(&kp->mu);
    json_decref(kp->pending_idle);
    kp->pending_idle = idle;
    pthread_mutex_unlock(&kp->mu);
    event_active(kp->ev_update, EV_TIMEOUT, 0);
}

/* API thread: the demands the loop thread queued, as the annotation serving.fatia.io/demand on
 * the InferenceService (a merge patch; the controller wakes a replica, controller/isvc_scale.c). */
static void send_demand(struct fatia_kubepool *kp)
{
    json_t *d;
    const char *key;
    json_t *v;
    char now[40];

    pthread_mutex_lock(&kp->mu);
    d = kp->demand;
    kp->demand = NULL;
    pthread_mutex_unlock(&kp->mu);
    if (!d)
        return;
    fatia_time_format_rfc3339(fatia_now_real_usec(), false, now, sizeof(now));
    json_object_foreach(d, key, v)
    {
        const char *slash = strchr(key, '/');
        struct fatia_buf body;
        struct xfer x = {.kp = kp,
                         .method = "PATCH",
                         .content_type = "Content-Type: application/merge-patch+json"};
        char path[800], patch[200];
        long st;
        if (!slash)
            continue;
        fatia_buf_init(&body, 1u << 20);
        x.body = &body;
        snprintf(path, sizeof(path),
                 "/apis/serving.kserve.io/v1beta1/namespaces/%.*s/inferenceservices/%s",
                 (int)(slash - key), key, slash + 1);
        snprintf(patch, sizeof(patch),
                 "{\"metadata\":{\"annotations\":{\"serving.fatia.io/demand\":\"%s\"}}}", now);
        x.send = patch;
        st = api_get(kp, path, &x, 10);
        if (st != 200)
            fatia_log(FATIA_LOG_WARNING, "gateway: demand for %s: PATCH answered %ld", key, st);
        else
            fatia_log(FATIA_LOG_INFO, "gateway: %s has no ready replica: demand signalled", key);
        fatia_buf_release(&body);
    }
    json_decref(d);
}

/* Loop thread (the gateway's demand hook): at most one demand a second per pool. */
static void on_demand(void *ud, const char *pool)
{
    struct fatia_kubepool *kp = ud;
    fatia_usec_t now = fatia_now_mono_usec();
    json_t *last = json_object_get(kp->demand_sent, pool);

    if (last && now - (fatia_usec_t)json_integer_value(last) < FATIA_USEC_PER_SEC)
        return;
    json_object_set_new(kp->demand_sent, pool, json_integer((json_int_t)now));
    pthread_mutex_lock(&kp->mu);
    if (!kp->demand)
        kp->demand = json_object();
    json_object_set_new(kp->demand, pool, json_true());
    pthread_mutex_unlock(&kp->mu);
}

/* All-pools mode: one LIST of the InferencePools and one of the Pods. */
static int poll_all(struct fatia_kubepool *kp)
{
    json_t *pools = get_list(kp, "/apis/inference.networking.k8s.io/v1/inferencepools");
    json_t *pods = pools ? get_list(kp, "/api/v1/pods") : NULL;
    json_t *eps;

    if (!pools || !pods) {
        json_decref(pools);
        json_decref(pods);
        return -EIO;
    }
    eps = fatia_kubepool_all_endpoints(json_object_get(pools, "items"),
                                       json_object_get(pods, "items"));
    publish_idle(kp, json_object_get(pools, "items"), eps);
    publish_eps(kp, eps);
    json_decref(pools);
    json_decref(pods);
    send_demand(kp);
    return 0;
}

/* Loop thread: apply the latest endpoint set. */
static void on_update(evutil_socket_t fd, short what, void *arg)
{
    struct fatia_kubepool *kp = arg;
    struct fatia_gateway_endpoint *v;
    json_t *eps, *idle;
    size_t n;
    char why[256];

    (void)fd;
    (void)what;
    pthread_mutex_lock(&kp->mu);
    eps = kp->pending;
    kp->pending = NULL;
    idle = kp->pending_idle;
    kp->pending_idle = NULL;
    pthread_mutex_unlock(&kp->mu);
    if (idle)
        fatia_gateway_set_idle_pools(kp->g, idle);
    json_decref(idle);
    if (!eps)
        return;
    n = json_array_size(eps);
    v = fatia_calloc(n ? n : 1, sizeof(*v));
    if (v) {
        for (size_t i = 0; i < n; i++) {
            v[i].url = fatia_json_str(json_array_get(eps, i), "url");
            v[i].labels = json_object_get(json_array_get(eps, i), "labels");
        }
        if (fatia_gateway_set_endpoints(kp->g, v, n, why, sizeof(why)) < 0)
            fatia_log(FATIA_LOG_WARNING, "gateway: pool update: %s, ignoring", why);
        else
            fatia_log(FATIA_LOG_INFO, "gateway: inferencepool %s/%s has %zu endpoints",
                      kp->all ? "(all" : kp->ns, kp->all ? "pools)" : kp->name, n);
    }
    fatia_free(v);
    json_decref(eps);
}

/* ---- list and watch ---- */

static void set_rv(struct fatia_kubepool *kp, const json_t *obj)
{
    const char *rv = json_string_value(fatia_json_path(obj, "metadata.resourceVersion"));
    if (rv)
        snprintf(kp->rv, sizeof(kp->rv), "%s", rv);
}

static int list_pods(struct fatia_kubepool *kp)
{
    struct fatia_buf body = FATIA_BUF_INIT;
    struct xfer x = {kp, &body, NULL};
    char path[3000];
    json_t *o, *item;
    size_t i;
    long st;

    fatia_buf_init(&body, 256u << 20);
    snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=%s", kp->ns,
             kp->selector);
    st = api_get(kp, path, &x, 30);
    if (st != 200) {
        fatia_log(FATIA_LOG_WARNING, "gateway: listing pods of inferencepool %s/%s: %s%ld", kp->ns,
                  kp->name, st < 0 ? "error " : "HTTP ", st);
        fatia_buf_release(&body);
        return st < 0 ? (int)st : -EIO;
    }
    o = json_loadb(body.p, body.len, 0, NULL);
    fatia_buf_release(&body);
    if (!json_is_array(json_object_get(o, "items"))) {
        json_decref(o);
        return -FATIA_E_PARSE;
    }
    json_object_clear(kp->pods);
    json_array_foreach(json_object_get(o, "items"), i, item)
    {
        const char *name = json_string_value(fatia_json_path(item, "metadata.name"));
        if (name)
            json_object_set(kp->pods, name, item);
    }
    set_rv(kp, o);
    json_decref(o);
    publish(kp);
    return 0;
}

static void on_watch_event(struct fatia_kubepool *kp, json_t *ev)
{
    const char *type = fatia_json_str(ev, "type");
    json_t *obj = json_object_get(ev, "object");
    const char *name = json_string_value(fatia_json_path(obj, "metadata.name"));

    if (!type)
        return;
    if (!strcmp(type, "ERROR")) {
        int64_t code = 0;
        fatia_json_int(obj, "code", &code);
        if (code == 410)
            kp->relist = true;
        return;
    }
    set_rv(kp, obj);
    if (!strcmp(type, "BOOKMARK") || !name)
        return;
    if (!strcmp(type, "DELETED"))
        json_object_del(kp->pods, name);
    else
        json_object_set(kp->pods, name, obj);
    publish(kp);
}

static void backoff(struct fatia_kubepool *kp, int *ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += *ms / 1000;
    ts.tv_nsec += (long)(*ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&kp->mu);
    if (!atomic_load(&kp->stop))
        pthread_cond_timedwait(&kp->cv, &kp->mu, &ts);
    pthread_mutex_unlock(&kp->mu);
    *ms = *ms * 2 > 8000 ? 8000 : *ms * 2;
}

static void *api_all_main(void *arg)
{
    struct fatia_kubepool *kp = arg;

    while (!atomic_load(&kp->stop)) {
        int ms = FATIA_KUBEPOOL_POLL_MS;
        backoff(kp, &ms);
        if (!atomic_load(&kp->stop))
            poll_all(kp);
    }
    return NULL;
}

static void *api_main(void *arg)
{
    struct fatia_kubepool *kp = arg;
    int wait_ms = 500;
    bool need_list = false; /* the first list was made at start */

    while (!atomic_load(&kp->stop)) {
        struct xfer x = {kp, NULL, on_watch_event};
        char path[3200];
        long st;
        if (need_list) {
            if (list_pods(kp) < 0) {
                backoff(kp, &wait_ms);
                continue;
            }
            need_list = false;
            wait_ms = 500;
        }
        snprintf(path, sizeof(path),
                 "/api/v1/namespaces/%s/pods?labelSelector=%s&watch=1&resourceVersion=%s"
                 "&allowWatchBookmarks=true&timeoutSeconds=300",
                 kp->ns, kp->selector, kp->rv);
        kp->relist = false;
        fatia_buf_reset(&kp->line);
        st = api_get(kp, path, &x, 330);
        if (atomic_load(&kp->stop))
            break;
        if (kp->relist || st == 410) {
            need_list = true;
        } else if (st != 200) {
            fatia_log(FATIA_LOG_WARNING,
                      "gateway: watching pods of inferencepool %s/%s: %s%ld, "
                      "retrying",
                      kp->ns, kp->name, st < 0 ? "error " : "HTTP ", st);
            backoff(kp, &wait_ms);
            need_list = true;
        } else {
            wait_ms = 500;
        }
    }
    return NULL;
}

/* ---- start and stop ---- */

/* "k=v,k2=v2", URL-escaped for a query string. */
static int build_selector(struct fatia_kubepool *kp)
{
    json_t *match = fatia_json_path(kp->pool, "spec.selector.matchLabels"), *v;
    const char *k;
    size_t j = 0;
    bool first = true;

    json_object_foreach(match, k, v)
    {
        char pair[600];
        int n = snprintf(pair, sizeof(pair), "%s%s=%s", first ? "" : ",", k,
                         json_string_value(v) ? json_string_value(v) : "");
        first = false;
        for (int i = 0; i < n; i++) {
            unsigned char c = (unsigned char)pair[i];
            bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
            if (j + 4 >= sizeof(kp->selector))
                return -FATIA_E_LIMIT;
            j += (size_t)snprintf(kp->selector + j, sizeof(kp->selector) - j,
                                  plain ? "%c" : "%%%02X", c);
        }
    }
    kp->selector[j] = 0;
    return 0;
}

int fatia_kubepool_start(struct event_base *base, struct fatia_gateway *g,
                         const struct fatia_kube_config *kc, const json_t *pool_obj,
                         const char *ns_name, struct fatia_kubepool **ret, char *why, size_t why_n)
{
    struct fatia_kubepool *kp = fatia_calloc(1, sizeof(*kp));
    int r;

    if (!kp)
        return -ENOMEM;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    kp->base = base;
    kp->g = g;
    pthread_mutex_init(&kp->mu, NULL);
    pthread_cond_init(&kp->cv, NULL);
    fatia_buf_init(&kp->line, 64u << 20);
    kp->pods = json_object();
    kp->demand_sent = json_object();
    if (kc->server)
        snprintf(kp->server, sizeof(kp->server), "%s", kc->server);
    kp->insecure = kc->insecure;
    if (kc->token)
        kp->token = fatia_strdup(kc->token);
    if (!kp->token && kc->token_file && !(kp->token = read_file(kc->token_file, NULL))) {
        snprintf(why, why_n, "cannot read token file '%s'", kc->token_file);
        r = -ENOENT;
        goto fail;
    }
    if (kc->ca_file)
        kp->ca_file = fatia_strdup(kc->ca_file);
    if ((r = load_kubeconfig(kp, kc, why, why_n)) < 0)
        goto fail;
    if (!kp->server[0]) {
        snprintf(why, why_n, "no API server: give --server or a kubeconfig");
        r = -EINVAL;
        goto fail;
    }
    {
        size_t sl = strlen(kp->server);
        while (sl && kp->server[sl - 1] == '/')
            kp->server[--sl] = 0;
    }
    if (!pool_obj && ns_name && !strcmp(ns_name, "*")) {
        kp->all = true;
        fatia_gateway_on_demand(g, on_demand, kp);
        snprintf(kp->ns, sizeof(kp->ns), "*");
        snprintf(kp->name, sizeof(kp->name), "*");
        kp->ev_update = event_new(base, -1, 0, on_update, kp);
        if (!kp->ev_update) {
            r = -ENOMEM;
            goto fail;
        }
        if ((r = poll_all(kp)) < 0) {
            snprintf(why, why_n, "cannot list the InferencePools and Pods at %s", kp->server);
            goto fail;
        }
        if (pthread_create(&kp->thread, NULL, api_all_main, kp) != 0) {
            r = -EAGAIN;
            goto fail;
        }
        kp->started = true;
        *ret = kp;
        return 0;
    }
    if (pool_obj) {
        kp->pool = json_incref((json_t *)pool_obj);
    } else {
        const char *slash = ns_name ? strchr(ns_name, '/') : NULL;
        struct fatia_buf body = FATIA_BUF_INIT;
        struct xfer x = {kp, &body, NULL};
        struct fatia_diag diag;
        struct fatia_object *obj = NULL;
        char path[700];
        json_t *o;
        long st;
        if (!slash || slash == ns_name || !slash[1] ||
            (size_t)(slash - ns_name) >= sizeof(kp->ns)) {
            snprintf(why, why_n, "--inference-pool: expected NAMESPACE/NAME");
            r = -EINVAL;
            goto fail;
        }
        snprintf(kp->ns, sizeof(kp->ns), "%.*s", (int)(slash - ns_name), ns_name);
        snprintf(kp->name, sizeof(kp->name), "%s", slash + 1);
        fatia_buf_init(&body, 16u << 20);
        snprintf(path, sizeof(path),
                 "/apis/inference.networking.k8s.io/v1/namespaces/%s/inferencepools/%s", kp->ns,
                 kp->name);
        st = api_get(kp, path, &x, 30);
        if (st != 200) {
            if (st < 0)
                snprintf(why, why_n, "inferencepool %s/%s: %s (%s)", kp->ns, kp->name,
                         fatia_strerror((int)st), kp->server);
            else
                snprintf(why, why_n, "inferencepool %s/%s: HTTP %ld from %s", kp->ns, kp->name, st,
                         kp->server);
            fatia_buf_release(&body);
            r = st == 404 ? -ENOENT : -EIO;
            goto fail;
        }
        o = json_loadb(body.p, body.len, 0, NULL);
        fatia_buf_release(&body);
        fatia_diag_init(&diag);
        r = o ? fatia_object_decode(o, &(struct fatia_decode_opts){0}, NULL, &diag, &obj)
              : -FATIA_E_PARSE;
        if (r < 0) {
            snprintf(why, why_n, "inferencepool %s/%s is invalid%s%s", kp->ns, kp->name,
                     diag.n ? ": " : "", diag.n ? diag.v[0].msg : "");
            fatia_diag_release(&diag);
            json_decref(o);
            goto fail;
        }
        fatia_diag_release(&diag);
        kp->pool = json_incref(obj->obj);
        fatia_object_free(obj);
        json_decref(o);
    }
    if (!kp->ns[0]) {
        const char *ns = json_string_value(fatia_json_path(kp->pool, "metadata.namespace"));
        const char *name = json_string_value(fatia_json_path(kp->pool, "metadata.name"));
        snprintf(kp->ns, sizeof(kp->ns), "%s", ns ? ns : "default");
        snprintf(kp->name, sizeof(kp->name), "%s", name ? name : "?");
    }
    if ((r = build_selector(kp)) < 0) {
        snprintf(why, why_n, "inferencepool %s/%s: selector too long", kp->ns, kp->name);
        goto fail;
    }
    kp->ev_update = event_new(base, -1, 0, on_update, kp);
    if (!kp->ev_update) {
        r = -ENOMEM;
        goto fail;
    }
    if ((r = list_pods(kp)) < 0) {
        snprintf(why, why_n, "cannot list the pods of inferencepool %s/%s at %s", kp->ns, kp->name,
                 kp->server);
        goto fail;
    }
    if (pthread_create(&kp->thread, NULL, api_main, kp) != 0) {
        r = -EAGAIN;
        goto fail;
    }
    kp->started = true;
    *ret = kp;
    return 0;
fail:
    fatia_kubepool_stop(kp);
    return r;
}

void fatia_kubepool_stop(struct fatia_kubepool *kp)
{
    if (!kp)
        return;
    pthread_mutex_lock(&kp->mu);
    atomic_store(&kp->stop, true);
    pthread_cond_broadcast(&kp->cv);
    pthread_mutex_unlock(&kp->mu);
    if (kp->started)
        pthread_join(kp->thread, NULL);
    if (kp->all && kp->g)
        fatia_gateway_on_demand(kp->g, NULL, NULL);
    if (kp->ev_update)
        event_free(kp->ev_update);
    json_decref(kp->pending);
    json_decref(kp->pending_idle);
    json_decref(kp->demand);
    json_decref(kp->demand_sent);
    json_decref(kp->published_idle);
    json_decref(kp->pods);
    json_decref(kp->pool);
    json_decref(kp->published);
    fatia_buf_release(&kp->line);
    fatia_free(kp->token);
    fatia_free(kp->ca_file);
    fatia_free(kp->cert_file);
    fatia_free(kp->key_file);
    fatia_free(kp->ca.p);
    fatia_free(kp->cert.p);
    fatia_free(kp->key.p);
    pthread_mutex_destroy(&kp->mu);
    pthread_cond_destroy(&kp->cv);
    fatia_free(kp);
    curl_global_cleanup();
}
