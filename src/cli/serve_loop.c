/*
 * cli/serve_loop.c: announcing a server and running its loop (see serve_loop.h).
 *
 * The listen line goes to stderr with the port actually bound (--listen ADDR:0 picks one), so a
 * person sees where to point a client and a script can read it from the log; --port-file is the
 * machine-readable form and is written first, so that whoever waits on it knows the server is
 * about to serve. Signals end the loop through libevent (no work in a signal handler).
 */
#include "base/compat.h"

#include "cli/serve_loop.h"

#include <sys/resource.h>

#include <event2/event.h>
#include <signal.h>

#include "base/clock.h"
#include "cli/cli.h"
#include "gateway/netaddr.h"

static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

struct loop {
    struct event_base *base;
    const char *name;
    const struct fatia_cli_drain *drain;
    struct event *tick;
    bool draining;
    int64_t deadline;
};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct loop *l = arg;
    size_t busy = l->drain->busy(l->drain->ud);
    struct timeval tv = {0, 20000};

    (void)fd;
    (void)what;
    if (!busy) {
        fprintf(stderr, "fatia %s: drained, stopping\n", l->name);
        event_base_loopexit(l->base, NULL);
        return;
    }
    if (fatia_now_mono_usec() >= l->deadline) {
        fprintf(stderr, "fatia %s: drain timeout, stopping with %zu requests unanswered\n", l->name,
                busy);
        event_base_loopexit(l->base, NULL);
        return;
    }
    evtimer_add(l->tick, &tv);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    struct loop *l = arg;

    (void)sig;
    (void)what;
    if (!l->drain || l->draining || !(l->tick = evtimer_new(l->base, on_tick, l))) {
        event_base_loopexit(l->base, NULL);
        return;
    }
    l->draining = true;
    l->deadline = fatia_now_mono_usec() + l->drain->timeout_usec;
    fprintf(stderr, "fatia %s: draining: no new connections, %zu requests in flight\n", l->name,
            l->drain->busy(l->drain->ud));
    l->drain->start(l->drain->ud);
    on_tick(-1, 0, l);
}

int fatia_cli_serve_loop(struct event_base *base, const char *name, const char *listen, int port,
                         const char *port_file, const char *detail)
{
    return fatia_cli_serve_loop_drain(base, name, listen, port, port_file, detail, NULL);
}

int fatia_cli_serve_loop_drain(struct event_base *base, const char *name, const char *listen,
                               int port, const char *port_file, const char *detail,
                               const struct fatia_cli_drain *drain)
{
    struct event *sigint = NULL, *sigterm = NULL;
    struct loop l = {base, name, drain, NULL, false, 0};
    char url[320];

    if (port_file) {
        FILE *f = fopen(port_file, "we");
        if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0) {
            fprintf(stderr, "fatia %s: cannot write '%s'\n", name, port_file);
            return FATIA_EXIT_FAIL;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    raise_fd_limit();
    sigint = evsignal_new(base, SIGINT, on_signal, &l);
    sigterm = evsignal_new(base, SIGTERM, on_signal, &l);
    if (sigint)
        evsignal_add(sigint, NULL);
    if (sigterm)
        evsignal_add(sigterm, NULL);
    fatia_gateway_listen_url(listen, port, url, sizeof(url));
    fprintf(stderr, "fatia %s: listening on %s (%s)\n", name, url, detail);
    event_base_dispatch(base);
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    if (l.tick)
        event_free(l.tick);
    return FATIA_EXIT_OK;
}
