/*
 * demand/dra_quota.c: what a workload's device claims cost in quota (Kueue's DRA support,
 * pkg/dra/claims.go): deviceClassMappings name, per logical resource, the DeviceClasses that
 * count as it, and each pod's claim templates are charged request by request.
 *
 * Rules (Kueue's): only claims a pod gets from a ResourceClaimTemplate are charged per pod (a
 * named ResourceClaim is shared and not multiplied by the pod count); an exactly request with
 * allocationMode ExactCount charges its count; allocationMode All is refused (its size depends
 * on the node); adminAccess requests charge nothing; a firstAvailable request is charged only
 * when all its alternatives map to the same resource with the same count, so the charge equals
 * whichever alternative the allocator picks; an unmapped DeviceClass is an error, not a free
 * device. Quantities are whole devices and add to what the pod's containers request.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/dra.h"
#include "model/quantity.h"

static int set_why(char *why, size_t why_n, const char *fmt, ...) FATIA_PRINTF(3, 4);

static int set_why(char *why, size_t why_n, const char *fmt, ...)
{
    va_list ap;

    if (why && why_n) {
        va_start(ap, fmt);
        vsnprintf(why, why_n, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

void fatia_dra_mappings_release(struct fatia_dra_mappings *m)
{
    for (size_t i = 0; m->v && i < m->n; i++) {
        fatia_free(m->v[i].resource);
        for (char **c = m->v[i].device_classes; c && *c; c++)
            fatia_free(*c);
        fatia_free(m->v[i].device_classes);
    }
    fatia_free(m->v);
    m->v = NULL;
    m->n = 0;
}

const char *fatia_dra_mappings_lookup(const struct fatia_dra_mappings *m, const char *device_class)
{
    for (size_t i = 0; i < m->n; i++)
        for (char **c = m->v[i].device_classes; c && *c; c++)
            if (!strcmp(*c, device_class))
                return m->v[i].resource;
    return NULL;
}

int fatia_dra_mappings_parse(const json_t *list, struct fatia_dra_mappings *ret, char *why,
                             size_t why_n)
{
    struct fatia_dra_mappings m = {0};
    size_t i, j;
    json_t *e, *c;
    int r = 0;

    if (list && !json_is_array(list))
        return set_why(why, why_n, "deviceClassMappings: expected a list");
    m.v = fatia_calloc(json_array_size(list) + 1, sizeof(*m.v));
    if (!m.v)
        return -ENOMEM;
    json_array_foreach(list, i, e)
    {
        const char *name = fatia_json_str(e, "name");
        const json_t *classes = json_object_get(e, "deviceClassNames");
        struct fatia_dra_mapping *mp = &m.v[i];
        m.n = i + 1;
        if (!name || !*name) {
            r = set_why(why, why_n, "deviceClassMappings[%zu].name: required field is missing", i);
            goto out_release;
        }
        if (!json_array_size(classes)) {
            r = set_why(why, why_n,
                        "deviceClassMappings[%zu].deviceClassNames: must list at least one "
                        "DeviceClass",
                        i);
            goto out_release;
        }
        mp->resource = fatia_strdup(name);
        mp->device_classes = fatia_calloc(json_array_size(classes) + 1, sizeof(char *));
        if (!mp->resource || !mp->device_classes) {
            r = -ENOMEM;
            goto out_release;
        }
        json_array_foreach(classes, j, c)
        {
            const char *cn = json_string_value(c);
            const char *other;
            if (!cn) {
                r = set_why(why, why_n,
                            "deviceClassMappings[%zu].deviceClassNames[%zu]: "
                            "expected a string",
                            i, j);
                goto out_release;
            }
            other = fatia_dra_mappings_lookup(&m, cn);
            if (other) {
                r = set_why(why, why_n,
                            "deviceClassMappings[%zu].deviceClassNames[%zu]: DeviceClass '%s' "
                            "already maps to '%s'",
                            i, j, cn, other);
                goto out_release;
            }
            mp->device_classes[j] = fatia_strdup(cn);
            if (!mp->device_classes[j]) {
                r = -ENOMEM;
                goto out_release;
            }
        }
    }
    *ret = m;
    return 0;
out_release:
    fatia_dra_mappings_release(&m);
    return r;
}

int fatia_dra_mappings_from_config(const json_t *scheduler_config, struct fatia_dra_mappings *ret,
                                   char *why, size_t why_n)
{
    const json_t *list = fatia_json_path(scheduler_config, "spec.resources.deviceClassMappings");

    return fatia_dra_mappings_parse(list, ret, why, why_n);
}

/* The (resource, count) one request alternative charges. */
static int alt_charge(const struct fatia_dra_mappings *m, const json_t *r, const char *path,
                      const char **ret_res, int64_t *ret_count, char *why, size_t why_n)
{
    const char *mode = fatia_json_str(r, "allocationMode");
    const char *cls = fatia_json_str(r, "deviceClassName");
    int64_t count = 1;

    if (mode && !strcmp(mode, "All"))
        return set_why(why, why_n, "%s.allocationMode: All is not supported", path);
    fatia_json_int(r, "count", &count);
    if (count <= 0)
        return set_why(why, why_n, "%s.count: must be greater than zero", path);
    if (!cls)
        return set_why(why, why_n, "%s.deviceClassName: required field is missing", path);
    *ret_res = fatia_dra_mappings_lookup(m, cls);
    if (!*ret_res)
        return set_why(why, why_n,
                       "%s.deviceClassName: DeviceClass '%s' is not in the deviceClassMappings "
                       "of the scheduler configuration",
                       path, cls);
    *ret_count = count;
    return 0;
}

static int add_to(json_t *requests, const char *res, int64_t count)
{
    struct fatia_quantity have = {0}, add = fatia_quantity_from_int(count, FATIA_Q_DECIMAL_SI);
    json_t *cur = json_object_get(requests, res);
    char text[64];

    if (cur && fatia_quantity_parse_json(cur, &have, NULL, 0) < 0)
        return -EINVAL;
    if (fatia_quantity_add(&have, &add, &have) < 0)
        return -ERANGE;
    fatia_quantity_format(&have, text, sizeof(text));
    return json_object_set_new(requests, res, json_string(text)) < 0 ? -ENOMEM : 0;
}

static int spec_charges(const struct fatia_dra_mappings *m, const json_t *spec, json_t *requests,
                        char *why, size_t why_n)
{
    size_t i, j;
    json_t *r, *sub;
    int err;

    json_array_foreach(fatia_json_path(spec, "devices.requests"), i, r)
    {
        const json_t *exact = json_object_get(r, "exactly");
        const json_t *first = json_object_get(r, "firstAvailable");
        const char *res = NULL;
        int64_t count = 0;
        char path[96];
        if (exact) {
            if (fatia_json_bool(exact, "adminAccess", false))
                continue;
            snprintf(path, sizeof(path), "devices.requests[%zu].exactly", i);
            err = alt_charge(m, exact, path, &res, &count, why, why_n);
            if (err < 0)
                return err;
        } else {
            json_array_foreach(first, j, sub)
            {
                const char *sres;
                int64_t scount;
                snprintf(path, sizeof(path), "devices.requests[%zu].firstAvailable[%zu]", i, j);
                err = alt_charge(m, sub, path, &sres, &scount, why, why_n);
                if (err < 0)
                    return err;
                if (res && strcmp(res, sres))
                    return set_why(why, why_n,
                                   "%s.deviceClassName: every alternative must map to '%s', "
                                   "this one maps to '%s'",
                                   path, res, sres);
                if (res && scount != count)
                    return set_why(why, why_n,
                                   "%s.count: every alternative must have count %" PRId64
                                   ", this one has %" PRId64,
                                   path, count, scount);
                res = sres;
                count = scount;
            }
            if (!res)
                return set_why(why, why_n,
                               "devices.requests[%zu]: neither exactly nor firstAvailable", i);
        }
        err = add_to(requests, res, count);
        if (err == -ENOMEM)
            return err;
        if (err < 0)
            return set_why(why, why_n, "%s: the sum of requests for '%s' overflows", path, res);
    }
    return 0;
}

int fatia_dra_pod_claim_requests(const struct fatia_dra_mappings *m, const json_t *pod_spec,
                                 const char *ns, fatia_dra_template_lookup_fn lookup, void *ud,
                                 json_t *requests, char *why, size_t why_n)
{
    size_t i;
    json_t *pc;

    json_array_foreach(json_object_get(pod_spec, "resourceClaims"), i, pc)
    {
        const char *tmpl_name = fatia_json_str(pc, "resourceClaimTemplateName");
        const json_t *tmpl;
        char inner[400];
        int r;
        if (!tmpl_name)
            continue; /* a named, shared ResourceClaim: not charged per pod */
        tmpl = lookup ? lookup(ud, ns, tmpl_name) : NULL;
        if (!tmpl)
            return set_why(why, why_n,
                           "spec.resourceClaims[%zu].resourceClaimTemplateName: "
                           "ResourceClaimTemplate '%s/%s' not found",
                           i, ns ? ns : "", tmpl_name);
        r = spec_charges(m, fatia_json_path(tmpl, "spec.spec"), requests, inner, sizeof(inner));
        if (r == -ENOMEM)
            return r;
        if (r < 0)
            return set_why(why, why_n, "spec.resourceClaims[%zu]: ResourceClaimTemplate '%s': %s",
                           i, tmpl_name, inner);
    }
    return 0;
}

int fatia_dra_workload_claim_requests(const struct fatia_dra_mappings *m, const json_t *workload,
                                      fatia_dra_template_lookup_fn lookup, void *ud, json_t **ret,
                                      char *why, size_t why_n)
{
    const char *ns = fatia_json_str(json_object_get(workload, "metadata"), "namespace");
    json_t *out = json_object(), *ps;
    size_t i;

    if (!out)
        return -ENOMEM;
    json_array_foreach(fatia_json_path(workload, "spec.podSets"), i, ps)
    {
        const char *name = fatia_json_str(ps, "name");
        json_t *req = json_object();
        char inner[400];
        int r;
        if (!req) {
            json_decref(out);
            return -ENOMEM;
        }
        r = fatia_dra_pod_claim_requests(m, fatia_json_path(ps, "template.spec"), ns, lookup, ud,
                                         req, inner, sizeof(inner));
        if (r < 0) {
            json_decref(req);
            json_decref(out);
            return r == -ENOMEM ? r
                                : set_why(why, why_n, "spec.podSets[%zu].template.%s", i, inner);
        }
        if (json_object_size(req) && json_object_set_new(out, name ? name : "main", req) < 0) {
            json_decref(out);
            return -ENOMEM;
        }
        if (!json_object_size(req))
            json_decref(req);
    }
    *ret = out;
    return 0;
}
