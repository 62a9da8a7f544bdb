/*
 * cli/serve_loop.h: the part of `fatia gateway` and `fatia engine-sim` that is the same once
 * their server is built: announce it, run the loop until a signal.
 */
#ifndef FATIA_CLI_SERVE_LOOP_H
#define FATIA_CLI_SERVE_LOOP_H

struct event_base;

/* Writes port to port_file (when not NULL), ignores SIGPIPE, raises the descriptor limit (one
 * per client and per upstream connection), prints "fatia NAME: listening on http://HOST:PORT
 * (DETAIL)" on stderr, and runs base until SIGINT or SIGTERM. FATIA_EXIT_OK when stopped by a
 * signal, FATIA_EXIT_FAIL when the port file cannot be written. */
int fatia_cli_serve_loop(struct event_base *base, const char *name, const char *listen, int port,
                         const char *port_file, const char *detail);

/* A graceful stop: on the first SIGTERM or SIGINT, start(ud) (stop taking work), then the loop
 * runs until busy(ud) is 0 (checked every 20 ms) or timeout_usec passed; a second signal stops
 * it at once. Said on stderr. */
struct fatia_cli_drain {
    void (*start)(void *ud);
    size_t (*busy)(void *ud);
    void *ud;
    int64_t timeout_usec;
};

/* fatia_cli_serve_loop with a graceful stop (NULL: as fatia_cli_serve_loop). */
int fatia_cli_serve_loop_drain(struct event_base *base, const char *name, const char *listen,
                               int port, const char *port_file, const char *detail,
                               const struct fatia_cli_drain *drain);

#endif
