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

#endif
