/*
 * apiserver/openapi.c: OpenAPI v3 (per group-version, /openapi/v3/...) and v2 (/openapi/v2)
 * documents generated from the model's schema tables at start.
 *
 * What clients use them for: kubectl 1.27+ checks, through the v3 document of a group-version,
 * whether the PATCH operation of a kind takes the fieldValidation query parameter; it does here,
 * so kubectl leaves validation to the server (fieldValidation=Strict) and the errors are the
 * model's own. `kubectl explain` reads the schemas. Older served versions (Kueue v1beta1) get an
 * open schema (x-kubernetes-preserve-unknown-fields): their shape differs from the storage tables
 * and the server validates after conversion anyway.
 *
 * Strategic merge patch is not advertised in the request bodies of PATCH: kubectl then builds
 * strategic patches for the built-in kinds from its compiled-in types (the same merge keys as
 * patch.c) and merge patches for the others, as it does against a real cluster's CRDs.
 *
 * Descriptions: a field of a built-in kind carries upstream's description, from the table
 * scripts/explain-gen extracts from python3-kubernetes's models (openapi_desc.c: rows of model,
 * field, the field's model); the walk follows the kind's schema and the models side by side from
 * the kind's root model (V1Pod), so a field fatia has and upstream's 1.22 document lacks keeps
 * its schema's own line. Inlined rather than $ref'd per model: fatia's schemas are one tree per
 * kind, and kubectl explain reads either.
 *
 * Documents are built once (the registry is static) and served from memory; the v3 root lists
 * each with a content hash, which clients use as a cache key.
 */
#include "base/compat.h"

#include <ctype.h>
#include <stdlib.h>

#include "apiserver/internal.h"
#include "apiserver/openapi_desc.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "model/crd_kind.h"

struct gvdoc {
    char key[160]; /* "api/v1" or "apis/G/V" */
    char *text;
    size_t len;
    char hash[20];
};

static json_t *schema_json(const struct fatia_schema *s, bool v3, int depth, const char *model);

static void set_desc(json_t *o, const struct fatia_schema *s)
{
    if (s->desc)
        json_object_set_new(o, "description", json_string(s->desc));
}

static int desc_cmp(const void *key, const void *elem)
{
    const struct fatia_api_desc *a = key, *b = elem;
    int c = strcmp(a->model, b->model);
    return c ? c : strcmp(a->field, b->field);
}

/* Upstream's row for field `field` of model `model` (NULL: none, or no model). */
static const struct fatia_api_desc *desc_find(const char *model, const char *field)
{
    struct fatia_api_desc key = {.model = model, .field = field};

    if (!model || !model[0])
        return NULL;
    return bsearch(&key, fatia_api_descs, fatia_api_ndescs, sizeof(key), desc_cmp);
}

/* The first row of model (NULL: none). */
static const struct fatia_api_desc *model_rows(const char *model)
{
    size_t lo = 0, hi = fatia_api_ndescs;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(fatia_api_descs[mid].model, model) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < fatia_api_ndescs && !strcmp(fatia_api_descs[lo].model, model) ? &fatia_api_descs[lo]
                                                                              : NULL;
}

/* The models being drawn, innermost first: a model is not drawn inside itself (JSONSchemaProps
 * holds JSONSchemaProps in ten fields: drawing it out would be exponential). */
struct model_chain {
    const char *model;
    const struct model_chain *up;
};

static json_t *model_json(const char *model, bool v3, int depth, const struct model_chain *up);

/* The schema of a value of python type t ("str", "list[V1Container]", "dict(str, str)"). */
static json_t *ptype_json(const char *t, size_t n, bool v3, int depth, const struct model_chain *up)
{
    char name[160];

    if (n > 5 && !strncmp(t, "list[", 5) && t[n - 1] == ']')
        return json_pack("{s:s,s:o}", "type", "array", "items",
                         ptype_json(t + 5, n - 6, v3, depth + 1, up));
    if (n > 10 && !strncmp(t, "dict(str, ", 10) && t[n - 1] == ')')
        return json_pack("{s:s,s:o}", "type", "object", "additionalProperties",
                         ptype_json(t + 10, n - 11, v3, depth + 1, up));
#define IS(lit) (n == sizeof(lit) - 1 && !strncmp(t, lit, n))
    if (IS("str"))
        return json_pack("{s:s}", "type", "string");
    if (IS("int"))
        return json_pack("{s:s,s:s}", "type", "integer", "format", "int64");
    if (IS("float"))
        return json_pack("{s:s}", "type", "number");
    if (IS("bool"))
        return json_pack("{s:s}", "type", "boolean");
    if (IS("datetime"))
        return json_pack("{s:s,s:s}", "type", "string", "format", "date-time");
#undef IS
    snprintf(name, sizeof(name), "%.*s", (int)n, t);
    if (n < sizeof(name) && model_rows(name))
        return model_json(name, v3, depth + 1, up);
    return v3 ? json_pack("{s:b}", "x-kubernetes-preserve-unknown-fields", true) : json_object();
}

/* The schema of a part fatia keeps open (a status), drawn from upstream's model: its properties
 * typed and described, unknown members still kept (fatia validates none of them). */
static json_t *model_json(const char *model, bool v3, int depth, const struct model_chain *up)
{
    const struct fatia_api_desc *d = model_rows(model);
    const struct model_chain me = {model, up};
    json_t *o, *props;

    for (const struct model_chain *c = up; c && d; c = c->up)
        if (!strcmp(c->model, model))
            d = NULL;
    if (depth > 24 || !d)
        return v3 ? json_pack("{s:b}", "x-kubernetes-preserve-unknown-fields", true)
                  : json_object();
    o = json_pack("{s:s}", "type", "object");
    props = json_object();
    for (; d < fatia_api_descs + fatia_api_ndescs && !strcmp(d->model, model); d++) {
        json_t *p = ptype_json(d->type, strlen(d->type), v3, depth + 1, &me);
        if (d->desc[0])
            json_object_set_new(p, "description", json_string(d->desc));
        json_object_set_new(props, d->field, p);
    }
    json_object_set_new(o, "properties", props);
    json_object_set_new(o, "x-kubernetes-preserve-unknown-fields", json_true());
    return o;
}

/* The python3-kubernetes model of kind k at version: "V1Pod", "CoreV1Event", "EventsV1Event";
 * for a CRD kind with upstream descriptions "GROUP/Kind" ("kueue.x-k8s.io/ClusterQueue"); NULL
 * when there is none (its fields keep the one line of their schema). */
static const char *root_model(const struct fatia_kind *k, const char *version, char *buf, size_t n)
{
    const char *prefix = "";

    if (!strcmp(k->kind, "Event"))
        prefix = !k->group[0] ? "Core" : !strcmp(k->group, "events.k8s.io") ? "Events" : "";
    snprintf(buf, n, "%s%c%s%s", prefix, toupper((unsigned char)version[0]), version + 1, k->kind);
    if (desc_find(buf, "metadata"))
        return buf;
    /* a CRD kind: third_party/crd-descriptions's rows, "GROUP/Kind" (scripts/explain-gen) */
    snprintf(buf, n, "%s/%s", k->group, k->kind);
    return k->group[0] && model_rows(buf) ? buf : NULL;
}

static json_t *int_or_string(bool v3)
{
    if (v3)
        return json_pack("{s:b,s:[{s:s},{s:s}]}", "x-kubernetes-int-or-string", true, "anyOf",
                         "type", "integer", "type", "string");
    return json_pack("{s:s,s:s}", "type", "string", "format", "int-or-string");
}

static json_t *schema_json(const struct fatia_schema *s, bool v3, int depth, const char *model)
{
    json_t *o;

    if (depth > 48)
        return json_pack("{s:b}", "x-kubernetes-preserve-unknown-fields", true);
    switch (s->type) {
    case FATIA_T_ANY:
        if (model && model[0] && model_rows(model))
            o = model_json(model, v3, depth, NULL);
        else
            o = v3 ? json_pack("{s:b}", "x-kubernetes-preserve-unknown-fields", true)
                   : json_object();
        break;
    case FATIA_T_STRING:
        o = json_pack("{s:s}", "type", "string");
        if (s->enums) {
            json_t *e = json_array();
            for (const char *const *v = s->enums; *v; v++)
                json_array_append_new(e, json_string(*v));
            json_object_set_new(o, "enum", e);
        }
        if (s->flags & FATIA_S_MIN)
            json_object_set_new(o, "minLength", json_integer(s->min));
        if (s->flags & FATIA_S_MAX)
            json_object_set_new(o, "maxLength", json_integer(s->max));
        break;
    case FATIA_T_INT:
        o = json_pack("{s:s,s:s}", "type", "integer", "format", "int64");
        if (s->flags & FATIA_S_MIN)
            json_object_set_new(o, "minimum", json_integer(s->min));
        if (s->flags & FATIA_S_MAX)
            json_object_set_new(o, "maximum", json_integer(s->max));
        break;
    case FATIA_T_NUMBER:
        o = json_pack("{s:s}", "type", "number");
        break;
    case FATIA_T_BOOL:
        o = json_pack("{s:s}", "type", "boolean");
        break;
    case FATIA_T_QUANTITY:
    case FATIA_T_INT_OR_STRING:
        o = int_or_string(v3);
        break;
    case FATIA_T_TIME:
        o = json_pack("{s:s,s:s}", "type", "string", "format", "date-time");
        break;
    case FATIA_T_OBJECT: {
        json_t *props = json_object(), *req = json_array();
        o = json_pack("{s:s}", "type", "object");
        for (const struct fatia_field *f = s->fields; f && f->name; f++) {
            const struct fatia_api_desc *d = desc_find(model, f->name);
            json_t *p = schema_json(f->schema, v3, depth + 1, d ? d->child : NULL);
            if (d && d->desc[0])
                json_object_set_new(p, "description", json_string(d->desc));
            json_object_set_new(props, f->name, p);
            if (f->flags & FATIA_F_REQUIRED)
                json_array_append_new(req, json_string(f->name));
        }
        json_object_set_new(o, "properties", props);
        if (json_array_size(req))
            json_object_set_new(o, "required", req);
        else
            json_decref(req);
        if (s->flags & FATIA_S_OPEN)
            json_object_set_new(o,
                                v3 ? "x-kubernetes-preserve-unknown-fields"
                                   : "x-kubernetes-preserve-unknown-fields",
                                json_true());
        break;
    }
    case FATIA_T_ARRAY:
        o = json_pack("{s:s,s:o}", "type", "array", "items",
                      s->items ? schema_json(s->items, v3, depth + 1, model) : json_object());
        if (s->list_key) {
            json_object_set_new(o, "x-kubernetes-list-type", json_string("map"));
            json_object_set_new(o, "x-kubernetes-list-map-keys", json_pack("[s]", s->list_key));
        }
        if (s->flags & FATIA_S_MIN)
            json_object_set_new(o, "minItems", json_integer(s->min));
        if (s->flags & FATIA_S_MAX)
            json_object_set_new(o, "maxItems", json_integer(s->max));
        break;
    case FATIA_T_MAP:
        o = json_pack("{s:s,s:o}", "type", "object", "additionalProperties",
                      s->items ? schema_json(s->items, v3, depth + 1, model) : json_object());
        break;
    default:
        o = json_object();
        break;
    }
    if (s->flags & FATIA_S_NULLABLE)
        json_object_set_new(o, v3 ? "nullable" : "x-nullable", json_true());
    set_desc(o, s);
    return o;
}

json_t *fatia_api_openapi_schema(const struct fatia_schema *s, bool v3)
{
    return schema_json(s, v3, 0, NULL);
}

/* "io.x-k8s.kueue.v1beta2.ClusterQueue", "io.k8s.api.core.v1.Pod" */
static void definition_name(const struct fatia_kind *k, const char *version, char *buf, size_t n)
{
    char rev[160] = "";
    const char *g = k->group;
    size_t len = 0;

    if (!g[0]) {
        snprintf(buf, n, "io.k8s.api.core.%s.%s", version, k->kind);
        return;
    }
    if (!strchr(g, '.')) {
        snprintf(buf, n, "io.k8s.api.%s.%s.%s", g, version, k->kind);
        return;
    }
    /* reverse the DNS labels of the group */
    for (const char *end = g + strlen(g); end > g;) {
        const char *dot = end;
        while (dot > g && dot[-1] != '.')
            dot--;
        len += (size_t)snprintf(rev + len, sizeof(rev) - len, "%s%.*s", len ? "." : "",
                                (int)(end - dot), dot);
        if (len >= sizeof(rev))
            break;
        end = dot > g ? dot - 1 : g;
    }
    snprintf(buf, n, "%s.%s.%s", rev, version, k->kind);
}

static json_t *gvk(const struct fatia_kind *k, const char *version)
{
    return json_pack("{s:s,s:s,s:s}", "group", k->group, "version", version, "kind", k->kind);
}

static json_t *param(const char *name, const char *in, bool required, bool v3)
{
    json_t *p = json_pack("{s:s,s:s}", "name", name, "in", in);

    if (required)
        json_object_set_new(p, "required", json_true());
    if (v3)
        json_object_set_new(p, "schema", json_pack("{s:s}", "type", "string"));
    else
        json_object_set_new(p, "type", json_string("string"));
    return p;
}

static json_t *operation(const struct fatia_kind *k, const char *version, const char *action,
                         const char *ref, bool body, bool patch, bool v3, const char *opid)
{
    json_t *op = json_pack("{s:s,s:s,s:o,s:[s]}", "operationId", opid, "x-kubernetes-action",
                           action, "x-kubernetes-group-version-kind", gvk(k, version), "tags",
                           k->group[0] ? k->group : "core");
    json_t *params = json_array();
    json_t *resp;

    if (body || patch) {
        json_array_append_new(params, param("dryRun", "query", false, v3));
        json_array_append_new(params, param("fieldManager", "query", false, v3));
        json_array_append_new(params, param("fieldValidation", "query", false, v3));
    }
    if (!strcmp(action, "list") || !strcmp(action, "deletecollection")) {
        static const char *const lp[] = {"labelSelector", "fieldSelector",      "limit",
                                         "continue",      "resourceVersion",    "timeoutSeconds",
                                         "watch",         "allowWatchBookmarks"};
        for (size_t i = 0; i < FATIA_ARRAY_SIZE(lp); i++)
            json_array_append_new(params, param(lp[i], "query", false, v3));
    }
    json_object_set_new(op, "parameters", params);
    if (v3) {
        json_t *schema = json_pack("{s:s}", "$ref", ref);
        resp = json_pack("{s:{s:s,s:{s:{s:O}}}}", "200", "description", "OK", "content",
                         "application/json", "schema", schema);
        if (body)
            json_object_set_new(op, "requestBody",
                                json_pack("{s:{s:{s:O}},s:b}", "content", "application/json",
                                          "schema", schema, "required", true));
        else if (patch)
            json_object_set_new(op, "requestBody",
                                json_pack("{s:{s:{s:{s:s}},s:{s:{s:s}}},s:b}", "content",
                                          "application/json-patch+json", "schema", "type", "object",
                                          "application/merge-patch+json", "schema", "type",
                                          "object", "required", true));
        json_decref(schema);
    } else {
        resp = json_pack("{s:{s:s,s:{s:s}}}", "200", "description", "OK", "schema", "$ref", ref);
        if (body)
            json_array_append_new(params,
                                  json_pack("{s:s,s:s,s:b,s:{s:s}}", "name", "body", "in", "body",
                                            "required", true, "schema", "$ref", ref));
        if (patch) {
            json_array_append_new(params,
                                  json_pack("{s:s,s:s,s:b,s:{s:s}}", "name", "body", "in", "body",
                                            "required", true, "schema", "type", "object"));
            json_object_set_new(
                op, "consumes",
                json_pack("[s,s]", "application/json-patch+json", "application/merge-patch+json"));
        }
    }
    json_object_set_new(op, "responses", resp);
    return op;
}

/* Adds the paths of kind k at version to paths. */
static void add_paths(json_t *paths, const struct fatia_kind *k, const char *version,
                      const char *ref, bool v3)
{
    char prefix[200], coll[300], item[320], status[340], all[300], opid[200];
    json_t *p;

    if (k->group[0])
        snprintf(prefix, sizeof(prefix), "/apis/%s/%s", k->group, version);
    else
        snprintf(prefix, sizeof(prefix), "/api/%s", version);
    if (k->namespaced) {
        snprintf(coll, sizeof(coll), "%s/namespaces/{namespace}/%s", prefix, k->plural);
        snprintf(all, sizeof(all), "%s/%s", prefix, k->plural);
    } else {
        snprintf(coll, sizeof(coll), "%s/%s", prefix, k->plural);
    }
    snprintf(item, sizeof(item), "%s/{name}", coll);
    snprintf(status, sizeof(status), "%s/{name}/status", coll);

    snprintf(opid, sizeof(opid), "list%s%s", k->kind, version);
    p = json_pack("{s:o}", "get", operation(k, version, "list", ref, false, false, v3, opid));
    snprintf(opid, sizeof(opid), "create%s%s", k->kind, version);
    json_object_set_new(p, "post", operation(k, version, "post", ref, true, false, v3, opid));
    snprintf(opid, sizeof(opid), "deletecollection%s%s", k->kind, version);
    json_object_set_new(p, "delete",
                        operation(k, version, "deletecollection", ref, false, false, v3, opid));
    json_object_set_new(paths, coll, p);

    snprintf(opid, sizeof(opid), "read%s%s", k->kind, version);
    p = json_pack("{s:o}", "get", operation(k, version, "get", ref, false, false, v3, opid));
    snprintf(opid, sizeof(opid), "replace%s%s", k->kind, version);
    json_object_set_new(p, "put", operation(k, version, "put", ref, true, false, v3, opid));
    snprintf(opid, sizeof(opid), "patch%s%s", k->kind, version);
    json_object_set_new(p, "patch", operation(k, version, "patch", ref, false, true, v3, opid));
    snprintf(opid, sizeof(opid), "delete%s%s", k->kind, version);
    json_object_set_new(p, "delete", operation(k, version, "delete", ref, false, false, v3, opid));
    json_object_set_new(paths, item, p);

    if (k->has_status) {
        snprintf(opid, sizeof(opid), "read%sStatus%s", k->kind, version);
        p = json_pack("{s:o}", "get", operation(k, version, "get", ref, false, false, v3, opid));
        snprintf(opid, sizeof(opid), "replace%sStatus%s", k->kind, version);
        json_object_set_new(p, "put", operation(k, version, "put", ref, true, false, v3, opid));
        snprintf(opid, sizeof(opid), "patch%sStatus%s", k->kind, version);
        json_object_set_new(p, "patch", operation(k, version, "patch", ref, false, true, v3, opid));
        json_object_set_new(paths, status, p);
    }
    if (k->namespaced) {
        snprintf(opid, sizeof(opid), "list%sForAllNamespaces%s", k->kind, version);
        json_object_set_new(
            paths, all,
            json_pack("{s:o}", "get", operation(k, version, "list", ref, false, false, v3, opid)));
    }
}

static bool serves_version(const struct fatia_kind *k, const char *v, bool *storage)
{
    *storage = !strcmp(k->version, v);
    if (*storage)
        return true;
    for (const struct fatia_kind_version *o = k->others; o && o->version; o++)
        if (!strcmp(o->version, v))
            return true;
    return false;
}

/* The schema of kind k at version (storage: the table; other: open). */
static json_t *kind_schema(const struct fatia_kind *k, const char *version, bool storage, bool v3)
{
    json_t *sch;
    char model[160];

    if (storage) {
        sch = schema_json(k->schema, v3, 0, root_model(k, version, model, sizeof(model)));
    } else {
        sch =
            json_pack("{s:s,s:b}", "type", "object", "x-kubernetes-preserve-unknown-fields", true);
    }
    json_object_set_new(sch, "x-kubernetes-group-version-kind", json_pack("[o]", gvk(k, version)));
    return sch;
}

/* Builds the document of one group-version: v3 (components) or v2 fragments into paths/defs. */
static void add_gv(json_t *paths, json_t *defs, const char *group, const char *version, bool v3)
{
    for (size_t i = 0; fatia_kind_at(i); i++) {
        const struct fatia_kind *k = fatia_kind_at(i);
        char name[200], ref[260];
        bool storage;
        if (strcmp(k->group, group) || !serves_version(k, version, &storage))
            continue;
        definition_name(k, version, name, sizeof(name));
        snprintf(ref, sizeof(ref), "%s%s", v3 ? "#/components/schemas/" : "#/definitions/", name);
        json_object_set_new(defs, name, kind_schema(k, version, storage, v3));
        add_paths(paths, k, version, ref, v3);
    }
}

static void free_doc(struct gvdoc *d)
{
    fatia_free(d->text);
    fatia_free(d);
}

void fatia_api_openapi_release(struct fatia_apiserver *s)
{
    for (size_t i = 0; i < s->openapi_v3.cap; i++)
        if (s->openapi_v3.slots[i].key)
            free_doc(s->openapi_v3.slots[i].val);
    fatia_strmap_release(&s->openapi_v3);
    FATIA_FREE(&s->openapi_v3_root);
    FATIA_FREE(&s->openapi_v2);
    FATIA_FREE(&s->openapi_v2_pb);
}

static int add_v3_doc(struct fatia_apiserver *s, json_t *root_paths, const char *group,
                      const char *version)
{
    struct gvdoc *d = fatia_calloc(1, sizeof(*d));
    json_t *doc, *paths = json_object(), *schemas = json_object();
    char url[300];

    if (!d)
        return -ENOMEM;
    if (group[0])
        snprintf(d->key, sizeof(d->key), "apis/%s/%s", group, version);
    else
        snprintf(d->key, sizeof(d->key), "api/%s", version);
    if (fatia_strmap_has(&s->openapi_v3, d->key)) {
        fatia_free(d);
        json_decref(paths);
        json_decref(schemas);
        return 0;
    }
    add_gv(paths, schemas, group, version, true);
    doc = json_pack("{s:s,s:{s:s,s:s},s:o,s:{s:o}}", "openapi", "3.0.0", "info", "title", "fatia",
                    "version", FATIA_APISERVER_KUBE_VERSION, "paths", paths, "components",
                    "schemas", schemas);
    d->text = fatia_api_json_dump_compact(doc, &d->len);
    json_decref(doc);
    if (!d->text) {
        fatia_free(d);
        return -ENOMEM;
    }
    snprintf(d->hash, sizeof(d->hash), "%016" PRIX64, fatia_hash64(d->text, d->len));
    if (fatia_strmap_put(&s->openapi_v3, d->key, d) < 0) {
        free_doc(d);
        return -ENOMEM;
    }
    snprintf(url, sizeof(url), "/openapi/v3/%s?hash=%s", d->key, d->hash);
    json_object_set_new(root_paths, d->key, json_pack("{s:s}", "serverRelativeURL", url));
    return 0;
}

int fatia_api_openapi_build(struct fatia_apiserver *s)
{
    json_t *root_paths = json_object(), *root, *v2, *v2paths = json_object(),
           *v2defs = json_object();
    int r = 0;

    fatia_strmap_init(&s->openapi_v3);
    for (size_t i = 0; fatia_kind_at(i) && r == 0; i++) {
        const struct fatia_kind *k = fatia_kind_at(i);
        r = add_v3_doc(s, root_paths, k->group, k->version);
        for (const struct fatia_kind_version *o = k->others; r == 0 && o && o->version; o++)
            r = add_v3_doc(s, root_paths, k->group, o->version);
    }
    if (r < 0) {
        json_decref(root_paths);
        json_decref(v2paths);
        json_decref(v2defs);
        return r;
    }
    root = json_pack("{s:o}", "paths", root_paths);
    s->openapi_v3_root = fatia_api_json_dump_compact(root, &s->openapi_v3_root_len);
    json_decref(root);

    /* v2: one document over every storage version */
    for (size_t i = 0; fatia_kind_at(i); i++) {
        const struct fatia_kind *k = fatia_kind_at(i);
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen |= !strcmp(fatia_kind_at(j)->group, k->group) &&
                    !strcmp(fatia_kind_at(j)->version, k->version);
        if (!seen)
            add_gv(v2paths, v2defs, k->group, k->version, false);
    }
    v2 =
        json_pack("{s:s,s:{s:s,s:s},s:o,s:o}", "swagger", "2.0", "info", "title", "fatia",
                  "version", FATIA_APISERVER_KUBE_VERSION, "paths", v2paths, "definitions", v2defs);
    s->openapi_v2 = fatia_api_json_dump_compact(v2, &s->openapi_v2_len);
    {
        struct fatia_buf pb = FATIA_BUF_INIT;
        r = fatia_api_openapi_v2_protobuf(v2, &pb);
        if (r == 0) {
            s->openapi_v2_pb_len = pb.len;
            s->openapi_v2_pb = fatia_buf_steal(&pb);
        }
        fatia_buf_release(&pb);
    }
    json_decref(v2);
    if (r < 0)
        return r;
    return s->openapi_v3_root && s->openapi_v2 && s->openapi_v2_pb ? 0 : -ENOMEM;
}

const char *fatia_api_openapi_v3_doc(struct fatia_apiserver *s, const char *key, size_t *ret_len,
                                     const char **ret_hash)
{
    struct gvdoc *d = fatia_strmap_get(&s->openapi_v3, key);

    if (!d)
        return NULL;
    *ret_len = d->len;
    *ret_hash = d->hash;
    return d->text;
}
