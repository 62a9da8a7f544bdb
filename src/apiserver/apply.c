/*
 * apiserver/apply.c: server-side apply (PATCH application/apply-patch+yaml) and the
 * managedFields every write keeps, as kube-apiserver's fieldmanager does.
 *
 * Model: metadata.managedFields is a list of entries (manager, operation Apply|Update,
 * apiVersion, time, fieldsType FieldsV1, fieldsV1, subresource), one per manager, operation
 * and subresource. Field sets are computed on the storage version (fieldset.c), so entries carry
 * the storage apiVersion.
 *   - An update (create, PUT, merge/JSON/strategic patch, status) by manager U: the fields it
 *     added or changed become U's (an Update entry) and are taken from every other entry
 *     without conflict; fields it removed leave every entry. An entry left empty goes.
 *   - A write whose object carries managedFields other than the stored ones sets them as
 *     given (how kubectl moves a client-side-applied object's "kubectl-client-side-apply"
 *     entry to server-side apply's "kubectl"); a no-op write keeps them.
 *   - An apply by manager M with configuration C: C is merged into the live object by the
 *     types' list kinds and keys; every field of C whose value changes and that another entry
 *     owns is a conflict: 409 naming each field and its manager, unless force, which takes
 *     them. Fields M applied before and C no longer has are removed unless another entry
 *     owns them. M's Apply entry becomes C's field set. Applying the same C again changes
 *     nothing (no write, same resourceVersion).
 * The manager is the fieldManager parameter, else the User-Agent up to its first '/'
 * (kube-apiserver's default), else the user's name (in-process clients).
 *
 * Rejected: keeping managedFields outside the object (a side table): clients read and write
 * them in the object (kubectl's migration patches them), and watchers see them change.
 * Not done: conversion of field sets between versions (an older served version's request is
 * converted first, and sets are the storage version's); the last-applied annotation is not
 * updated by server-side apply.
 */
#include "base/compat.h"

#include "apiserver/fieldset.h"
#include "apiserver/internal.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"

static void now_rfc3339(char *buf, size_t n)
{
    fatia_usec_t now = fatia_now_real_usec();

    fatia_time_format_rfc3339(now - now % FATIA_USEC_PER_SEC, false, buf, n);
}

static const char *manager_of(const struct opctx *c)
{
    if (c->manager && *c->manager)
        return c->manager;
    return c->user && c->user->name ? c->user->name : "unknown";
}

/* The managedFields of a write must be a list of entries; 0 or a 422 in r naming the field. */
static int check_entries(const struct opctx *c, const json_t *mf, struct opres *r)
{
    struct fatia_diag d;
    size_t i;
    json_t *e;
    char path[64];
    bool bad = false;

    fatia_diag_init(&d);
    if (!json_is_array(mf)) {
        fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "metadata.managedFields",
                       "must be a list of entries");
        bad = true;
    }
    json_array_foreach(mf, i, e)
    {
        const char *op = fatia_json_str(e, "operation");
        const char *ft = fatia_json_str(e, "fieldsType");
        const json_t *fv = json_object_get(e, "fieldsV1");
        snprintf(path, sizeof(path), "metadata.managedFields[%zu]", i);
        if (!json_is_object(e) || !fatia_json_str(e, "manager")) {
            fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path,
                           "an entry needs a manager");
            bad = true;
        } else if (!op || (strcmp(op, "Apply") && strcmp(op, "Update"))) {
            fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path,
                           "operation must be Apply or Update");
            bad = true;
        } else if (fv && (!json_is_object(fv) || !ft || strcmp(ft, "FieldsV1"))) {
            fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, path,
                           "fieldsV1 must be an object, with fieldsType FieldsV1");
            bad = true;
        }
    }
    if (bad)
        fatia_api_opres_invalid(r, c->t, c->name ? c->name : "", &d);
    fatia_diag_release(&d);
    return bad ? -FATIA_E_INVALID : 0;
}

static bool entry_is(const json_t *e, const char *manager, const char *op, const char *sub)
{
    return !strcmp(nz(fatia_json_str(e, "manager")), manager) &&
           !strcmp(nz(fatia_json_str(e, "operation")), op) &&
           !strcmp(nz(fatia_json_str(e, "subresource")), nz(sub));
}

static json_t *new_entry(const char *manager, const char *op, const char *api_version,
                         const char *sub, const char *ts, json_t *fs)
{
    json_t *e =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:o}", "manager", manager, "operation", op, "apiVersion",
                  api_version, "time", ts, "fieldsType", "FieldsV1", "fieldsV1", fs);

    if (sub && *sub)
        json_object_set_new(e, "subresource", json_string(sub));
    return e;
}

static const char *sub_of(const struct opctx *c)
{
    return c->subresource && !strcmp(c->subresource, "status") ? "status" : NULL;
}

int fatia_api_managed_on_write(const struct opctx *c, const json_t *old, json_t *tree,
                               const json_t *req_mf, struct opres *r)
{
    const struct fatia_kind *k = c->t->kind;
    json_t *meta = json_object_get(tree, "metadata");
    const json_t *old_mf =
        old ? json_object_get(json_object_get(old, "metadata"), "managedFields") : NULL;
    const char *sub = sub_of(c), *manager = manager_of(c);
    enum fatia_api_fs_part part = sub ? FATIA_FS_STATUS : FATIA_FS_MAIN;
    json_t *removed, *chg, *out, *e, *mine = NULL;
    char av[160], ts[40];
    size_t i;

    if (!json_is_object(meta))
        return 0;
    if (req_mf && !json_is_null(req_mf) && !sub && (!old || !fatia_json_equal(req_mf, old_mf))) {
        if (check_entries(c, req_mf, r) < 0)
            return -FATIA_E_INVALID;
        if (json_array_size(req_mf))
            json_object_set_new(meta, "managedFields", json_deep_copy(req_mf));
        else
            json_object_del(meta, "managedFields");
        return 0;
    }
    fatia_api_fs_diff(old, tree, k, part, &chg, &removed);
    out = json_array();
    fatia_kind_api_version(k, av, sizeof(av));
    now_rfc3339(ts, sizeof(ts));
    json_array_foreach(old_mf, i, e)
    {
        json_t *fs = json_object_get(e, "fieldsV1"), *a, *b, *ne;
        if (!json_is_object(e))
            continue;
        if (fatia_api_fs_empty(chg) && fatia_api_fs_empty(removed)) {
            json_array_append_new(out, json_deep_copy(e));
            continue;
        }
        a = fatia_api_fs_combine(fs, chg, FATIA_FS_DIFF);
        b = fatia_api_fs_combine(a, removed, FATIA_FS_DIFF);
        json_decref(a);
        if (entry_is(e, manager, "Update", sub)) {
            mine = fatia_api_fs_combine(b, chg, FATIA_FS_UNION);
            json_decref(b);
            json_array_append_new(out, new_entry(manager, "Update", av, sub, ts, mine));
            continue;
        }
        if (fatia_api_fs_empty(b) && json_object_get(e, "fieldsV1")) {
            json_decref(b); /* owns nothing any more */
            continue;
        }
        ne = json_deep_copy(e);
        if (json_object_get(e, "fieldsV1"))
            json_object_set_new(ne, "fieldsV1", b);
        else
            json_decref(b);
        json_array_append_new(out, ne);
    }
    if (!mine && !fatia_api_fs_empty(chg))
        json_array_append_new(out, new_entry(manager, "Update", av, sub, ts, json_incref(chg)));
    if (json_array_size(out))
        json_object_set_new(meta, "managedFields", out);
    else {
        json_object_del(meta, "managedFields");
        json_decref(out);
    }
    json_decref(removed);
    json_decref(chg);
    return 0;
}

/* ---- apply ---- */

struct conflicts {
    json_t *causes;
    struct fatia_buf msg;
    const char *manager;
    const char *using; /* " using kueue.x-k8s.io/v1beta2" for Update entries, "" for Apply */
    size_t n;
};

static void add_conflict(void *arg, const char *path)
{
    struct conflicts *cf = arg;
    char line[1024];

    snprintf(line, sizeof(line), "conflict with \"%s\"%s: %s", cf->manager, cf->using, path);
    fatia_buf_printf(&cf->msg, "%s%s", cf->n ? "\n" : "", line);
    json_array_append_new(cf->causes, json_pack("{s:s,s:s,s:s}", "type", "FieldManagerConflict",
                                                "message", line, "field", path));
    cf->n++;
}

/* Strips what an apply configuration may not set: managedFields (400) and system metadata. */
static int clean_config(const struct opctx *c, json_t *cfg, struct opres *r)
{
    json_t *meta = json_object_get(cfg, "metadata");
    static const char *const drop[] = {"creationTimestamp", "generation",
                                       "deletionTimestamp", "deletionGracePeriodSeconds",
                                       "selfLink",          NULL};
    const char *name;

    if (!json_is_object(meta)) {
        fatia_api_opres_fail(r, 400, "BadRequest", "metadata: expected an object");
        return -EINVAL;
    }
    if (json_object_get(meta, "managedFields") &&
        !json_is_null(json_object_get(meta, "managedFields"))) {
        fatia_api_opres_fail(r, 400, "BadRequest", "metadata.managedFields must be nil");
        return -EINVAL;
    }
    json_object_del(meta, "managedFields");
    for (const char *const *d = drop; *d; d++)
        json_object_del(meta, *d);
    name = fatia_json_str(meta, "name");
    if (name && *name && strcmp(name, c->name)) {
        fatia_api_opres_fail(r, 400, "BadRequest",
                             "the name of the object (%s) does not match the name on the URL (%s)",
                             name, c->name);
        return -EINVAL;
    }
    json_object_set_new(meta, "name", json_string(c->name));
    if (c->t->kind->namespaced && c->ns)
        json_object_set_new(meta, "namespace", json_string(c->ns));
    if (c->t->kind->has_status && !sub_of(c))
        json_object_del(cfg, "status");
    return 0;
}

void fatia_api_op_apply(const struct opctx *c, const json_t *body, op_done_fn done, void *arg)
{
    struct opres r = {0};
    const struct fatia_kind *k = c->t->kind;
    struct opctx c2 = *c;
    const char *sub = sub_of(c), *manager = c->manager;
    enum fatia_api_fs_part part = sub ? FATIA_FS_STATUS : FATIA_FS_MAIN;
    json_t *cfg = NULL, *cset = NULL, *merged = NULL, *mf = NULL, *prev = NULL, *others = NULL;
    struct conflicts cf = {0};
    struct entry *e;
    char key[600], av[160], ts[40];
    size_t i;
    json_t *ent;

    fatia_buf_init(&cf.msg, 0);
    if (fatia_api_authorize(c, "patch", &r) < 0)
        goto out_answer;
    if (!manager || !*manager) {
        fatia_api_opres_fail(&r, 400, "BadRequest",
                             "fieldManager: Required value: is required for apply patch");
        goto out_answer;
    }
    if (strlen(manager) > 128) {
        fatia_api_opres_fail(&r, 400, "BadRequest",
                             "fieldManager: Too long: may not be more than 128 bytes");
        goto out_answer;
    }
    cfg = json_deep_copy(body);
    if (!json_is_object(cfg)) {
        fatia_api_opres_fail(&r, 400, "BadRequest", "the body of the request is not a JSON object");
        goto out_answer;
    }
    if (fatia_api_op_convert(c, cfg, &r) < 0 || clean_config(c, cfg, &r) < 0)
        goto out_answer;
    {
        char why[512];
        if (fatia_api_fs_check(cfg, k, why, sizeof(why)) < 0) {
            fatia_api_opres_fail(&r, 400, "BadRequest",
                                 "failed to create typed patch object (%s): %s", c->name, why);
            goto out_answer;
        }
    }
    c2.ver = NULL; /* cfg is in the storage version now */
    fatia_kind_api_version(k, av, sizeof(av));
    now_rfc3339(ts, sizeof(ts));
    cset = fatia_api_fs_of(cfg, k, part, true);

    fatia_api_entry_key(c->t, c->ns, c->name, key, sizeof(key));
    e = fatia_api_rtable_find(c->t, key);
    if (!e || !e->latest) {
        if (sub) {
            fatia_api_opres_not_found(&r, c->t, c->name);
            goto out_answer;
        }
        const char *uid = fatia_json_str(json_object_get(cfg, "metadata"), "uid");
        if (uid && *uid) {
            /* apply creates only what the configuration does not pin to another object */
            fatia_api_opres_fail(&r, 409, "Conflict",
                                 "Operation cannot be fulfilled on %s \"%s\": the UID in the "
                                 "precondition (%s) does not match the UID in record (). The "
                                 "object might have been deleted and then recreated",
                                 c->t->resource, c->name, uid);
            goto out_answer;
        }
        /* given, so that the create takes it as is ([] when the apply owns nothing) */
        json_object_set_new(
            json_object_get(cfg, "metadata"), "managedFields",
            fatia_api_fs_empty(cset)
                ? json_array()
                : json_pack("[o]", new_entry(manager, "Apply", av, NULL, ts, json_incref(cset))));
        c2.name = NULL;
        fatia_api_op_create(&c2, cfg, done, arg);
        goto out_free;
    }

    merged = fatia_api_fs_merge(e->latest->tree, cfg, k);
    mf = json_deep_copy(
        json_object_get(json_object_get(e->latest->tree, "metadata"), "managedFields"));
    if (!json_is_array(mf)) {
        json_decref(mf);
        mf = json_array();
    }
    /* conflicts: fields of cfg that change and that another entry owns */
    cf.causes = json_array();
    json_array_foreach(mf, i, ent)
    {
        json_t *own, *chg;
        char using[200] = "";
        if (entry_is(ent, manager, "Apply", sub))
            continue;
        own = fatia_api_fs_combine(json_object_get(ent, "fieldsV1"), cset, FATIA_FS_INTERSECT);
        chg = fatia_api_fs_changed(own, e->latest->tree, merged, k);
        json_decref(own);
        if (fatia_api_fs_empty(chg)) {
            json_decref(chg);
            continue;
        }
        if (c->force) {
            json_t *left =
                fatia_api_fs_combine(json_object_get(ent, "fieldsV1"), chg, FATIA_FS_DIFF);
            json_object_set_new(ent, "fieldsV1", left);
        } else {
            if (!strcmp(nz(fatia_json_str(ent, "operation")), "Update"))
                snprintf(using, sizeof(using), " using %s", nz(fatia_json_str(ent, "apiVersion")));
            cf.manager = nz(fatia_json_str(ent, "manager"));
            cf.using = using;
            fatia_api_fs_paths(chg, add_conflict, &cf);
        }
        json_decref(chg);
    }
    if (cf.n) {
        fatia_api_opres_fail(&r, 409, "Conflict", "Apply failed with %zu conflict%s: %s", cf.n,
                             cf.n > 1 ? "s" : "", cf.msg.p);
        if (r.status)
            json_object_set_new(r.status, "details",
                                json_pack("{s:s,s:s,s:s,s:O}", "name", c->name, "group", k->group,
                                          "kind", k->plural, "causes", cf.causes));
        goto out_answer;
    }
    /* fields M no longer applies and nobody else owns go */
    others = json_object();
    json_array_foreach(mf, i, ent)
    {
        if (entry_is(ent, manager, "Apply", sub)) {
            prev = json_incref(json_object_get(ent, "fieldsV1"));
            continue;
        }
        json_t *u = fatia_api_fs_combine(others, json_object_get(ent, "fieldsV1"), FATIA_FS_UNION);
        json_decref(others);
        others = u;
    }
    if (prev) {
        json_t *gone = fatia_api_fs_combine(prev, cset, FATIA_FS_DIFF);
        json_t *orphan = fatia_api_fs_combine(gone, others, FATIA_FS_DIFF);
        fatia_api_fs_remove(merged, orphan, k);
        json_decref(gone);
        json_decref(orphan);
    }
    /* M's entry: its new set; the time moves only when the object or the set changes */
    {
        json_t *out = json_array();
        bool found = false;
        json_t *lm = json_object_get(e->latest->tree, "metadata");
        json_t *mm = json_object_get(merged, "metadata");
        json_t *saved = json_incref(json_object_get(mm, "managedFields"));
        bool same;
        json_object_set(mm, "managedFields", json_object_get(lm, "managedFields"));
        same = fatia_json_equal(merged, e->latest->tree) && prev && fatia_json_equal(prev, cset);
        json_decref(saved);
        json_array_foreach(mf, i, ent)
        {
            if (entry_is(ent, manager, "Apply", sub)) {
                found = true;
                if (same)
                    json_array_append(out, ent);
                else if (!fatia_api_fs_empty(cset))
                    json_array_append_new(
                        out, new_entry(manager, "Apply", av, sub, ts, json_incref(cset)));
                continue;
            }
            if (json_object_get(ent, "fieldsV1") &&
                fatia_api_fs_empty(json_object_get(ent, "fieldsV1")))
                continue;
            json_array_append(out, ent);
        }
        if (!found && !fatia_api_fs_empty(cset))
            json_array_append_new(out, new_entry(manager, "Apply", av, sub, ts, json_incref(cset)));
        json_object_set_new(mm, "managedFields", out);
    }
    fatia_api_op_update_tree(&c2, merged, done, arg);
    merged = NULL;
    goto out_free;

out_answer:
    done(arg, &r);
    fatia_api_opres_release(&r);
out_free:
    json_decref(cfg);
    json_decref(cset);
    json_decref(merged);
    json_decref(mf);
    json_decref(prev);
    json_decref(others);
    json_decref(cf.causes);
    fatia_buf_release(&cf.msg);
}
