/*
 * agent/podspec.c: a Pod object → what its processes get (see podspec.h). Pure: no I/O, no clock.
 *
 * The device contract (docs/agent.md) is the placement controller's fatia.dev/devices
 * annotation: a JSON array with one entry per device a container got. Entries are validated here
 * into errors that name the entry and the field, because the annotation is outside input to the
 * agent: a pod whose annotation cannot be read is failed, not guessed at.
 *
 * Device variables override the pod's own: a pod that sets CUDA_VISIBLE_DEVICES itself would
 * otherwise escape its slice by accident. A container with no device gets CUDA_VISIBLE_DEVICES=""
 * and NVIDIA_VISIBLE_DEVICES=void, so that a process on the host sees no GPU rather than all.
 */
#include "base/compat.h"

#include "agent/podspec.h"

#include <arpa/inet.h>

#include <errno.h>

#include "agent/podrefs.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "model/quantity.h"
#include "vgpu/config.h"

/* ---- environments ---- */

static ssize_t env_find(const struct fatia_env *e, const char *name, size_t len)
{
    for (size_t i = 0; i < e->n; i++) {
        if (!strncmp(e->v[i], name, len) && e->v[i][len] == '=')
            return (ssize_t)i;
    }
    return -1;
}

int fatia_env_set(struct fatia_env *e, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    ssize_t at = env_find(e, name, nl);
    char *s = fatia_malloc(nl + vl + 2);

    if (!s)
        return -ENOMEM;
    memcpy(s, name, nl);
    s[nl] = '=';
    memcpy(s + nl + 1, value, vl + 1);
    if (at >= 0) {
        fatia_free(e->v[at]);
        e->v[at] = s;
        return 0;
    }
    if (e->n + 1 >= e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 16;
        char **v = fatia_reallocarray(e->v, cap, sizeof(char *));
        if (!v) {
            fatia_free(s);
            return -ENOMEM;
        }
        e->v = v;
        e->cap = cap;
    }
    e->v[e->n++] = s;
    e->v[e->n] = NULL;
    return 0;
}

const char *fatia_env_get(const struct fatia_env *e, const char *name)
{
    ssize_t at = env_find(e, name, strlen(name));

    return at >= 0 ? e->v[at] + strlen(name) + 1 : NULL;
}

void fatia_env_release(struct fatia_env *e)
{
    for (size_t i = 0; i < e->n; i++)
        fatia_free(e->v[i]);
    fatia_free(e->v);
    *e = (struct fatia_env){0};
}

int fatia_env_put(void *ctx, const char *name, const char *value)
{
    return fatia_env_set(ctx, name, value);
}

char *fatia_env_expand(const char *s, const struct fatia_env *env)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    int r = 0;

    for (const char *p = s; *p && r == 0;) {
        if (p[0] == '$' && p[1] == '$') {
            r = fatia_buf_putc(&b, '$');
            p += 2;
        } else if (p[0] == '$' && p[1] == '(') {
            const char *close = strchr(p + 2, ')');
            ssize_t at = close ? env_find(env, p + 2, (size_t)(close - p - 2)) : -1;
            if (at >= 0 && close > p + 2) {
                r = fatia_buf_puts(&b, env->v[at] + (close - p - 2) + 1);
                p = close + 1;
            } else if (close) {
                r = fatia_buf_append(&b, p, (size_t)(close - p + 1));
                p = close + 1;
            } else {
                r = fatia_buf_puts(&b, p);
                break;
            }
        } else {
            r = fatia_buf_putc(&b, *p++);
        }
    }
    if (r < 0) {
        fatia_buf_release(&b);
        return NULL;
    }
    return fatia_buf_steal(&b);
}

/* ---- devices ---- */

const char *fatia_dev_kind_name(enum fatia_dev_kind k)
{
    static const char *const names[] = {"whole", "timeslice", "mps", "mig", "fraction"};

    return (unsigned)k < FATIA_ARRAY_SIZE(names) ? names[k] : "?";
}

static int minor_of_slice(const char *slice)
{
    int v = 0, digits = 0;

    if (strncmp(slice, "gpu-", 4))
        return -1;
    for (const char *p = slice + 4; *p >= '0' && *p <= '9'; p++, digits++) {
        v = v * 10 + (*p - '0');
        if (v > 1000000)
            return -1;
    }
    return digits ? v : -1;
}

static bool bytes_field(const json_t *o, const char *key, uint64_t *ret)
{
    const json_t *v = json_object_get(o, key);

    if (!v) {
        *ret = 0;
        return true;
    }
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *ret = (uint64_t)json_integer_value(v);
        return true;
    }
    return json_is_string(v) && fatia_quantity_parse_bytes(json_string_value(v), ret) == 0;
}

int fatia_pod_devices_parse(const json_t *pod, struct fatia_pod_devices *ret, char *why,
                            size_t why_n)
{
    const json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
    const char *text = fatia_json_str(ann, FATIA_ANN_DEVICES);
    const json_t *ctrs = json_object_get(json_object_get(pod, "spec"), "containers");
    const char *first = fatia_json_str(json_array_get(ctrs, 0), "name");
    struct fatia_pod_devices d = {0};
    json_error_t je;
    size_t i;
    json_t *e;

    if (!text) {
        *ret = d;
        return 0;
    }
    d.root = json_loads(text, 0, &je);
    if (!json_is_array(d.root)) {
        snprintf(why, why_n, "annotation %s: not a JSON array%s%s", FATIA_ANN_DEVICES,
                 d.root ? "" : ": ", d.root ? "" : je.text);
        json_decref(d.root);
        return -FATIA_E_INVALID;
    }
    d.n = json_array_size(d.root);
    d.v = d.n ? fatia_calloc(d.n, sizeof(*d.v)) : NULL;
    if (d.n && !d.v) {
        json_decref(d.root);
        return -ENOMEM;
    }
    json_array_foreach(d.root, i, e)
    {
        struct fatia_pod_device *x = &d.v[i];
        const char *kind = fatia_json_str(e, "kind"), *bad = NULL;
        const json_t *mps = json_object_get(e, "mps");
        int64_t v;

        if (!json_is_object(e)) {
            bad = "";
            snprintf(why, why_n, "annotation %s[%zu]: not an object", FATIA_ANN_DEVICES, i);
            goto fail;
        }
        x->container = fatia_json_str(e, "container");
        if (!x->container)
            x->container = first;
        x->slice = fatia_json_str(e, "slice");
        x->uuid = fatia_json_str(e, "uuid");
        x->mig_uuid = fatia_json_str(e, "migUuid");
        x->claim = fatia_json_str(e, "claim");
        x->gpu_index = fatia_json_int(e, "gpuIndex", &v) && v >= 0 && v < 4096 ? (int)v : -1;
        x->minor = fatia_json_int(e, "minor", &v) && v >= 0 && v < 1000000 ? (int)v : -1;
        if (!x->slice)
            bad = "slice";
        else if (!kind)
            bad = "kind";
        else if (!strcmp(kind, "whole"))
            x->kind = FATIA_DEV_WHOLE;
        else if (!strcmp(kind, "timeslice"))
            x->kind = FATIA_DEV_TIMESLICE;
        else if (!strcmp(kind, "mps"))
            x->kind = FATIA_DEV_MPS;
        else if (!strcmp(kind, "mig"))
            x->kind = FATIA_DEV_MIG;
        else if (!strcmp(kind, "fraction"))
            x->kind = FATIA_DEV_FRACTION;
        else
            bad = "kind";
        if (!bad && (!x->uuid || !x->uuid[0] || strchr(x->uuid, ',')))
            bad = "uuid";
        if (!bad && x->kind == FATIA_DEV_MIG && (!x->mig_uuid || !x->mig_uuid[0]))
            bad = "migUuid";
        if (!bad && !bytes_field(e, "memoryBytes", &x->memory_bytes))
            bad = "memoryBytes";
        if (!bad && mps) {
            if (!json_is_object(mps))
                bad = "mps";
            else if (json_object_get(mps, "threadPercentage") &&
                     (!fatia_json_int(mps, "threadPercentage", &v) || v < 1 || v > 100))
                bad = "mps.threadPercentage";
            else {
                x->mps_threads = json_object_get(mps, "threadPercentage") ? (int)v : 0;
                if (!bytes_field(mps, "pinnedMemoryBytes", &x->mps_pinned))
                    bad = "mps.pinnedMemoryBytes";
            }
        }
        if (!bad && !x->container)
            bad = "container";
        if (bad) {
            snprintf(why, why_n, "annotation %s[%zu].%s: %s", FATIA_ANN_DEVICES, i,
                     bad[0] ? bad : "?",
                     !strcmp(bad, "kind") ? "expected whole, timeslice, mps, mig or fraction"
                                          : "missing or invalid");
            goto fail;
        }
        if (x->minor < 0)
            x->minor = minor_of_slice(x->slice);
        continue;
fail:
        fatia_free(d.v);
        json_decref(d.root);
        return -FATIA_E_INVALID;
    }
    *ret = d;
    return 0;
}

void fatia_pod_devices_release(struct fatia_pod_devices *d)
{
    fatia_free(d->v);
    json_decref(d->root);
    *d = (struct fatia_pod_devices){0};
}

uint64_t fatia_pod_device_cap(const struct fatia_pod_device *x)
{
    if (x->kind == FATIA_DEV_TIMESLICE || x->kind == FATIA_DEV_FRACTION)
        return x->memory_bytes;
    if (x->kind == FATIA_DEV_MPS)
        return x->mps_pinned ? x->mps_pinned : x->memory_bytes;
    return 0;
}

static bool capped(const struct fatia_pod_device *x)
{
    return fatia_pod_device_cap(x) != 0;
}

void fatia_pod_devices_acct_name(const struct fatia_pod_devices *d, const char *container,
                                 char *buf, size_t n)
{
    size_t len = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->v[i].container, container) || !capped(&d->v[i]))
            continue;
        len += (size_t)snprintf(buf + len, len < n ? n - len : 0, "%s%s", len ? "+" : "",
                                d->v[i].slice);
        if (len >= n) {
            buf[n - 1] = '\0';
            return;
        }
    }
}

int fatia_pod_devices_env(const struct fatia_pod_devices *d, const char *container,
                          const struct fatia_devenv_opts *o, struct fatia_env *env, char *why,
                          size_t why_n)
{
    struct fatia_buf list = FATIA_BUF_INIT, slices = FATIA_BUF_INIT, pinned = FATIA_BUF_INIT;
    const struct fatia_pod_device *mine[FATIA_VGPU_MAX_DEVICES];
    unsigned n = 0, n_capped = 0, n_mps = 0;
    int threads = 0, r = 0;

    for (size_t i = 0; i < d->n; i++) {
        if (strcmp(d->v[i].container, container))
            continue;
        if (n == FATIA_VGPU_MAX_DEVICES) {
            snprintf(why, why_n, "container '%s': more than %d devices", container,
                     FATIA_VGPU_MAX_DEVICES);
            return -EINVAL;
        }
        mine[n++] = &d->v[i];
    }
    if (n == 0) {
        if ((r = fatia_env_set(env, "CUDA_VISIBLE_DEVICES", "")) < 0 ||
            (r = fatia_env_set(env, "NVIDIA_VISIBLE_DEVICES", "void")) < 0)
            return r;
        return 0;
    }
    for (unsigned i = 0; i < n && r == 0; i++) {
        const struct fatia_pod_device *x = mine[i];
        const char *id = x->kind == FATIA_DEV_MIG ? x->mig_uuid : x->uuid;

        r = fatia_buf_printf(&list, "%s%s", i ? "," : "", id);
        if (r == 0)
            r = fatia_buf_printf(&slices, "%s%s", i ? "," : "", x->slice);
        if (capped(x))
            n_capped++;
        if (x->kind == FATIA_DEV_MPS) {
            n_mps++;
            if (x->mps_threads && (!threads || x->mps_threads < threads))
                threads = x->mps_threads;
            if (x->mps_pinned && r == 0)
                r = fatia_buf_printf(&pinned, "%s%u=%" PRIu64 "M", pinned.len ? "," : "", i,
                                     FATIA_MAX(x->mps_pinned >> 20, (uint64_t)1));
        }
    }
    if (r < 0)
        goto out;
    if ((r = fatia_env_set(env, "CUDA_VISIBLE_DEVICES", list.p)) < 0 ||
        (r = fatia_env_set(env, "NVIDIA_VISIBLE_DEVICES", list.p)) < 0 ||
        (r = fatia_env_set(env, "FATIA_SLICES", slices.p)) < 0)
        goto out;
    if (n_capped && !(o && o->in_container)) {
        const char *own = fatia_env_get(env, "LD_PRELOAD");
        char preload[8192], name[48], value[32];

        if (!o || !o->vgpu_lib || !o->acct_file) {
            snprintf(why, why_n,
                     "container '%s': a capped slice needs the interposer library "
                     "and an accounting file",
                     container);
            r = -EINVAL;
            goto out;
        }
        snprintf(preload, sizeof(preload), "%s%s%s", o->vgpu_lib, own && own[0] ? ":" : "",
                 own && own[0] ? own : "");
        if ((r = fatia_env_set(env, "LD_PRELOAD", preload)) < 0 ||
            (r = fatia_env_set(env, "FATIA_VGPU_DEVICE_UUIDS", list.p)) < 0 ||
            (r = fatia_env_set(env, "FATIA_VGPU_SHARED_FILE", o->acct_file)) < 0)
            goto out;
        for (unsigned i = 0; i < n; i++) {
            if (!capped(mine[i]))
                continue;
            snprintf(name, sizeof(name), "FATIA_VGPU_MEMORY_LIMIT_%u", i);
            snprintf(value, sizeof(value), "%" PRIu64, fatia_pod_device_cap(mine[i]));
            if ((r = fatia_env_set(env, name, value)) < 0)
                goto out;
        }
        if (o->vgpu_log && (r = fatia_env_set(env, "FATIA_VGPU_LOG", o->vgpu_log)) < 0)
            goto out;
    }
    if (n_mps) {
        if (o && o->mps_pipe_dir &&
            (r = fatia_env_set(env, "CUDA_MPS_PIPE_DIRECTORY", o->mps_pipe_dir)) < 0)
            goto out;
        if (threads) {
            char v[16];
            snprintf(v, sizeof(v), "%d", threads);
            if ((r = fatia_env_set(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", v)) < 0)
                goto out;
        }
        if (pinned.len &&
            (r = fatia_env_set(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT", pinned.p)) < 0)
            goto out;
    }
out:
    fatia_buf_release(&list);
    fatia_buf_release(&slices);
    fatia_buf_release(&pinned);
    return r;
}

/* ---- containers ---- */

static const char *label_key(const char *path, const char *prefix, char *buf, size_t n)
{
    size_t pl = strlen(prefix), len;

    /* metadata.labels['key'] */
    if (strncmp(path, prefix, pl) || path[pl] != '[' ||
        (path[pl + 1] != '\'' && path[pl + 1] != '"'))
        return NULL;
    len = strlen(path + pl + 2);
    if (len < 2 || path[pl + 2 + len - 1] != ']' || path[pl + 2 + len - 2] != path[pl + 1] ||
        len - 2 >= n)
        return NULL;
    memcpy(buf, path + pl + 2, len - 2);
    buf[len - 2] = '\0';
    return buf;
}

static int field_ref(const json_t *pod, const char *path, const char *pod_ip, const char **ret)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const json_t *spec = json_object_get(pod, "spec");
    char key[320];

    if (!strcmp(path, "metadata.name"))
        *ret = fatia_json_str(meta, "name");
    else if (!strcmp(path, "metadata.namespace"))
        *ret = fatia_json_str(meta, "namespace");
    else if (!strcmp(path, "metadata.uid"))
        *ret = fatia_json_str(meta, "uid");
    else if (!strcmp(path, "spec.nodeName"))
        *ret = fatia_json_str(spec, "nodeName");
    else if (!strcmp(path, "spec.serviceAccountName"))
        *ret = fatia_json_str(spec, "serviceAccountName");
    else if (pod_ip && (!strcmp(path, "status.podIP") || !strcmp(path, "status.podIPs")))
        *ret = pod_ip; /* a container's own address (podrefs.h) */
    else if (!strcmp(path, "status.hostIP") || !strcmp(path, "status.podIP") ||
             !strcmp(path, "status.hostIPs") || !strcmp(path, "status.podIPs"))
        *ret = "127.0.0.1"; /* processes share the host's network */
    else if (label_key(path, "metadata.labels", key, sizeof(key)))
        *ret = fatia_json_str(json_object_get(meta, "labels"), key);
    else if (label_key(path, "metadata.annotations", key, sizeof(key)))
        *ret = fatia_json_str(json_object_get(meta, "annotations"), key);
    else
        return -EINVAL;
    if (!*ret)
        *ret = "";
    return 0;
}

static int quantity_of(const json_t *ctr, const char *which, const char *res,
                       struct fatia_quantity *q)
{
    const json_t *v =
        json_object_get(json_object_get(json_object_get(ctr, "resources"), which), res);

    if (!v)
        return -ENOENT;
    return fatia_quantity_parse_json(v, q, NULL, 0);
}

static int resource_ref(const json_t *pod, const json_t *self, const json_t *ref, char *buf,
                        size_t n)
{
    const char *cname = fatia_json_str(ref, "containerName"),
               *res = fatia_json_str(ref, "resource");
    const json_t *ctr = self;
    struct fatia_quantity q, div = fatia_quantity_from_int(1, 0);
    const json_t *dv = json_object_get(ref, "divisor");
    char which[16];
    const char *dot;

    if (cname) {
        size_t i;
        json_t *c;
        ctr = NULL;
        json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
        {
            if (!strcmp(fatia_json_str(c, "name") ? fatia_json_str(c, "name") : "", cname))
                ctr = c;
        }
        if (!ctr)
            return -EINVAL;
    }
    if (!res || !(dot = strchr(res, '.')) || (size_t)(dot - res) >= sizeof(which))
        return -EINVAL;
    snprintf(which, sizeof(which), "%.*s", (int)(dot - res), res);
    if (strcmp(which, "limits") && strcmp(which, "requests"))
        return -EINVAL;
    if (strcmp(dot + 1, "cpu") && strcmp(dot + 1, "memory") && strcmp(dot + 1, "ephemeral-storage"))
        return -EINVAL;
    if (dv && fatia_quantity_parse_json(dv, &div, NULL, 0) < 0)
        return -EINVAL;
    if (quantity_of(ctr, which, dot + 1, &q) < 0) {
        /* kubelet: an unset limit reads as the node's allocatable; here, 0 means "none" */
        snprintf(buf, n, "0");
        return 0;
    }
    {
        /* ceil(q / divisor), as kubelet's ExtractContainerResourceValue */
        int64_t qm = fatia_quantity_milli(&q), dm = fatia_quantity_milli(&div);
        if (dm <= 0)
            return -EINVAL;
        snprintf(buf, n, "%" PRId64, (qm + dm - 1) / dm);
    }
    return 0;
}

int fatia_podspec_env(const json_t *pod, const json_t *container, const char *home,
                      struct fatia_env *env, char *why, size_t why_n)
{
    return fatia_podspec_env_refs(pod, container, home, NULL, env, why, why_n);
}

/* kubelet's messages (pkg/kubelet/kubelet_pods.go, makeEnvironmentVariables): the object's
 * NotFound error, or "couldn't find key K in ConfigMap ns/name"; never a value */
static int ref_missing(const struct fatia_podrefs *refs, bool secret, const char *name, char *why,
                       size_t why_n)
{
    (void)refs;
    (void)why_n;
    snprintf(why, why_n, "%s \"%s\" not found", secret ? "secret" : "configmap", name);
    return -ESRCH;
}

/* A configMapKeyRef / secretKeyRef: *ret a new value, or NULL when optional and absent. */
static int key_ref(const struct fatia_podrefs *refs, const json_t *ref, bool secret, char **ret,
                   char *why, size_t why_n)
{
    const char *name = fatia_json_str(ref, "name"), *key = fatia_json_str(ref, "key");
    bool optional = fatia_json_bool(ref, "optional", false);
    const json_t *obj = refs && name && name[0] ? refs->get(refs->ctx, secret, name) : NULL;
    int r;

    *ret = NULL;
    if (!obj)
        return optional ? 0 : ref_missing(refs, secret, name ? name : "", why, why_n);
    r = fatia_pod_ref_value(obj, secret, key ? key : "", ret, NULL);
    if (r == -ENODATA) {
        if (optional)
            return 0;
        snprintf(why, why_n, "couldn't find key %s in %s %s/%s", key ? key : "",
                 secret ? "Secret" : "ConfigMap", refs->ns ? refs->ns : "", name);
        return -ESRCH;
    }
    if (r == -FATIA_E_INVALID)
        snprintf(why, why_n, "%s %s/%s: key %s: illegal base64 data",
                 secret ? "Secret" : "ConfigMap", refs->ns ? refs->ns : "", name, key);
    return r;
}

/* One envFrom source: every key of the object, prefixed; keys that are no environment variable
 * name (empty, or with '=') are skipped, as kubelet does (it reports them in an Event). */
static int env_from(const struct fatia_podrefs *refs, const json_t *src, bool secret,
                    const char *prefix, struct fatia_env *env, char *why, size_t why_n)
{
    const char *name = fatia_json_str(src, "name"), *key;
    const json_t *obj = refs && name && name[0] ? refs->get(refs->ctx, secret, name) : NULL;
    json_t *v;
    int r = 0;

    if (!obj)
        return fatia_json_bool(src, "optional", false)
                   ? 0
                   : ref_missing(refs, secret, name ? name : "", why, why_n);
    /* kubelet sets data keys only: a ConfigMap's binaryData is not in envFrom */
    {
        json_object_foreach(json_object_get(obj, "data"), key, v)
        {
            char *val = NULL, *full;
            size_t pl = strlen(prefix), kl = strlen(key);
            if (!kl || strchr(key, '='))
                continue;
            r = fatia_pod_ref_value(obj, secret, key, &val, NULL);
            if (r == -FATIA_E_INVALID)
                snprintf(why, why_n, "%s %s/%s: key %s: illegal base64 data",
                         secret ? "Secret" : "ConfigMap", refs->ns ? refs->ns : "", name, key);
            if (r < 0)
                break;
            full = fatia_malloc(pl + kl + 1);
            if (!full) {
                fatia_free(val);
                return -ENOMEM;
            }
            memcpy(full, prefix, pl);
            memcpy(full + pl, key, kl + 1);
            r = fatia_env_set(env, full, val);
            fatia_free(full);
            fatia_free(val);
        }
    }
    return r;
}

int fatia_podspec_env_refs(const json_t *pod, const json_t *container, const char *home,
                           const struct fatia_podrefs *refs, struct fatia_env *env, char *why,
                           size_t why_n)
{
    const char *cname = fatia_json_str(container, "name");
    const json_t *list = json_object_get(container, "env");
    const json_t *from = json_object_get(container, "envFrom");
    size_t i;
    json_t *e;
    int r;

    if ((r = fatia_env_set(env, "PATH", FATIA_AGENT_DEFAULT_PATH)) < 0 ||
        (r = fatia_env_set(env, "HOSTNAME",
                           fatia_json_str(json_object_get(pod, "metadata"), "name"))) < 0 ||
        (home && (r = fatia_env_set(env, "HOME", home)) < 0))
        return r;
    json_array_foreach(from, i, e)
    {
        const json_t *src = json_object_get(e, "configMapRef");
        const char *prefix = fatia_json_str(e, "prefix");
        bool secret = false;
        if (!src) {
            src = json_object_get(e, "secretRef");
            secret = true;
        }
        if ((r = env_from(refs, src, secret, prefix ? prefix : "", env, why, why_n)) < 0)
            return r;
    }
    json_array_foreach(list, i, e)
    {
        const char *name = fatia_json_str(e, "name"), *value = fatia_json_str(e, "value");
        const json_t *vf = json_object_get(e, "valueFrom");
        char buf[64];
        char *x, *owned = NULL;

        if (!name)
            continue;
        if (vf) {
            const json_t *f = json_object_get(vf, "fieldRef");
            const json_t *rr = json_object_get(vf, "resourceFieldRef");
            const json_t *cm = json_object_get(vf, "configMapKeyRef");
            const json_t *sk = json_object_get(vf, "secretKeyRef");
            if (f) {
                const char *path = fatia_json_str(f, "fieldPath");
                if (!path || field_ref(pod, path, refs ? refs->pod_ip : NULL, &value) < 0) {
                    snprintf(why, why_n,
                             "container '%s': env[%zu] (%s): unsupported fieldPath "
                             "'%s'",
                             cname, i, name, path ? path : "");
                    return -FATIA_E_INVALID;
                }
            } else if (rr) {
                if (resource_ref(pod, container, rr, buf, sizeof(buf)) < 0) {
                    snprintf(why, why_n,
                             "container '%s': env[%zu] (%s): unsupported "
                             "resourceFieldRef",
                             cname, i, name);
                    return -FATIA_E_INVALID;
                }
                value = buf;
            } else if (cm || sk) {
                r = key_ref(refs, cm ? cm : sk, sk != NULL, &owned, why, why_n);
                if (r < 0)
                    return r;
                if (!owned)
                    continue; /* optional and absent: not set, as kubelet */
                value = owned;
            } else {
                snprintf(why, why_n, "container '%s': env[%zu] (%s): unsupported valueFrom", cname,
                         i, name);
                return -FATIA_E_INVALID;
            }
            r = fatia_env_set(env, name, value);
            fatia_free(owned);
        } else {
            x = fatia_env_expand(value ? value : "", env);
            if (!x)
                return -ENOMEM;
            r = fatia_env_set(env, name, x);
            fatia_free(x);
        }
        if (r < 0)
            return r;
    }
    return 0;
}

int fatia_podspec_argv(const json_t *container, const struct fatia_env *env, json_t **ret,
                       char *why, size_t why_n)
{
    const json_t *lists[2] = {json_object_get(container, "command"),
                              json_object_get(container, "args")};
    json_t *argv = json_array();
    size_t i;
    json_t *s;

    if (!argv)
        return -ENOMEM;
    for (int k = 0; k < 2; k++) {
        json_array_foreach(lists[k], i, s)
        {
            char *x = fatia_env_expand(json_string_value(s) ? json_string_value(s) : "", env);
            if (!x || json_array_append_new(argv, json_string(x)) < 0) {
                fatia_free(x);
                json_decref(argv);
                return -ENOMEM;
            }
            fatia_free(x);
        }
    }
    if (json_array_size(argv) == 0 || !json_string_value(json_array_get(argv, 0))[0]) {
        snprintf(why, why_n,
                 "container '%s': no command: fatia runs containers as local processes "
                 "and has no image entrypoint, so command (or args) is required",
                 fatia_json_str(container, "name") ? fatia_json_str(container, "name") : "?");
        json_decref(argv);
        return -EINVAL;
    }
    *ret = argv;
    return 0;
}

static void add_limits(const json_t *ctrs, int64_t *cpu, int64_t *cpu_req, int64_t *mem, bool max)
{
    size_t i;
    json_t *c;

    json_array_foreach(ctrs, i, c)
    {
        struct fatia_quantity q;
        int64_t v;

        if (quantity_of(c, "limits", "cpu", &q) == 0) {
            v = fatia_quantity_milli(&q);
            if (*cpu >= 0)
                *cpu = max ? FATIA_MAX(*cpu, v) : *cpu + v;
        } else if (!max) {
            *cpu = -1;
        }
        if (quantity_of(c, "requests", "cpu", &q) == 0 ||
            quantity_of(c, "limits", "cpu", &q) == 0) {
            v = fatia_quantity_milli(&q);
            *cpu_req = max ? FATIA_MAX(*cpu_req, v) : *cpu_req + v;
        }
        if (quantity_of(c, "limits", "memory", &q) == 0) {
            v = fatia_quantity_value(&q);
            if (*mem >= 0)
                *mem = max ? FATIA_MAX(*mem, v) : *mem + v;
        } else if (!max) {
            *mem = -1;
        }
    }
}

void fatia_podspec_limits(const json_t *pod, struct fatia_pod_limits *ret)
{
    const json_t *spec = json_object_get(pod, "spec");
    int64_t cpu = 0, req = 0, mem = 0, icpu = 0, ireq = 0, imem = 0;

    add_limits(json_object_get(spec, "containers"), &cpu, &req, &mem, false);
    add_limits(json_object_get(spec, "initContainers"), &icpu, &ireq, &imem, true);
    if (cpu >= 0 && icpu > cpu)
        cpu = icpu;
    if (mem >= 0 && imem > mem)
        mem = imem;
    *ret = (struct fatia_pod_limits){
        .cpu_limit_milli = cpu, .cpu_request_milli = FATIA_MAX(req, ireq), .memory_limit = mem};
}

bool fatia_pod_runnable(const json_t *pod)
{
    const json_t *spec = json_object_get(pod, "spec");
    const char *node = fatia_json_str(spec, "nodeName");

    return node && node[0] && json_array_size(json_object_get(spec, "schedulingGates")) == 0 &&
           !json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
}

bool fatia_pod_terminal(const json_t *pod)
{
    const char *phase = fatia_json_str(json_object_get(pod, "status"), "phase");

    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed"));
}

/* ---- host ports ---- */

static bool hostip_overlap(const char *a, const char *b)
{
    return !a || !b || !strcmp(a, b);
}

/* One ports[] entry j of containers[i] into out (none when it has no hostPort). */
static int host_port(const json_t *pt, size_t i, size_t j, json_t *out, char *why, size_t why_n)
{
    const json_t *hpj = json_object_get(pt, "hostPort");
    const char *proto = fatia_json_str(pt, "protocol"), *hip = fatia_json_str(pt, "hostIP");
    char field[96];
    struct in_addr ia;
    int64_t hp = 0, cp = 0;
    size_t m;
    json_t *o;

    snprintf(field, sizeof(field), "spec.containers[%zu].ports[%zu]", i, j);
    if (!hpj || json_is_null(hpj))
        return 0;
    if (!fatia_json_int(pt, "hostPort", &hp) || hp < 0 || hp > 65535) {
        snprintf(why, why_n, "%s.hostPort: must be a port number between 1 and 65535", field);
        return -FATIA_E_INVALID;
    }
    if (hp == 0)
        return 0; /* Kubernetes: 0 is unset */
    if (!fatia_json_int(pt, "containerPort", &cp) || cp < 1 || cp > 65535) {
        snprintf(why, why_n, "%s.containerPort: must be a port number between 1 and 65535", field);
        return -FATIA_E_INVALID;
    }
    if (proto && strcmp(proto, "TCP") && strcmp(proto, "UDP")) {
        snprintf(why, why_n,
                 "%s.protocol: Unsupported value: \"%.40s\": with a hostPort, \"TCP\" or \"UDP\"",
                 field, proto);
        return -FATIA_E_INVALID;
    }
    if (hip && (!hip[0] || !strcmp(hip, "0.0.0.0")))
        hip = NULL;
    if (hip && inet_pton(AF_INET, hip, &ia) != 1) {
        snprintf(why, why_n, "%s.hostIP: \"%.64s\" is not an IPv4 address (pod networks are IPv4)",
                 field, hip);
        return -FATIA_E_INVALID;
    }
    proto = proto && !strcmp(proto, "UDP") ? "udp" : "tcp";
    json_array_foreach(out, m, o)
    {
        int64_t ohp = 0;
        (void)fatia_json_int(o, "hostPort", &ohp);
        if (ohp == hp && !strcmp(fatia_json_str(o, "protocol"), proto) &&
            hostip_overlap(fatia_json_str(o, "hostIP"), hip)) {
            snprintf(why, why_n, "%s.hostPort: Duplicate value: %lld/%s, as %s", field,
                     (long long)hp, proto[0] == 'u' ? "UDP" : "TCP", fatia_json_str(o, "field"));
            return -FATIA_E_INVALID;
        }
    }
    snprintf(field, sizeof(field), "spec.containers[%zu].ports[%zu].hostPort", i, j);
    o = json_pack("{s:I,s:I,s:s,s:s}", "hostPort", (json_int_t)hp, "containerPort", (json_int_t)cp,
                  "protocol", proto, "field", field);
    if (!o)
        return -ENOMEM;
    if (hip)
        json_object_set_new(o, "hostIP", json_string(hip));
    return json_array_append_new(out, o) < 0 ? -ENOMEM : 0;
}

static int container_host_ports(const json_t *c, size_t i, json_t *out, char *why, size_t why_n)
{
    size_t j;
    json_t *pt;
    int r;

    json_array_foreach(json_object_get(c, "ports"), j, pt)
    {
        r = host_port(pt, i, j, out, why, why_n);
        if (r < 0)
            return r;
    }
    return 0;
}

int fatia_pod_host_ports(const json_t *pod, json_t **ret, char *why, size_t why_n)
{
    json_t *out = json_array(), *c;
    size_t i;
    int r;

    *ret = NULL;
    if (!out)
        return -ENOMEM;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
    {
        r = container_host_ports(c, i, out, why, why_n);
        if (r < 0) {
            json_decref(out);
            return r;
        }
    }
    *ret = out;
    return 0;
}
