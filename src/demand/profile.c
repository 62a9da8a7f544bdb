/*
 * demand/profile.c: a HardwareProfile read into a struct (see profile.h), and the forms users
 * read it in (`fatia profiles`).
 *
 * The object is validated by the model (model/kinds/odh.c: min <= default <= max, unique
 * identifiers, Queue and Node scheduling exclusive, well-formed dashboard annotations), so
 * parsing here only copies; it still fails cleanly, never asserts, on a tree that was not
 * validated (a lookup callback may hand over anything).
 */
#include "base/compat.h"

#include "demand/profile.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

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

static char *dup_opt(const char *s, bool *oom)
{
    char *d;

    if (!s)
        return NULL;
    d = fatia_strdup(s);
    if (!d)
        *oom = true;
    return d;
}

void fatia_profile_free(struct fatia_profile *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->n_ids; i++) {
        fatia_free(p->ids[i].display_name);
        fatia_free(p->ids[i].identifier);
        fatia_free(p->ids[i].resource_type);
    }
    fatia_free(p->ids);
    for (char **v = p->visibility; v && *v; v++)
        fatia_free(*v);
    fatia_free(p->visibility);
    fatia_free(p->name);
    fatia_free(p->namespace);
    fatia_free(p->display_name);
    fatia_free(p->description);
    fatia_free(p->local_queue);
    fatia_free(p->priority_class);
    json_decref(p->node_selector);
    json_decref(p->tolerations);
    fatia_free(p);
}

int fatia_profile_parse(const json_t *hwp, struct fatia_profile **ret, char *why, size_t why_n)
{
    const json_t *meta = json_object_get(hwp, "metadata");
    const json_t *ann = json_object_get(meta, "annotations");
    const json_t *ids = fatia_json_path(hwp, "spec.identifiers");
    const json_t *sched = fatia_json_path(hwp, "spec.scheduling");
    const char *name = fatia_json_str(meta, "name");
    const char *vis = fatia_json_str(ann, "opendatahub.io/dashboard-feature-visibility");
    const char *disabled = fatia_json_str(ann, "opendatahub.io/disabled");
    const char *type = fatia_json_str(sched, "type");
    struct fatia_profile *p;
    bool oom = false;
    size_t i;
    json_t *id;
    int r = 0;

    if (!name)
        return set_why(why, why_n, "hardwareprofile: metadata.name is missing");
    p = fatia_calloc(1, sizeof(*p));
    if (!p)
        return -ENOMEM;
    p->name = dup_opt(name, &oom);
    p->namespace = dup_opt(fatia_json_str(meta, "namespace"), &oom);
    p->display_name = dup_opt(fatia_json_str(ann, "opendatahub.io/display-name"), &oom);
    p->description = dup_opt(fatia_json_str(ann, "opendatahub.io/description"), &oom);
    p->disabled = disabled && !strcmp(disabled, "true");
    p->ids = fatia_calloc(json_array_size(ids) + 1, sizeof(*p->ids));
    if (!p->ids)
        oom = true;
    json_array_foreach(ids, i, id)
    {
        struct fatia_profile_identifier *d = &p->ids[i];
        const json_t *max = json_object_get(id, "maxCount");
        char qwhy[128];
        if (oom)
            break;
        p->n_ids = i + 1;
        d->identifier = dup_opt(fatia_json_str(id, "identifier"), &oom);
        d->display_name = dup_opt(fatia_json_str(id, "displayName"), &oom);
        d->resource_type = dup_opt(fatia_json_str(id, "resourceType"), &oom);
        if (!d->identifier) {
            r = set_why(why, why_n,
                        "hardwareprofile/%s: spec.identifiers[%zu].identifier is "
                        "missing",
                        name, i);
            goto out_free;
        }
        if (fatia_quantity_parse_json(json_object_get(id, "minCount"), &d->min, qwhy,
                                      sizeof(qwhy)) < 0 ||
            fatia_quantity_parse_json(json_object_get(id, "defaultCount"), &d->def, qwhy,
                                      sizeof(qwhy)) < 0 ||
            (max && fatia_quantity_parse_json(max, &d->max, qwhy, sizeof(qwhy)) < 0)) {
            r = set_why(why, why_n, "hardwareprofile/%s: spec.identifiers[%zu]: %s", name, i, qwhy);
            goto out_free;
        }
        d->has_max = max != NULL;
    }
    if (vis) {
        json_t *arr = json_loads(vis, JSON_DECODE_ANY, NULL), *v;
        p->visibility = fatia_calloc(json_array_size(arr) + 1, sizeof(char *));
        if (!json_is_array(arr)) {
            json_decref(arr);
            r = set_why(why, why_n,
                        "hardwareprofile/%s: the dashboard-feature-visibility "
                        "annotation is not a JSON array",
                        name);
            goto out_free;
        }
        json_array_foreach(arr, i, v)
        {
            if (p->visibility && json_is_string(v))
                p->visibility[i] = dup_opt(json_string_value(v), &oom);
        }
        json_decref(arr);
        if (!p->visibility)
            oom = true;
    }
    if (type && !strcmp(type, "Queue")) {
        p->sched = FATIA_PROFILE_SCHED_QUEUE;
        p->local_queue =
            dup_opt(fatia_json_str(json_object_get(sched, "kueue"), "localQueueName"), &oom);
        p->priority_class =
            dup_opt(fatia_json_str(json_object_get(sched, "kueue"), "priorityClass"), &oom);
        if (!p->local_queue && !oom) {
            r = set_why(why, why_n,
                        "hardwareprofile/%s: spec.scheduling.kueue.localQueueName "
                        "is missing",
                        name);
            goto out_free;
        }
    } else if (type && !strcmp(type, "Node")) {
        const json_t *node = json_object_get(sched, "node");
        p->sched = FATIA_PROFILE_SCHED_NODE;
        p->node_selector = json_incref(json_object_get(node, "nodeSelector"));
        p->tolerations = json_incref(json_object_get(node, "tolerations"));
    }
    if (oom) {
        r = -ENOMEM;
        goto out_free;
    }
    *ret = p;
    return 0;
out_free:
    fatia_profile_free(p);
    return r;
}

bool fatia_profile_visible_in(const struct fatia_profile *p, const char *feature)
{
    if (!feature || !p->visibility || !p->visibility[0])
        return true;
    for (char **v = p->visibility; *v; v++)
        if (!strcmp(*v, feature))
            return true;
    return false;
}

static json_t *qjson(const struct fatia_quantity *q)
{
    char text[64];

    fatia_quantity_format(q, text, sizeof(text));
    return json_string(text);
}

json_t *fatia_profile_to_json(const struct fatia_profile *p)
{
    json_t *out, *res = json_array(), *vis = json_array(), *sched;

    if (!res || !vis)
        goto out_oom;
    for (size_t i = 0; i < p->n_ids; i++) {
        const struct fatia_profile_identifier *d = &p->ids[i];
        json_t *e = json_pack("{s:s,s:s*,s:s*,s:o,s:o}", "name", d->identifier, "displayName",
                              d->display_name, "resourceType", d->resource_type, "default",
                              qjson(&d->def), "min", qjson(&d->min));
        if (!e || json_array_append_new(res, e) < 0)
            goto out_oom;
        if (d->has_max && json_object_set_new(e, "max", qjson(&d->max)) < 0)
            goto out_oom;
    }
    for (char **v = p->visibility; v && *v; v++)
        if (json_array_append_new(vis, json_string(*v)) < 0)
            goto out_oom;
    switch (p->sched) {
    case FATIA_PROFILE_SCHED_QUEUE:
        sched = json_pack("{s:s,s:s,s:s*}", "type", "Queue", "localQueue", p->local_queue,
                          "priorityClass", p->priority_class);
        break;
    case FATIA_PROFILE_SCHED_NODE:
        sched = json_pack("{s:s,s:O*,s:O*}", "type", "Node", "nodeSelector", p->node_selector,
                          "tolerations", p->tolerations);
        break;
    default:
        sched = json_pack("{s:s}", "type", "None");
        break;
    }
    out = json_pack("{s:s,s:s*,s:s*,s:s*,s:b,s:o,s:o,s:o}", "name", p->name, "namespace",
                    p->namespace, "displayName", p->display_name, "description", p->description,
                    "disabled", p->disabled, "visibility", vis, "resources", res, "scheduling",
                    sched);
    return out;
out_oom:
    json_decref(res);
    json_decref(vis);
    return NULL;
}

json_t *fatia_profile_default_requests(const struct fatia_profile *p)
{
    json_t *out = json_object();

    for (size_t i = 0; out && i < p->n_ids; i++) {
        if (json_object_set_new(out, p->ids[i].identifier, qjson(&p->ids[i].def)) < 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}
