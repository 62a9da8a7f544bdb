/*
 * apiserver/pb_prune.c: the zero values a Go client's protobuf body carries and its JSON would
 * not, left out by the kind's schema.
 *
 * Go's protobuf marshaller writes every non-pointer field, set or not; its JSON marshaller leaves
 * out the omitempty ones. The descriptor cannot tell the two apart (`optional int64 generation`
 * is a plain int64 with omitempty; `optional int32 replicas` a pointer), so a protobuf Job from
 * `kubectl create job` carries spec.template.metadata.generation = 0, containers[].stdin = false
 * and the like, which a strict decode (kubectl's fieldValidation=Strict) refuses as unknown.
 *
 * Rule: a member the kind's schema does not know is dropped when its value is a zero (0, false,
 * "", an empty or all-zero object or list); a member the schema knows keeps its value, 0 or
 * false included, since for a pointer field an explicit zero means something (replicas: 0,
 * ttlSecondsAfterFinished: 0, automountServiceAccountToken: false), except the few known
 * non-pointer omitempty scalars below (Go writes them always, JSON never when zero): those
 * are dropped at zero too, so a protobuf `kubectl create job` stores what the JSON one does.
 * Other non-pointer zeros fatia's schema knows stay (`"x": false` for absent: same meaning).
 * Open objects and ANY are not descended into. A non-zero unknown member stays, and
 * validation reports it as it would in JSON.
 */
#include "base/compat.h"

#include "apiserver/protobuf.h"
#include "model/schema.h"

static bool is_zero(const json_t *v)
{
    const char *k;
    json_t *e;
    size_t i;

    switch (json_typeof(v)) {
    case JSON_STRING:
        return json_string_length(v) == 0;
    case JSON_INTEGER:
        return json_integer_value(v) == 0;
    case JSON_REAL:
        return json_real_value(v) == 0;
    case JSON_FALSE:
    case JSON_NULL:
        return true;
    case JSON_OBJECT:
        json_object_foreach((json_t *)v, k, e) if (!is_zero(e)) return false;
        return true;
    case JSON_ARRAY:
        json_array_foreach(v, i, e) if (!is_zero(e)) return false;
        return true;
    default:
        return false;
    }
}

/* core/v1 Container (and EphemeralContainerCommon), PodSpec and meta/v1 ObjectMeta: plain
 * bool / int64 fields with omitempty (k8s.io/api types.go) */
static bool plain_omitempty(const char *k)
{
    static const char *const names[] = {"stdin",   "stdinOnce", "tty",        "hostNetwork",
                                        "hostPID", "hostIPC",   "generation", NULL};
    for (const char *const *n = names; *n; n++)
        if (!strcmp(*n, k))
            return true;
    return false;
}

static void prune(json_t *v, const struct fatia_schema *s, int depth)
{
    const char *k;
    json_t *e;
    void *tmp;
    size_t i;

    if (!s || depth > 64)
        return;
    switch (s->type) {
    case FATIA_T_OBJECT:
        if (!json_is_object(v) || (s->flags & FATIA_S_OPEN))
            return;
        json_object_foreach_safe(v, tmp, k, e)
        {
            const struct fatia_field *f = s->fields;
            while (f && f->name && strcmp(f->name, k))
                f++;
            if (f && f->name && !(plain_omitempty(k) && is_zero(e)))
                prune(e, f->schema, depth + 1);
            else if (is_zero(e))
                json_object_del(v, k);
        }
        return;
    case FATIA_T_ARRAY:
        json_array_foreach(v, i, e) prune(e, s->items, depth + 1);
        return;
    case FATIA_T_MAP:
        if (json_is_object(v))
            json_object_foreach(v, k, e) prune(e, s->items, depth + 1);
        return;
    default:
        return;
    }
}

void fatia_api_pb_prune_zeros(json_t *obj, const struct fatia_schema *schema)
{
    prune(obj, schema, 0);
}
