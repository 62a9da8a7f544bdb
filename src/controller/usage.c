/*
 * controller/usage.c: the usage controller: one fatia.dev UsageRecord per run interval of each
 * Kueue Workload, kept in the store (docs/selfservice.md, "Usage metering"), and the counters
 * /metrics shows from them.
 *
 * Model (work-queue keys: "<ns>/<workload>", and "uid:<ns>/<uid>" for a Workload that is gone):
 *
 *     Workload admitted (status.admission, Admitted=True), no open record of its uid
 *         -> create a record: start = the Admitted condition's lastTransitionTime, resources =
 *            the sum of status.admission.podSetAssignments[].resourceUsage, the ClusterQueue,
 *            the LocalQueue, the hardware profile (the Workload's annotations, else its pod
 *            set's template's, else its owner Job's: the dashboard's annotations,
 *            fatia.dev/hardware-profile, or the injection record), the owner (kind/name),
 *            the user (the Workload's fatia.dev/creator, which fatiad sets from the
 *            authenticated user and its owners: apiserver/creator.c);
 *     an open record whose Workload is no longer admitted (Finished, evicted: no admission),
 *     or gone  -> end = the Finished condition's lastTransitionTime, else now.
 *
 * At start (caches synced) every open record is looked at: one whose Workload is gone, or ran on
 * while fatiad was down and ended, is closed. So a restart loses nothing but the precision of an
 * end that happened while fatiad was down (counted up to the restart: an upper bound, said in
 * the docs). A record's name is <workload>-<start, Unix seconds>, so creating it twice (a retry
 * after a lost answer) is a harmless 409.
 *
 * Counters: fatia_usage_resource_seconds_total{namespace, cluster_queue, profile, user, resource},
 * computed from the records when /metrics is read (closed ones and the running part of open
 * ones), so they survive restarts and only grow while records are kept.
 *
 * Rejected: accumulating counters in memory (a restart would lose them); a record per Workload
 * (an evicted and re-admitted Workload has several intervals, with different flavors).
 *
 * Cost: records are kept (one per run), so they outnumber everything else; the open record of a
 * Workload and a Workload by uid are found through two indexes kept from the informers' events
 * ("ns/uid" -> the object's key), not by walking every record and Workload per event, which made
 * each Workload event O(records) and a 50,000-pod run quadratic (docs/fleet-scale.md). /metrics
 * sorts the records by series once (O(n log n)) instead of comparing every pair.
 */
#include "base/compat.h"

#include "control/usage.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "controller/ctl_internal.h"
#include "controller/kueue.h"
#include "controller/metrics.h"
#include "controller/usage_ctl.h"
#include "model/quantity.h"

struct usage_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *wls, *recs, *jobs;
    struct fatia_strmap open_by_uid; /* "ns/workloadUID" -> struct uidx (an open record's key) */
    struct fatia_strmap wl_by_uid;   /* "ns/uid" -> struct uidx (a Workload's key) */
};

/* ---- the indexes: "ns/uid" -> an object's informer key ("ns/name") ---- */

struct uidx {
    char *key; /* the object's "ns/name" */
    char id[]; /* "ns/uid": the map's key */
};

static void uidx_id(const char *ns, const char *uid, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", ns ? ns : "", uid ? uid : "");
}

static void uidx_put(struct fatia_strmap *m, const char *ns, const char *uid, const char *key)
{
    char id[600];
    struct uidx *e;
    size_t len;

    uidx_id(ns, uid, id, sizeof(id));
    e = fatia_strmap_get(m, id);
    if (e && !strcmp(e->key, key))
        return;
    if (e) {
        char *k = fatia_strdup(key);
        if (!k)
            goto oom;
        fatia_free(e->key);
        e->key = k;
        return;
    }
    len = strlen(id) + 1;
    if (!(e = fatia_calloc(1, sizeof(*e) + len)))
        goto oom;
    memcpy(e->id, id, len);
    if (!(e->key = fatia_strdup(key)) || fatia_strmap_put(m, e->id, e) < 0) {
        fatia_free(e->key);
        fatia_free(e);
        goto oom;
    }
    return;
oom:
    fatia_error("usage: out of memory indexing %s", key);
}

/* Drops ns/uid's entry when it names key (another object may have taken the uid's entry). */
static void uidx_del(struct fatia_strmap *m, const char *ns, const char *uid, const char *key)
{
    char id[600];
    struct uidx *e;

    uidx_id(ns, uid, id, sizeof(id));
    e = fatia_strmap_get(m, id);
    if (!e || strcmp(e->key, key))
        return;
    fatia_strmap_del(m, id);
    fatia_free(e->key);
    fatia_free(e);
}

static const char *uidx_get(const struct fatia_strmap *m, const char *ns, const char *uid)
{
    char id[600];
    const struct uidx *e;

    uidx_id(ns, uid, id, sizeof(id));
    e = fatia_strmap_get(m, id);
    return e ? e->key : NULL;
}

static void uidx_release(struct fatia_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key) {
            struct uidx *e = m->slots[i].val;
            fatia_free(e->key);
            fatia_free(e);
        }
    fatia_strmap_release(m);
}

static const char *rec_uid(const json_t *rec)
{
    return fatia_json_str(json_object_get(rec, "spec"), "workloadUID");
}

static bool rec_open(const json_t *rec)
{
    return !fatia_json_str(json_object_get(rec, "spec"), "end");
}

/* ---- events ---- */

static void on_workload(void *arg, const json_t *old, const json_t *obj)
{
    struct usage_ctl *u = arg;
    char key[700];

    if (old) {
        fatia_ctlr_obj_key(old, key, sizeof(key));
        uidx_del(&u->wl_by_uid, fatia_ctlr_meta_str(old, "namespace"),
                 fatia_ctlr_meta_str(old, "uid"), key);
    }
    if (obj) {
        fatia_ctlr_obj_key(obj, key, sizeof(key));
        uidx_put(&u->wl_by_uid, fatia_ctlr_meta_str(obj, "namespace"),
                 fatia_ctlr_meta_str(obj, "uid"), key);
    }
    if (obj) {
        fatia_ctlr_obj_key(obj, key, sizeof(key));
    } else {
        snprintf(key, sizeof(key), "uid:%s/%s", fatia_ctlr_meta_str(old, "namespace"),
                 fatia_ctlr_meta_str(old, "uid"));
    }
    fatia_ctlr_wq_add(u->q, key);
}

static void on_record(void *arg, const json_t *old, const json_t *obj)
{
    struct usage_ctl *u = arg;
    const json_t *o = obj ? obj : old;
    char key[700];

    if (old && rec_open(old)) {
        fatia_ctlr_obj_key(old, key, sizeof(key));
        uidx_del(&u->open_by_uid, fatia_ctlr_meta_str(old, "namespace"), rec_uid(old), key);
    }
    if (obj && rec_open(obj)) {
        fatia_ctlr_obj_key(obj, key, sizeof(key));
        uidx_put(&u->open_by_uid, fatia_ctlr_meta_str(obj, "namespace"), rec_uid(obj), key);
    }
    if (obj && !rec_open(obj))
        return;
    snprintf(key, sizeof(key), "uid:%s/%s", fatia_ctlr_meta_str(o, "namespace"),
             fatia_json_str(json_object_get(o, "spec"), "workloadUID"));
    fatia_ctlr_wq_add(u->q, key);
}

/* The open record of the Workload with uid (in ns), or NULL. */
static const json_t *open_record(struct usage_ctl *u, const char *ns, const char *uid)
{
    const char *k = uidx_get(&u->open_by_uid, ns, uid);
    const json_t *rec = k ? fatia_ctlr_informer_get_key(u->recs, k) : NULL;

    return rec && rec_open(rec) && rec_uid(rec) && !strcmp(rec_uid(rec), uid) ? rec : NULL;
}

static const json_t *workload_of_uid(struct usage_ctl *u, const char *ns, const char *uid)
{
    const char *k = uidx_get(&u->wl_by_uid, ns, uid);
    const json_t *wl = k ? fatia_ctlr_informer_get_key(u->wls, k) : NULL;
    const char *wuid = wl ? fatia_ctlr_meta_str(wl, "uid") : NULL;

    return wuid && !strcmp(wuid, uid) ? wl : NULL;
}

static bool running(const json_t *wl)
{
    return wl && !fatia_ctlr_obj_deleting(wl) &&
           json_object_get(json_object_get(wl, "status"), "admission") &&
           fatia_ctlr_cond_true(wl, "Admitted") && !fatia_ctlr_cond_true(wl, "Finished");
}

static const char *ann(const json_t *meta, const char *k)
{
    return fatia_json_str(json_object_get(meta, "annotations"), k);
}

/* The profile named in metadata meta (ns/name in buf; pns_default when no namespace is named):
 * the dashboard's annotations, fatia.dev/hardware-profile (a workbench's pod), or the injection
 * record fatia.dev/injected. false when none. */
static bool profile_in(const json_t *meta, const char *ns_default, char *buf, size_t n)
{
    const char *name = ann(meta, "opendatahub.io/hardware-profile-name");
    const char *pns = ann(meta, "opendatahub.io/hardware-profile-namespace");
    const char *full = ann(meta, "fatia.dev/hardware-profile"), *rec;

    if (name && *name) {
        snprintf(buf, n, "%s/%s", pns && *pns ? pns : ns_default, name);
        return true;
    }
    if (full && *full) {
        snprintf(buf, n, "%s", full);
        return true;
    }
    rec = ann(meta, "fatia.dev/injected");
    if (rec) {
        json_t *j = json_loads(rec, 0, NULL);
        const char *p = fatia_json_str(j, "profile");
        bool ok = p && *p;
        if (ok)
            snprintf(buf, n, "%s", p);
        json_decref(j);
        return ok;
    }
    return false;
}

/* The Workload's hardware profile: its own metadata, its first pod set's template (a Pod's
 * annotations), or its owner Job's. "" when none. */
static void profile_of(struct usage_ctl *u, const json_t *wl, char *buf, size_t n)
{
    const char *ns = fatia_ctlr_meta_str(wl, "namespace");
    const json_t *ref = fatia_ctlr_obj_controller_ref(wl), *job;

    if (profile_in(json_object_get(wl, "metadata"), ns, buf, n) ||
        profile_in(fatia_json_path(json_array_get(fatia_json_path(wl, "spec.podSets"), 0),
                                   "template.metadata"),
                   ns, buf, n))
        return;
    job = ref && !strcmp(fatia_json_str(ref, "kind") ? fatia_json_str(ref, "kind") : "", "Job")
              ? fatia_ctlr_informer_get(u->jobs, ns, fatia_json_str(ref, "name"))
              : NULL;
    if (job && profile_in(json_object_get(job, "metadata"), ns, buf, n))
        return;
    buf[0] = '\0';
}

/* The sum of the pod sets' resourceUsage (a new object). */
static json_t *reserved(const json_t *wl)
{
    const json_t *psas = fatia_json_path(wl, "status.admission.podSetAssignments"), *psa;
    json_t *sum = json_object();
    size_t i;

    json_array_foreach(psas, i, psa)
    {
        const char *res;
        json_t *v;
        json_object_foreach(json_object_get(psa, "resourceUsage"), res, v)
        {
            struct fatia_quantity a = {0}, b;
            char text[64];
            if (fatia_quantity_parse_json(v, &b, NULL, 0) < 0)
                continue;
            if (json_object_get(sum, res))
                (void)fatia_quantity_parse_json(json_object_get(sum, res), &a, NULL, 0);
            if (fatia_quantity_add(&a, &b, &a) < 0)
                continue;
            fatia_quantity_format(&a, text, sizeof(text));
            json_object_set_new(sum, res, json_string(text));
        }
    }
    return sum;
}

static void open_new(struct usage_ctl *u, const json_t *wl, const char *key)
{
    const json_t *adm = fatia_ctlr_cond_get(wl, "Admitted");
    const char *t = fatia_json_str(adm, "lastTransitionTime");
    const json_t *ref = fatia_ctlr_obj_controller_ref(wl);
    fatia_usec_t start;
    char name[300], profile[300], owner[300] = "";
    json_t *rec;

    if (!t || fatia_time_parse_rfc3339(t, &start) < 0)
        start = fatia_ctlr_now(u->ctl);
    snprintf(name, sizeof(name), "%.230s-%lld", fatia_ctlr_meta_str(wl, "name"),
             (long long)(start / FATIA_USEC_PER_SEC));
    profile_of(u, wl, profile, sizeof(profile));
    if (ref)
        snprintf(owner, sizeof(owner), "%s/%s", fatia_json_str(ref, "kind"),
                 fatia_json_str(ref, "name"));
    rec = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:o}}", "apiVersion",
                    "fatia.dev/v1alpha1", "kind", "UsageRecord", "metadata", "name", name,
                    "namespace", fatia_ctlr_meta_str(wl, "namespace"), "spec", "workload",
                    fatia_ctlr_meta_str(wl, "name"), "workloadUID", fatia_ctlr_meta_str(wl, "uid"),
                    "clusterQueue",
                    fatia_json_str(fatia_json_path(wl, "status.admission"), "clusterQueue")
                        ? fatia_json_str(fatia_json_path(wl, "status.admission"), "clusterQueue")
                        : "",
                    "localQueue",
                    fatia_json_str(json_object_get(wl, "spec"), "queueName")
                        ? fatia_json_str(json_object_get(wl, "spec"), "queueName")
                        : "",
                    "profile", profile, "owner", owner, "start", fatia_ctlr_json_time(start),
                    "resources", reserved(wl));
    if (rec && ann(json_object_get(wl, "metadata"), FATIA_ANN_CREATOR))
        json_object_set_new(json_object_get(rec, "spec"), "user",
                            json_string(ann(json_object_get(wl, "metadata"), FATIA_ANN_CREATOR)));
    if (!rec) {
        fatia_error("usage: %s: out of memory building its record", key);
        return;
    }
    fatia_ctlr_create(u->ctl, rec,
                      &(struct op_opts){.wq = u->q, .key = key, .quiet_conflict = true});
    json_decref(rec);
}

static void close_record(struct usage_ctl *u, const json_t *rec, const json_t *wl, const char *key)
{
    const char *t = fatia_json_str(fatia_ctlr_cond_get(wl, "Finished"), "lastTransitionTime");
    const char *start = fatia_json_str(json_object_get(rec, "spec"), "start");
    fatia_usec_t end, s;
    json_t *copy;

    if (!wl || !fatia_ctlr_cond_true(wl, "Finished") || !t || fatia_time_parse_rfc3339(t, &end) < 0)
        end = fatia_ctlr_now(u->ctl);
    if (start && fatia_time_parse_rfc3339(start, &s) == 0 && end < s)
        end = s;
    copy = json_deep_copy(rec);
    if (!copy)
        return;
    json_object_set_new(json_object_get(copy, "spec"), "end", fatia_ctlr_json_time(end));
    fatia_ctlr_update(u->ctl, copy, &(struct op_opts){.wq = u->q, .key = key});
    json_decref(copy);
}

static void reconcile(void *arg, const char *key)
{
    struct usage_ctl *u = arg;
    char ns[300];
    const json_t *wl, *rec;

    if (!strncmp(key, "uid:", 4)) {
        const char *uid = fatia_ctlr_split_key(key + 4, ns, sizeof(ns));
        wl = workload_of_uid(u, ns, uid);
        rec = open_record(u, ns, uid);
        if (rec && !running(wl)) {
            close_record(u, rec, wl, key);
        } else if (wl) {
            char wk[700];
            fatia_ctlr_obj_key(wl, wk, sizeof(wk));
            fatia_ctlr_wq_add(u->q, wk);
        }
        return;
    }
    wl = fatia_ctlr_informer_get_key(u->wls, key);
    if (!wl)
        return; /* its uid key closes its record */
    fatia_ctlr_split_key(key, ns, sizeof(ns));
    rec = open_record(u, ns, fatia_ctlr_meta_str(wl, "uid"));
    if (running(wl) && !rec)
        open_new(u, wl, key);
    else if (!running(wl) && rec)
        close_record(u, rec, wl, key);
}

static void on_synced(void *arg)
{
    struct usage_ctl *u = arg;

    /* every open record: its Workload may have ended, or gone, while fatiad was down */
    INFORMER_FOREACH(u->recs, it)
    {
        const json_t *spec = json_object_get(it->obj, "spec");
        char key[700];
        if (fatia_json_str(spec, "end"))
            continue;
        snprintf(key, sizeof(key), "uid:%s/%s", fatia_ctlr_meta_str(it->obj, "namespace"),
                 fatia_json_str(spec, "workloadUID"));
        fatia_ctlr_wq_add(u->q, key);
    }
}

/* Orders records by series: namespace, queue, profile, user. */
static int series_cmp(const void *pa, const void *pb)
{
    const struct fatia_control_usage_rec *a = pa, *b = pb;
    int c = strcmp(a->ns, b->ns);

    if (!c)
        c = strcmp(a->queue, b->queue);
    if (!c)
        c = strcmp(a->profile, b->profile);
    return c ? c : strcmp(a->user, b->user);
}

void fatia_ctlr_usage_ctl_metrics(struct usage_ctl *u, struct fatia_buf *out)
{
    struct fatia_control_usage_rec *recs;
    size_t n = 0, i = 0;
    json_t *rows;

    if (!u)
        return;
    INFORMER_FOREACH(u->recs, it) n++;
    recs = fatia_calloc(n ? n : 1, sizeof(*recs));
    if (!recs)
        return;
    INFORMER_FOREACH(u->recs, it)
    {
        char why[200];
        if (fatia_control_usage_rec_decode(it->obj, &recs[i], why, sizeof(why)) == 0)
            i++;
    }
    fatia_ctlr_metric_header(out, "fatia_usage_resource_seconds_total", "counter",
                             "Reserved resource x seconds of admitted workloads (UsageRecords), "
                             "per namespace, ClusterQueue, hardware profile, user and resource");
    /* one report per (namespace, queue, profile, user): the records sorted by series, each run
     * of one series reported grouped by namespace */
    qsort(recs, i, sizeof(*recs), series_cmp);
    for (size_t a = 0, m; a < i; a += m) {
        for (m = 1; a + m < i && !series_cmp(&recs[a], &recs[a + m]); m++)
            ;
        rows = fatia_control_usage_report(&recs[a], m, 0, 0, fatia_ctlr_now(u->ctl),
                                          FATIA_USAGE_BY_NAMESPACE);
        for (size_t k = 0; rows && k < json_array_size(rows); k++) {
            const json_t *row = json_array_get(rows, k);
            char labels[800];
            fatia_ctlr_metric_labels(labels, sizeof(labels), "namespace", recs[a].ns,
                                     "cluster_queue", recs[a].queue, "profile", recs[a].profile,
                                     "user", recs[a].user, "resource",
                                     fatia_json_str(row, "resource"), NULL);
            fatia_ctlr_metric_sample(out, "fatia_usage_resource_seconds_total", labels,
                                     json_real_value(json_object_get(row, "value")) * 3600);
        }
        json_decref(rows);
    }
    fatia_free(recs);
}

int fatia_ctlr_usage_ctl_new(struct ctl *c, struct usage_ctl **ret)
{
    const struct fatia_kind *rk = fatia_kind_find("fatia.dev/v1alpha1", "UsageRecord", NULL);
    struct usage_ctl *u;

    if (!rk)
        return -EINVAL;
    u = fatia_calloc(1, sizeof(*u));
    if (!u)
        return -ENOMEM;
    u->ctl = c;
    fatia_strmap_init(&u->open_by_uid);
    fatia_strmap_init(&u->wl_by_uid);
    u->q = fatia_ctlr_wq_new(c, "usage", reconcile, u);
    u->wls = fatia_ctlr_informer(c, fatia_kind_find("kueue.x-k8s.io/v1beta2", "Workload", NULL));
    u->recs = fatia_ctlr_informer(c, rk);
    u->jobs = fatia_ctlr_informer(c, fatia_kind_find("batch/v1", "Job", NULL));
    if (!u->q || !u->wls || !u->recs || !u->jobs ||
        fatia_ctlr_informer_on(u->wls, on_workload, u) < 0 ||
        fatia_ctlr_informer_on(u->recs, on_record, u) < 0 ||
        fatia_ctlr_on_synced(c, on_synced, u) < 0) {
        fatia_ctlr_usage_ctl_free(u);
        return -ENOMEM;
    }
    *ret = u;
    return 0;
}

void fatia_ctlr_usage_ctl_free(struct usage_ctl *u)
{
    if (!u)
        return;
    fatia_ctlr_wq_free(u->q);
    uidx_release(&u->open_by_uid);
    uidx_release(&u->wl_by_uid);
    fatia_free(u);
}
