/*
 * apiserver/logs.c: GET /api/v1/namespaces/NS/pods/NAME/log, plumbed to a provider.
 *
 * The API server does not know where logs live: fatiad registers the node agent's provider
 * (fatia_apiserver_set_log_provider, fatia_agent_logs) that writes the bytes of one container's
 * log to a stream.
 * Until one is registered the endpoint answers 503 ServiceUnavailable with a message saying so.
 * The answer is text/plain, chunked, so follow=true streams for as long as the provider writes;
 * a client that hangs up cancels the provider through its cancel callback.
 *
 * fatia_api_logs_serve is the stream alone, for a pod the caller found (after the API server's
 * authorization and table lookup in fatia_api_logs_start; or a node role's own pod, nodeserve.c,
 * which has no table).
 *
 * The provider sees the stream as client/plugin.h's table of operations (write, set_cancel,
 * end), so the agent writes logs without linking the API server.
 *
 * Stream states: created -> (first write: HTTP stream started) -> ended by the provider;
 * "gone" (client closed or fell behind) can happen in either, after which writes fail with
 * -EPIPE and the provider still ends the stream.
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

/* The API server's log stream (client/plugin.h's table over the HTTP request). */
struct log_stream {
    struct fatia_log_stream base; /* first: the provider's handle */
    struct fatia_api_http_req *req;
    bool started;
    bool gone;
    void (*cancel)(void *arg);
    void *cancel_arg;
};

void fatia_apiserver_set_metrics_provider(struct fatia_apiserver *s, fatia_metrics_provider_fn fn,
                                          void *arg)
{
    s->metrics_provider = fn;
    s->metrics_arg = arg;
}

void fatia_apiserver_set_log_provider(struct fatia_apiserver *s, fatia_log_provider_fn fn,
                                      void *arg)
{
    s->streams.log = fn;
    s->streams.log_arg = arg;
}

static const struct fatia_log_stream_ops stream_ops;

static void close_cb(void *arg)
{
    struct log_stream *st = arg;

    st->gone = true;
    if (st->cancel) {
        void (*cancel)(void *) = st->cancel;
        st->cancel = NULL;
        cancel(st->cancel_arg);
    }
}

void fatia_api_logs_start(const struct opctx *c, const struct fatia_api_query *q,
                          struct fatia_api_http_req *req, struct opres *err)
{
    const json_t *pod = fatia_api_stream_pod(c, "get", err);

    if (pod && !fatia_api_nodeproxy(c->s, pod, c->user->name, req, err))
        fatia_api_logs_serve(&c->s->streams, pod, q, req, err);
}

void fatia_api_logs_serve(const struct fatia_api_streams *sv, const json_t *pod,
                          const struct fatia_api_query *q, struct fatia_api_http_req *req,
                          struct opres *err)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const char *ns = fatia_json_str(meta, "namespace"), *name = fatia_json_str(meta, "name");
    struct log_stream *st;
    struct fatia_log_req lr;
    int rc;

    if (!name)
        name = "";
    if (!sv->log) {
        fatia_api_opres_fail(
            err, 503, "ServiceUnavailable",
            "logs of pod \"%s\" are not available: no node agent serves pod logs in this "
            "fatiad",
            name);
        return;
    }
    st = fatia_calloc(1, sizeof(*st));
    if (!st) {
        fatia_api_opres_from_errno(err, -ENOMEM, "log");
        return;
    }
    st->base.ops = &stream_ops;
    st->req = req;
    lr = (struct fatia_log_req){.ns = ns,
                                .name = name,
                                .container = q->container,
                                .follow = q->follow,
                                .previous = q->previous,
                                .timestamps = q->timestamps,
                                .tail_lines = q->tail_lines,
                                .limit_bytes = q->limit_bytes,
                                .since_seconds = q->since_seconds,
                                .pod = pod};
    fatia_api_http_req_set_close_cb(req, close_cb, st);
    rc = sv->log(sv->log_arg, &lr, &st->base);
    if (rc < 0) {
        fatia_api_http_req_set_close_cb(req, NULL, NULL);
        fatia_free(st);
        if (rc == -ENOENT)
            fatia_api_opres_fail(err, 400, "BadRequest", "container %s is not valid for pod %s",
                                 q->container ? q->container : "(default)", name);
        else if (rc == -EAGAIN)
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "container \"%s\" in pod \"%s\" is waiting to start",
                                 q->container ? q->container : "(default)", name);
        else if (rc == -ESRCH)
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "previous terminated container \"%s\" in pod \"%s\" not found",
                                 q->container ? q->container : "(default)", name);
        else
            fatia_api_opres_fail(err, 500, "InternalError",
                                 "cannot read the logs of pod \"%s\": %s", name,
                                 fatia_strerror(rc));
    }
}

static int stream_write(struct fatia_log_stream *b, const void *data, size_t n)
{
    struct log_stream *st = (struct log_stream *)b;
    int r;

    if (st->gone || !st->req)
        return -EPIPE;
    if (!st->started) {
        fatia_api_http_stream_start(st->req, 200, "text/plain");
        st->started = true;
    }
    r = fatia_api_http_stream_write(st->req, data, n);
    if (r < 0) {
        st->gone = true;
        return -EPIPE;
    }
    return 0;
}

static void stream_set_cancel(struct fatia_log_stream *b, void (*cancel)(void *arg), void *arg)
{
    struct log_stream *st = (struct log_stream *)b;

    st->cancel = cancel;
    st->cancel_arg = arg;
}

static void stream_end(struct fatia_log_stream *b)
{
    struct log_stream *st = (struct log_stream *)b;

    if (st->req) {
        fatia_api_http_req_set_close_cb(st->req, NULL, NULL);
        if (st->started)
            fatia_api_http_stream_end(st->req);
        else
            fatia_api_http_reply(st->req, 200, "text/plain", NULL, 0);
    }
    fatia_free(st);
}

static const struct fatia_log_stream_ops stream_ops = {
    .write = stream_write,
    .set_cancel = stream_set_cancel,
    .end = stream_end,
};
