/*
 * apiserver/audit.c: the audit log of writes (docs/apiserver.md, "Audit").
 *
 * Model: every write that reaches the API over HTTP (create, update, patch, delete,
 * deletecollection, status writes included, allowed or refused) becomes one line of JSON, an
 * audit.k8s.io/v1 Event at kube-apiserver's Metadata level, stage ResponseComplete: who
 * (user.username, user.groups, sourceIPs, userAgent), the verb, the object (objectRef: resource,
 * namespace, name, apiGroup, apiVersion, subresource), the result (responseStatus: code, and
 * for a failure its reason and message), and when (requestReceivedTimestamp, stageTimestamp).
 * No request or response bodies (that is the Request level).
 *
 * The event is begun when the request is routed (the user's name and groups are copied then:
 * the token set may be reloaded before the write completes) and finished when it is answered.
 *
 * Rotation by size, as kube-apiserver's --audit-log-maxsize and --audit-log-maxbackup: when a
 * line would take the file past max_bytes, FILE.(keep-1) .. FILE.1 move up one, FILE becomes
 * FILE.1, and a new FILE starts; the oldest falls off. Files are created 0600.
 *
 * Writes are plain write(2) calls on the loop (page cache, no fsync): an audit line of a write
 * answered just before a power cut may be lost, the write itself is not. A write error is
 * reported once in the log and the line is dropped: the audit log never stops the API.
 * In-process clients (fatiad's own controllers and node agent) are not recorded: they write
 * status many times a second, and they are fatiad itself.
 *
 * Choices rejected: a separate writer thread (a line is < 1 KiB and the page cache takes it in
 * microseconds); time-based rotation (size is what fills disks).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

struct fatia_audit {
    char *path;
    int fd;
    uint64_t size;
    uint64_t max_bytes;
    unsigned keep;
    bool warned;
};

static int audit_reopen(struct fatia_audit *a)
{
    struct stat st;
    int fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    if (a->fd >= 0)
        close(a->fd);
    a->fd = fd;
    a->size = (uint64_t)st.st_size;
    return 0;
}

int fatia_audit_open(const char *path, uint64_t max_bytes, unsigned keep, struct fatia_audit **ret)
{
    struct fatia_audit *a = fatia_calloc(1, sizeof(*a));
    int r;

    if (!a)
        return -ENOMEM;
    a->fd = -1;
    a->path = fatia_strdup(path);
    a->max_bytes = max_bytes ? max_bytes : FATIA_AUDIT_DEFAULT_MAX_BYTES;
    a->keep = keep ? keep : FATIA_AUDIT_DEFAULT_KEEP;
    if (!a->path) {
        fatia_free(a);
        return -ENOMEM;
    }
    r = audit_reopen(a);
    if (r < 0) {
        fatia_audit_free(a);
        return r;
    }
    *ret = a;
    return 0;
}

void fatia_audit_free(struct fatia_audit *a)
{
    if (!a)
        return;
    if (a->fd >= 0)
        close(a->fd);
    fatia_free(a->path);
    fatia_free(a);
}

static void rotate(struct fatia_audit *a)
{
    char from[4200], to[4200];

    for (unsigned i = a->keep; i >= 1; i--) {
        if (i == 1)
            snprintf(from, sizeof(from), "%s", a->path);
        else
            snprintf(from, sizeof(from), "%s.%u", a->path, i - 1);
        snprintf(to, sizeof(to), "%s.%u", a->path, i);
        if (rename(from, to) < 0 && errno != ENOENT && !a->warned) {
            fatia_warn("audit log: cannot rotate '%s': %s", from, fatia_strerror(-errno));
            a->warned = true;
        }
    }
    if (audit_reopen(a) < 0 && !a->warned) {
        fatia_warn("audit log '%s': cannot reopen after rotation", a->path);
        a->warned = true;
    }
}

int fatia_audit_write(struct fatia_audit *a, const json_t *event)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    ssize_t w;
    int r;

    fatia_buf_init(&b, 0);
    r = fatia_json_dump_buf(event, &b, JSON_COMPACT);
    r = r ? r : fatia_buf_putc(&b, '\n');
    if (r < 0) {
        fatia_buf_release(&b);
        return r;
    }
    if (a->size > 0 && a->size + b.len > a->max_bytes)
        rotate(a);
    w = a->fd >= 0 ? write(a->fd, b.p, b.len) : -1;
    r = w == (ssize_t)b.len ? 0 : w < 0 ? -errno : -EIO;
    if (r == 0)
        a->size += b.len;
    else if (!a->warned) {
        fatia_warn("audit log '%s': write failed: %s", a->path, fatia_strerror(r));
        a->warned = true;
    }
    fatia_buf_release(&b);
    return r;
}

static json_t *json_now(void)
{
    char buf[40];

    fatia_time_format_rfc3339(fatia_now_real_usec(), true, buf, sizeof(buf));
    return json_string(buf);
}

/* obj[key] = a new string of s (checked UTF-8, as json_pack's "s"), or of a literal (ASCII,
 * not checked); keys are literals. -1 when s is NULL or not UTF-8 (json_pack fails then). */
static int put_str(json_t *obj, const char *key, const char *s)
{
    return json_object_set_new_nocheck(obj, key, json_string(s));
}

static int put_strn(json_t *obj, const char *key, const char *s, size_t n)
{
    return json_object_set_new_nocheck(obj, key, json_stringn(s, n));
}

static int put_lit(json_t *obj, const char *key, const char *lit)
{
    return json_object_set_new_nocheck(obj, key, json_string_nocheck(lit));
}

/* json_pack("{s:s,s:s,s:s}", "resource", .., "apiGroup", .., "apiVersion", ..) without the
 * format's parse. */
static json_t *object_ref(const struct fatia_kind *k, const char *version)
{
    json_t *ref = json_object();

    if (!ref || put_str(ref, "resource", k->plural) || put_str(ref, "apiGroup", k->group) ||
        put_str(ref, "apiVersion", version ? version : k->version)) {
        json_decref(ref);
        return NULL;
    }
    return ref;
}

/* The event as json_pack("{s:s,s:s,s:s,s:s,s:s,s:s%,s:s,s:{s:s,s:o},s:[s],s:s%,s:o,s:o}", ..)
 * built it (the same members in the same order, the same UTF-8 checks, NULL where it failed),
 * without parsing the format on every write: it was 5 % of a create's instructions
 * (docs/perf-create.md). groups, ref and now are taken. */
static json_t *event_new(const char *id, const char *uri, size_t uri_n, const char *verb,
                         const char *user, json_t *groups, const char *ip, const char *agent,
                         size_t agent_n, json_t *ref, json_t *now)
{
    json_t *ev = json_object(), *u = json_object(), *ips = json_array();

    if (!ev || !u || !ips || put_lit(ev, "kind", "Event") ||
        put_lit(ev, "apiVersion", "audit.k8s.io/v1") || put_lit(ev, "level", "Metadata") ||
        put_str(ev, "auditID", id) || put_lit(ev, "stage", "ResponseComplete") ||
        put_strn(ev, "requestURI", uri, uri_n) || put_str(ev, "verb", verb) ||
        put_str(u, "username", user) || !groups ||
        json_object_set_new_nocheck(u, "groups", json_incref(groups)) ||
        json_object_set_new_nocheck(ev, "user", json_incref(u)) ||
        json_array_append_new(ips, json_string(ip)) ||
        json_object_set_new_nocheck(ev, "sourceIPs", json_incref(ips)) ||
        put_strn(ev, "userAgent", agent, agent_n) || !ref ||
        json_object_set_new_nocheck(ev, "objectRef", json_incref(ref)) || !now ||
        json_object_set_new_nocheck(ev, "requestReceivedTimestamp", json_incref(now))) {
        json_decref(ev);
        ev = NULL;
    }
    json_decref(u);
    json_decref(ips);
    json_decref(groups);
    json_decref(ref);
    json_decref(now);
    return ev;
}

json_t *fatia_api_audit_begin(const struct fatia_apiserver *s, const struct fatia_user *u,
                              const char *verb, const char *uri, size_t uri_n, const char *peer,
                              const char *agent, size_t agent_n, const struct fatia_kind *k,
                              const char *version, const char *ns, const char *name,
                              const char *sub)
{
    char id[37], ip[64];
    json_t *groups, *ref;
    char *colon;

    if (!s->audit)
        return NULL;
    fatia_api_random_uid(id);
    snprintf(ip, sizeof(ip), "%s", peer ? peer : "");
    colon = strrchr(ip, ':');
    if (colon && !strchr(ip, ']') && strchr(ip, ':') == colon)
        *colon = '\0'; /* "1.2.3.4:5678" -> the address */
    groups = json_array();
    for (const char *const *g = u->groups; groups && g && *g; g++)
        json_array_append_new(groups, json_string(*g));
    ref = object_ref(k, version);
    if (ref && ns)
        json_object_set_new(ref, "namespace", json_string(ns));
    if (ref && name)
        json_object_set_new(ref, "name", json_string(name));
    if (ref && sub)
        json_object_set_new(ref, "subresource", json_string(sub));
    return event_new(id, uri ? uri : "", uri ? uri_n : 0, verb, u->name,
                     groups ? groups : json_array(), ip, agent ? agent : "", agent ? agent_n : 0,
                     ref ? ref : json_object(), json_now());
}

void fatia_api_audit_end(struct fatia_apiserver *s, json_t *ev, const struct opres *r,
                         const char *name)
{
    json_t *st, *ref;

    if (!ev)
        return;
    ref = json_object_get(ev, "objectRef");
    if (name && ref && !json_object_get(ref, "name"))
        json_object_set_new(ref, "name", json_string(name));
    st = json_pack("{s:{},s:i}", "metadata", "code", r->code);
    if (st && r->status) {
        const char *reason = fatia_json_str(r->status, "reason");
        const char *msg = fatia_json_str(r->status, "message");
        json_object_set_new(st, "status", json_string(r->code < 400 ? "Success" : "Failure"));
        if (reason)
            json_object_set_new(st, "reason", json_string(reason));
        if (msg && r->code >= 400)
            json_object_set_new(st, "message", json_string(msg));
    }
    if (st)
        json_object_set_new(ev, "responseStatus", st);
    json_object_set_new(ev, "stageTimestamp", json_now());
    if (s->audit)
        (void)fatia_audit_write(s->audit, ev);
    json_decref(ev);
}
