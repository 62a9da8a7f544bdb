/*
 * apiserver/stream_exec.c: `kubectl exec` (pods/NAME/exec) over WebSocket, the remotecommand
 * channel protocol, with the process started by the exec provider (the node agent).
 *
 * Protocol (k8s.io/apimachinery remotecommand and wsstream): GET with `Upgrade: websocket` and
 * Sec-WebSocket-Protocol offering v5.channel.k8s.io, v4.channel.k8s.io, ...; the server picks
 * the first it speaks in its order of preference (v5, v4, channel.k8s.io) and answers 101. Each
 * binary message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 the status (v4+:
 * a metav1.Status, Success or NonZeroExitCode with the code as a cause), 4 resize ({"Width",
 * "Height"}); in v5 a message [255, ch] closes channel ch (stdin's EOF). Query: command
 * (repeated), container, stdin, stdout, stderr, tty.
 *
 * Session:
 *
 *     client ══ws══ fatiad ──pipes or a pty── process (started by the provider, a child)
 *              stdin (0)  ─►  in fd   (closed on v5's [255, 0] or the client's close)
 *              stdout (1) ◄─  out fd  (the pty master with tty: stdout only, as kubelet)
 *              stderr (2) ◄─  err fd
 *              status (3) ◄─  the exit status (pidfd), sent once out and err reached EOF
 *
 * Invariants: the process is always reaped (its pidfd fires even after the client left; a
 * client that leaves gets the process SIGKILLed, as the kubelet's stream does when its
 * connection drops); output is read only while the connection's output holds less than
 * 1 MiB (a client that does not read pauses the process on a full pipe, costing no memory),
 * and the client is read only while less than 1 MiB of its stdin waits for the process (a
 * client flooding the stdin of a process that reads none costs 1 MiB, not the flood: before,
 * 256 MiB of it were held; tests/cli/apiserver-exec.sh);
 * the session frees itself exactly once, when the process is reaped and the WebSocket is done.
 * Authorization is the API server's: `create` on pods/exec in the pod's namespace (a read-only
 * or another namespace's token is 403, with upstream's message), checked before the upgrade.
 *
 * SPDY/3.1 (kubectl 1.27 to 1.29; 1.30+ after a failed WebSocket upgrade): POST with
 * `Upgrade: SPDY/3.1` and X-Stream-Protocol-Version v4.channel.k8s.io; the client opens one
 * stream per channel (SYN_STREAM with its "streamtype": error, stdin, stdout, stderr, resize),
 * answered with SYN_REPLY; output made before its stream exists waits for it; at the end the
 * status is written on the error stream and every stream of ours ends (FIN), then the
 * connection closes. Framing: stream_spdy.c.
 *
 * attach (pods/NAME/attach) is the same session with the provider's attach flag: its process is
 * a relay to the container's own stdio (agent/shim_attach.c), so the protocols, authorization
 * (create in the namespace, as pods/attach upstream), output pacing and the end (the relay
 * exits when the container's output ends) are exec's. With tty the relay gets the pty's slave,
 * as exec's process does, and carries its resizes to the container's own pty (shim_attach.c).
 *
 * fatia_api_exec_serve is the session alone, for a pod the caller found: exec_start (the API
 * server's authorization and table lookup) calls it, and so does a node role's own endpoint
 * (nodeserve.c), which has no table.
 *
 * Not here (docs/apiserver.md): port-forward (stream_portforward.c), the base64 subprotocols.
 */
#include "base/compat.h"

#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "apiserver/stream_spdy.h"
#include "apiserver/stream_ws.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"

#define EXEC_MAX_ARGS 256
#define EXEC_OUT_HIGH (1u << 20) /* pause reading the process above this much unsent output */
#define EXEC_IN_HIGH  (1u << 20) /* pause reading the client above this much unwritten stdin */
#define EXEC_MAX_MSG  (1u << 20)
#define CH_STDIN      0
#define CH_STDOUT     1
#define CH_STDERR     2
#define CH_STATUS     3
#define CH_RESIZE     4
#define CH_CLOSE      255

static const char *const protocols[] = {"v5.channel.k8s.io", "v4.channel.k8s.io", "channel.k8s.io",
                                        NULL};
/* SPDY: v4 only (the status as a metav1.Status), which kubectl 1.27 offers first */
static const char *const spdy_protocols[] = {"v4.channel.k8s.io", NULL};

struct exec_sess {
    struct event_base *base;
    struct bufferevent *conn; /* the client */
    struct fatia_ws *ws;      /* WebSocket, or: */
    struct fatia_spdy *sp;    /* SPDY/3.1 */
    uint32_t sid[5];          /* SPDY: each channel's stream (3: the "error" stream) */
    struct evbuffer *pend[3]; /* SPDY: output waiting for its stream */
    struct fatia_buf resize;  /* SPDY: the resize stream's partial line */
    bool spdy_done;
    int version; /* 5, 4 or 1 */
    bool tty;
    struct bufferevent *in, *out, *err; /* to and from the process; NULL once closed */
    int master;                         /* the pty master (tty), else -1 */
    pid_t pid;
    int pidfd;
    struct event *exit_ev;
    bool exited, status_sent, closing, conn_gone, in_eof, want_in;
    bool in_paused; /* the client is not read: EXEC_IN_HIGH of stdin waits for the process */
    int wstatus;
};

void fatia_apiserver_set_exec_provider(struct fatia_apiserver *s, fatia_exec_provider_fn fn,
                                       void *arg)
{
    s->streams.exec = fn;
    s->streams.exec_arg = arg;
}

static void sess_maybe_free(struct exec_sess *x)
{
    /* SPDY: the client ends the connection once it read the status (closing it first would
     * fail its last writes: its streams' FINs) */
    if (!x->exited || !(x->conn_gone || (x->ws && fatia_api_ws_done(x->ws))))
        return;
    if (x->conn && !x->conn_gone &&
        evbuffer_get_length(bufferevent_get_output(x->conn))) /* let the close frame go out */
        return;
    if (x->in)
        bufferevent_free(x->in);
    if (x->out)
        bufferevent_free(x->out);
    if (x->err)
        bufferevent_free(x->err);
    if (x->conn)
        bufferevent_free(x->conn);
    fatia_api_ws_free(x->ws);
    fatia_api_spdy_free(x->sp);
    for (int i = 0; i < 3; i++)
        if (x->pend[i])
            evbuffer_free(x->pend[i]);
    fatia_buf_release(&x->resize);
    if (x->exit_ev)
        event_free(x->exit_ev);
    if (x->pidfd >= 0)
        close(x->pidfd);
    fatia_free(x);
}

static void flush_conn(struct exec_sess *x)
{
    if (!x->conn_gone)
        bufferevent_enable(x->conn, EV_WRITE);
}

/* Output on a channel: a WebSocket message, or data on the channel's SPDY stream (kept until
 * the client opened that stream). */
static int send_ch(struct exec_sess *x, uint8_t ch, const void *p, size_t n)
{
    if (x->ws)
        return fatia_api_ws_send_channel(x->ws, ch, p, n);
    if (!x->sp)
        return -EPIPE;
    if (!x->sid[ch])
        return ch <= CH_STDERR && x->pend[ch] ? evbuffer_add(x->pend[ch], p, n) : 0;
    return fatia_api_spdy_data(x->sp, x->sid[ch], p, n, false);
}

/* The exit status on channel 3 (v4+), then the close; once out and err are drained. */
static void maybe_finish(struct exec_sess *x)
{
    if (!x->exited || x->out || x->err || x->status_sent || x->conn_gone)
        return;
    if (x->sp && (!x->sid[CH_STATUS] || (x->want_in && !x->sid[CH_STDIN]) || !x->sid[CH_STDOUT] ||
                  (!x->tty && !x->sid[CH_STDERR]) || (x->tty && !x->sid[CH_RESIZE])))
        return; /* the client has not opened all its streams yet: it waits for their replies */
    x->status_sent = true;
    if (x->version >= 4) {
        int code = WIFEXITED(x->wstatus)     ? WEXITSTATUS(x->wstatus)
                   : WIFSIGNALED(x->wstatus) ? 128 + WTERMSIG(x->wstatus)
                                             : 1;
        char msg[512];
        if (code == 0)
            snprintf(msg, sizeof(msg), "{\"metadata\":{},\"status\":\"Success\"}");
        else
            snprintf(msg, sizeof(msg),
                     "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated "
                     "with non-zero exit code: error executing command [...], exit code %d\","
                     "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
                     "\"ExitCode\",\"message\":\"%d\"}]}}",
                     code, code);
        (void)send_ch(x, CH_STATUS, msg, strlen(msg));
    }
    if (x->sp) {
        /* end every stream of ours; the connection closes once that is written */
        for (int ch = CH_STDOUT; ch <= CH_STATUS; ch++)
            if (x->sid[ch])
                (void)fatia_api_spdy_data(x->sp, x->sid[ch], NULL, 0, true);
        x->spdy_done = true;
        if (!x->conn_gone) { /* a client that never closes is dropped after 30 s */
            struct timeval tv = {30, 0};
            bufferevent_set_timeouts(x->conn, &tv, NULL);
        }
    } else {
        (void)fatia_api_ws_close(x->ws, 1000);
    }
    flush_conn(x);
}

/* After stdin was queued: stop reading the client while too much of it waits. */
static void in_check(struct exec_sess *x)
{
    if (x->in && !x->in_paused && !x->conn_gone &&
        evbuffer_get_length(bufferevent_get_output(x->in)) > EXEC_IN_HIGH) {
        x->in_paused = true;
        bufferevent_disable(x->conn, EV_READ);
    }
}

/* The process took its stdin (or closed it): read the client again. */
static void in_resume(struct exec_sess *x)
{
    if (!x->in_paused || (x->in && evbuffer_get_length(bufferevent_get_output(x->in)) > 0))
        return;
    x->in_paused = false;
    if (!x->conn_gone && x->conn) {
        bufferevent_enable(x->conn, EV_READ);
        if (evbuffer_get_length(bufferevent_get_input(x->conn)))
            bufferevent_trigger(x->conn, EV_READ, 0);
    }
}

static void conn_lost(struct exec_sess *x)
{
    if (x->conn_gone)
        return;
    x->conn_gone = true;
    if (!x->exited && x->pid > 0)
        kill(x->pid, SIGKILL); /* nobody reads it any more */
    if (x->in) {
        bufferevent_free(x->in);
        x->in = NULL;
    }
    sess_maybe_free(x);
}

/* ---- process side ---- */

static void pump_output(struct exec_sess *x, struct bufferevent *b, uint8_t ch)
{
    struct evbuffer *src = bufferevent_get_input(b);
    unsigned char chunk[16384];
    int n;

    while ((n = evbuffer_remove(src, chunk, sizeof(chunk))) > 0) {
        if (x->conn_gone || send_ch(x, ch, chunk, (size_t)n) < 0)
            continue; /* drained and dropped */
    }
    flush_conn(x);
    if (!x->conn_gone && evbuffer_get_length(bufferevent_get_output(x->conn)) > EXEC_OUT_HIGH) {
        if (x->out)
            bufferevent_disable(x->out, EV_READ);
        if (x->err)
            bufferevent_disable(x->err, EV_READ);
    }
}

static void out_read_cb(struct bufferevent *b, void *arg)
{
    struct exec_sess *x = arg;

    pump_output(x, b, b == x->out ? CH_STDOUT : CH_STDERR);
}

static void out_event_cb(struct bufferevent *b, short what, void *arg)
{
    struct exec_sess *x = arg;

    (void)what; /* EOF, or EIO on a pty master once the slave is closed: both mean the end */
    pump_output(x, b, b == x->out ? CH_STDOUT : CH_STDERR);
    if (b == x->out) {
        x->out = NULL;
        if (x->tty) { /* the master is gone: so is its dup, the input side */
            x->master = -1;
            if (x->in) {
                bufferevent_free(x->in);
                x->in = NULL;
            }
            in_resume(x);
        }
    } else {
        x->err = NULL;
    }
    bufferevent_free(b);
    maybe_finish(x);
    sess_maybe_free(x);
}

/* stdin's EOF asked for: close the pipe once what was written to it is gone */
static void in_write_cb(struct bufferevent *b, void *arg)
{
    struct exec_sess *x = arg;

    if (x->in == b && x->in_eof && !evbuffer_get_length(bufferevent_get_output(b))) {
        bufferevent_free(b);
        x->in = NULL;
    }
    in_resume(x);
}

static void in_event_cb(struct bufferevent *b, short what, void *arg)
{
    struct exec_sess *x = arg;

    (void)what; /* the process closed its stdin: drop what the client still sends */
    if (x->in == b) {
        bufferevent_free(b);
        x->in = NULL;
    }
    in_resume(x);
}

static void exit_cb(evutil_socket_t fd, short what, void *arg)
{
    struct exec_sess *x = arg;
    int st = 0;

    (void)fd;
    (void)what;
    if (waitpid(x->pid, &st, WNOHANG) != x->pid)
        return; /* not yet (a spurious wakeup) */
    event_del(x->exit_ev);
    x->exited = true;
    x->wstatus = st;
    if (x->master >= 0 && x->out) {
        /* the pty: whatever the process wrote is in the master's buffer by now */
        bufferevent_trigger(x->out, EV_READ, 0);
    }
    maybe_finish(x);
    sess_maybe_free(x);
}

/* ---- client side ---- */

static void on_message(void *arg, bool binary, const uint8_t *p, size_t n)
{
    struct exec_sess *x = arg;

    if (!binary || n == 0)
        return;
    switch (p[0]) {
    case CH_STDIN:
        if (x->in && n > 1) {
            bufferevent_write(x->in, p + 1, n - 1);
            bufferevent_enable(x->in, EV_WRITE);
            in_check(x);
        }
        break;
    case CH_RESIZE:
        if (x->master >= 0 && n > 1) {
            json_t *j = json_loadb((const char *)p + 1, n - 1, 0, NULL);
            json_int_t w = json_integer_value(json_object_get(j, "Width"));
            json_int_t h = json_integer_value(json_object_get(j, "Height"));
            if (w > 0 && h > 0 && w < 65536 && h < 65536) {
                struct winsize ws = {.ws_row = (unsigned short)h, .ws_col = (unsigned short)w};
                (void)ioctl(x->master, TIOCSWINSZ, &ws);
            }
            json_decref(j);
        }
        break;
    case CH_CLOSE:
        if (x->version >= 5 && n >= 2 && p[1] == CH_STDIN && x->in) {
            if (x->master >= 0) {
                /* a terminal has no half-close: send its EOF character */
                bufferevent_write(x->in, "\x04", 1);
            } else {
                x->in_eof = true;
                in_write_cb(x->in, x);
            }
        }
        break;
    default:
        break;
    }
}

static void on_close(void *arg)
{
    struct exec_sess *x = arg;

    x->closing = true;
    if (!x->exited && x->pid > 0)
        kill(x->pid, SIGKILL);
}

static void conn_read_cb(struct bufferevent *b, void *arg)
{
    struct exec_sess *x = arg;

    (void)b;
    if (x->ws ? fatia_api_ws_read(x->ws) < 0 : fatia_api_spdy_read(x->sp) < 0) {
        conn_lost(x);
        return;
    }
    flush_conn(x);
    sess_maybe_free(x);
}

static void conn_write_cb(struct bufferevent *b, void *arg)
{
    struct exec_sess *x = arg;

    if (evbuffer_get_length(bufferevent_get_output(b)) <= EXEC_OUT_HIGH / 2) {
        if (x->out)
            bufferevent_enable(x->out, EV_READ);
        if (x->err)
            bufferevent_enable(x->err, EV_READ);
    }
    sess_maybe_free(x);
}

static void conn_event_cb(struct bufferevent *b, short what, void *arg)
{
    (void)b;
    (void)what;
    conn_lost(arg);
}

/* ---- SPDY streams ---- */

static void stdin_data(struct exec_sess *x, const uint8_t *p, size_t n, bool eof)
{
    if (x->in && n) {
        bufferevent_write(x->in, p, n);
        bufferevent_enable(x->in, EV_WRITE);
        in_check(x);
    }
    if (eof && x->in) {
        if (x->master >= 0) {
            bufferevent_write(x->in, "\x04", 1);
        } else {
            x->in_eof = true;
            in_write_cb(x->in, x);
        }
    }
}

static void resize_to(struct exec_sess *x, const uint8_t *p, size_t n)
{
    json_t *j = json_loadb((const char *)p, n, 0, NULL);
    json_int_t w = json_integer_value(json_object_get(j, "Width"));
    json_int_t h = json_integer_value(json_object_get(j, "Height"));

    if (x->master >= 0 && w > 0 && h > 0 && w < 65536 && h < 65536) {
        struct winsize ws = {.ws_row = (unsigned short)h, .ws_col = (unsigned short)w};
        (void)ioctl(x->master, TIOCSWINSZ, &ws);
    }
    json_decref(j);
}

static void spdy_on_stream(void *arg, uint32_t id, const struct fatia_spdy_hdrs *hd, bool fin)
{
    struct exec_sess *x = arg;
    const char *type = hd->type;
    int ch = !strcmp(type, "stdin")    ? CH_STDIN
             : !strcmp(type, "stdout") ? CH_STDOUT
             : !strcmp(type, "stderr") ? CH_STDERR
             : !strcmp(type, "error")  ? CH_STATUS
             : !strcmp(type, "resize") ? CH_RESIZE
                                       : -1;

    if (ch < 0 || x->sid[ch] || fatia_api_spdy_reply(x->sp, id) < 0)
        return;
    x->sid[ch] = id;
    if ((ch == CH_STDOUT || ch == CH_STDERR) && x->pend[ch] && evbuffer_get_length(x->pend[ch])) {
        size_t n = evbuffer_get_length(x->pend[ch]);
        (void)fatia_api_spdy_data(x->sp, id, evbuffer_pullup(x->pend[ch], -1), n, false);
        evbuffer_drain(x->pend[ch], n);
    }
    if (ch == CH_STDIN && fin)
        stdin_data(x, NULL, 0, true);
    maybe_finish(x);
    flush_conn(x);
}

static void spdy_on_data(void *arg, uint32_t id, const uint8_t *p, size_t n, bool fin)
{
    struct exec_sess *x = arg;

    if (!id)
        return;
    if (id == x->sid[CH_STDIN]) {
        stdin_data(x, p, n, fin);
    } else if (id == x->sid[CH_RESIZE]) {
        /* a stream of JSON objects, one per line (Go's json.Encoder) */
        const char *nl;
        if (fatia_buf_append(&x->resize, p, n) < 0) {
            fatia_buf_reset(&x->resize);
            return;
        }
        while ((nl = memchr(x->resize.p, '\n', x->resize.len))) {
            size_t k = (size_t)(nl - x->resize.p) + 1;
            resize_to(x, (const uint8_t *)x->resize.p, k);
            memmove(x->resize.p, x->resize.p + k, x->resize.len - k);
            fatia_buf_truncate(&x->resize, x->resize.len - k);
        }
    }
}

static void spdy_on_reset(void *arg, uint32_t id)
{
    struct exec_sess *x = arg;

    if (id == 0 || id == x->sid[CH_STATUS]) /* GOAWAY, or the client gave up on the status */
        on_close(x);
}

/* ---- the request ---- */

static bool qbool(const char *v)
{
    return strcmp(v, "0") && strcasecmp(v, "false");
}

static int set_nonblock_cloexec(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) < 0)
        return -errno;
    return 0;
}

static struct bufferevent *fd_bev(struct exec_sess *x, int fd, bool reading)
{
    struct bufferevent *b;

    if (set_nonblock_cloexec(fd) < 0)
        return NULL;
    b = bufferevent_socket_new(x->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (!b)
        return NULL;
    if (reading) {
        bufferevent_setcb(b, out_read_cb, NULL, out_event_cb, x);
        bufferevent_enable(b, EV_READ);
    } else {
        bufferevent_setcb(b, NULL, in_write_cb, in_event_cb, x);
        bufferevent_enable(b, EV_WRITE);
    }
    return b;
}

void fatia_api_exec_serve(const struct fatia_api_streams *sv, const json_t *pod, const char *who,
                          const struct fatia_api_target *tgt, struct fatia_api_http_req *req,
                          struct opres *err, bool attach)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const char *pns = fatia_json_str(meta, "namespace"), *pname = fatia_json_str(meta, "name");
    const struct fatia_http_head *h = fatia_api_http_req_head(req);
    const struct fatia_str *upgrade = fatia_http_header_get(h, "Upgrade");
    const struct fatia_str *key = fatia_http_header_get(h, "Sec-WebSocket-Key");
    const struct fatia_str *offered = fatia_http_header_get(h, "Sec-WebSocket-Protocol");
    char *argv[EXEC_MAX_ARGS + 1];
    const char *container = NULL, *proto;
    bool want_in = false, want_out = true, want_err = true, tty = false, spdy;
    size_t argc = 0;
    int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1}, master = -1, slave = -1;
    char accept[29], why[512] = "";
    struct fatia_exec_req er;
    struct exec_sess *x = NULL;
    int rc, pid = -1;

    if (!pname)
        pname = "";
    if (!pns)
        pns = "";
    for (size_t i = 0; i < tgt->n_params; i++) {
        const char *k = tgt->params[i].key, *v = tgt->params[i].val;
        if (!strcmp(k, "command")) {
            if (argc == EXEC_MAX_ARGS) {
                fatia_api_opres_fail(err, 400, "BadRequest", "exec: more than %d arguments",
                                     EXEC_MAX_ARGS);
                return;
            }
            argv[argc++] = (char *)v;
        } else if (!strcmp(k, "container")) {
            container = *v ? v : NULL;
        } else if (!strcmp(k, "stdin")) {
            want_in = qbool(v);
        } else if (!strcmp(k, "stdout")) {
            want_out = qbool(v);
        } else if (!strcmp(k, "stderr")) {
            want_err = qbool(v);
        } else if (!strcmp(k, "tty")) {
            tty = qbool(v);
        }
    }
    argv[argc] = NULL;
    if (attach) {
        /* the container's own process: argv is the relay's business (agent/exec.c) */
        static char attach_arg[] = "attach";
        argv[0] = attach_arg;
        argv[argc = 1] = NULL;
    }
    if (!argc) {
        fatia_api_opres_fail(err, 400, "BadRequest", "you must specify at least 1 command");
        return;
    }
    {
        /* as kube-apiserver's ExecLocation: before any protocol, so that kubectl's SPDY fallback
         * after a failed upgrade shows this error, not the protocol's */
        const json_t *ctrs = fatia_json_path(pod, "spec.containers"), *ct;
        const char *want = container;
        bool found = false;
        size_t i;
        if (!want)
            want = fatia_json_str(json_array_get(ctrs, 0), "name");
        bool ctr_tty = false;
        json_array_foreach(ctrs, i, ct)
        {
            if (want && fatia_json_str(ct, "name") && !strcmp(fatia_json_str(ct, "name"), want)) {
                found = true;
                ctr_tty = json_is_true(json_object_get(ct, "tty"));
            }
        }
        if (!found) {
            fatia_api_opres_fail(err, 400, "BadRequest", "container %s is not valid for pod %s",
                                 want ? want : "", pname);
            return;
        }
        if (attach && tty && !ctr_tty) {
            /* kubectl drops -t itself for such a container; a raw client is told */
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "attach: container %s of pod %s has no TTY (tty: true): attach "
                                 "without -t",
                                 want, pname);
            return;
        }
    }
    spdy = upgrade && upgrade->n == 8 && !strncasecmp(upgrade->p, "SPDY/3.1", 8);
    if (spdy) {
        /* X-Stream-Protocol-Version, repeatable: the first of ours that is offered */
        proto = NULL;
        for (size_t i = 0; i < h->n_headers && !proto; i++)
            if (h->headers[i].name.n == 25 &&
                !strncasecmp(h->headers[i].name.p, "X-Stream-Protocol-Version", 25))
                proto =
                    fatia_api_ws_pick(h->headers[i].value.p, h->headers[i].value.n, spdy_protocols);
        if (!proto) {
            fatia_api_http_add_header(req, "X-Accepted-Stream-Protocol-Versions",
                                      "v4.channel.k8s.io");
            fatia_api_opres_fail(err, 403, "Forbidden",
                                 "exec: none of the offered stream protocols is served over SPDY "
                                 "(v4.channel.k8s.io)");
            return;
        }
    } else {
        if (!upgrade || upgrade->n != 9 || strncasecmp(upgrade->p, "websocket", 9)) {
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "exec: a stream is needed (Upgrade: websocket or SPDY/3.1)");
            return;
        }
        if (!key || fatia_api_ws_accept(key->p, key->n, accept) < 0) {
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "exec: a missing or bad Sec-WebSocket-Key");
            return;
        }
        proto = offered ? fatia_api_ws_pick(offered->p, offered->n, protocols) : NULL;
        if (!proto) {
            fatia_api_opres_fail(err, 400, "BadRequest",
                                 "exec: none of the offered subprotocols is served "
                                 "(v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io)");
            return;
        }
    }
    if (!sv->exec) {
        fatia_api_opres_fail(err, 503, "ServiceUnavailable",
                             "exec into pod \"%s\" is not available: no node agent serves exec in "
                             "this fatiad",
                             pname);
        return;
    }

    /* the process's descriptors */
    if (tty) {
        if (openpty(&master, &slave, NULL, NULL, NULL) < 0)
            goto sys_fail;
    } else if ((want_in && pipe2(pin, O_CLOEXEC) < 0) || pipe2(pout, O_CLOEXEC) < 0 ||
               pipe2(perr, O_CLOEXEC) < 0) {
        goto sys_fail;
    }
    {
        int devnull = -1;
        if (!tty && !want_in)
            devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        er = (struct fatia_exec_req){
            .pod = pod,
            .container = container,
            .argv = argv,
            .tty = tty,
            .attach = attach,
            .attach_stdin = attach && want_in,
            .in = tty       ? slave
                  : want_in ? pin[0]
                            : devnull,
            .out = tty ? slave : pout[1],
            .err = tty ? slave : perr[1],
        };
        rc = sv->exec(sv->exec_arg, &er, &pid, why, sizeof(why));
        if (devnull >= 0)
            close(devnull);
    }
    /* the child's ends are the child's now */
    if (slave >= 0)
        close(slave);
    if (pin[0] >= 0)
        close(pin[0]);
    if (pout[1] >= 0)
        close(pout[1]);
    if (perr[1] >= 0)
        close(perr[1]);
    pin[0] = pout[1] = perr[1] = slave = -1;
    if (rc < 0) {
        fatia_api_opres_fail(err,
                             rc == -ENOENT   ? 404
                             : rc == -EAGAIN ? 400
                                             : 500,
                             rc == -ENOENT   ? "NotFound"
                             : rc == -EAGAIN ? "BadRequest"
                                             : "InternalError",
                             "%s", why[0] ? why : "exec failed");
        goto close_fds;
    }

    x = fatia_calloc(1, sizeof(*x));
    if (!x)
        goto kill_fail;
    x->pidfd = -1;
    x->base = sv->base;
    x->version = proto[0] == 'v' ? proto[1] - '0' : 1;
    x->tty = tty;
    x->want_in = want_in;
    x->master = -1;
    x->pid = pid;
    x->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (x->pidfd < 0)
        goto kill_fail;
    x->exit_ev = event_new(x->base, x->pidfd, EV_READ | EV_PERSIST, exit_cb, x);
    if (!x->exit_ev || event_add(x->exit_ev, NULL) < 0)
        goto kill_fail;
    if (tty) {
        int m2;
        if (!(x->out = fd_bev(x, master, true)))
            goto kill_fail;
        x->master = master; /* owned by x->out; kept as the ioctl handle */
        master = -1;
        m2 = dup(master >= 0 ? master : x->master);
        if (m2 < 0 || !(x->in = fd_bev(x, m2, false))) {
            if (m2 >= 0)
                close(m2);
            goto kill_fail;
        }
    } else {
        if (want_in) {
            if (!(x->in = fd_bev(x, pin[1], false)))
                goto kill_fail;
            pin[1] = -1;
        }
        if (!(x->out = fd_bev(x, pout[0], true)))
            goto kill_fail;
        pout[0] = -1;
        if (!(x->err = fd_bev(x, perr[0], true)))
            goto kill_fail;
        perr[0] = -1;
        (void)want_out;
        (void)want_err;
    }

    if (spdy) {
        fatia_api_http_add_header(req, "Connection", "Upgrade");
        fatia_api_http_add_header(req, "Upgrade", "SPDY/3.1");
        fatia_api_http_add_header(req, "X-Stream-Protocol-Version", proto);
    } else {
        fatia_api_http_add_header(req, "Upgrade", "websocket");
        fatia_api_http_add_header(req, "Connection", "Upgrade");
        fatia_api_http_add_header(req, "Sec-WebSocket-Accept", accept);
        fatia_api_http_add_header(req, "Sec-WebSocket-Protocol", proto);
    }
    fatia_buf_init(&x->resize, 4096);
    if (spdy && (!(x->pend[CH_STDOUT] = evbuffer_new()) || !(x->pend[CH_STDERR] = evbuffer_new())))
        goto kill_fail;
    x->conn = fatia_api_http_upgrade(req);
    if (!x->conn) {
        x->conn_gone = true;
        kill(pid, SIGKILL);
        return; /* the pidfd reaps it and frees the session */
    }
    if (spdy ? fatia_api_spdy_new(
                   &(struct fatia_spdy_cbs){spdy_on_stream, spdy_on_data, spdy_on_reset}, x,
                   bufferevent_get_input(x->conn), bufferevent_get_output(x->conn), &x->sp) < 0
             : fatia_api_ws_new(&(struct fatia_ws_cbs){on_message, on_close}, x,
                                bufferevent_get_input(x->conn), bufferevent_get_output(x->conn),
                                EXEC_MAX_MSG, &x->ws) < 0) {
        bufferevent_free(x->conn);
        x->conn = NULL;
        conn_lost(x);
        return;
    }
    bufferevent_setcb(x->conn, conn_read_cb, conn_write_cb, conn_event_cb, x);
    bufferevent_enable(x->conn, EV_READ | EV_WRITE);
    if (evbuffer_get_length(bufferevent_get_input(x->conn)))
        conn_read_cb(x->conn, x);
    fatia_log(FATIA_LOG_INFO, "exec: %s/%s %s (%s%s) by %s", pns, pname, argv[0], proto,
              tty ? ", tty" : "", who);
    return;

kill_fail:
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    if (x) {
        if (x->in)
            bufferevent_free(x->in);
        if (x->out)
            bufferevent_free(x->out);
        if (x->err)
            bufferevent_free(x->err);
        if (x->exit_ev)
            event_free(x->exit_ev);
        if (x->pidfd >= 0)
            close(x->pidfd);
        for (int i = 0; i < 3; i++)
            if (x->pend[i])
                evbuffer_free(x->pend[i]);
        fatia_buf_release(&x->resize);
        fatia_free(x);
    }
    fatia_api_opres_from_errno(err, -ENOMEM, "exec");
    goto close_fds;
sys_fail:
    fatia_api_opres_fail(err, 500, "InternalError", "exec: %s", fatia_strerror(-errno));
close_fds:
    for (int *fd = (int[]){pin[0], pin[1], pout[0], pout[1], perr[0], perr[1], master, slave, -2};
         *fd != -2; fd++)
        if (*fd >= 0)
            close(*fd);
}

/* The API server's: its authorization (create on pods/exec or pods/attach) and its object,
 * then the pod's node if it serves its own endpoint, else this process's provider. */
static void exec_start(const struct opctx *c, const struct fatia_api_target *tgt,
                       struct fatia_api_http_req *req, struct opres *err, bool attach)
{
    const json_t *pod = fatia_api_stream_pod(c, "create", err);

    if (pod && !fatia_api_nodeproxy(c->s, pod, c->user->name, req, err))
        fatia_api_exec_serve(&c->s->streams, pod, c->user->name, tgt, req, err, attach);
}

void fatia_api_exec_start(const struct opctx *c, const struct fatia_api_target *tgt,
                          struct fatia_api_http_req *req, struct opres *err)
{
    exec_start(c, tgt, req, err, false);
}

void fatia_api_attach_start(const struct opctx *c, const struct fatia_api_target *tgt,
                            struct fatia_api_http_req *req, struct opres *err)
{
    exec_start(c, tgt, req, err, true);
}
