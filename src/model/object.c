/*
 * model/object.c: document -> validated object (see object.h).
 */
#include "base/compat.h"

#include "model/object.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "model/labels.h"
#include "model/schema.h"

void fatia_object_format_id(const struct fatia_kind *k, const char *ns, const char *name, char *buf,
                            size_t n)
{
    char lower[64];

    fatia_kind_lower(k, lower, sizeof(lower));
    if (k->namespaced && ns)
        snprintf(buf, n, "%s/%s/%s", lower, ns, name ? name : "<generated>");
    else
        snprintf(buf, n, "%s/%s", lower, name ? name : "<generated>");
}

/* The kinds that exist under another apiVersion: for the message "X is served as ...". */
static void describe_versions(const struct fatia_kind *k, char *buf, size_t n)
{
    char av[128];
    size_t len;

    fatia_kind_api_version(k, av, sizeof(av));
    len = (size_t)snprintf(buf, n, "%s", av);
    for (const struct fatia_kind_version *v = k->others; v && v->version && len < n; v++)
        len += (size_t)snprintf(buf + len, n - len, " or %s%s%s", k->group, k->group[0] ? "/" : "",
                                v->version);
}

static int resolve_kind(json_t *root, const struct fatia_decode_opts *o, struct fatia_diag *diag,
                        const struct fatia_kind **ret, const struct fatia_kind_version **ret_v)
{
    const char *av = fatia_json_str(root, "apiVersion");
    const char *kind = fatia_json_str(root, "kind");
    const char *name = fatia_json_str(json_object_get(root, "metadata"), "name");
    struct fatia_srcpos pos = o->pos;
    const struct fatia_kind *k;
    char what[256], versions[256];

    k = kind ? fatia_kind_by_name(kind) : NULL;
    if (k)
        fatia_object_format_id(k, fatia_json_str(json_object_get(root, "metadata"), "namespace"),
                               name ? name : "?", what, sizeof(what));
    else
        snprintf(what, sizeof(what), "%s%s%s", kind ? kind : "object", name ? "/" : "",
                 name ? name : "");
    if (!kind || !*kind) {
        fatia_srcmap_member(o->map, root, "kind", 0, &pos);
        fatia_diag_add(diag, FATIA_DIAG_ERROR, o->file, pos.line, pos.col, what, "kind",
                       json_object_get(root, "kind") ? "expected a non-empty string"
                                                     : "required field is missing");
        return -FATIA_E_INVALID;
    }
    if (!av || !*av) {
        fatia_srcmap_member(o->map, root, "apiVersion", 0, &pos);
        fatia_diag_add(diag, FATIA_DIAG_ERROR, o->file, pos.line, pos.col, what, "apiVersion",
                       json_object_get(root, "apiVersion") ? "expected a non-empty string"
                                                           : "required field is missing");
        return -FATIA_E_INVALID;
    }
    k = fatia_kind_find(av, kind, ret_v);
    if (k) {
        *ret = k;
        return 0;
    }
    k = fatia_kind_by_name(kind);
    if (k) {
        fatia_srcmap_member(o->map, root, "apiVersion", 0, &pos);
        describe_versions(k, versions, sizeof(versions));
        fatia_diag_add(diag, FATIA_DIAG_ERROR, o->file, pos.line, pos.col, what, "apiVersion",
                       "unsupported value \"%s\": %s is served as %s", av, kind, versions);
        return -FATIA_E_INVALID;
    }
    fatia_srcmap_member(o->map, root, "kind", 0, &pos);
    fatia_diag_add(diag, FATIA_DIAG_ERROR, o->file, pos.line, pos.col, what, "kind",
                   "unknown kind \"%s\" in %s (see `fatia api-resources` for the kinds fatia "
                   "serves)",
                   kind, av);
    return -FATIA_E_INVALID;
}

static void check_metadata(struct fatia_vctx *ctx, const struct fatia_kind *k, json_t *root,
                           const struct fatia_decode_opts *o)
{
    json_t *meta = json_object_get(root, "metadata");
    const char *name = fatia_json_str(meta, "name");
    const char *gen = fatia_json_str(meta, "generateName");
    const char *ns = fatia_json_str(meta, "namespace");
    char why[FATIA_WHY_MAX];

    if (!json_is_object(meta))
        return; /* the schema reports it */
    if (!name || !*name) {
        if (!(o->allow_generate_name && gen && *gen))
            fatia_verr_at(ctx, root, "metadata.name", "required field is missing");
    } else if (!fatia_kind_check_name(k, name, why, sizeof(why))) {
        fatia_verr_at(ctx, root, "metadata.name", "invalid value \"%s\": %s", name, why);
    }
    if (ns && !k->namespaced)
        fatia_vwarn_at(ctx, root, "metadata.namespace",
                       "%s is cluster-scoped: the namespace \"%s\" is ignored", k->kind, ns);
}

int fatia_object_decode(json_t *root, const struct fatia_decode_opts *opts,
                        const struct fatia_checks *checks, struct fatia_diag *diag,
                        struct fatia_object **ret)
{
    const struct fatia_kind_version *ver = NULL;
    const struct fatia_kind *k = NULL;
    struct fatia_object *o;
    struct fatia_vctx ctx;
    size_t errors_before = diag->n_errors, entries_before = diag->n;
    json_t *meta;
    char av[128];
    int r;

    if (!json_is_object(root)) {
        fatia_diag_add(diag, FATIA_DIAG_ERROR, opts->file, opts->pos.line, opts->pos.col, NULL,
                       NULL, "expected an object, got %s", fatia_json_type_name(root));
        return -FATIA_E_INVALID;
    }
    r = resolve_kind(root, opts, diag, &k, &ver);
    if (r < 0)
        return r;
    if (ver && ver->to_storage)
        ver->to_storage(root);
    fatia_kind_api_version(k, av, sizeof(av));
    json_object_set_new(root, "apiVersion", json_string(av));

    o = fatia_calloc(1, sizeof(*o));
    if (!o)
        return -ENOMEM;
    o->kind = k;
    o->obj = json_incref(root);
    o->file = opts->file;
    o->pos = opts->pos;
    o->warning = ver ? ver->warning : NULL;
    meta = json_object_get(root, "metadata");
    o->name = fatia_json_str(meta, "name");
    o->namespace = k->namespaced ? fatia_json_str(meta, "namespace") : NULL;
    if (!k->namespaced && json_object_get(meta, "namespace"))
        o->namespace = NULL;
    fatia_object_format_id(k, o->namespace, o->name, o->id, sizeof(o->id));

    fatia_vctx_init(&ctx, diag, opts->map, opts->file);
    ctx.apply_defaults = !opts->no_defaults;
    fatia_vctx_set_object(&ctx, o->id, opts->pos);
    fatia_schema_validate(&ctx, k->schema, root);
    check_metadata(&ctx, k, root, opts);
    fatia_checks_run(checks, k, &ctx, root);
    fatia_vctx_release(&ctx);

    /* Cluster-scoped objects carry no namespace once accepted. */
    if (!k->namespaced && json_is_object(meta))
        json_object_del(meta, "namespace");
    /* Defaulting may have replaced metadata members: re-borrow. */
    meta = json_object_get(root, "metadata");
    o->name = fatia_json_str(meta, "name");
    o->namespace = k->namespaced ? fatia_json_str(meta, "namespace") : NULL;

    if (opts->strict_unknown) {
        for (size_t i = entries_before; i < diag->n; i++) {
            struct fatia_diag_entry *e = &diag->v[i];
            if (e->level == FATIA_DIAG_WARNING && fatia_diag_is_unknown_field(e)) {
                char *msg = fatia_strdup("unknown field");
                if (!msg) {
                    diag->oom = true;
                    break;
                }
                fatia_free(e->msg);
                e->msg = msg;
                e->level = FATIA_DIAG_ERROR;
                diag->n_errors++;
            }
        }
    }
    if (diag->oom) {
        fatia_object_free(o);
        return -ENOMEM;
    }
    if (diag->n_errors > errors_before) {
        fatia_object_free(o);
        return -FATIA_E_INVALID;
    }
    *ret = o;
    return 0;
}

bool fatia_diag_is_unknown_field(const struct fatia_diag_entry *e)
{
    return (e->level == FATIA_DIAG_WARNING && !strcmp(e->msg, "unknown field, ignored")) ||
           (e->level == FATIA_DIAG_ERROR && !strcmp(e->msg, "unknown field"));
}

void fatia_object_free(struct fatia_object *o)
{
    if (!o)
        return;
    json_decref(o->obj);
    fatia_free(o);
}
