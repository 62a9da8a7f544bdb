/*
 * demand/profile_inject.c: hardware profile injection into Pods, Jobs and Workloads (the rules
 * are listed in profile.h; this file is how).
 *
 * The injected record. fatia.dev/injected holds compact JSON with sorted keys:
 *     {"profile": "gpu-catalog/notebook",
 *      "paths": {"spec.containers[name=main].resources.requests[cpu]": "2",
 *                "metadata.labels[kueue.x-k8s.io/queue-name]": "gpu",
 *                "spec.tolerations[key=nvidia.com/gpu,operator=Exists,value=,effect=NoSchedule,seconds=]": ""}}
 * A path names a place the way Kubernetes field paths do, with containers and podSets selected
 * by name (indexes move when a user edits a list) and tolerations by their whole identity. The
 * value is what was injected there; a cleanup removes a place only while it still holds that
 * value, so an edit the user made since wins. The record is trusted only from the stored (old)
 * object: a client cannot forge or drop it, it is recomputed on every admission.
 *
 * Life of a workload (the state machine the rules imply):
 *
 *     create ──(profile named)──> inject ──> [mutable] ──unsuspend / admit──> [immutable]
 *                                              │   ^                              │
 *           switch or remove profile:          │   │ cleanup(old record)          │ switch or
 *           cleanup, then inject the new one ──┘───┘ + inject(new)                │ remove:
 *                                                                                 v rejected
 *     mutable = Pod: only at create; Job: while the stored Job is suspended; Notebook: while
 *               the stored one is stopped (annotation kubeflow-resource-stopped);
 *               Workload: while it holds no quota (no status.admission, not QuotaReserved or
 *               Admitted)
 *
 * An update that keeps the profile re-applies it while the object is mutable (a profile edited
 * since, or a value the user removed, is filled in again) and leaves an immutable object as it
 * is. Errors are collected, not stopped at, and nothing is changed unless the whole admission
 * succeeds: the work happens on a copy that replaces the object's contents at the end.
 *
 * Rejected alternative: recording only paths (no values). A cleanup would then delete a request
 * the user set by hand after the injection, which the ODH webhook's "surgical" removal avoids.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/profile.h"
#include "model/object.h"

enum target_kind {
    T_POD,
    T_JOB,
    T_WORKLOAD,
    T_NOTEBOOK /* kubeflow.org Notebook: a pod template, like a Job's */
};

struct adm {
    enum target_kind t;
    const struct fatia_kind *kind;
    char id[320];
    const char *ns; /* the workload's namespace ("default" when unset) */
    struct fatia_diag *diag;
    size_t errors;
    json_t *record; /* paths -> injected values, for the new record */
};

static void err(struct adm *a, const char *path, const char *fmt, ...) FATIA_PRINTF(3, 4);
static void warn(struct adm *a, const char *path, const char *fmt, ...) FATIA_PRINTF(3, 4);

static void err(struct adm *a, const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fatia_diag_vadd(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, a->id, path, fmt, ap);
    va_end(ap);
    a->errors++;
}

static void warn(struct adm *a, const char *path, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fatia_diag_vadd(a->diag, FATIA_DIAG_WARNING, NULL, 0, 0, a->id, path, fmt, ap);
    va_end(ap);
}

#define PATH_NAME      "metadata.annotations[" FATIA_PROFILE_ANN_NAME "]"
#define PATH_NS        "metadata.annotations[" FATIA_PROFILE_ANN_NAMESPACE "]"
#define PATH_CONTAINER "metadata.annotations[" FATIA_PROFILE_ANN_CONTAINER "]"

/* ---- small JSON helpers ---- */

static const char *annotation(const json_t *obj, const char *key)
{
    return fatia_json_str(fatia_json_path(obj, "metadata.annotations"), key);
}

static int set_member(json_t *parent, const char *key, json_t *v)
{
    return v && json_object_set_new(parent, key, v) == 0 ? 0 : -ENOMEM;
}

static int set_annotation(json_t *obj, const char *key, const char *value)
{
    json_t *meta = fatia_json_object_ensure(obj, "metadata");
    json_t *ann = meta ? fatia_json_object_ensure(meta, "annotations") : NULL;

    return ann ? set_member(ann, key, json_string(value)) : -ENOMEM;
}

static void del_annotation(json_t *obj, const char *key)
{
    json_t *ann = fatia_json_path(obj, "metadata.annotations");

    json_object_del(ann, key);
    if (json_is_object(ann) && json_object_size(ann) == 0)
        json_object_del(json_object_get(obj, "metadata"), "annotations");
}

static int record(struct adm *a, const char *path, const char *value)
{
    return set_member(a->record, path, json_string(value));
}

static void qtext(const struct fatia_quantity *q, char *buf, size_t n)
{
    fatia_quantity_format(q, buf, n);
}

/* ---- mutability ---- */

static bool workload_holds_quota(const json_t *wl)
{
    const json_t *conds = fatia_json_path(wl, "status.conditions");
    size_t i;
    json_t *c;

    if (json_is_object(fatia_json_path(wl, "status.admission")))
        return true;
    json_array_foreach(conds, i, c)
    {
        const char *type = fatia_json_str(c, "type"), *status = fatia_json_str(c, "status");
        if (type && status && !strcmp(status, "True") &&
            (!strcmp(type, "QuotaReserved") || !strcmp(type, "Admitted")))
            return true;
    }
    return false;
}

/* NULL when the stored object may still change; otherwise why not. */
static const char *immutable_reason(const struct adm *a, const json_t *old)
{
    if (!old)
        return NULL;
    switch (a->t) {
    case T_POD:
        return "a Pod cannot change its hardware profile once created (create a new Pod)";
    case T_JOB:
        return fatia_json_bool(json_object_get(old, "spec"), "suspend", false)
                   ? NULL
                   : "a Job can change its hardware profile only while suspended "
                     "(set spec.suspend: true first)";
    case T_WORKLOAD:
        return workload_holds_quota(old) ? "a Workload can change its hardware profile only "
                                           "while it is not admitted"
                                         : NULL;
    case T_NOTEBOOK:
        return annotation(old, "kubeflow-resource-stopped")
                   ? NULL
                   : "a Notebook can change its hardware profile only while stopped (set the "
                     "annotation kubeflow-resource-stopped first)";
    }
    return NULL;
}

/* ---- the pod spec a profile applies to ---- */

struct place {
    json_t *spec;      /* the pod spec */
    char prefix[300];  /* record path of the pod spec: "spec.template.spec" */
    char dprefix[300]; /* diag path of the pod spec: "spec.podSets[0].template.spec" */
    json_t *container; /* the target container */
    size_t ci;         /* its index */
    const char *cname;
};

static json_t *find_named(const json_t *arr, const char *name, size_t *ret_i)
{
    size_t i;
    json_t *e;

    json_array_foreach(arr, i, e)
    {
        const char *n = fatia_json_str(e, "name");
        if (n && !strcmp(n, name)) {
            *ret_i = i;
            return e;
        }
    }
    return NULL;
}

static int find_place(struct adm *a, json_t *obj, struct place *pl)
{
    const char *want = annotation(obj, FATIA_PROFILE_ANN_CONTAINER);
    const char *want_ps = NULL;
    char ps_buf[256];
    json_t *ctrs;

    memset(pl, 0, sizeof(*pl));
    switch (a->t) {
    case T_POD:
        pl->spec = json_object_get(obj, "spec");
        snprintf(pl->prefix, sizeof(pl->prefix), "spec");
        break;
    case T_JOB:
    case T_NOTEBOOK:
        pl->spec = fatia_json_path(obj, "spec.template.spec");
        snprintf(pl->prefix, sizeof(pl->prefix), "spec.template.spec");
        break;
    case T_WORKLOAD: {
        const json_t *sets = fatia_json_path(obj, "spec.podSets");
        json_t *ps = json_array_get(sets, 0);
        size_t psi = 0;
        const char *slash = want ? strchr(want, '/') : NULL;
        if (slash) {
            snprintf(ps_buf, sizeof(ps_buf), "%.*s", (int)(slash - want), want);
            want_ps = ps_buf;
            want = slash + 1;
            ps = find_named(sets, want_ps, &psi);
            if (!ps) {
                err(a, PATH_CONTAINER, "the Workload has no podSet named \"%s\"", want_ps);
                return -FATIA_E_INVALID;
            }
        }
        if (!ps) {
            err(a, "spec.podSets", "the Workload has no podSet to apply the hardware profile to");
            return -FATIA_E_INVALID;
        }
        pl->spec = fatia_json_path(ps, "template.spec");
        snprintf(pl->prefix, sizeof(pl->prefix), "spec.podSets[name=%s].template.spec",
                 fatia_json_str(ps, "name") ? fatia_json_str(ps, "name") : "main");
        snprintf(pl->dprefix, sizeof(pl->dprefix), "spec.podSets[%zu].template.spec", psi);
        break;
    }
    }
    if (!pl->dprefix[0])
        snprintf(pl->dprefix, sizeof(pl->dprefix), "%s", pl->prefix);
    ctrs = json_object_get(pl->spec, "containers");
    if (want) {
        pl->container = find_named(ctrs, want, &pl->ci);
        if (!pl->container) {
            err(a, PATH_CONTAINER, "names container \"%s\", which the %s does not have", want,
                a->kind->kind);
            return -FATIA_E_INVALID;
        }
    } else {
        pl->container = json_array_get(ctrs, 0);
        pl->ci = 0;
    }
    if (!json_is_object(pl->container)) {
        err(a, "spec", "the %s has no container to apply the hardware profile to", a->kind->kind);
        return -FATIA_E_INVALID;
    }
    pl->cname = fatia_json_str(pl->container, "name");
    if (!pl->cname)
        pl->cname = "";
    return 0;
}

/* ---- injection ---- */

static int check_range(struct adm *a, const struct fatia_profile *p,
                       const struct fatia_profile_identifier *d, const struct place *pl,
                       const char *which, const json_t *v)
{
    struct fatia_quantity q;
    char path[600], val[64], lo[64], hi[64];

    snprintf(path, sizeof(path), "%s.containers[%zu].resources.%s[%s]", pl->dprefix, pl->ci, which,
             d->identifier);
    if (fatia_quantity_parse_json(v, &q, NULL, 0) < 0)
        return 0; /* the model reports it */
    qtext(&q, val, sizeof(val));
    qtext(&d->min, lo, sizeof(lo));
    if (d->has_max)
        qtext(&d->max, hi, sizeof(hi));
    if (fatia_quantity_cmp(&q, &d->min) < 0)
        err(a, path,
            "container \"%s\" %s %s of %s, below the minimum %s of hardware profile '%s/%s' "
            "(allowed: %s to %s)",
            pl->cname, !strcmp(which, "requests") ? "requests" : "is limited to", val,
            d->identifier, lo, p->namespace ? p->namespace : "", p->name, lo,
            d->has_max ? hi : "no maximum");
    else if (d->has_max && fatia_quantity_cmp(&q, &d->max) > 0)
        err(a, path,
            "container \"%s\" %s %s of %s, above the maximum %s of hardware profile '%s/%s' "
            "(allowed: %s to %s)",
            pl->cname, !strcmp(which, "requests") ? "requests" : "is limited to", val,
            d->identifier, hi, p->namespace ? p->namespace : "", p->name, lo, hi);
    return 0;
}

static int inject_resources(struct adm *a, const struct fatia_profile *p, struct place *pl)
{
    json_t *res, *req, *lim;
    char path[700], val[64];
    int r;

    for (size_t i = 0; i < p->n_ids; i++) {
        const struct fatia_profile_identifier *d = &p->ids[i];
        const json_t *rv = fatia_json_path(pl->container, "resources.requests");
        const json_t *lv = fatia_json_path(pl->container, "resources.limits");
        rv = json_object_get(rv, d->identifier);
        lv = json_object_get(lv, d->identifier);
        if (rv || lv) {
            /* the user's values stay, within the profile's bounds */
            if (rv)
                check_range(a, p, d, pl, "requests", rv);
            if (lv)
                check_range(a, p, d, pl, "limits", lv);
            continue;
        }
        res = fatia_json_object_ensure(pl->container, "resources");
        req = res ? fatia_json_object_ensure(res, "requests") : NULL;
        lim = res ? fatia_json_object_ensure(res, "limits") : NULL;
        if (!req || !lim)
            return -ENOMEM;
        qtext(&d->def, val, sizeof(val));
        if ((r = set_member(req, d->identifier, json_string(val))) < 0 ||
            (r = set_member(lim, d->identifier, json_string(val))) < 0)
            return r;
        snprintf(path, sizeof(path), "%s.containers[name=%s].resources.requests[%s]", pl->prefix,
                 pl->cname, d->identifier);
        if ((r = record(a, path, val)) < 0)
            return r;
        snprintf(path, sizeof(path), "%s.containers[name=%s].resources.limits[%s]", pl->prefix,
                 pl->cname, d->identifier);
        if ((r = record(a, path, val)) < 0)
            return r;
    }
    return 0;
}

/* Sets parent[key] = value (a string), warning when it replaces a different value; records it
 * unless the object already had exactly that value. */
static int inject_string(struct adm *a, json_t *parent, const char *key, const char *value,
                         const char *rec_path, const char *diag_path, const char *what)
{
    const char *cur = fatia_json_str(parent, key);
    int r;

    if (cur && !strcmp(cur, value))
        return 0;
    if (cur)
        warn(a, diag_path, "the hardware profile replaces %s \"%s\" with \"%s\"", what, cur, value);
    r = set_member(parent, key, json_string(value));
    return r < 0 ? r : record(a, rec_path, value);
}

static void toleration_id(const json_t *t, char *buf, size_t n)
{
    const char *op = fatia_json_str(t, "operator");
    json_int_t secs = 0;
    bool has_secs = json_is_integer(json_object_get(t, "tolerationSeconds"));
    char s[32] = "";

    if (has_secs) {
        secs = json_integer_value(json_object_get(t, "tolerationSeconds"));
        snprintf(s, sizeof(s), "%" JSON_INTEGER_FORMAT, secs);
    }
    snprintf(buf, n, "key=%s,operator=%s,value=%s,effect=%s,seconds=%s",
             fatia_json_str(t, "key") ? fatia_json_str(t, "key") : "", op ? op : "Equal",
             fatia_json_str(t, "value") ? fatia_json_str(t, "value") : "",
             fatia_json_str(t, "effect") ? fatia_json_str(t, "effect") : "", s);
}

static int inject_scheduling(struct adm *a, const struct fatia_profile *p, json_t *obj,
                             struct place *pl)
{
    char rpath[1024], dpath[1024];
    int r;

    if (p->sched == FATIA_PROFILE_SCHED_QUEUE) {
        if (a->t == T_WORKLOAD) {
            json_t *spec = json_object_get(obj, "spec");
            const json_t *ref = json_object_get(spec, "priorityClassRef");
            r = inject_string(a, spec, "queueName", p->local_queue, "spec.queueName",
                              "spec.queueName", "the queue");
            if (r < 0 || !p->priority_class)
                return r;
            if (fatia_json_str(ref, "name") &&
                !strcmp(fatia_json_str(ref, "name"), p->priority_class))
                return 0;
            if (ref)
                warn(a, "spec.priorityClassRef",
                     "the hardware profile replaces the priority class \"%s\" with \"%s\"",
                     fatia_json_str(ref, "name") ? fatia_json_str(ref, "name") : "",
                     p->priority_class);
            r = set_member(spec, "priorityClassRef",
                           json_pack("{s:s,s:s,s:s}", "group", "kueue.x-k8s.io", "kind",
                                     "WorkloadPriorityClass", "name", p->priority_class));
            return r < 0 ? r : record(a, "spec.priorityClassRef", p->priority_class);
        } else {
            json_t *meta = fatia_json_object_ensure(obj, "metadata");
            json_t *labels = meta ? fatia_json_object_ensure(meta, "labels") : NULL;
            if (!labels)
                return -ENOMEM;
            r = inject_string(a, labels, FATIA_PROFILE_LABEL_QUEUE, p->local_queue,
                              "metadata.labels[" FATIA_PROFILE_LABEL_QUEUE "]",
                              "metadata.labels[" FATIA_PROFILE_LABEL_QUEUE "]", "the queue label");
            if (r < 0 || !p->priority_class)
                return r;
            return inject_string(a, labels, FATIA_PROFILE_LABEL_PRIORITY, p->priority_class,
                                 "metadata.labels[" FATIA_PROFILE_LABEL_PRIORITY "]",
                                 "metadata.labels[" FATIA_PROFILE_LABEL_PRIORITY "]",
                                 "the priority class label");
        }
    }
    if (p->sched == FATIA_PROFILE_SCHED_NODE) {
        const char *key;
        json_t *v, *sel, *tols, *fresh;
        size_t i, j;
        if (json_object_size(p->node_selector)) {
            sel = fatia_json_object_ensure(pl->spec, "nodeSelector");
            if (!sel)
                return -ENOMEM;
            json_object_foreach(p->node_selector, key, v)
            {
                if (!json_is_string(v))
                    continue;
                snprintf(rpath, sizeof(rpath), "%s.nodeSelector[%s]", pl->prefix, key);
                snprintf(dpath, sizeof(dpath), "%s.nodeSelector[%s]", pl->dprefix, key);
                r = inject_string(a, sel, key, json_string_value(v), rpath, dpath,
                                  "the node selector value");
                if (r < 0)
                    return r;
            }
        }
        if (!json_array_size(p->tolerations))
            return 0;
        tols = json_object_get(pl->spec, "tolerations");
        fresh = json_array();
        if (!fresh)
            return -ENOMEM;
        /* the profile's tolerations first (prepended), then the workload's own */
        json_array_foreach(p->tolerations, i, v)
        {
            char id[600], other[600];
            bool have = false;
            json_t *t;
            toleration_id(v, id, sizeof(id));
            json_array_foreach(tols, j, t)
            {
                toleration_id(t, other, sizeof(other));
                have |= !strcmp(id, other);
            }
            json_array_foreach(fresh, j, t)
            {
                toleration_id(t, other, sizeof(other));
                have |= !strcmp(id, other);
            }
            if (have)
                continue;
            snprintf(rpath, sizeof(rpath), "%s.tolerations[%s]", pl->prefix, id);
            if (json_array_append(fresh, v) < 0 || record(a, rpath, "") < 0) {
                json_decref(fresh);
                return -ENOMEM;
            }
        }
        if (!json_array_size(fresh)) {
            json_decref(fresh);
            return 0;
        }
        json_array_foreach(tols, j, v)
        {
            if (json_array_append(fresh, v) < 0) {
                json_decref(fresh);
                return -ENOMEM;
            }
        }
        return set_member(pl->spec, "tolerations", fresh);
    }
    return 0;
}

/* ---- cleanup of a record ---- */

struct step {
    json_t *container; /* the object or array the step indexes */
    const char *key;   /* object member, or NULL */
    size_t index;      /* array element */
};

static bool matches_value(const json_t *cur, const json_t *want)
{
    char text[64];

    if (!json_is_string(want))
        return false;
    if (json_is_string(cur))
        return !strcmp(json_string_value(cur), json_string_value(want));
    if (json_is_number(cur) && fatia_json_number_text(cur, text, sizeof(text)) == 0)
        return !strcmp(text, json_string_value(want));
    if (json_is_object(cur)) /* priorityClassRef: recorded by name */
        return fatia_json_str(cur, "name") &&
               !strcmp(fatia_json_str(cur, "name"), json_string_value(want));
    return false;
}

static bool prunable(const char *key)
{
    static const char *const keys[] = {"requests",     "limits",      "resources",
                                       "nodeSelector", "tolerations", "labels"};

    for (size_t i = 0; key && i < FATIA_ARRAY_SIZE(keys); i++)
        if (!strcmp(keys[i], key))
            return true;
    return false;
}

/* Removes what path names if it still holds value; prunes the containers this empties. */
static void remove_recorded(json_t *obj, const char *path, const json_t *value)
{
    struct step steps[16];
    char keys[16][700];
    size_t n = 0;
    json_t *cur = obj;
    const char *p = path;

    while (*p && cur && n < FATIA_ARRAY_SIZE(steps)) {
        char seg[700];
        size_t len;
        if (*p == '.') {
            p++;
            continue;
        }
        if (*p == '[') {
            const char *end = strchr(p, ']');
            if (!end)
                return;
            len = (size_t)(end - p - 1);
            if (len >= sizeof(seg))
                return;
            memcpy(seg, p + 1, len);
            seg[len] = '\0';
            p = end + 1;
            if (!strncmp(seg, "name=", 5) || !strncmp(seg, "key=", 4)) {
                size_t i;
                json_t *e, *found = NULL;
                json_array_foreach(cur, i, e)
                {
                    char id[600];
                    if (seg[0] == 'n') {
                        const char *nm = fatia_json_str(e, "name");
                        if (nm && !strcmp(nm, seg + 5)) {
                            found = e;
                            break;
                        }
                    } else {
                        toleration_id(e, id, sizeof(id));
                        if (!strcmp(id, seg)) {
                            found = e;
                            break;
                        }
                    }
                }
                if (!found)
                    return;
                steps[n] = (struct step){cur, NULL, i};
                n++;
                cur = found;
                continue;
            }
        } else {
            len = strcspn(p, ".[");
            if (len >= sizeof(seg))
                return;
            memcpy(seg, p, len);
            seg[len] = '\0';
            p += len;
        }
        if (!json_is_object(cur))
            return;
        snprintf(keys[n], sizeof(keys[n]), "%s", seg);
        steps[n] = (struct step){cur, keys[n], 0};
        n++;
        cur = json_object_get(cur, seg);
    }
    if (!cur || *p || n == 0)
        return;
    /* a toleration is recorded with "" and removed whatever it holds; others by value */
    if (!(json_is_string(value) && !json_string_length(value) && !steps[n - 1].key) &&
        !matches_value(cur, value))
        return;
    for (size_t i = n; i-- > 0;) {
        struct step *s = &steps[i];
        if (s->key)
            json_object_del(s->container, s->key);
        else
            json_array_remove(s->container, s->index);
        /* go on up only while the container just emptied is one of ours to prune */
        if (i == 0 || json_object_size(s->container) + json_array_size(s->container) > 0 ||
            !steps[i - 1].key || !prunable(steps[i - 1].key))
            break;
    }
}

static void cleanup(json_t *obj, const json_t *old_record)
{
    const json_t *paths = json_object_get(old_record, "paths");
    const char *path;
    json_t *v;

    json_object_foreach((json_t *)paths, path, v) remove_recorded(obj, path, v);
}

/* ---- the admission ---- */

static const json_t *parse_record(struct adm *a, const json_t *old, json_t **owned)
{
    const char *text = annotation(old, FATIA_PROFILE_ANN_INJECTED);
    json_t *rec;

    *owned = NULL;
    if (!text)
        return NULL;
    rec = json_loads(text, 0, NULL);
    if (!json_is_object(rec) || !json_is_object(json_object_get(rec, "paths"))) {
        json_decref(rec);
        warn(a, "metadata.annotations[" FATIA_PROFILE_ANN_INJECTED "]",
             "the stored record of injected fields is unreadable: nothing is cleaned up");
        return NULL;
    }
    *owned = rec;
    return rec;
}

/* Looks the profile up and checks it may be used. 0 with *ret; <0 after reporting. */
static int get_profile(struct adm *a, const char *ns, const char *name,
                       fatia_profile_lookup_fn lookup, void *ud, bool new_use,
                       struct fatia_profile **ret)
{
    const json_t *hwp = lookup ? lookup(ud, ns, name) : NULL;
    char why[300];
    int r;

    if (!hwp) {
        if (new_use)
            err(a, PATH_NAME, "hardware profile '%s/%s' not found", ns, name);
        else
            warn(a, PATH_NAME,
                 "hardware profile '%s/%s' no longer exists: the workload keeps what it was "
                 "given",
                 ns, name);
        return -FATIA_E_INVALID;
    }
    r = fatia_profile_parse(hwp, ret, why, sizeof(why));
    if (r == -ENOMEM)
        return r;
    if (r < 0) {
        err(a, PATH_NAME, "hardware profile '%s/%s' is invalid: %s", ns, name, why);
        return -FATIA_E_INVALID;
    }
    if ((*ret)->disabled) {
        if (new_use) {
            err(a, PATH_NAME,
                "hardware profile '%s/%s' is disabled and cannot be used for new "
                "work",
                ns, name);
            fatia_profile_free(*ret);
            *ret = NULL;
            return -FATIA_E_INVALID;
        }
        warn(a, PATH_NAME, "hardware profile '%s/%s' is disabled", ns, name);
    }
    return 0;
}

static int inject(struct adm *a, json_t *obj, const struct fatia_profile *p)
{
    struct place pl;
    int r = find_place(a, obj, &pl);

    if (r < 0)
        return r;
    r = inject_resources(a, p, &pl);
    if (r == 0)
        r = inject_scheduling(a, p, obj, &pl);
    return r;
}

static int write_record(struct adm *a, json_t *obj, const char *ns, const char *name)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    char profile[600];
    json_t *rec;
    int r;

    snprintf(profile, sizeof(profile), "%s/%s", ns, name);
    rec = json_pack("{s:s,s:O}", "profile", profile, "paths", a->record);
    if (!rec)
        return -ENOMEM;
    r = fatia_json_dump_buf(rec, &b, JSON_COMPACT | JSON_SORT_KEYS);
    if (r == 0)
        r = set_annotation(obj, FATIA_PROFILE_ANN_INJECTED, b.p);
    json_decref(rec);
    fatia_buf_release(&b);
    return r;
}

static bool streq(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

int fatia_profile_admit(const struct fatia_kind *kind, const json_t *old, json_t *obj,
                        fatia_profile_lookup_fn lookup, void *ud, struct fatia_diag *diag)
{
    struct adm a = {.kind = kind, .diag = diag};
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = annotation(obj, FATIA_PROFILE_ANN_NAME);
    const char *pns = annotation(obj, FATIA_PROFILE_ANN_NAMESPACE);
    const char *old_name = annotation(old, FATIA_PROFILE_ANN_NAME);
    const char *old_pns = annotation(old, FATIA_PROFILE_ANN_NAMESPACE);
    const char *old_text = annotation(old, FATIA_PROFILE_ANN_INJECTED);
    const char *why_immutable;
    const json_t *old_record = NULL;
    json_t *owned_record = NULL, *work = NULL;
    struct fatia_profile *p = NULL;
    bool changed;
    int r = 0;

    if (!strcmp(kind->kind, "Pod") && !kind->group[0])
        a.t = T_POD;
    else if (!strcmp(kind->kind, "Job") && !strcmp(kind->group, "batch"))
        a.t = T_JOB;
    else if (!strcmp(kind->kind, "Workload") && !strcmp(kind->group, "kueue.x-k8s.io"))
        a.t = T_WORKLOAD;
    else if (!strcmp(kind->kind, "Notebook") && !strcmp(kind->group, "kubeflow.org"))
        a.t = T_NOTEBOOK;
    else
        return 0;
    if (!json_is_object(obj))
        return 0;
    a.ns = fatia_json_str(meta, "namespace");
    if (!a.ns || !*a.ns)
        a.ns = "default";
    fatia_object_format_id(kind, a.ns, fatia_json_str(meta, "name"), a.id, sizeof(a.id));
    if (name && !*name)
        name = NULL;
    if (old_name && !*old_name)
        old_name = NULL;
    /* the profile's namespace defaults to the workload's */
    if (!pns || !*pns)
        pns = a.ns;
    if (!old_pns || !*old_pns)
        old_pns = a.ns;
    changed = !old || !streq(name, old_name) || (name && strcmp(pns, old_pns));
    why_immutable = immutable_reason(&a, old);

    work = json_deep_copy(obj);
    a.record = json_object();
    if (!work || !a.record) {
        r = -ENOMEM;
        goto out_free;
    }
    if (old)
        old_record = parse_record(&a, old, &owned_record);

    if (!changed && why_immutable) {
        /* nothing may change: keep the stored record as it was */
        if (old_text)
            r = set_annotation(work, FATIA_PROFILE_ANN_INJECTED, old_text);
        else
            del_annotation(work, FATIA_PROFILE_ANN_INJECTED);
        goto out_commit;
    }
    if (changed && why_immutable) {
        err(&a, PATH_NAME, "%s", why_immutable);
        r = -FATIA_E_INVALID;
        goto out_free;
    }
    /* mutable from here on: remove what the stored record says was injected */
    if (old_record)
        cleanup(work, old_record);
    del_annotation(work, FATIA_PROFILE_ANN_INJECTED);
    if (!name) {
        if (old_name)
            del_annotation(work, FATIA_PROFILE_ANN_NAMESPACE);
        goto out_commit;
    }
    r = get_profile(&a, pns, name, lookup, ud, changed, &p);
    if (r == -FATIA_E_INVALID && !changed) {
        /* a stale reference to a profile that is gone: admit, keep what was given */
        r = 0;
        json_decref(work);
        work = json_deep_copy(obj);
        if (!work) {
            r = -ENOMEM;
            goto out_free;
        }
        if (old_text)
            r = set_annotation(work, FATIA_PROFILE_ANN_INJECTED, old_text);
        goto out_commit;
    }
    if (r < 0)
        goto out_free;
    if (!annotation(work, FATIA_PROFILE_ANN_NAMESPACE) &&
        (r = set_annotation(work, FATIA_PROFILE_ANN_NAMESPACE, pns)) < 0)
        goto out_free;
    r = inject(&a, work, p);
    if (r < 0 && r != -FATIA_E_INVALID)
        goto out_free;
    if (a.errors) {
        r = -FATIA_E_INVALID;
        goto out_free;
    }
    r = write_record(&a, work, pns, name);
    if (r < 0)
        goto out_free;
out_commit:
    if (r < 0)
        goto out_free;
    /* replace the object's contents with the result */
    if (json_object_clear(obj) < 0 || json_object_update(obj, work) < 0)
        r = -ENOMEM;
out_free:
    if (r == 0 && a.errors)
        r = -FATIA_E_INVALID;
    fatia_profile_free(p);
    json_decref(work);
    json_decref(owned_record);
    json_decref(a.record);
    return r;
}
