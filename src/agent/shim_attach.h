/*
 * agent/shim_attach.h: `kubectl attach` on the shim's side: a unix socket per container in the
 * pod's directory (attach-NAME.sock, 0600, root's) that fans the container's stdout and stderr
 * out to whoever is attached and carries their bytes to its stdin (when spec stdin is true).
 * See shim_attach.c.
 */
#ifndef FATIA_AGENT_SHIM_ATTACH_H
#define FATIA_AGENT_SHIM_ATTACH_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>

#define FATIA_SHIM_ATTACH_MAX 8    /* clients per container */
#define FATIA_SHIM_TTY_FRAME  4096 /* a 't' client's frame: at most this much data */

struct fatia_shim_attach {
    int lsock; /* listening, -1: none */
    int cli[FATIA_SHIM_ATTACH_MAX];
    bool in_eof[FATIA_SHIM_ATTACH_MAX]; /* the client ended its input: poll only for a hangup */
    char mode[FATIA_SHIM_ATTACH_MAX];   /* its first byte: 'i' brings input, 'o' output only, 't'
                                         framed input and resizes (attach -t) */
    unsigned char tbuf[FATIA_SHIM_ATTACH_MAX][FATIA_SHIM_TTY_FRAME + 3]; /* 't': a partial frame */
    size_t tlen[FATIA_SHIM_ATTACH_MAX];
    size_t n;
};

/* Listens on DIR/attach-CTR.sock (DIR's fd dirfd). -ENAMETOOLONG: the name does not fit. */
int fatia_shim_attach_listen(struct fatia_shim_attach *at, int dirfd, const char *ctr);
/* Appends the descriptors to poll; returns how many. */
size_t fatia_shim_attach_pollfds(const struct fatia_shim_attach *at, struct pollfd *pfd);
/* Handles fd's events if fd is one of at's. *in_fd: the container's stdin (-1: none); closed
 * and set to -1 when stdin_once and an attached client ends its input. tty_fd: the container's
 * pty master (tty: true), which a 't' client's resizes apply to, or -1. Returns true if fd was
 * at's. */
bool fatia_shim_attach_handle(struct fatia_shim_attach *at, int fd, short revents, int *in_fd,
                              bool stdin_once, int tty_fd);
/* Sends what the container wrote on stream (1 stdout, 2 stderr) to every client. */
void fatia_shim_attach_output(struct fatia_shim_attach *at, int stream, const void *data, size_t n);
/* Ends every client's attach (the container ended). */
void fatia_shim_attach_hangup(struct fatia_shim_attach *at);
/* `fatia-shim attach POD_DIR CONTAINER [-i] [-t]`: the relay the agent starts for the API
 * server: frames from the socket to 1 and 2, and (with -i) 0 to the socket; exit 0 when the
 * container's output ends. -t: 0 is a terminal (the stream's pty slave): made the relay's
 * controlling one and raw, its size sent at the start and on every SIGWINCH. */
int fatia_shim_attach_relay_main(int argc, char **argv);

#endif
