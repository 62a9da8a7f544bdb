/*
 * apiserver/request.c: request targets -> segments, parameters, routes and query options (see
 * request.h). Pure functions over the caller's bytes; the one allocation is the decoded copy.
 */
#include "base/compat.h"

#include "apiserver/request.h"

#include <strings.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/str.h"

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Decodes src[0..n) into dst (room for n + 1), NUL-terminating it. plus_space: '+' is a space
 * (query strings). Refuses encoded NULs; in path segments also an encoded '/'. */
static int decode(const char *src, size_t n, char *dst, bool plus_space, bool path)
{
    size_t j = 0;

    for (size_t i = 0; i < n; i++) {
        char c = src[i];
        if (c == '%') {
            int hi, lo;
            if (i + 2 >= n)
                return -EINVAL;
            hi = hex(src[i + 1]);
            lo = hex(src[i + 2]);
            if (hi < 0 || lo < 0)
                return -EINVAL;
            c = (char)(hi << 4 | lo);
            if (c == '\0' || (path && c == '/'))
                return -EINVAL;
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        } else if (c == '\0') {
            return -EINVAL;
        }
        dst[j++] = c;
    }
    dst[j] = '\0';
    return 0;
}

int fatia_api_target_parse(const char *t, size_t n, struct fatia_api_target *ret)
{
    struct fatia_api_target r;
    const char *q, *end = t + n, *p;
    char *out;
    int rc;

    memset(&r, 0, sizeof(r));
    if (n == 0 || t[0] != '/')
        return -EINVAL;
    if (n > FATIA_API_MAX_TARGET)
        return -E2BIG;
    /* every decoded piece fits in its encoded length plus a NUL */
    r.buf = fatia_malloc(n * 2 + 2);
    if (!r.buf)
        return -ENOMEM;
    out = r.buf;
    q = memchr(t, '?', n);
    if (!q)
        q = end;
    /* Fragments are never sent by clients; refuse rather than guess. */
    if (memchr(t, '#', n)) {
        rc = -EINVAL;
        goto out_free;
    }
    for (p = t; p < q;) {
        const char *s = p + 1, *e = memchr(s, '/', (size_t)(q - s));
        if (!e)
            e = q;
        if (e > s) {
            if (r.n_seg == FATIA_API_MAX_SEGS) {
                rc = -E2BIG;
                goto out_free;
            }
            rc = decode(s, (size_t)(e - s), out, false, true);
            if (rc < 0)
                goto out_free;
            r.seg[r.n_seg++] = out;
            out += strlen(out) + 1;
        }
        p = e;
    }
    for (p = q < end ? q + 1 : end; p < end;) {
        const char *e = memchr(p, '&', (size_t)(end - p)), *eq;
        if (!e)
            e = end;
        if (e > p) {
            if (r.n_params == FATIA_API_MAX_PARAMS) {
                rc = -E2BIG;
                goto out_free;
            }
            eq = memchr(p, '=', (size_t)(e - p));
            rc = decode(p, (size_t)((eq ? eq : e) - p), out, true, false);
            if (rc < 0)
                goto out_free;
            r.params[r.n_params].key = out;
            out += strlen(out) + 1;
            if (eq) {
                rc = decode(eq + 1, (size_t)(e - eq - 1), out, true, false);
                if (rc < 0)
                    goto out_free;
                r.params[r.n_params].val = out;
                out += strlen(out) + 1;
            } else {
                r.params[r.n_params].val = "";
            }
            r.n_params++;
        }
        p = e + 1;
    }
    *ret = r;
    return 0;

out_free:
    fatia_free(r.buf);
    return rc;
}

void fatia_api_target_release(struct fatia_api_target *t)
{
    FATIA_FREE(&t->buf);
    t->n_seg = t->n_params = 0;
}

const char *fatia_api_target_param(const struct fatia_api_target *t, const char *key)
{
    for (size_t i = 0; i < t->n_params; i++)
        if (!strcmp(t->params[i].key, key))
            return t->params[i].val;
    return NULL;
}

/* segs[i..n) after /api/v1 or /apis/G/V: [watch/] [namespaces/NS/] RES [/NAME [/SUB]] */
static int route_resource(const struct fatia_api_target *t, size_t i, struct fatia_api_route *r)
{
    size_t n = t->n_seg;

    if (i < n && !strcmp(t->seg[i], "watch")) {
        r->watch_prefix = true;
        i++;
    }
    if (i >= n)
        return -ENOENT;
    if (!strcmp(t->seg[i], "namespaces") && i + 2 < n) {
        /* /namespaces/NAME/status and /finalize are the namespace's own subresources */
        if (i + 3 == n &&
            (!strcmp(t->seg[i + 2], "status") || !strcmp(t->seg[i + 2], "finalize"))) {
            r->resource = "namespaces";
            r->name = t->seg[i + 1];
            r->sub = t->seg[i + 2];
            r->type = FATIA_ROUTE_RESOURCE;
            return 0;
        }
        r->ns = t->seg[i + 1];
        i += 2;
    }
    if (i >= n || n - i > 3)
        return -ENOENT;
    r->resource = t->seg[i];
    r->name = i + 1 < n ? t->seg[i + 1] : NULL;
    r->sub = i + 2 < n ? t->seg[i + 2] : NULL;
    r->type = FATIA_ROUTE_RESOURCE;
    return 0;
}

int fatia_api_route_parse(const struct fatia_api_target *t, struct fatia_api_route *ret)
{
    struct fatia_api_route r = {0};
    size_t n = t->n_seg;
    const char *s0 = n > 0 ? t->seg[0] : "";

    if (n == 1 && !strcmp(s0, "version")) {
        r.type = FATIA_ROUTE_VERSION;
    } else if (n >= 1 &&
               (!strcmp(s0, "healthz") || !strcmp(s0, "livez") || !strcmp(s0, "readyz"))) {
        r.type = FATIA_ROUTE_HEALTH;
    } else if (n == 1 && !strcmp(s0, "metrics")) {
        r.type = FATIA_ROUTE_METRICS;
    } else if (!strcmp(s0, "openapi")) {
        if (n == 2 && !strcmp(t->seg[1], "v2")) {
            r.type = FATIA_ROUTE_OPENAPI_V2;
        } else if (n == 2 && !strcmp(t->seg[1], "v3")) {
            r.type = FATIA_ROUTE_OPENAPI_V3;
        } else if (n == 4 && !strcmp(t->seg[1], "v3") && !strcmp(t->seg[2], "api")) {
            r.type = FATIA_ROUTE_OPENAPI_V3_GV;
            r.group = "";
            r.version = t->seg[3];
        } else if (n == 5 && !strcmp(t->seg[1], "v3") && !strcmp(t->seg[2], "apis")) {
            r.type = FATIA_ROUTE_OPENAPI_V3_GV;
            r.group = t->seg[3];
            r.version = t->seg[4];
        } else {
            return -ENOENT;
        }
    } else if (!strcmp(s0, "api")) {
        if (n == 1) {
            r.type = FATIA_ROUTE_API;
        } else {
            r.group = "";
            r.version = t->seg[1];
            if (n == 2)
                r.type = FATIA_ROUTE_API_V1;
            else if (route_resource(t, 2, &r) < 0)
                return -ENOENT;
        }
    } else if (!strcmp(s0, "apis")) {
        if (n == 1) {
            r.type = FATIA_ROUTE_APIS;
        } else if (n == 2) {
            r.type = FATIA_ROUTE_GROUP;
            r.group = t->seg[1];
        } else {
            r.group = t->seg[1];
            r.version = t->seg[2];
            if (n == 3)
                r.type = FATIA_ROUTE_GROUP_VERSION;
            else if (route_resource(t, 3, &r) < 0)
                return -ENOENT;
        }
    } else {
        return -ENOENT;
    }
    *ret = r;
    return 0;
}

/* kube-apiserver's runtime.Convert_Slice_string_To_bool: "0" or any-case "false" is false,
 * anything else (the empty value, "True", "TRUE", "yes", even "no") is true; not strconv's
 * ParseBool. The first of repeated values counts (the caller keeps it). */
static bool parse_bool(const char *v)
{
    return strcmp(v, "0") && strcasecmp(v, "false");
}

int fatia_api_query_parse(const struct fatia_api_target *t, struct fatia_api_query *ret, char *why,
                          size_t why_n)
{
    struct fatia_api_query q = {
        .timeout_seconds = -1,
        .grace_period = -1,
        .tail_lines = -1,
        .limit_bytes = -1,
        .since_seconds = -1,
        .include_object = 1,
        .fv = FATIA_FV_WARN,
    };
    bool *seen[8]; /* the boolean parameters met so far (there are 6) */
    size_t n_seen = 0;

    for (size_t i = 0; i < t->n_params; i++) {
        const char *k = t->params[i].key, *v = t->params[i].val;
        int64_t *num = NULL;
        bool *flag = NULL;
        int64_t min = 0;

        if (!strcmp(k, "labelSelector")) {
            q.label_selector = v;
        } else if (!strcmp(k, "fieldSelector")) {
            q.field_selector = v;
        } else if (!strcmp(k, "continue")) {
            q.continue_token = *v ? v : NULL;
        } else if (!strcmp(k, "resourceVersion")) {
            q.resource_version = *v ? v : NULL;
        } else if (!strcmp(k, "resourceVersionMatch")) {
            q.resource_version_match = *v ? v : NULL;
        } else if (!strcmp(k, "propagationPolicy")) {
            q.propagation_policy = v;
        } else if (!strcmp(k, "container")) {
            q.container = *v ? v : NULL;
        } else if (!strcmp(k, "limit")) {
            num = &q.limit;
        } else if (!strcmp(k, "timeoutSeconds")) {
            num = &q.timeout_seconds;
        } else if (!strcmp(k, "gracePeriodSeconds")) {
            num = &q.grace_period;
        } else if (!strcmp(k, "tailLines")) {
            num = &q.tail_lines;
        } else if (!strcmp(k, "limitBytes")) {
            num = &q.limit_bytes;
            min = 1;
        } else if (!strcmp(k, "sinceSeconds")) {
            num = &q.since_seconds;
            min = 1;
        } else if (!strcmp(k, "watch")) {
            flag = &q.watch;
        } else if (!strcmp(k, "allowWatchBookmarks")) {
            flag = &q.allow_bookmarks;
        } else if (!strcmp(k, "sendInitialEvents")) {
            flag = &q.send_initial_events;
        } else if (!strcmp(k, "follow")) {
            flag = &q.follow;
        } else if (!strcmp(k, "previous")) {
            flag = &q.previous;
        } else if (!strcmp(k, "timestamps")) {
            flag = &q.timestamps;
        } else if (!strcmp(k, "fieldManager")) {
            q.field_manager = *v ? v : NULL;
        } else if (!strcmp(k, "force")) {
            flag = &q.force;
        } else if (!strcmp(k, "dryRun")) {
            if (!strcmp(v, "All")) {
                q.dry_run = true;
            } else if (*v) {
                snprintf(why, why_n, "dryRun: unsupported value \"%s\": supported values: \"All\"",
                         v);
                return -EINVAL;
            }
        } else if (!strcmp(k, "fieldValidation")) {
            if (!strcmp(v, "Strict"))
                q.fv = FATIA_FV_STRICT;
            else if (!strcmp(v, "Ignore"))
                q.fv = FATIA_FV_IGNORE;
            else if (!strcmp(v, "Warn") || !*v)
                q.fv = FATIA_FV_WARN;
            else {
                snprintf(why, why_n,
                         "fieldValidation: unsupported value \"%s\": supported values: \"Ignore\", "
                         "\"Strict\", \"Warn\"",
                         v);
                return -EINVAL;
            }
        } else if (!strcmp(k, "includeObject")) {
            if (!strcmp(v, "None"))
                q.include_object = 0;
            else if (!strcmp(v, "Metadata") || !*v)
                q.include_object = 1;
            else if (!strcmp(v, "Object"))
                q.include_object = 2;
            else {
                snprintf(why, why_n, "includeObject: unsupported value \"%s\"", v);
                return -EINVAL;
            }
        }
        if (num) {
            if (fatia_parse_i64(v, num) < 0 || *num < min) {
                snprintf(why, why_n, "%s: invalid value \"%s\": must be an integer >= %" PRId64, k,
                         v, min);
                return -EINVAL;
            }
        } else if (flag) {
            size_t j = 0;
            while (j < n_seen && seen[j] != flag)
                j++;
            if (j == n_seen) { /* the first value counts */
                seen[n_seen++] = flag;
                *flag = parse_bool(v);
            }
        }
    }
    *ret = q;
    return 0;
}
