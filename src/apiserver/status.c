/*
 * apiserver/status.c: metav1.Status answers and the mapping of fatia's error codes to HTTP.
 *
 * Messages and reasons follow upstream's wording (k8s.io/apimachinery/pkg/api/errors) so that
 * kubectl prints what people already know ("Error from server (NotFound): clusterqueues.kueue.x-
 * k8s.io \"x\" not found") and clients that test reasons (IsNotFound, IsConflict, IsInvalid)
 * work. Validation diagnostics become the field causes of a 422: one cause per error, its field
 * the diagnostic's path.
 *
 * Error code -> HTTP status (base/error.h keeps HTTP out of base):
 *     -ENOENT 404 NotFound           -FATIA_E_EXISTS 409 AlreadyExists
 *     -FATIA_E_CONFLICT 409 Conflict -FATIA_E_INVALID 422 Invalid
 *     -FATIA_E_FORBIDDEN 403         -FATIA_E_UNAUTHORIZED 401
 *     -FATIA_E_GONE 410 Expired      -FATIA_E_LIMIT 413 RequestEntityTooLarge
 *     -FATIA_E_PARSE / -EINVAL 400   -ESHUTDOWN 503 ServiceUnavailable
 *     -EFBIG 413 (an object over the store's 1.5 MiB, a write over etcd's request limits)
 *     -ENOSPC 507 InsufficientStorage (the store's NOSPACE alarm: reads and deletes still work)
 *     anything else 500 InternalError (the store's errors: "storage error: ...")
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

json_t *fatia_api_status_new(int code, const char *reason, const char *message)
{
    return json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                     "metadata", "status", code < 400 ? "Success" : "Failure", "message",
                     message ? message : "", "reason", reason ? reason : "", "code", code);
}

json_t *fatia_api_status_success(void)
{
    return json_pack("{s:s,s:s,s:{},s:s,s:i}", "kind", "Status", "apiVersion", "v1", "metadata",
                     "status", "Success", "code", 200);
}

void fatia_api_opres_release(struct opres *r)
{
    fatia_api_objver_unref(r->ver);
    json_decref(r->status);
    for (size_t i = 0; i < r->n_warnings; i++)
        fatia_free(r->warnings[i]);
    memset(r, 0, sizeof(*r));
}

void fatia_api_opres_warn(struct opres *r, const char *fmt, ...)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    va_list ap;

    if (r->n_warnings == FATIA_ARRAY_SIZE(r->warnings))
        return;
    va_start(ap, fmt);
    (void)fatia_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    /* warnings travel in a header: no line breaks */
    for (char *p = b.p; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    if (b.len)
        r->warnings[r->n_warnings++] = fatia_buf_steal(&b);
}

static void fail_json(struct opres *r, json_t *st)
{
    fatia_api_objver_unref(r->ver);
    r->ver = NULL;
    json_decref(r->status);
    r->status = st;
    r->code = (int)json_integer_value(json_object_get(st, "code"));
    if (!r->code)
        r->code = 500;
}

void fatia_api_opres_fail(struct opres *r, int code, const char *reason, const char *fmt, ...)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    (void)fatia_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fail_json(r, fatia_api_status_new(code, reason, b.p));
    r->code = code;
    fatia_buf_release(&b);
}

static json_t *details(const struct rtable *t, const char *name, bool kind_name)
{
    json_t *d = json_object();

    if (name)
        json_object_set_new(d, "name", json_string(name));
    json_object_set_new(d, "group", json_string(t->kind->group));
    json_object_set_new(d, "kind", json_string(kind_name ? t->kind->kind : t->kind->plural));
    return d;
}

void fatia_api_opres_not_found(struct opres *r, const struct rtable *t, const char *name)
{
    fatia_api_opres_fail(r, 404, "NotFound", "%s \"%s\" not found", t->resource, name ? name : "");
    if (r->status)
        json_object_set_new(r->status, "details", details(t, name, false));
}

void fatia_api_kind_qualified(const struct fatia_kind *k, char *buf, size_t n)
{
    if (k->group[0])
        snprintf(buf, n, "%s.%s", k->kind, k->group);
    else
        snprintf(buf, n, "%s", k->kind);
}

static const char *cause_reason(const char *msg)
{
    if (!strncmp(msg, "required field", 14))
        return "FieldValueRequired";
    if (!strncmp(msg, "unsupported value", 17))
        return "FieldValueNotSupported";
    if (!strncmp(msg, "duplicate value", 15))
        return "FieldValueDuplicate";
    if (!strncmp(msg, "forbidden", 9) || strstr(msg, "immutable"))
        return "FieldValueForbidden";
    return "FieldValueInvalid";
}

void fatia_api_opres_invalid(struct opres *r, const struct rtable *t, const char *name,
                             const struct fatia_diag *diag)
{
    struct fatia_buf msg = FATIA_BUF_INIT;
    json_t *causes = json_array(), *d;
    char kq[160];
    size_t n_err = 0;

    fatia_api_kind_qualified(t->kind, kq, sizeof(kq));
    for (size_t i = 0; i < diag->n; i++) {
        const struct fatia_diag_entry *e = &diag->v[i];
        if (e->level != FATIA_DIAG_ERROR)
            continue;
        json_array_append_new(causes,
                              json_pack("{s:s,s:s,s:s}", "reason", cause_reason(e->msg), "message",
                                        e->msg, "field", e->path ? e->path : ""));
        n_err++;
    }
    (void)fatia_buf_printf(&msg, "%s \"%s\" is invalid: %s", kq, name ? name : "",
                           n_err > 1 ? "[" : "");
    for (size_t i = 0, k = 0; i < diag->n; i++) {
        const struct fatia_diag_entry *e = &diag->v[i];
        if (e->level != FATIA_DIAG_ERROR)
            continue;
        (void)fatia_buf_printf(&msg, "%s%s%s%s", k++ ? ", " : "", e->path ? e->path : "",
                               e->path ? ": " : "", e->msg);
    }
    if (n_err > 1)
        (void)fatia_buf_putc(&msg, ']');
    if (n_err == 0)
        (void)fatia_buf_puts(&msg, "rejected");
    d = details(t, name, true);
    json_object_set_new(d, "causes", causes);
    fail_json(r, fatia_api_status_new(422, "Invalid", msg.p));
    if (r->status)
        json_object_set_new(r->status, "details", d);
    else
        json_decref(d);
    r->code = 422;
    fatia_buf_release(&msg);
}

void fatia_api_opres_from_errno(struct opres *r, int err, const char *what)
{
    const char *w = what ? what : "request";

    switch (err) {
    case -ENOENT:
        fatia_api_opres_fail(r, 404, "NotFound", "%s not found", w);
        break;
    case -FATIA_E_EXISTS:
        fatia_api_opres_fail(r, 409, "AlreadyExists", "%s already exists", w);
        break;
    case -FATIA_E_CONFLICT:
        fatia_api_opres_fail(r, 409, "Conflict", "%s: conflicting update", w);
        break;
    case -FATIA_E_FORBIDDEN:
        fatia_api_opres_fail(r, 403, "Forbidden", "%s is forbidden", w);
        break;
    case -FATIA_E_UNAUTHORIZED:
        fatia_api_opres_fail(r, 401, "Unauthorized", "Unauthorized");
        break;
    case -FATIA_E_GONE:
        fatia_api_opres_fail(r, 410, "Expired", "%s: resource version too old", w);
        break;
    case -FATIA_E_LIMIT:
        fatia_api_opres_fail(r, 413, "RequestEntityTooLarge", "%s: limit exceeded", w);
        break;
    case -FATIA_E_PARSE:
    case -EINVAL:
        fatia_api_opres_fail(r, 400, "BadRequest", "%s: %s", w, fatia_strerror(err));
        break;
    case -ESHUTDOWN:
        fatia_api_opres_fail(r, 503, "ServiceUnavailable", "the server is shutting down");
        break;
    case -EFBIG:
        fatia_api_opres_fail(
            r, 413, "RequestEntityTooLarge",
            "%s: the write is larger than the store's limit: %d bytes (1.5 MiB) an object, "
            "and on etcd what one request may hold (etcd's --max-request-bytes and "
            "--max-txn-ops)",
            w, FATIA_STORE_MAX_OBJECT);
        break;
    case -ENOSPC:
        fatia_api_opres_fail(
            r, 507, "InsufficientStorage",
            "%s: the store is out of disk space (NOSPACE alarm): reads and deletes still "
            "work, other writes are refused until space is freed on the filesystem of "
            "fatiad's data directory",
            w);
        break;
    case -ENOMEM:
        fatia_api_opres_fail(r, 500, "InternalError", "%s: out of memory", w);
        break;
    default:
        fatia_api_opres_fail(r, 500, "InternalError", "%s: storage error: %s", w,
                             fatia_strerror(err));
        break;
    }
}
