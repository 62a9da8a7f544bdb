/*
 * apiserver/patch.c: JSON merge patch, JSON patch and strategic merge patch (see patch.h).
 *
 * The strategic merge metadata is a static tree (struct smp) mirroring the patchStrategy and
 * patchMergeKey tags of k8s.io/api for the built-in kinds fatia serves; a field absent from the
 * tree merges like a merge patch (objects member by member, lists replaced). Recursion is bounded
 * by the document depth, which the request parser already limits; the walkers also stop at
 * FATIA_DOC_MAX_DEPTH.
 *
 * Rejected: deriving merge keys from the model schemas' list_key. list_key means "unique by" for
 * validation, and upstream merges some lists that are not unique-keyed and replaces some that
 * are; the patch semantics must be upstream's exactly, or kubectl apply loses list items.
 */
#include "base/compat.h"

#include "apiserver/patch.h"

#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "model/doc.h"

/* ---- JSON merge patch ---- */

static json_t *merge(json_t *target, const json_t *patch, int depth)
{
    const char *key;
    json_t *v;

    if (!json_is_object(patch) || depth > FATIA_DOC_MAX_DEPTH) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
        if (!target)
            return NULL;
    }
    json_object_foreach((json_t *)patch, key, v)
    {
        if (json_is_null(v)) {
            json_object_del(target, key);
            continue;
        }
        json_t *cur = json_incref(json_object_get(target, key));
        json_t *m = merge(cur, v, depth + 1);
        if (!m || json_object_set_new(target, key, m) < 0) {
            json_decref(target);
            return NULL;
        }
    }
    return target;
}

int fatia_patch_merge(const json_t *doc, const json_t *patch, json_t **ret, char *why, size_t why_n)
{
    json_t *copy = json_deep_copy(doc);
    json_t *res;

    (void)why;
    (void)why_n;
    if (!copy)
        return -ENOMEM;
    res = merge(copy, patch, 0);
    if (!res)
        return -ENOMEM;
    *ret = res;
    return 0;
}

/* ---- JSON patch ---- */

/* Resolves a JSON pointer to its parent container and last token. The token is unescaped into
 * tok. Returns 0, or -EINVAL (malformed pointer), -FATIA_E_CONFLICT (a step is missing). */
static int resolve(json_t *root, const char *ptr, json_t **ret_parent, char *tok, size_t tok_n,
                   char *why, size_t why_n)
{
    json_t *cur = root;
    const char *p = ptr;

    if (*p != '/') {
        snprintf(why, why_n, "invalid JSON pointer \"%s\": must start with '/'", ptr);
        return -EINVAL;
    }
    for (;;) {
        size_t j = 0;
        p++;
        while (*p && *p != '/') {
            char c = *p++;
            if (c == '~') {
                if (*p == '0')
                    c = '~';
                else if (*p == '1')
                    c = '/';
                else {
                    snprintf(why, why_n, "invalid JSON pointer \"%s\": bad escape", ptr);
                    return -EINVAL;
                }
                p++;
            }
            if (j + 1 >= tok_n) {
                snprintf(why, why_n, "JSON pointer \"%s\": token too long", ptr);
                return -EINVAL;
            }
            tok[j++] = c;
        }
        tok[j] = '\0';
        if (!*p) {
            *ret_parent = cur;
            return 0;
        }
        /* descend */
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            uint64_t idx;
            if (fatia_parse_u64(tok, &idx) < 0 || (tok[0] == '0' && tok[1])) {
                snprintf(why, why_n, "JSON pointer \"%s\": \"%s\" is not an array index", ptr, tok);
                return -FATIA_E_CONFLICT;
            }
            cur = json_array_get(cur, (size_t)idx);
        } else {
            cur = NULL;
        }
        if (!cur) {
            snprintf(why, why_n, "JSON pointer \"%s\": \"%s\" does not exist", ptr, tok);
            return -FATIA_E_CONFLICT;
        }
    }
}

static int array_index(const json_t *arr, const char *tok, bool allow_end, size_t *ret)
{
    uint64_t idx;

    if (allow_end && !strcmp(tok, "-")) {
        *ret = json_array_size(arr);
        return 0;
    }
    if (fatia_parse_u64(tok, &idx) < 0 || (tok[0] == '0' && tok[1]))
        return -FATIA_E_CONFLICT;
    if (idx > json_array_size(arr) || (!allow_end && idx == json_array_size(arr)))
        return -FATIA_E_CONFLICT;
    *ret = (size_t)idx;
    return 0;
}

/* The value at ptr (borrowed), or NULL. */
static json_t *get_at(json_t *root, const char *ptr, char *why, size_t why_n, int *err)
{
    json_t *parent;
    char tok[1024];
    size_t idx;

    if (!*ptr)
        return root;
    *err = resolve(root, ptr, &parent, tok, sizeof(tok), why, why_n);
    if (*err < 0)
        return NULL;
    if (json_is_object(parent))
        return json_object_get(parent, tok);
    if (json_is_array(parent) && array_index(parent, tok, false, &idx) == 0)
        return json_array_get(parent, idx);
    return NULL;
}

/* Removes the value at ptr; returns it (new reference) or NULL. */
static json_t *remove_at(json_t *root, const char *ptr, char *why, size_t why_n, int *err)
{
    json_t *parent, *v;
    char tok[1024];
    size_t idx;

    *err = resolve(root, ptr, &parent, tok, sizeof(tok), why, why_n);
    if (*err < 0)
        return NULL;
    if (json_is_object(parent) && (v = json_object_get(parent, tok))) {
        json_incref(v);
        json_object_del(parent, tok);
        return v;
    }
    if (json_is_array(parent) && array_index(parent, tok, false, &idx) == 0) {
        v = json_incref(json_array_get(parent, idx));
        json_array_remove(parent, idx);
        return v;
    }
    snprintf(why, why_n, "unable to remove nonexistent key \"%s\"", ptr);
    *err = -FATIA_E_CONFLICT;
    return NULL;
}

/* Adds value (taken) at ptr. On failure value is released. */
static int add_at(json_t **root, const char *ptr, json_t *value, bool replace, char *why,
                  size_t why_n)
{
    json_t *parent;
    char tok[1024];
    size_t idx;
    int r;

    if (!*ptr) {
        json_decref(*root);
        *root = value;
        return 0;
    }
    r = resolve(*root, ptr, &parent, tok, sizeof(tok), why, why_n);
    if (r < 0) {
        json_decref(value);
        return r;
    }
    if (json_is_object(parent)) {
        if (replace && !json_object_get(parent, tok)) {
            snprintf(why, why_n, "replace operation does not apply: doc is missing key: %s", ptr);
            json_decref(value);
            return -FATIA_E_CONFLICT;
        }
        return json_object_set_new(parent, tok, value) < 0 ? -ENOMEM : 0;
    }
    if (json_is_array(parent)) {
        if (array_index(parent, tok, !replace, &idx) < 0) {
            snprintf(why, why_n, "array index \"%s\" out of bounds in \"%s\"", tok, ptr);
            json_decref(value);
            return -FATIA_E_CONFLICT;
        }
        if (replace)
            return json_array_set_new(parent, idx, value) < 0 ? -ENOMEM : 0;
        return json_array_insert_new(parent, idx, value) < 0 ? -ENOMEM : 0;
    }
    snprintf(why, why_n, "\"%s\": parent is not a container", ptr);
    json_decref(value);
    return -FATIA_E_CONFLICT;
}

int fatia_patch_json(const json_t *doc, const json_t *ops, json_t **ret, char *why, size_t why_n)
{
    json_t *res, *op;
    size_t i;
    int r = 0;

    if (!json_is_array(ops)) {
        snprintf(why, why_n, "a JSON patch must be an array of operations");
        return -EINVAL;
    }
    if (json_array_size(ops) > FATIA_PATCH_MAX_OPS) {
        snprintf(why, why_n, "a JSON patch may have at most %d operations", FATIA_PATCH_MAX_OPS);
        return -EINVAL;
    }
    res = json_deep_copy(doc);
    if (!res)
        return -ENOMEM;
    json_array_foreach(ops, i, op)
    {
        const char *name = fatia_json_str(op, "op");
        const char *path = fatia_json_str(op, "path");
        const char *from = fatia_json_str(op, "from");
        json_t *value = json_object_get(op, "value"), *v;
        int e = 0;

        if (!json_is_object(op) || !name || !path) {
            snprintf(why, why_n, "operation %zu: \"op\" and \"path\" are required strings", i);
            r = -EINVAL;
            break;
        }
        if (!strcmp(name, "add") || !strcmp(name, "replace")) {
            if (!value) {
                snprintf(why, why_n, "operation %zu (%s): \"value\" is required", i, name);
                r = -EINVAL;
                break;
            }
            v = json_deep_copy(value);
            if (!v) {
                r = -ENOMEM;
                break;
            }
            r = add_at(&res, path, v, !strcmp(name, "replace"), why, why_n);
        } else if (!strcmp(name, "remove")) {
            v = remove_at(res, path, why, why_n, &e);
            json_decref(v);
            r = e;
        } else if (!strcmp(name, "move") || !strcmp(name, "copy")) {
            if (!from) {
                snprintf(why, why_n, "operation %zu (%s): \"from\" is required", i, name);
                r = -EINVAL;
                break;
            }
            if (!strcmp(name, "move")) {
                if (fatia_str_has_prefix(path, from) && strlen(path) > strlen(from) &&
                    path[strlen(from)] == '/') {
                    snprintf(why, why_n, "operation %zu: cannot move \"%s\" into itself", i, from);
                    r = -FATIA_E_CONFLICT;
                    break;
                }
                v = *from ? remove_at(res, from, why, why_n, &e) : NULL;
            } else {
                json_t *src = get_at(res, from, why, why_n, &e);
                v = src ? json_deep_copy(src) : NULL;
                if (src && !v)
                    e = -ENOMEM;
            }
            if (!v) {
                if (!e)
                    snprintf(why, why_n, "operation %zu: \"from\" %s does not exist", i, from);
                r = e ? e : -FATIA_E_CONFLICT;
                break;
            }
            r = add_at(&res, path, v, false, why, why_n);
        } else if (!strcmp(name, "test")) {
            json_t *cur = get_at(res, path, why, why_n, &e);
            if (!value) {
                snprintf(why, why_n, "operation %zu (test): \"value\" is required", i);
                r = -EINVAL;
                break;
            }
            if (e < 0) {
                r = e;
                break;
            }
            if (!cur || !fatia_json_equal(cur, value)) {
                snprintf(why, why_n, "testing value %s failed", path);
                r = -FATIA_E_CONFLICT;
            }
        } else {
            snprintf(why, why_n, "operation %zu: unknown op \"%s\"", i, name);
            r = -EINVAL;
        }
        if (r < 0)
            break;
    }
    if (r < 0) {
        json_decref(res);
        return r;
    }
    *ret = res;
    return 0;
}

/* ---- strategic merge patch ---- */

struct smp {
    const char *name;
    const char *merge_key;    /* a list of objects merged by this member */
    bool merge_set;           /* a list of scalars merged as a set */
    const struct smp *fields; /* of the value (an object), or of each list item */
};

#define END                     \
    {                           \
        NULL, NULL, false, NULL \
    }

static const struct smp object_meta[] = {
    {"finalizers", NULL, true, NULL}, {"ownerReferences", "uid", false, NULL}, END};
static const struct smp container[] = {{"ports", "containerPort", false, NULL},
                                       {"env", "name", false, NULL},
                                       {"volumeMounts", "mountPath", false, NULL},
                                       {"volumeDevices", "devicePath", false, NULL},
                                       END};
static const struct smp pod_spec[] = {{"containers", "name", false, container},
                                      {"initContainers", "name", false, container},
                                      {"ephemeralContainers", "name", false, container},
                                      {"volumes", "name", false, NULL},
                                      {"imagePullSecrets", "name", false, NULL},
                                      {"hostAliases", "ip", false, NULL},
                                      {"resourceClaims", "name", false, NULL},
                                      {"schedulingGates", "name", false, NULL},
                                      {"topologySpreadConstraints", "topologyKey", false, NULL},
                                      END};
static const struct smp conditions_only[] = {{"conditions", "type", false, NULL}, END};
static const struct smp pod_status[] = {{"conditions", "type", false, NULL},
                                        {"podIPs", "ip", false, NULL},
                                        {"hostIPs", "ip", false, NULL},
                                        {"resourceClaimStatuses", "name", false, NULL},
                                        END};
static const struct smp pod_template[] = {
    {"metadata", NULL, false, object_meta}, {"spec", NULL, false, pod_spec}, END};
static const struct smp job_spec[] = {{"template", NULL, false, pod_template}, END};
static const struct smp node_spec[] = {{"podCIDRs", NULL, true, NULL}, END};
static const struct smp node_status[] = {
    {"addresses", "type", false, NULL}, {"conditions", "type", false, NULL}, END};

static const struct smp root_pod[] = {{"metadata", NULL, false, object_meta},
                                      {"spec", NULL, false, pod_spec},
                                      {"status", NULL, false, pod_status},
                                      END};
static const struct smp root_job[] = {{"metadata", NULL, false, object_meta},
                                      {"spec", NULL, false, job_spec},
                                      {"status", NULL, false, conditions_only},
                                      END};
static const struct smp root_node[] = {{"metadata", NULL, false, object_meta},
                                       {"spec", NULL, false, node_spec},
                                       {"status", NULL, false, node_status},
                                       END};
static const struct smp root_namespace[] = {
    {"metadata", NULL, false, object_meta}, {"status", NULL, false, conditions_only}, END};
static const struct smp root_default[] = {{"metadata", NULL, false, object_meta}, END};

/* the workload kinds of apps/v1 and CronJob: their pod templates merge like a Pod's */
static const struct smp workload_spec[] = {{"template", NULL, false, pod_template}, END};
static const struct smp root_workload[] = {{"metadata", NULL, false, object_meta},
                                           {"spec", NULL, false, workload_spec},
                                           {"status", NULL, false, conditions_only},
                                           END};
static const struct smp job_template[] = {{"spec", NULL, false, job_spec}, END};
static const struct smp cronjob_spec[] = {{"jobTemplate", NULL, false, job_template}, END};
static const struct smp root_cronjob[] = {
    {"metadata", NULL, false, object_meta}, {"spec", NULL, false, cronjob_spec}, END};
static const struct smp service_spec[] = {{"ports", "port", false, NULL}, END};
static const struct smp root_service[] = {{"metadata", NULL, false, object_meta},
                                          {"spec", NULL, false, service_spec},
                                          {"status", NULL, false, conditions_only},
                                          END};
static const struct smp root_serviceaccount[] = {{"metadata", NULL, false, object_meta},
                                                 {"secrets", "name", false, NULL},
                                                 {"imagePullSecrets", "name", false, NULL},
                                                 END};

static const struct smp *root_for(const struct fatia_kind *k)
{
    if (!k)
        return root_default;
    if (!k->group[0] && !strcmp(k->kind, "Pod"))
        return root_pod;
    if (!strcmp(k->group, "batch") && !strcmp(k->kind, "Job"))
        return root_job;
    if (!k->group[0] && !strcmp(k->kind, "Node"))
        return root_node;
    if (!k->group[0] && !strcmp(k->kind, "Namespace"))
        return root_namespace;
    if (!strcmp(k->group, "apps"))
        return root_workload; /* Deployment, ReplicaSet, StatefulSet, DaemonSet */
    if (!strcmp(k->group, "batch") && !strcmp(k->kind, "CronJob"))
        return root_cronjob;
    if (!k->group[0] && !strcmp(k->kind, "Service"))
        return root_service;
    if (!k->group[0] && !strcmp(k->kind, "ServiceAccount"))
        return root_serviceaccount;
    return root_default;
}

static const struct smp *smp_field(const struct smp *fields, const char *name)
{
    for (const struct smp *f = fields; f && f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}

const void *fatia_patch_smp_root(const struct fatia_kind *k)
{
    return root_for(k);
}

bool fatia_patch_smp_child(const void *fields, const char *name, struct fatia_smp_info *ret)
{
    const struct smp *f = smp_field(fields, name);

    *ret = (struct fatia_smp_info){0};
    if (!f)
        return false;
    *ret = (struct fatia_smp_info){f->merge_key, f->merge_set, f->fields};
    return true;
}

static bool is_directive(const char *key)
{
    return key[0] == '$';
}

struct smpctx {
    char *why;
    size_t why_n;
};

static json_t *smp_object(json_t *orig, const json_t *patch, const struct smp *fields, int depth,
                          struct smpctx *cx, int *err);

/* A copy of v without directive members (recursively for objects). */
static json_t *strip_directives(const json_t *v, int depth)
{
    json_t *out;
    const char *key;
    json_t *m;

    if (depth > FATIA_DOC_MAX_DEPTH)
        return json_null();
    if (json_is_array(v)) {
        size_t i;
        out = json_array();
        json_array_foreach(v, i, m) json_array_append_new(out, strip_directives(m, depth + 1));
        return out;
    }
    if (!json_is_object(v))
        return json_deep_copy(v);
    out = json_object();
    json_object_foreach((json_t *)v, key, m)
    {
        if (!is_directive(key) && !json_is_null(m))
            json_object_set_new(out, key, strip_directives(m, depth + 1));
    }
    return out;
}

static bool key_equal(const json_t *a, const json_t *b, const char *key)
{
    const json_t *x = json_object_get(a, key), *y = json_object_get(b, key);

    return x && y && fatia_json_equal(x, y);
}

/* Merges the patch list p into the list orig (taken) by key. */
static json_t *merge_list_by_key(json_t *orig, const json_t *p, const char *key,
                                 const struct smp *item_fields, int depth, struct smpctx *cx,
                                 int *err)
{
    size_t i;
    json_t *item;

    if (!json_is_array(orig)) {
        json_decref(orig);
        orig = json_array();
    }
    json_array_foreach(p, i, item)
    {
        const char *directive = fatia_json_str(item, "$patch");
        size_t j, found = SIZE_MAX;
        json_t *o;

        if (!json_is_object(item)) {
            snprintf(cx->why, cx->why_n, "list merged by \"%s\" has a non-object item", key);
            *err = -EINVAL;
            return orig;
        }
        if (directive && !strcmp(directive, "replace")) {
            /* {"$patch": "replace"} as an item: the list is the patch's other items */
            json_t *rest = json_array();
            size_t k;
            json_t *x;
            json_array_foreach(p, k, x) if (!fatia_json_str(x, "$patch"))
                json_array_append_new(rest, strip_directives(x, depth + 1));
            json_decref(orig);
            return rest;
        }
        json_array_foreach(orig, j, o) if (found == SIZE_MAX && key_equal(o, item, key)) found = j;
        if (directive && !strcmp(directive, "delete")) {
            if (found != SIZE_MAX)
                json_array_remove(orig, found);
            continue;
        }
        if (!json_object_get(item, key)) {
            snprintf(cx->why, cx->why_n, "map: %s does not contain declared merge key: %s", "item",
                     key);
            *err = -EINVAL;
            return orig;
        }
        if (found != SIZE_MAX) {
            json_t *merged = smp_object(json_incref(json_array_get(orig, found)), item, item_fields,
                                        depth + 1, cx, err);
            if (*err < 0) {
                json_decref(merged);
                return orig;
            }
            json_array_set_new(orig, found, merged);
        } else {
            json_t *merged = smp_object(json_object(), item, item_fields, depth + 1, cx, err);
            if (*err < 0) {
                json_decref(merged);
                return orig;
            }
            json_array_append_new(orig, merged);
        }
    }
    return orig;
}

static json_t *merge_set(json_t *orig, const json_t *p)
{
    size_t i, j;
    json_t *v, *o;

    if (!json_is_array(orig)) {
        json_decref(orig);
        orig = json_array();
    }
    json_array_foreach(p, i, v)
    {
        bool found = false;
        json_array_foreach(orig, j, o) found |= fatia_json_equal(o, v);
        if (!found)
            json_array_append_new(orig, json_deep_copy(v));
    }
    return orig;
}

/* Orders list (in place) as order says: items named in order first, in that order; the others
 * after them, in their current order. */
static void set_element_order(json_t *list, const json_t *order, const char *key)
{
    json_t *sorted;
    size_t i, j;
    json_t *o, *x;

    if (!json_is_array(list) || !json_is_array(order) || !(sorted = json_array()))
        return;
    json_array_foreach(order, i, o)
    {
        json_array_foreach(list, j, x)
        {
            bool same = key ? key_equal(x, o, key) : fatia_json_equal(x, o);
            if (same) {
                json_array_append(sorted, x);
                break;
            }
        }
    }
    json_array_foreach(list, j, x)
    {
        bool listed = false;
        json_array_foreach(order, i, o) listed |=
            key ? key_equal(x, o, key) : fatia_json_equal(x, o);
        if (!listed)
            json_array_append(sorted, x);
    }
    json_array_clear(list);
    json_array_extend(list, sorted);
    json_decref(sorted);
}

static json_t *smp_object(json_t *orig, const json_t *patch, const struct smp *fields, int depth,
                          struct smpctx *cx, int *err)
{
    const char *key, *directive;
    json_t *v, *retain;

    if (depth > FATIA_DOC_MAX_DEPTH) {
        snprintf(cx->why, cx->why_n, "patch nested too deeply");
        *err = -EINVAL;
        return orig;
    }
    if (!json_is_object(patch)) {
        json_decref(orig);
        return json_deep_copy(patch);
    }
    directive = fatia_json_str(patch, "$patch");
    if (directive && !strcmp(directive, "replace")) {
        json_decref(orig);
        return strip_directives(patch, depth);
    }
    if (directive && !strcmp(directive, "delete")) {
        json_decref(orig);
        return json_null();
    }
    if (directive && strcmp(directive, "merge")) {
        snprintf(cx->why, cx->why_n, "unknown patch type: %s", directive);
        *err = -EINVAL;
        return orig;
    }
    if (!json_is_object(orig)) {
        json_decref(orig);
        orig = json_object();
    }
    json_object_foreach((json_t *)patch, key, v)
    {
        const struct smp *f;
        json_t *cur, *res;

        if (is_directive(key))
            continue;
        if (json_is_null(v)) {
            json_object_del(orig, key);
            continue;
        }
        f = smp_field(fields, key);
        cur = json_incref(json_object_get(orig, key));
        if (json_is_array(v) && f && f->merge_key)
            res = merge_list_by_key(cur, v, f->merge_key, f->fields, depth, cx, err);
        else if (json_is_array(v) && f && f->merge_set)
            res = merge_set(cur, v);
        else if (json_is_array(v)) {
            json_decref(cur);
            res = strip_directives(v, depth + 1);
        } else
            res = smp_object(cur, v, f ? f->fields : NULL, depth + 1, cx, err);
        if (*err < 0) {
            json_decref(res);
            return orig;
        }
        if (json_is_null(res) && json_is_object(v)) {
            json_decref(res);
            json_object_del(orig, key);
        } else {
            json_object_set_new(orig, key, res);
        }
    }
    /* directives on lists of this object */
    json_object_foreach((json_t *)patch, key, v)
    {
        if (fatia_str_has_prefix(key, "$deleteFromPrimitiveList/")) {
            json_t *list = json_object_get(orig, key + 25);
            size_t i, j;
            json_t *d, *x;
            if (!json_is_array(list) || !json_is_array(v))
                continue;
            json_array_foreach(v, i, d)
            {
                for (j = json_array_size(list); j-- > 0;) {
                    x = json_array_get(list, j);
                    if (fatia_json_equal(x, d))
                        json_array_remove(list, j);
                }
            }
        } else if (fatia_str_has_prefix(key, "$setElementOrder/")) {
            const struct smp *f = smp_field(fields, key + 17);
            set_element_order(json_object_get(orig, key + 17), v, f ? f->merge_key : NULL);
        }
    }
    retain = json_object_get(patch, "$retainKeys");
    if (json_is_array(retain)) {
        void *tmp;
        json_object_foreach_safe(orig, tmp, key, v)
        {
            size_t i;
            json_t *k;
            bool keep = false;
            json_array_foreach(retain, i, k) keep |=
                json_is_string(k) && !strcmp(json_string_value(k), key);
            if (!keep)
                json_object_del(orig, key);
        }
    }
    return orig;
}

int fatia_patch_strategic(const json_t *doc, const json_t *patch, const struct fatia_kind *kind,
                          json_t **ret, char *why, size_t why_n)
{
    struct smpctx cx = {why, why_n};
    json_t *res;
    int err = 0;

    if (!json_is_object(patch)) {
        snprintf(why, why_n, "a strategic merge patch must be a JSON object");
        return -EINVAL;
    }
    res = json_deep_copy(doc);
    if (!res)
        return -ENOMEM;
    res = smp_object(res, patch, root_for(kind), 0, &cx, &err);
    if (err < 0) {
        json_decref(res);
        return err;
    }
    if (!res)
        return -ENOMEM;
    *ret = res;
    return 0;
}
