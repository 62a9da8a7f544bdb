/*
 * client/plugin.h: what plugs into fatiad's API server from above it: the identity of a
 * request, admission plugins, the pod log provider and the metrics provider (library
 * fatia_client: headers only).
 *
 * Model: these are contracts, not calls. A component above the API server (the controllers'
 * admission plugins, the node agent's log provider, the controllers' metrics) implements them
 * against this header alone; the daemon (src/daemon/main.c) registers each implementation with
 * the API server (fatia_apiserver_add_admission, fatia_apiserver_set_log_provider,
 * fatia_apiserver_set_metrics_provider in apiserver/apiserver.h). So the controller and agent
 * libraries never link the API server, and a remote API server could call the same functions
 * (as kube-apiserver calls webhooks). A log stream is a table of operations for the same
 * reason: the provider writes through it without knowing the HTTP layer behind it.
 */
#ifndef FATIA_CLIENT_PLUGIN_H
#define FATIA_CLIENT_PLUGIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/diag.h"
#include "model/kind.h"

/* ---- identities ---- */

/* Who makes a request. Tokens map to users (auth.h); in-process clients name theirs. */
struct fatia_user {
    const char *name;
    const char *const *groups;     /* NULL-terminated; may be NULL */
    const char *const *namespaces; /* NULL-terminated; NULL or {"*"} = every namespace */
    bool read_only;
};

/* The groups that carry trust, defined once for the API server's authorization (auth.c) and the
 * tenant rules (controller/tenancy.c): admins and fatiad's own components, and node identities. */
#define FATIA_GROUP_ADMIN "system:masters"
#define FATIA_GROUP_NODES "system:nodes"

/* Whether u is a member of group. */
static inline bool fatia_user_in_group(const struct fatia_user *u, const char *group)
{
    for (const char *const *g = u->groups; g && *g; g++)
        if (!strcmp(*g, group))
            return true;
    return false;
}

/* ---- admission plugins ---- */

enum fatia_admit_op {
    FATIA_ADMIT_CREATE = 1u << 0,
    FATIA_ADMIT_UPDATE = 1u << 1,
    FATIA_ADMIT_DELETE = 1u << 2,
};

enum fatia_admit_phase {
    FATIA_ADMIT_MUTATING,   /* may change obj; runs after defaulting, before validation */
    FATIA_ADMIT_VALIDATING, /* must not change obj; runs after validation */
};

/* What a plugin sees. obj is the storage-version object being written (defaulted); a mutating
 * plugin edits it in place. old is the current object on update and delete (read only), NULL on
 * create. A plugin rejects by returning -FATIA_E_INVALID with errors added to diag (they become
 * the field causes of a 422 Invalid) or -FATIA_E_FORBIDDEN (403; the first diag message is the
 * reason). Any other negative return is a 500. */
struct fatia_admit_attrs {
    enum fatia_admit_op op;
    const struct fatia_kind *kind;
    const char *ns;          /* NULL for cluster-scoped kinds */
    const char *name;        /* NULL on create with generateName, until the name is chosen */
    const char *subresource; /* NULL, or "status" */
    const struct fatia_user *user;
    bool dry_run;
    json_t *obj;       /* NULL on delete */
    const json_t *old; /* NULL on create */
    struct fatia_diag *diag;
};

struct fatia_admission {
    const char *name; /* for messages: "hardware-profile-injection" */
    enum fatia_admit_phase phase;
    unsigned ops;                          /* mask of enum fatia_admit_op */
    const struct fatia_kind *const *kinds; /* NULL-terminated; NULL = every kind */
    bool subresources;                     /* also for status writes (default: main resource) */
    int (*admit)(void *arg, struct fatia_admit_attrs *a);
    void *arg;
    /* a 403's message without the plugin's name (`pods "p" is forbidden: exceeded quota: ...`),
     * as kube-apiserver's own plugins word theirs */
    bool bare_message;
};

/* ---- metrics: GET /metrics (any authenticated user, as kube-apiserver's nonResourceURL) ---- */

/* The provider appends Prometheus text (format 0.0.4) to out. */
struct fatia_buf;
typedef int (*fatia_metrics_provider_fn)(void *arg, struct fatia_buf *out);

/* ---- pod logs: GET /api/v1/namespaces/NS/pods/NAME/log; the node agent provides the bytes ---- */

struct fatia_log_stream;

struct fatia_log_req {
    const char *ns, *name;
    const char *container; /* NULL: the pod's only (or first) container */
    bool follow;
    bool previous;
    bool timestamps;
    int64_t tail_lines;    /* -1: all */
    int64_t limit_bytes;   /* -1: none */
    int64_t since_seconds; /* -1: none */
    const json_t *pod;     /* the Pod (borrowed for the call) */
};

/* The provider starts writing to the stream (now or later, from the loop) and ends it. When the
 * client goes away, cancel(arg) is called once, after which the provider must not write (it
 * still calls fatia_log_stream_end). Returns 0, or a negative code before anything was written
 * (-ENOENT: no such container; -EAGAIN: not started yet; -ESRCH: no previous instance, with
 * previous; other: 500); then the provider must not use the stream. */
typedef int (*fatia_log_provider_fn)(void *arg, const struct fatia_log_req *req,
                                     struct fatia_log_stream *stream);

/* kubectl exec: run argv in a container of a pod this node runs (the exec provider, which
 * fatiad registers: the node agent's). */
struct fatia_exec_req {
    const json_t *pod;     /* the Pod as stored (borrowed for the call) */
    const char *container; /* NULL: the pod's first container */
    char *const *argv;     /* at least one element */
    bool tty;              /* in, out and err are a terminal's slave: make it the controlling one */
    int in, out, err; /* the descriptors the process gets as 0, 1, 2 (the caller closes them) */
    bool attach;      /* kubectl attach: argv is ignored; the process relays the container's own
                         stdio (output from now on; in to its stdin when attach_stdin) */
    bool attach_stdin;
};

/* Starts the process; *ret_pid is a child of the caller, whose wait status is the command's.
 * -ENOENT: no such container; -EAGAIN: the container is not running; other: 500. why says. */
typedef int (*fatia_exec_provider_fn)(void *arg, const struct fatia_exec_req *req, int *ret_pid,
                                      char *why, size_t why_n);

/* kubectl port-forward: a connection to a port a pod of this node listens on (the port-forward
 * provider, which fatiad registers: the node agent's). *ret_fd: a connected TCP socket (the
 * caller owns it). -ENOENT: no process of the pod listens on that port (connecting anyway
 * could reach another pod's or the host's service); -EAGAIN: the pod is not running. */
typedef int (*fatia_portforward_provider_fn)(void *arg, const json_t *pod, int port, int *ret_fd,
                                             char *why, size_t why_n);

/* The stream a provider writes to, implemented by the API server. */
struct fatia_log_stream_ops {
    int (*write)(struct fatia_log_stream *st, const void *data, size_t n);
    void (*set_cancel)(struct fatia_log_stream *st, void (*cancel)(void *arg), void *arg);
    void (*end)(struct fatia_log_stream *st);
};

struct fatia_log_stream {
    const struct fatia_log_stream_ops *ops;
};

/* Bytes of log text. 0, or -EPIPE once the client went away (stop and end the stream). */
static inline int fatia_log_stream_write(struct fatia_log_stream *st, const void *data, size_t n)
{
    return st->ops->write(st, data, n);
}

static inline void fatia_log_stream_set_cancel(struct fatia_log_stream *st,
                                               void (*cancel)(void *arg), void *arg)
{
    st->ops->set_cancel(st, cancel, arg);
}

/* Ends the stream (st is freed). */
static inline void fatia_log_stream_end(struct fatia_log_stream *st)
{
    st->ops->end(st);
}

#endif
