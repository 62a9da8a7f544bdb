/*
 * agent/shim_attach.c: `kubectl attach` on the shim's side (shim_attach.h).
 *
 * Model: the shim already owns each container's stdout and stderr (its pipes, written to the
 * CRI log); attach adds, per container, a unix socket in the pod's directory that the shim's
 * poll loop accepts on. What the container writes goes to the log as before and, framed, to
 * every attached client: [stream: 1 stdout, 2 stderr][length: 4 bytes, big-endian][bytes]. A
 * client's first byte says whether it brings input ('i') or only reads ('o'); what an 'i'
 * client sends after it is raw stdin, written to the container's stdin pipe, which exists only when the
 * container's spec says stdin: true (else stdin is /dev/null, as before, and input is dropped).
 * stdinOnce: the first 'i' client that ends its input (or leaves) closes the container's stdin
 * (kubelet's); an output-only attach never does.
 * The API server's side is an ordinary exec session whose process is the relay
 * (`fatia-shim attach POD_DIR CONTAINER [-i]`, started by the agent's exec provider), so both
 * protocols (WebSocket, SPDY), authorization and exit handling are exec's.
 *
 * Invariants: the shim never blocks on a client: every client socket is non-blocking, and one
 * that cannot take a whole frame now is dropped (its attach ends; the container and the other
 * clients go on), so a client that stops reading costs the pod nothing. Input that the
 * container's stdin pipe cannot take now is dropped likewise with the client. The socket is
 * root's, 0600, in the pod's directory (0700): only the agent (root) reaches it; an abstract
 * socket was rejected because the process mode's pods share the host's network namespace and
 * any of them could connect to it. Bound relative to the directory (fchdir): sun_path holds
 * only 108 bytes and pod directories can be longer.
 *
 * A container with tty: true has a pty whose master the shim holds (shim.c; oci: runc's own,
 * received over its console socket): its output is stream 1 only. An attach -t client says 't'
 * and then sends frames [type: 0 stdin, 4 resize][length: 2 bytes, big-endian][data], a
 * resize's data being rows and columns (2 bytes each, big-endian), applied to the master
 * (TIOCSWINSZ); the relay takes them from SIGWINCH on the stream's pty, which it makes its
 * controlling terminal. stdinOnce does not apply to a terminal (its input has no end but ^D).
 *
 * Not here: output written before the attach (kubectl logs has it).
 */
#include "base/compat.h"

#include "agent/shim_attach.h"

#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/error.h"

static int sock_name(const char *ctr, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "attach-%s.sock", ctr) >=
        sizeof(sa->sun_path))
        return -ENAMETOOLONG;
    return 0;
}

int fatia_shim_attach_listen(struct fatia_shim_attach *at, int dirfd, const char *ctr)
{
    struct sockaddr_un sa;
    int here = -1, fd = -1, r;

    at->n = 0;
    at->lsock = -1;
    r = sock_name(ctr, &sa);
    if (r < 0)
        return r;
    here = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (here < 0 || fd < 0 || fchdir(dirfd) < 0) {
        r = -errno;
        goto fail;
    }
    (void)unlink(sa.sun_path);
    {
        mode_t old = umask(0177);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
        umask(old);
    }
    if (fchdir(here) < 0 && r == 0)
        r = -errno;
    if (r < 0 || listen(fd, 4) < 0) {
        r = r < 0 ? r : -errno;
        goto fail;
    }
    close(here);
    at->lsock = fd;
    return 0;
fail:
    if (here >= 0)
        close(here);
    if (fd >= 0)
        close(fd);
    return r;
}

size_t fatia_shim_attach_pollfds(const struct fatia_shim_attach *at, struct pollfd *pfd)
{
    size_t n = 0;

    if (at->lsock >= 0)
        pfd[n++] = (struct pollfd){.fd = at->lsock, .events = POLLIN};
    for (size_t i = 0; i < at->n; i++)
        pfd[n++] = (struct pollfd){.fd = at->cli[i], .events = at->in_eof[i] ? 0 : POLLIN};
    return n;
}

static void drop(struct fatia_shim_attach *at, size_t i)
{
    close(at->cli[i]);
    at->n--;
    at->cli[i] = at->cli[at->n];
    at->in_eof[i] = at->in_eof[at->n];
    at->mode[i] = at->mode[at->n];
    at->tlen[i] = at->tlen[at->n];
    memcpy(at->tbuf[i], at->tbuf[at->n], at->tlen[at->n]);
}

/* A 't' client's bytes: whole frames applied, a partial one kept. false: a bad frame, or the
 * container's stdin cannot take the input now (the client is dropped). */
static bool tty_frames(struct fatia_shim_attach *at, size_t i, const char *p, size_t n, int in_fd,
                       int tty_fd)
{
    while (n) {
        size_t take = sizeof(at->tbuf[i]) - at->tlen[i], len;
        unsigned char *f = at->tbuf[i];
        if (take > n)
            take = n;
        memcpy(f + at->tlen[i], p, take);
        at->tlen[i] += take;
        p += take;
        n -= take;
        while (at->tlen[i] >= 3) {
            len = (size_t)f[1] << 8 | f[2];
            if ((f[0] != 0 && f[0] != 4) || len > FATIA_SHIM_TTY_FRAME)
                return false;
            if (at->tlen[i] < 3 + len)
                break;
            if (f[0] == 0 && in_fd >= 0 && write(in_fd, f + 3, len) != (ssize_t)len)
                return false;
            if (f[0] == 4 && len == 4 && tty_fd >= 0) {
                struct winsize ws = {.ws_row = (unsigned short)(f[3] << 8 | f[4]),
                                     .ws_col = (unsigned short)(f[5] << 8 | f[6])};
                if (ws.ws_row && ws.ws_col)
                    (void)ioctl(tty_fd, TIOCSWINSZ, &ws);
            }
            memmove(f, f + 3 + len, at->tlen[i] - 3 - len);
            at->tlen[i] -= 3 + len;
        }
    }
    return true;
}

bool fatia_shim_attach_handle(struct fatia_shim_attach *at, int fd, short revents, int *in_fd,
                              bool stdin_once, int tty_fd)
{
    if (fd < 0)
        return false;
    if (fd == at->lsock) {
        int c = accept4(at->lsock, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c >= 0 && at->n < FATIA_SHIM_ATTACH_MAX) {
            at->in_eof[at->n] = false;
            at->mode[at->n] = 0;
            at->tlen[at->n] = 0;
            at->cli[at->n++] = c;
        } else if (c >= 0)
            close(c);
        return true;
    }
    for (size_t i = 0; i < at->n; i++) {
        char buf[16384];
        ssize_t n;
        if (at->cli[i] != fd)
            continue;
        if (at->in_eof[i]) {
            if (revents & (POLLHUP | POLLERR))
                drop(at, i);
            return true;
        }
        n = read(fd, buf, sizeof(buf));
        if (n > 0 && !at->mode[i]) {
            at->mode[i] = buf[0] == 'i' || buf[0] == 't' ? buf[0] : 'o';
            memmove(buf, buf + 1, (size_t)--n);
            if (!n)
                return true;
        }
        if (n > 0 && at->mode[i] == 't') {
            if (!tty_frames(at, i, buf, (size_t)n, *in_fd, tty_fd))
                drop(at, i);
            return true;
        }
        if (n > 0) {
            if (at->mode[i] == 'i' && *in_fd >= 0 && write(*in_fd, buf, (size_t)n) != n)
                drop(at, i); /* the container does not read its stdin: this attach ends */
            return true;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR) && !(revents & (POLLHUP | POLLERR)))
            return true;
        /* the client ended its input (or left) */
        if (at->mode[i] == 'i' && stdin_once && *in_fd >= 0) {
            close(*in_fd);
            *in_fd = -1;
        }
        if (n < 0 || (revents & (POLLHUP | POLLERR)))
            drop(at, i);
        else
            at->in_eof[i] = true; /* it still reads output: keep it, stop polling its input */
        return true;
    }
    return false;
}

void fatia_shim_attach_output(struct fatia_shim_attach *at, int stream, const void *data, size_t n)
{
    unsigned char hdr[5] = {(unsigned char)stream, (unsigned char)(n >> 24),
                            (unsigned char)(n >> 16), (unsigned char)(n >> 8), (unsigned char)n};

    for (size_t i = 0; i < at->n;) {
        struct iovec iov[2] = {{hdr, 5}, {(void *)data, n}};
        ssize_t w = writev(at->cli[i], iov, 2);
        if (w != (ssize_t)(n + 5)) {
            drop(at, i); /* it cannot take the frame now: its attach ends */
            continue;
        }
        i++;
    }
}

void fatia_shim_attach_hangup(struct fatia_shim_attach *at)
{
    while (at->n)
        drop(at, 0);
}

/* ---- the relay: fatia-shim attach POD_DIR CONTAINER [-i] ---- */

static int write_full(int fd, const unsigned char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* -t: a resize frame with 0's size. */
static int send_size(int fd)
{
    struct winsize ws;
    unsigned char f[7] = {4, 0, 4};

    if (ioctl(0, TIOCGWINSZ, &ws) < 0 || !ws.ws_row || !ws.ws_col)
        return 0;
    f[3] = (unsigned char)(ws.ws_row >> 8);
    f[4] = (unsigned char)ws.ws_row;
    f[5] = (unsigned char)(ws.ws_col >> 8);
    f[6] = (unsigned char)ws.ws_col;
    return write_full(fd, f, sizeof(f));
}

/* -t: 0 the relay's controlling terminal (its size changes send SIGWINCH, read on a signalfd),
 * raw (only the container's pty translates). The signalfd, or -1. */
static int tty_setup(void)
{
    struct termios t;
    sigset_t m;

    (void)setsid();
    (void)ioctl(0, TIOCSCTTY, 0);
    if (tcgetattr(0, &t) == 0) {
        cfmakeraw(&t);
        (void)tcsetattr(0, TCSANOW, &t);
    }
    sigemptyset(&m);
    sigaddset(&m, SIGWINCH);
    sigprocmask(SIG_BLOCK, &m, NULL);
    return signalfd(-1, &m, SFD_CLOEXEC);
}

int fatia_shim_attach_relay_main(int argc, char **argv)
{
    static unsigned char buf[(1 << 17) + 5];
    struct sockaddr_un sa;
    bool want_in = false, tty = false, bad = argc < 4 || argc > 6;
    size_t have = 0;
    int fd, sfd = -1;

    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "-i"))
            want_in = true;
        else if (!strcmp(argv[i], "-t"))
            tty = true;
        else
            bad = true;
    }
    if (bad || argv[2][0] != '/') {
        fprintf(stderr, "usage: fatia-shim attach POD_DIR CONTAINER [-i] [-t]\n");
        return 2;
    }
    if (sock_name(argv[3], &sa) < 0 || chdir(argv[2]) < 0) {
        fprintf(stderr, "fatia-shim attach: %s: %s\n", argv[2], fatia_strerror(-errno));
        return 126;
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        fprintf(stderr, "fatia-shim attach: container %s cannot be attached to: %s\n", argv[3],
                fatia_strerror(-errno));
        return 126;
    }
    if (tty)
        sfd = tty_setup();
    if (write_full(fd, (const unsigned char *)(tty ? "t" : want_in ? "i" : "o"), 1) < 0)
        return 126;
    if (tty && send_size(fd) < 0)
        return 0;
    for (;;) {
        struct pollfd pfd[3] = {{.fd = fd, .events = POLLIN},
                                {.fd = want_in ? 0 : -1, .events = POLLIN},
                                {.fd = sfd, .events = POLLIN}};
        if (poll(pfd, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return 126;
        }
        if (pfd[2].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) > 0 && send_size(fd) < 0)
                return 0;
        }
        if (want_in && pfd[1].revents) {
            unsigned char in[FATIA_SHIM_TTY_FRAME + 3];
            ssize_t n = read(0, in + (tty ? 3 : 0), tty ? FATIA_SHIM_TTY_FRAME : sizeof(in));
            if (n > 0) {
                if (tty) {
                    in[0] = 0;
                    in[1] = (unsigned char)(n >> 8);
                    in[2] = (unsigned char)n;
                }
                if (write_full(fd, in, (size_t)n + (tty ? 3 : 0)) < 0)
                    return 0;
            } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
                if (!tty)
                    shutdown(fd, SHUT_WR);
                want_in = false;
            }
        }
        if (pfd[0].revents) {
            ssize_t n = read(fd, buf + have, sizeof(buf) - have);
            if (n <= 0 && !(n < 0 && errno == EINTR))
                return 0; /* the container's output ended (or it left) */
            have += n > 0 ? (size_t)n : 0;
            for (;;) { /* whole frames */
                size_t len;
                if (have < 5)
                    break;
                len = (size_t)buf[1] << 24 | (size_t)buf[2] << 16 | (size_t)buf[3] << 8 | buf[4];
                if (len > sizeof(buf) - 5)
                    return 126;
                if (have < 5 + len)
                    break;
                if (write_full(buf[0] == 2 ? 2 : 1, buf + 5, len) < 0)
                    return 0;
                memmove(buf, buf + 5 + len, have - 5 - len);
                have -= 5 + len;
            }
        }
    }
}
