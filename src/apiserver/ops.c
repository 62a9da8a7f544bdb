/*
 * apiserver/ops.c: the write path: create, update (and the status subresource), patch, delete,
 * deletecollection; the admission chain; object lifecycle rules. Authorization (step 1 below)
 * is auth.c's fatia_api_authorize().
 *
 * Every write runs, in this order (a rejection at any step changes nothing):
 *   1. authorization (auth.h rules)
 *   2. the body's apiVersion and kind against the URL; conversion to the storage version
 *   3. system metadata: what the client may not set is dropped or taken from the old object
 *   4. defaulting and schema validation (fatia_object_decode), unknown fields pruned (warned
 *      about, or refused with fieldValidation=Strict)
 *   5. mutating admission plugins, then validation again if any ran
 *   6. validating admission plugins
 *   7. existence, optimistic concurrency (metadata.resourceVersion, uid preconditions),
 *      namespace lifecycle, finalizers, generation
 *   8. the managed fields (server-side apply's), then the creator annotation (creator.c)
 *   9. group commit; the answer goes out when the write is durable
 *
 * Object lifecycle (deletion):
 *
 *     live --DELETE, no finalizers----------------------------------------> gone (DELETED)
 *     live --DELETE, finalizers--> deleting (deletionTimestamp set) --update removing the last
 *                                                                      finalizer--> gone
 *     Namespace: DELETE --> Terminating; every object in it is deleted (or marked, if it has
 *     finalizers) in the same transaction; the namespace goes once the last one is gone.
 *
 * A no-op update (the result equals the stored object) writes nothing and keeps the
 * resourceVersion, as upstream does, so controllers that re-write the same status cost nothing.
 */
#include "base/compat.h"

#include <event2/event.h>

#include "apiserver/internal.h"
#include "apiserver/patch.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "model/object.h"

/* ---- small helpers ---- */

static void now_rfc3339(char *buf, size_t n)
{
    fatia_usec_t now = fatia_now_real_usec();

    fatia_time_format_rfc3339(now - now % FATIA_USEC_PER_SEC, false, buf, n);
}

static json_t *meta_of(json_t *obj)
{
    return json_object_get(obj, "metadata");
}

static bool has_finalizers(const json_t *obj)
{
    return json_array_size(json_object_get(json_object_get(obj, "metadata"), "finalizers")) > 0;
}

static bool is_deleting(const json_t *obj)
{
    return json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") != NULL;
}

static const char *name_of(const json_t *obj)
{
    return fatia_json_str(json_object_get(obj, "metadata"), "name");
}

static void api_version_of(const struct opctx *c, char *buf, size_t n)
{
    if (c->ver)
        snprintf(buf, n, "%s%s%s", c->t->kind->group, c->t->kind->group[0] ? "/" : "",
                 c->ver->version);
    else
        fatia_kind_api_version(c->t->kind, buf, n);
}

/* The body's apiVersion and kind must be the URL's (missing ones are filled in); then the body
 * is converted to the storage version. 0 or a 400 in r. */
static int check_type_and_convert(const struct opctx *c, json_t *tree, struct opres *r)
{
    const char *av = fatia_json_str(tree, "apiVersion");
    const char *kind = fatia_json_str(tree, "kind");
    char want[160];

    api_version_of(c, want, sizeof(want));
    if (!json_is_object(tree)) {
        fatia_api_opres_fail(r, 400, "BadRequest", "the body of the request is not a JSON object");
        return -EINVAL;
    }
    if (kind && *kind && strcmp(kind, c->t->kind->kind)) {
        fatia_api_opres_fail(r, 400, "BadRequest",
                             "the kind of the object (%s) does not match the kind of the URL (%s)",
                             kind, c->t->kind->kind);
        return -EINVAL;
    }
    if (av && *av && strcmp(av, want)) {
        fatia_api_opres_fail(
            r, 400, "BadRequest",
            "the API version in the data (%s) does not match the expected API version (%s)", av,
            want);
        return -EINVAL;
    }
    if (c->ver && c->ver->to_storage)
        c->ver->to_storage(tree);
    fatia_kind_api_version(c->t->kind, want, sizeof(want));
    json_object_set_new(tree, "apiVersion", json_string(want));
    json_object_set_new(tree, "kind", json_string(c->t->kind->kind));
    if (!json_object_get(tree, "metadata"))
        json_object_set_new(tree, "metadata", json_object());
    return 0;
}

/* Members of a schema that the body may not carry: removes what the schema does not know. */
static void prune(const struct fatia_schema *s, json_t *v, int depth)
{
    const char *key;
    json_t *m;
    void *tmp;

    if (!s || depth > FATIA_DOC_MAX_DEPTH)
        return;
    switch (s->type) {
    case FATIA_T_OBJECT:
        if (!json_is_object(v))
            return;
        json_object_foreach_safe(v, tmp, key, m)
        {
            const struct fatia_field *f = s->fields;
            while (f && f->name && strcmp(f->name, key))
                f++;
            if (f && f->name)
                prune(f->schema, m, depth + 1);
            else if (!(s->flags & FATIA_S_OPEN))
                json_object_del(v, key);
        }
        break;
    case FATIA_T_ARRAY: {
        size_t i;
        if (!json_is_array(v))
            return;
        json_array_foreach(v, i, m) prune(s->items, m, depth + 1);
        break;
    }
    case FATIA_T_MAP:
        if (!json_is_object(v))
            return;
        json_object_foreach(v, key, m) prune(s->items, m, depth + 1);
        break;
    default:
        break;
    }
}

/* Built-in defaults the registry cannot express: a Namespace carries its own name as the label
 * kubernetes.io/metadata.name and a phase. */
static void builtin_mutate(const struct opctx *c, json_t *tree)
{
    if (c->t->kind == fatia_kind_by_resource("", "namespaces")) {
        json_t *meta = meta_of(tree);
        const char *name = fatia_json_str(meta, "name");
        json_t *labels = fatia_json_object_ensure(meta, "labels");
        json_t *status;
        if (labels && name)
            json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
        status = fatia_json_object_ensure(tree, "status");
        if (status && !json_object_get(status, "phase"))
            json_object_set_new(status, "phase",
                                json_string(is_deleting(tree) ? "Terminating" : "Active"));
    }
}

static bool plugin_applies(const struct fatia_admission *p, const struct opctx *c,
                           enum fatia_admit_op op)
{
    if (!(p->ops & (unsigned)op))
        return false;
    if (c->subresource && !p->subresources)
        return false;
    if (!p->kinds)
        return true;
    for (const struct fatia_kind *const *k = p->kinds; *k; k++)
        if (*k == c->t->kind)
            return true;
    return false;
}

/* Runs the plugins of one phase. 0, or a failure in r. */
static int run_plugins(const struct opctx *c, enum fatia_admit_phase phase, enum fatia_admit_op op,
                       json_t *tree, const json_t *old, struct opres *r, bool *ran)
{
    struct fatia_apiserver *s = c->s;

    for (size_t i = 0; i < s->admission.n; i++) {
        const struct fatia_admission *p = &s->admission.v[i].p;
        struct fatia_diag diag;
        struct fatia_admit_attrs a;
        const json_t *src = tree ? tree : old;
        int rc;

        if (p->phase != phase || !plugin_applies(p, c, op))
            continue;
        if (ran)
            *ran = true;
        fatia_diag_init(&diag);
        a = (struct fatia_admit_attrs){
            .op = op,
            .kind = c->t->kind,
            .ns =
                c->t->kind->namespaced ? fatia_json_str(meta_of((json_t *)src), "namespace") : NULL,
            .name = name_of(src),
            .subresource = c->subresource,
            .user = c->user,
            .dry_run = c->dry_run,
            .obj = tree,
            .old = old,
            .diag = &diag,
        };
        rc = p->admit(p->arg, &a);
        if (rc == -FATIA_E_INVALID || (rc == 0 && fatia_diag_has_errors(&diag))) {
            fatia_api_opres_invalid(r, c->t, name_of(src), &diag);
            fatia_diag_release(&diag);
            return -FATIA_E_INVALID;
        }
        if (rc == -FATIA_E_FORBIDDEN && p->bare_message) {
            fatia_api_opres_fail(r, 403, "Forbidden", "%s \"%s\" is forbidden: %s", c->t->resource,
                                 nz(name_of(src)),
                                 diag.n ? diag.v[0].msg : "rejected by admission");
            fatia_diag_release(&diag);
            return rc;
        }
        if (rc == -FATIA_E_FORBIDDEN) {
            fatia_api_opres_fail(r, 403, "Forbidden", "%s \"%s\" is forbidden: %s: %s",
                                 c->t->resource, nz(name_of(src)), p->name,
                                 diag.n ? diag.v[0].msg : "rejected by admission");
            fatia_diag_release(&diag);
            return rc;
        }
        fatia_diag_release(&diag);
        if (rc < 0) {
            fatia_api_opres_fail(r, 500, "InternalError", "admission plugin %s failed: %s", p->name,
                                 fatia_strerror(rc));
            return rc;
        }
    }
    return 0;
}

static int decode_tree(const struct fatia_apiserver *s, json_t *tree, bool allow_gen,
                       struct fatia_diag *diag)
{
    struct fatia_decode_opts o = {.allow_generate_name = allow_gen};
    struct fatia_object *obj = NULL;
    int rc = fatia_object_decode(tree, &o, s->checks, diag, &obj);

    fatia_object_free(obj);
    return rc;
}

static bool is_unknown_field(const struct fatia_diag_entry *e)
{
    return e->level == FATIA_DIAG_WARNING && fatia_diag_is_unknown_field(e);
}

/* Steps 4-6 of the write path. tree is in the storage version. 0 or a failure in r. */
static int pipeline(const struct opctx *c, enum fatia_admit_op op, json_t *tree, const json_t *old,
                    struct opres *r)
{
    struct fatia_diag diag;
    bool mutated = false;
    size_t n_unknown = 0;
    int rc, decoded;

    fatia_diag_init(&diag);
    decoded = rc = decode_tree(c->s, tree, op == FATIA_ADMIT_CREATE, &diag);
    if (rc < 0 && rc != -FATIA_E_INVALID) {
        fatia_api_opres_from_errno(r, rc, "decode");
        goto out;
    }
    for (size_t i = 0; i < diag.n; i++)
        n_unknown += is_unknown_field(&diag.v[i]);
    if (n_unknown && c->fv == FATIA_FV_STRICT) {
        struct fatia_buf msg = FATIA_BUF_INIT;
        (void)fatia_buf_puts(&msg, "strict decoding error: ");
        for (size_t i = 0, k = 0; i < diag.n; i++)
            if (is_unknown_field(&diag.v[i]))
                (void)fatia_buf_printf(&msg, "%sunknown field \"%s\"", k++ ? ", " : "",
                                       diag.v[i].path ? diag.v[i].path : "");
        fatia_api_opres_fail(r, 400, "BadRequest", "%s", msg.p);
        fatia_buf_release(&msg);
        rc = -EINVAL;
        goto out;
    }
    for (size_t i = 0; i < diag.n; i++) {
        const struct fatia_diag_entry *e = &diag.v[i];
        if (e->level != FATIA_DIAG_WARNING)
            continue;
        if (is_unknown_field(e)) {
            if (c->fv == FATIA_FV_WARN)
                fatia_api_opres_warn(r, "unknown field \"%s\"", e->path ? e->path : "");
        } else {
            fatia_api_opres_warn(r, "%s%s%s", e->path ? e->path : "", e->path ? ": " : "", e->msg);
        }
    }
    prune(c->t->kind->schema, tree, 0);
    builtin_mutate(c, tree);
    rc = run_plugins(c, FATIA_ADMIT_MUTATING, op, tree, old, r, &mutated);
    if (rc < 0)
        goto out;
    if (mutated) {
        fatia_diag_release(&diag);
        fatia_diag_init(&diag);
        decoded = rc = decode_tree(c->s, tree, op == FATIA_ADMIT_CREATE, &diag);
        if (rc < 0 && rc != -FATIA_E_INVALID) {
            fatia_api_opres_from_errno(r, rc, "decode");
            goto out;
        }
        prune(c->t->kind->schema, tree, 0);
    }
    if (decoded == -FATIA_E_INVALID) {
        rc = decoded;
        const char *name = name_of(tree);
        fatia_api_opres_invalid(r, c->t,
                                name ? name : fatia_json_str(meta_of(tree), "generateName"), &diag);
        goto out;
    }
    rc = run_plugins(c, FATIA_ADMIT_VALIDATING, op, tree, old, r, NULL);
out:
    fatia_diag_release(&diag);
    return rc;
}

/* ---- answering ---- */

struct pending {
    op_done_fn done;
    void *arg;
    int code;
    struct opres res; /* warnings gathered on the way */
    char what[320];   /* the object, for a failed commit's answer: resource "name" */
};

/* Names the object a transaction writes, for the answer if its commit fails. */
static void describe(struct wtxn *tx, const struct opctx *c, const char *name)
{
    struct pending *p = tx->arg;

    if (name && name[0])
        snprintf(p->what, sizeof(p->what), "%s \"%s\"", c->t->resource, name);
    else
        snprintf(p->what, sizeof(p->what), "%s", c->t->resource);
}

static void answer_now(struct opres *r, op_done_fn done, void *arg)
{
    done(arg, r);
    fatia_api_opres_release(r);
}

static void txn_done(struct fatia_apiserver *s, struct wtxn *tx, int err)
{
    struct pending *p = tx->arg;

    (void)s;
    if (err < 0) {
        fatia_api_opres_from_errno(&p->res, err, p->what[0] ? p->what : "write");
        if (err == -FATIA_E_CONFLICT)
            p->res.stale_rv = tx->stale_rv;
    } else {
        p->res.code = p->code;
        p->res.ver = fatia_api_objver_ref(tx->result);
    }
    p->done(p->arg, &p->res);
    fatia_api_opres_release(&p->res);
    fatia_free(p);
}

/* Starts a transaction that answers with code; warnings move from r. NULL on OOM (r answered). */
static struct wtxn *begin(const struct opctx *c, struct opres *r, int code, op_done_fn done,
                          void *arg)
{
    struct pending *p = fatia_calloc(1, sizeof(*p));
    struct wtxn *tx;

    if (!p) {
        fatia_api_opres_from_errno(r, -ENOMEM, "write");
        return NULL;
    }
    tx = fatia_api_wtxn_new(txn_done, p);
    if (!tx) {
        fatia_free(p);
        fatia_api_opres_from_errno(r, -ENOMEM, "write");
        return NULL;
    }
    tx->fenced = c->fenced;
    describe(tx, c, c->name);
    p->done = done;
    p->arg = arg;
    p->code = code;
    p->res = *r;
    memset(r, 0, sizeof(*r));
    return tx;
}

/* Gives the warnings back to r and drops an uncommitted transaction. */
static void abandon(struct fatia_apiserver *s, struct wtxn *tx, struct opres *r)
{
    struct pending *p = tx->arg;

    for (size_t i = 0; i < p->res.n_warnings && r->n_warnings < FATIA_ARRAY_SIZE(r->warnings); i++)
        r->warnings[r->n_warnings++] = p->res.warnings[i];
    p->res.n_warnings = 0;
    fatia_api_opres_release(&p->res);
    fatia_free(p);
    fatia_api_wtxn_abort(s, tx);
}

/* ---- namespaces ---- */

static struct rtable *ns_table(struct fatia_apiserver *s)
{
    return fatia_api_server_table_by_resource(s, "", "namespaces");
}

/* Namespace ns in the write view: 0, or a failure in r (404 missing, 403 terminating). */
static int check_namespace(const struct opctx *c, const char *ns, const char *name, struct opres *r)
{
    struct rtable *nt = ns_table(c->s);
    struct entry *e = nt ? fatia_api_rtable_find(nt, ns) : NULL;

    if (!e || !e->latest) {
        fatia_api_opres_fail(r, 404, "NotFound", "namespaces \"%s\" not found", ns);
        if (r->status)
            json_object_set_new(r->status, "details",
                                json_pack("{s:s,s:s}", "name", ns, "kind", "namespaces"));
        return -ENOENT;
    }
    if (is_deleting(e->latest->tree)) {
        fatia_api_opres_fail(
            r, 403, "Forbidden",
            "%s \"%s\" is forbidden: unable to create new content in namespace %s because "
            "it is being terminated",
            c->t->resource, name ? name : "", ns);
        return -FATIA_E_FORBIDDEN;
    }
    return 0;
}

/* Whether namespace ns holds no object in the write view. */
static bool ns_empty(struct fatia_apiserver *s, const char *ns)
{
    for (size_t i = 0; i < s->n_tables; i++) {
        size_t lo, hi;
        if (!s->tables[i].kind->namespaced)
            continue;
        fatia_api_rtable_range(&s->tables[i], ns, &lo, &hi);
        for (size_t j = lo; j < hi; j++)
            if (s->tables[i].entries.v[j]->latest)
                return false;
    }
    return true;
}

/* After an object in ns went away inside tx: if ns is terminating and now empty, it goes too. */
static int ns_maybe_finish(struct fatia_apiserver *s, struct wtxn *tx, const char *ns)
{
    struct rtable *nt = ns_table(s);
    struct entry *e = nt ? fatia_api_rtable_find(nt, ns) : NULL;

    if (!e || !e->latest || !is_deleting(e->latest->tree) || has_finalizers(e->latest->tree) ||
        !ns_empty(s, ns))
        return 0;
    return fatia_api_wtxn_delete(s, tx, nt, e);
}

/* ---- create ---- */

static const char *const system_meta[] = {"uid",
                                          "resourceVersion",
                                          "generation",
                                          "creationTimestamp",
                                          "deletionTimestamp",
                                          "deletionGracePeriodSeconds",
                                          "selfLink",
                                          "managedFields",
                                          NULL};

/* The cap on objects per namespace (until ResourceQuota's count/<resource>): checked before
 * anything else costs, so that a namespace at its cap costs two binary searches per kind.
 * Events count against a budget of the same size of their own, UsageRecords against none
 * (fatia_api_kind_budget). */
static int check_ns_objects(const struct opctx *c, const char *ns, struct opres *r)
{
    size_t max = c->s->o.max_namespace_objects ? c->s->o.max_namespace_objects : 50000;
    enum fatia_api_ns_budget b = c->t->ns_budget;
    bool events = b == FATIA_API_NS_BUDGET_EVENTS;
    size_t n = b == FATIA_API_NS_BUDGET_NONE ? 0 : fatia_api_ns_objects(c->s, ns, b);

    if (n < max)
        return 0;
    fatia_api_opres_fail(
        r, 403, "Forbidden",
        "%s is forbidden: exceeded the object count of namespace \"%s\": it holds %zu %s, the "
        "most one namespace may hold is %zu (fatiad --max-namespace-objects)",
        c->t->resource, ns, n, events ? "events" : "objects other than events", max);
    return -FATIA_E_FORBIDDEN;
}

void fatia_api_op_create(const struct opctx *c, json_t *body, op_done_fn done, void *arg)
{
    fatia_api_op_create_take(c, json_deep_copy(body), done, arg);
}

void fatia_api_op_create_take(const struct opctx *c, json_t *body, op_done_fn done, void *arg)
{
    struct opres r = {0};
    struct fatia_apiserver *s = c->s;
    json_t *tree = NULL, *meta;
    const char *ns = NULL, *name, *rv;
    struct entry *e;
    struct wtxn *tx;
    json_t *req_mf = NULL;
    char uid[37], ts[40], gen_name[300];

    tree = body;
    if (fatia_api_authorize(c, "create", &r) < 0)
        goto out_answer;
    if (!tree) {
        fatia_api_opres_fail(&r, 400, "BadRequest", "the body of the request is not a JSON object");
        goto out_answer;
    }
    if (check_type_and_convert(c, tree, &r) < 0)
        goto out_answer;
    meta = meta_of(tree);
    if (!json_is_object(meta)) {
        fatia_api_opres_fail(&r, 400, "BadRequest", "metadata: expected an object");
        goto out_answer;
    }
    if (c->t->kind->namespaced) {
        const char *bns = fatia_json_str(meta, "namespace");
        if (bns && *bns && c->ns && strcmp(bns, c->ns)) {
            fatia_api_opres_fail(
                &r, 400, "BadRequest",
                "the namespace of the provided object does not match the namespace sent on "
                "the request");
            goto out_answer;
        }
        if (!c->ns) {
            fatia_api_opres_fail(&r, 404, "NotFound",
                                 "the server could not find the requested resource");
            goto out_answer;
        }
        json_object_set_new(meta, "namespace", json_string(c->ns));
        ns = c->ns;
        if (check_ns_objects(c, ns, &r) < 0)
            goto out_answer;
    }
    rv = fatia_json_str(meta, "resourceVersion");
    if (rv && *rv) {
        fatia_api_opres_fail(&r, 400, "BadRequest",
                             "resourceVersion should not be set on objects to be "
                             "created");
        goto out_answer;
    }
    req_mf = json_incref(json_object_get(meta, "managedFields"));
    for (const char *const *k = system_meta; *k; k++)
        json_object_del(meta, *k);
    if (c->t->kind->has_status)
        json_object_del(tree, "status");

    if (pipeline(c, FATIA_ADMIT_CREATE, tree, NULL, &r) < 0)
        goto out_answer;
    meta = meta_of(tree);
    if (ns && check_namespace(c, ns, fatia_json_str(meta, "name"), &r) < 0)
        goto out_answer;

    name = fatia_json_str(meta, "name");
    if (!name || !*name) {
        const char *prefix = fatia_json_str(meta, "generateName");
        char why[256], key[600];
        int tries = 0;
        do {
            char suffix[6];
            fatia_api_random_suffix(suffix);
            snprintf(gen_name, sizeof(gen_name), "%.*s%s", 253 - 5, prefix ? prefix : "", suffix);
            fatia_api_entry_key(c->t, ns, gen_name, key, sizeof(key));
            e = fatia_api_rtable_find(c->t, key);
        } while (e && e->latest && ++tries < 8);
        if (e && e->latest) {
            fatia_api_opres_fail(&r, 409, "AlreadyExists",
                                 "could not generate a unique name from \"%s\"; try again", prefix);
            goto out_answer;
        }
        if (!fatia_kind_check_name(c->t->kind, gen_name, why, sizeof(why))) {
            struct fatia_diag d;
            fatia_diag_init(&d);
            fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "metadata.generateName",
                           "invalid value \"%s\": %s", prefix, why);
            fatia_api_opres_invalid(&r, c->t, gen_name, &d);
            fatia_diag_release(&d);
            goto out_answer;
        }
        json_object_set_new(meta, "name", json_string(gen_name));
        name = fatia_json_str(meta, "name");
    }
    e = fatia_api_rtable_get_or_add(c->t, ns, name);
    if (!e) {
        fatia_api_opres_from_errno(&r, -ENOMEM, "create");
        goto out_answer;
    }
    if (e->latest) {
        fatia_api_opres_fail(&r, 409, "AlreadyExists", "%s \"%s\" already exists", c->t->resource,
                             name);
        if (r.status) {
            json_t *d = json_pack("{s:s,s:s,s:s}", "name", name, "group", c->t->kind->group, "kind",
                                  c->t->kind->plural);
            json_object_set_new(r.status, "details", d);
        }
        goto out_answer;
    }
    if (fatia_api_managed_on_write(c, NULL, tree, req_mf, &r) < 0 ||
        fatia_api_creator_stamp(c, tree, NULL, &r) < 0) {
        fatia_api_rtable_maybe_remove(c->t, e);
        goto out_answer;
    }
    fatia_api_random_uid(uid);
    now_rfc3339(ts, sizeof(ts));
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(ts));
    json_object_set_new(meta, "generation", json_integer(1));
    if (c->dry_run) {
        r.code = 201;
        r.ver = fatia_api_objver_new(tree, 0);
        tree = NULL;
        if (!r.ver)
            fatia_api_opres_from_errno(&r, -ENOMEM, "create");
        fatia_api_rtable_maybe_remove(c->t, e);
        goto out_answer;
    }
    tx = begin(c, &r, 201, done, arg);
    if (!tx) {
        fatia_api_rtable_maybe_remove(c->t, e);
        goto out_answer;
    }
    describe(tx, c, e->name);
    if (fatia_api_wtxn_put(s, tx, c->t, e, FATIA_STORE_ADDED, tree) < 0) {
        tree = NULL;
        abandon(s, tx, &r);
        fatia_api_rtable_maybe_remove(c->t, e);
        fatia_api_opres_from_errno(&r, -ENOMEM, "create");
        goto out_answer;
    }
    json_decref(req_mf);
    fatia_api_wtxn_commit(s, tx);
    return;

out_answer:
    json_decref(tree);
    json_decref(req_mf);
    answer_now(&r, done, arg);
}

/* ---- update ---- */

/* Everything but metadata (and status when the kind has a status subresource). */
static bool spec_changed(const struct fatia_kind *k, const json_t *a, const json_t *b)
{
    const char *key;
    json_t *v;

    json_object_foreach((json_t *)a, key, v)
    {
        if (!strcmp(key, "metadata") || (k->has_status && !strcmp(key, "status")))
            continue;
        if (!fatia_json_equal(v, json_object_get(b, key)))
            return true;
    }
    json_object_foreach((json_t *)b, key, v)
    {
        if (!strcmp(key, "metadata") || (k->has_status && !strcmp(key, "status")))
            continue;
        if (!json_object_get(a, key))
            return true;
    }
    return false;
}

/* Finalizers of b that a does not have. */
static bool adds_finalizer(const json_t *old, const json_t *new)
{
    const json_t *of = json_object_get(json_object_get(old, "metadata"), "finalizers");
    const json_t *nf = json_object_get(json_object_get(new, "metadata"), "finalizers");
    size_t i, j;
    json_t *x, *y;

    json_array_foreach(nf, i, x)
    {
        bool found = false;
        json_array_foreach(of, j, y) found |= json_equal(x, y);
        if (!found)
            return true;
    }
    return false;
}

/* The shared tail of update and patch: tree (taken, request version) replaces the object. */
static void do_update(const struct opctx *c, json_t *tree, op_done_fn done, void *arg)
{
    struct opres r = {0};
    struct fatia_apiserver *s = c->s;
    const char *bname, *bns, *brv, *buid;
    json_t *meta, *ometa, *old;
    struct entry *e;
    struct wtxn *tx;
    char key[600], rvs[24];
    int64_t gen = 1;
    bool status_only = c->subresource && !strcmp(c->subresource, "status");
    json_t *req_mf = NULL;

    if (fatia_api_authorize(c, "update", &r) < 0)
        goto out_answer;
    if (check_type_and_convert(c, tree, &r) < 0)
        goto out_answer;
    meta = meta_of(tree);
    if (!json_is_object(meta)) {
        fatia_api_opres_fail(&r, 400, "BadRequest", "metadata: expected an object");
        goto out_answer;
    }
    bname = fatia_json_str(meta, "name");
    if (!bname || !*bname) {
        json_object_set_new(meta, "name", json_string(c->name));
    } else if (strcmp(bname, c->name)) {
        fatia_api_opres_fail(&r, 400, "BadRequest",
                             "the name of the object (%s) does not match the name on the URL (%s)",
                             bname, c->name);
        goto out_answer;
    }
    if (c->t->kind->namespaced) {
        bns = fatia_json_str(meta, "namespace");
        if (bns && *bns && strcmp(bns, c->ns)) {
            fatia_api_opres_fail(
                &r, 400, "BadRequest",
                "the namespace of the provided object does not match the namespace sent on "
                "the request");
            goto out_answer;
        }
        json_object_set_new(meta, "namespace", json_string(c->ns));
    }
    fatia_api_entry_key(c->t, c->ns, c->name, key, sizeof(key));
    e = fatia_api_rtable_find(c->t, key);
    if (!e || !e->latest) {
        fatia_api_opres_not_found(&r, c->t, c->name);
        goto out_answer;
    }
    old = e->latest->tree;
    ometa = meta_of(old);
    brv = fatia_json_str(meta, "resourceVersion");
    snprintf(rvs, sizeof(rvs), "%" PRIu64, e->latest->rv);
    if (brv && *brv && strcmp(brv, rvs)) {
        fatia_api_opres_fail(
            &r, 409, "Conflict",
            "Operation cannot be fulfilled on %s \"%s\": the object has been modified; "
            "please apply your changes to the latest version and try again",
            c->t->resource, c->name);
        goto out_answer;
    }
    buid = fatia_json_str(meta, "uid");
    if (buid && *buid && strcmp(buid, nz(fatia_json_str(ometa, "uid")))) {
        fatia_api_opres_fail(
            &r, 409, "Conflict",
            "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in "
            "precondition: %s, UID in object meta: %s",
            c->t->resource, c->name, buid, nz(fatia_json_str(ometa, "uid")));
        goto out_answer;
    }
    req_mf = status_only ? NULL : json_incref(json_object_get(meta, "managedFields"));
    if (status_only) {
        /* only .status changes through the status subresource */
        json_t *st = json_incref(json_object_get(tree, "status"));
        json_decref(tree);
        tree = json_deep_copy(old);
        if (!tree) {
            json_decref(st);
            fatia_api_opres_from_errno(&r, -ENOMEM, "update");
            goto out_answer;
        }
        if (st)
            json_object_set_new(tree, "status", st);
        else
            json_object_del(tree, "status");
        meta = meta_of(tree);
    } else {
        if (c->t->kind->has_status) {
            json_t *ost = json_object_get(old, "status");
            if (ost)
                json_object_set_new(tree, "status", json_deep_copy(ost));
            else
                json_object_del(tree, "status");
        }
        /* system metadata comes from the stored object */
        for (const char *const *k = system_meta; *k; k++) {
            json_t *v = json_object_get(ometa, *k);
            if (v && strcmp(*k, "managedFields"))
                json_object_set_new(meta, *k, json_deep_copy(v));
            else
                json_object_del(meta, *k);
        }
    }

    if (pipeline(c, FATIA_ADMIT_UPDATE, tree, old, &r) < 0)
        goto out_answer;
    meta = meta_of(tree);
    /* the pipeline may not move these */
    json_object_set_new(meta, "name", json_string(c->name));
    if (c->t->kind->namespaced)
        json_object_set_new(meta, "namespace", json_string(c->ns));
    if (fatia_api_managed_on_write(c, old, tree, req_mf, &r) < 0 ||
        fatia_api_creator_stamp(c, tree, old, &r) < 0)
        goto out_answer;
    fatia_json_int(ometa, "generation", &gen);
    json_object_set_new(meta, "generation",
                        json_integer(spec_changed(c->t->kind, old, tree) ? gen + 1 : gen));
    json_object_set_new(meta, "resourceVersion", json_string(rvs));
    if (is_deleting(old) && adds_finalizer(old, tree)) {
        struct fatia_diag d;
        fatia_diag_init(&d);
        fatia_diag_add(&d, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "metadata.finalizers",
                       "forbidden: no new finalizers can be added if the object is being deleted");
        fatia_api_opres_invalid(&r, c->t, c->name, &d);
        fatia_diag_release(&d);
        goto out_answer;
    }
    if (fatia_json_equal(tree, old)) {
        /* no-op: nothing is written, the resourceVersion stays */
        r.code = 200;
        r.ver = fatia_api_objver_ref(e->latest);
        goto out_answer;
    }
    if (c->dry_run) {
        r.code = 200;
        r.ver = fatia_api_objver_new(tree, 0);
        tree = NULL;
        if (!r.ver)
            fatia_api_opres_from_errno(&r, -ENOMEM, "update");
        goto out_answer;
    }
    tx = begin(c, &r, 200, done, arg);
    if (!tx)
        goto out_answer;
    /* a terminating namespace waits for its content (kube-apiserver's namespace storage waits
     * for spec.finalizers' "kubernetes", which the namespace controller removes once the
     * namespace is empty): an update of it while objects remain is a plain update */
    if (is_deleting(old) && !has_finalizers(tree) &&
        !(c->t == ns_table(s) && !ns_empty(s, c->name))) {
        /* the last finalizer is gone: the object goes, its last state being this update */
        int rc = fatia_api_wtxn_delete_with(s, tx, c->t, e, tree);
        tree = NULL;
        if (rc == 0 && c->t->kind->namespaced)
            rc = ns_maybe_finish(s, tx, c->ns);
        if (rc < 0) {
            abandon(s, tx, &r);
            fatia_api_opres_from_errno(&r, rc, "update");
            goto out_answer;
        }
        tx->result = tx->ops.v[0].ver;
        json_decref(req_mf);
        fatia_api_wtxn_commit(s, tx);
        return;
    }
    if (fatia_api_wtxn_put(s, tx, c->t, e, FATIA_STORE_MODIFIED, tree) < 0) {
        tree = NULL;
        abandon(s, tx, &r);
        fatia_api_opres_from_errno(&r, -ENOMEM, "update");
        goto out_answer;
    }
    json_decref(req_mf);
    fatia_api_wtxn_commit(s, tx);
    return;

out_answer:
    json_decref(tree);
    json_decref(req_mf);
    answer_now(&r, done, arg);
}

void fatia_api_op_update_tree(const struct opctx *c, json_t *tree, op_done_fn done, void *arg)
{
    do_update(c, tree, done, arg);
}

int fatia_api_op_convert(const struct opctx *c, json_t *tree, struct opres *r)
{
    return check_type_and_convert(c, tree, r);
}

void fatia_api_op_update(const struct opctx *c, json_t *body, op_done_fn done, void *arg)
{
    json_t *tree = json_deep_copy(body);

    if (!tree || !json_is_object(tree)) {
        struct opres r = {0};
        json_decref(tree);
        fatia_api_opres_fail(&r, 400, "BadRequest", "the body of the request is not a JSON object");
        answer_now(&r, done, arg);
        return;
    }
    do_update(c, tree, done, arg);
}

void fatia_api_op_patch(const struct opctx *c, enum fatia_patch_type type, const char *patch,
                        size_t n, op_done_fn done, void *arg)
{
    struct opres r = {0};
    json_t *doc = NULL, *p = NULL, *res = NULL;
    struct entry *e;
    json_error_t jerr;
    char key[600], why[512] = "";
    int rc;

    if (fatia_api_authorize(c, "patch", &r) < 0)
        goto out_answer;
    fatia_api_entry_key(c->t, c->ns, c->name, key, sizeof(key));
    e = fatia_api_rtable_find(c->t, key);
    if (!e || !e->latest) {
        fatia_api_opres_not_found(&r, c->t, c->name);
        goto out_answer;
    }
    p = fatia_json_loadb(patch, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
    if (!p) {
        fatia_api_opres_fail(&r, 400, "BadRequest", "error decoding patch: %s", jerr.text);
        goto out_answer;
    }
    doc = fatia_api_served_tree(c->t, c->ver, e->latest);
    if (!doc) {
        fatia_api_opres_from_errno(&r, -ENOMEM, "patch");
        goto out_answer;
    }
    switch (type) {
    case FATIA_PATCH_MERGE:
        rc = fatia_patch_merge(doc, p, &res, why, sizeof(why));
        break;
    case FATIA_PATCH_JSON:
        rc = fatia_patch_json(doc, p, &res, why, sizeof(why));
        break;
    default:
        rc = fatia_patch_strategic(doc, p, c->t->kind, &res, why, sizeof(why));
        break;
    }
    if (rc == -ENOMEM) {
        fatia_api_opres_from_errno(&r, rc, "patch");
        goto out_answer;
    }
    if (rc < 0) {
        fatia_api_opres_fail(&r, rc == -FATIA_E_CONFLICT ? 422 : 400,
                             rc == -FATIA_E_CONFLICT ? "Invalid" : "BadRequest", "%s", why);
        goto out_answer;
    }
    if (!json_is_object(res)) {
        fatia_api_opres_fail(&r, 422, "Invalid", "the patched object is not a JSON object");
        goto out_answer;
    }
    json_decref(doc);
    json_decref(p);
    do_update(c, res, done, arg);
    return;

out_answer:
    json_decref(res);
    json_decref(doc);
    json_decref(p);
    answer_now(&r, done, arg);
}

/* ---- delete ---- */

/* Adds the deletion of e to tx: marks it (finalizers) or removes it. *marked tells which. */
/* deletionGracePeriodSeconds as upstream sets it: for a Pod, DeleteOptions.gracePeriodSeconds
 * (asked, -1 when not given) or else spec.terminationGracePeriodSeconds (30 when unset), which the
 * node agent honours before it removes its finalizer; 0 for every other kind. */
static int64_t deletion_grace(const struct rtable *t, const json_t *obj, int64_t asked)
{
    int64_t v;

    if (t->kind->group[0] || strcmp(t->kind->kind, "Pod"))
        return 0;
    if (asked >= 0)
        return asked;
    if (fatia_json_int(json_object_get(obj, "spec"), "terminationGracePeriodSeconds", &v) && v >= 0)
        return v;
    return 30;
}

static int64_t asked_grace(const json_t *options)
{
    int64_t v;

    return fatia_json_int(options, "gracePeriodSeconds", &v) && v >= 0 ? v : -1;
}

static int delete_into(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *t,
                       struct entry *e, int64_t grace, bool *marked)
{
    json_t *copy, *meta;
    char ts[40];

    *marked = false;
    if (!has_finalizers(e->latest->tree)) {
        int rc = fatia_api_wtxn_delete(s, tx, t, e);
        if (rc == 0 && t->kind->namespaced)
            rc = ns_maybe_finish(s, tx, e->ns);
        return rc;
    }
    *marked = true;
    if (is_deleting(e->latest->tree))
        return 0;
    copy = json_deep_copy(e->latest->tree);
    if (!copy)
        return -ENOMEM;
    meta = meta_of(copy);
    now_rfc3339(ts, sizeof(ts));
    json_object_set_new(meta, "deletionTimestamp", json_string(ts));
    json_object_set_new(meta, "deletionGracePeriodSeconds",
                        json_integer(deletion_grace(t, e->latest->tree, grace)));
    return fatia_api_wtxn_put(s, tx, t, e, FATIA_STORE_MODIFIED, copy);
}

static const char *const undeletable_namespaces[] = {"default", "kube-system", "kube-public", NULL};

/* DELETE of a namespace: every object in it goes (or is marked), then the namespace. */
static int delete_namespace(struct fatia_apiserver *s, struct wtxn *tx, struct rtable *nt,
                            struct entry *ne)
{
    json_t *copy, *meta, *status;
    bool pending = false, marked;
    char ts[40];
    int rc;

    for (size_t i = 0; i < s->n_tables; i++) {
        struct rtable *t = &s->tables[i];
        size_t lo, hi;
        if (!t->kind->namespaced)
            continue;
        fatia_api_rtable_range(t, ne->name, &lo, &hi);
        /* entries stay in the table while operations on them are pending */
        for (size_t j = lo; j < hi; j++) {
            struct entry *e = t->entries.v[j];
            if (!e->latest)
                continue;
            if (has_finalizers(e->latest->tree)) {
                pending = true;
                rc = delete_into(s, tx, t, e, -1, &marked);
            } else {
                rc = fatia_api_wtxn_delete(s, tx, t, e);
            }
            if (rc < 0)
                return rc;
        }
    }
    if (!pending && !has_finalizers(ne->latest->tree))
        return fatia_api_wtxn_delete(s, tx, nt, ne);
    if (is_deleting(ne->latest->tree))
        return 0;
    copy = json_deep_copy(ne->latest->tree);
    if (!copy)
        return -ENOMEM;
    meta = meta_of(copy);
    now_rfc3339(ts, sizeof(ts));
    json_object_set_new(meta, "deletionTimestamp", json_string(ts));
    json_object_set_new(meta, "deletionGracePeriodSeconds", json_integer(0));
    status = fatia_json_object_ensure(copy, "status");
    if (status)
        json_object_set_new(status, "phase", json_string("Terminating"));
    return fatia_api_wtxn_put(s, tx, nt, ne, FATIA_STORE_MODIFIED, copy);
}

/* Checks DeleteOptions preconditions against e. 0 or a 409 in r. */
static int check_preconditions(const struct opctx *c, const struct entry *e, const json_t *options,
                               struct opres *r)
{
    const json_t *pre = json_object_get(options, "preconditions");
    const char *uid = fatia_json_str(pre, "uid");
    const char *rv = fatia_json_str(pre, "resourceVersion");
    const char *ouid = fatia_json_str(meta_of(e->latest->tree), "uid");
    char rvs[24];

    snprintf(rvs, sizeof(rvs), "%" PRIu64, e->latest->rv);
    if (uid && *uid && strcmp(uid, ouid ? ouid : "")) {
        fatia_api_opres_fail(
            r, 409, "Conflict",
            "Operation cannot be fulfilled on %s \"%s\": Precondition failed: UID in "
            "precondition: %s, UID in object meta: %s",
            c->t->resource, e->name, uid, ouid ? ouid : "");
        return -FATIA_E_CONFLICT;
    }
    if (rv && *rv && strcmp(rv, rvs)) {
        fatia_api_opres_fail(
            r, 409, "Conflict",
            "Operation cannot be fulfilled on %s \"%s\": Precondition failed: "
            "ResourceVersion in precondition: %s, ResourceVersion in object meta: %s",
            c->t->resource, e->name, rv, rvs);
        return -FATIA_E_CONFLICT;
    }
    return 0;
}

/* The rules of DELETE for one existing object, after authorization: preconditions, the
 * protected namespaces, the admission plugins. 0 or a failure in r. A deletecollection runs
 * them for every object it would delete (with c naming that object), so that no rule of DELETE
 * can be got round by deleting a collection. */
static int delete_checks(const struct opctx *c, const struct entry *e, const json_t *options,
                         struct opres *r)
{
    if (check_preconditions(c, e, options, r) < 0)
        return -FATIA_E_CONFLICT;
    if (c->t->kind == fatia_kind_by_resource("", "namespaces")) {
        for (const char *const *n = undeletable_namespaces; *n; n++) {
            if (!strcmp(*n, e->name)) {
                fatia_api_opres_fail(
                    r, 403, "Forbidden",
                    "namespaces \"%s\" is forbidden: this namespace may not be deleted", e->name);
                return -FATIA_E_FORBIDDEN;
            }
        }
    }
    if (run_plugins(c, FATIA_ADMIT_VALIDATING, FATIA_ADMIT_DELETE, NULL, e->latest->tree, r, NULL) <
            0 ||
        run_plugins(c, FATIA_ADMIT_MUTATING, FATIA_ADMIT_DELETE, NULL, e->latest->tree, r, NULL) <
            0)
        return -FATIA_E_FORBIDDEN;
    return 0;
}

void fatia_api_op_delete(const struct opctx *c, const json_t *options, op_done_fn done, void *arg)
{
    struct opres r = {0};
    struct fatia_apiserver *s = c->s;
    struct entry *e;
    struct wtxn *tx;
    char key[600];
    bool marked = false;
    bool is_ns = c->t->kind == fatia_kind_by_resource("", "namespaces");
    int rc;

    if (fatia_api_authorize(c, "delete", &r) < 0)
        goto out_answer;
    fatia_api_entry_key(c->t, c->ns, c->name, key, sizeof(key));
    e = fatia_api_rtable_find(c->t, key);
    if (!e || !e->latest) {
        fatia_api_opres_not_found(&r, c->t, c->name);
        goto out_answer;
    }
    if (delete_checks(c, e, options, &r) < 0)
        goto out_answer;
    if (is_deleting(e->latest->tree) && has_finalizers(e->latest->tree)) {
        /* already being deleted: nothing more to do */
        r.code = 200;
        r.ver = fatia_api_objver_ref(e->latest);
        goto out_answer;
    }
    if (c->dry_run) {
        r.code = 200;
        r.ver = fatia_api_objver_ref(e->latest);
        goto out_answer;
    }
    tx = begin(c, &r, 200, done, arg);
    if (!tx)
        goto out_answer;
    rc = is_ns ? delete_namespace(s, tx, c->t, e)
               : delete_into(s, tx, c->t, e, asked_grace(options), &marked);
    if (rc < 0) {
        abandon(s, tx, &r);
        fatia_api_opres_from_errno(&r, rc, "delete");
        goto out_answer;
    }
    if (tx->ops.n == 0) {
        abandon(s, tx, &r);
        r.code = 200;
        r.ver = fatia_api_objver_ref(e->latest);
        goto out_answer;
    }
    /* answer with the object itself: for a namespace that is its (last) op */
    for (size_t i = 0; i < tx->ops.n; i++)
        if (tx->ops.v[i].e == e)
            tx->result = tx->ops.v[i].ver;
    fatia_api_wtxn_commit(s, tx);
    return;

out_answer:
    answer_now(&r, done, arg);
}

/* deletecollection: the objects of the collection that match the selectors, each deleted as
 * DELETE would delete it. Every rule of DELETE holds per object (delete_checks, and
 * authorization of "delete" in the object's own namespace, on top of "deletecollection" on the
 * collection); the request is all or nothing: the first object refused refuses the whole
 * request with that object's error, and nothing is deleted. Skipping the refused objects was
 * rejected: a client could not tell a partial deletion from a complete one by the answer. */
void fatia_api_op_delete_collection(const struct opctx *c, const struct fatia_api_query *q,
                                    const json_t *options, op_done_fn done, void *arg)
{
    struct opres r = {0};
    struct fatia_apiserver *s = c->s;
    struct filter f;
    struct wtxn *tx;
    size_t lo, hi;
    bool marked;
    FATIA_VEC(struct entry *) victims = {0};

    if (fatia_api_authorize(c, "deletecollection", &r) < 0)
        goto out_answer;
    if (fatia_api_filter_from_query(&f, q, &r) < 0)
        goto out_answer;
    fatia_api_rtable_range(c->t, c->ns, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        struct entry *e = c->t->entries.v[i];
        struct opctx oc = *c;
        if (!e->latest || !fatia_api_filter_match(&f, e->latest->tree))
            continue;
        oc.ns = c->t->kind->namespaced ? e->ns : NULL;
        oc.name = e->name;
        if (fatia_api_authorize(&oc, "delete", &r) < 0 || delete_checks(&oc, e, options, &r) < 0) {
            fatia_api_filter_release(&f);
            FATIA_VEC_RELEASE(&victims);
            goto out_answer;
        }
        if (is_deleting(e->latest->tree) && has_finalizers(e->latest->tree))
            continue; /* already being deleted: nothing more to do, as for DELETE */
        if (FATIA_VEC_PUSH(&victims, e) < 0) {
            fatia_api_filter_release(&f);
            FATIA_VEC_RELEASE(&victims);
            fatia_api_opres_from_errno(&r, -ENOMEM, "deletecollection");
            goto out_answer;
        }
    }
    fatia_api_filter_release(&f);
    if (!victims.n || c->dry_run) {
        FATIA_VEC_RELEASE(&victims);
        r.code = 200;
        r.status = fatia_api_status_success();
        goto out_answer;
    }
    tx = begin(c, &r, 200, done, arg);
    if (!tx) {
        FATIA_VEC_RELEASE(&victims);
        goto out_answer;
    }
    for (size_t i = 0; i < victims.n; i++) {
        int rc;
        if (!victims.v[i]->latest)
            continue; /* went with a namespace earlier in this loop */
        rc = c->t->kind == fatia_kind_by_resource("", "namespaces")
                 ? delete_namespace(s, tx, c->t, victims.v[i])
                 : delete_into(s, tx, c->t, victims.v[i],
                               q->grace_period >= 0 ? q->grace_period : asked_grace(options),
                               &marked);
        if (rc < 0) {
            FATIA_VEC_RELEASE(&victims);
            abandon(s, tx, &r);
            fatia_api_opres_from_errno(&r, rc, "deletecollection");
            goto out_answer;
        }
    }
    FATIA_VEC_RELEASE(&victims);
    if (!tx->ops.n) {
        abandon(s, tx, &r);
        r.code = 200;
        r.status = fatia_api_status_success();
        goto out_answer;
    }
    fatia_api_wtxn_commit(s, tx);
    return;

out_answer:
    answer_now(&r, done, arg);
}
