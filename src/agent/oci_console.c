/*
 * agent/oci_console.c: `kubectl exec -it` into a runc container: the container's own pty,
 * received over runc's console socket, relayed to the caller's terminal.
 *
 * Model. The caller (the API server's exec stream) made a pty and gives its slave, T; its
 * master is the stream's stdout/stdin, and a resize from the client is its TIOCSWINSZ on that
 * master. A relay process, a child of the caller (its exit status is the command's), does:
 *
 *     relay: setsid, T its controlling terminal (so the caller's TIOCSWINSZ sends it SIGWINCH),
 *            T raw (only the container's pty translates, as with kubelet's single pty),
 *            a child subreaper (runc --detach leaves the process to it, so it can wait for it);
 *            listens on DIR/console.sock (DIR: a fresh 0700 directory made by mkdtemp)
 *       └─ runc exec --detach --tty --console-socket DIR/console.sock --pid-file DIR/pid ID ARGV
 *            runc makes the pty in the container's devpts, sends its master (SCM_RIGHTS),
 *            starts the process and exits 0 (its stderr is T: runc's own failure message)
 *     relay: T <-> master; SIGWINCH: T's size onto the master; waits for the process (by the
 *            pid file's pid, re-parented to it) and exits with its code (128 + signal).
 *
 * The master is non-blocking and input goes through a bounded buffer (64 KiB), so a process
 * that does not read its terminal (the pty's input queue full, in raw mode) never stops the
 * relay from carrying its output: input waits in the buffer, then in T, and the caller's
 * stream holds the rest. Before, the relay wrote input with a blocking write: once the
 * container's pty was raw and full, its output stopped too (tests/cli/containers-tty.sh,
 * "output stalled behind unread input", which failed whenever the container's stty raw ran
 * before the client's paste arrived: every run on an idle machine).
 *
 * Invariants: the relay is forked from a multi-threaded fatiad and never execs, so it makes only
 * async-signal-safe calls (system calls; every string and argv made before the fork); it keeps
 * only T (as 0, 1, 2) of the caller's descriptors; the socket and the pid file are removed once
 * used, and the directory with them. A SIGKILL of the relay (the client left) closes the master:
 * the container's process gets SIGHUP from its terminal, as under kubelet.
 *
 * Rejected: runc exec --tty in the foreground with T as its stdio (runc relays itself, through
 * a second pty, and clears ONLCR on the container's pty only after the process started: a shell
 * that saved its terminal's modes first printed every line with CR CR LF, seen with busybox ash);
 * --console-socket without --detach (runc ignores it then); handing the master up to the API
 * server instead of relaying (the exec provider's interface gives descriptors down, not up, and
 * the exit code would still need a subreaper to wait for the detached process).
 */
#include "base/compat.h"

#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "agent/oci.h"
#include "base/alloc.h"
#include "base/error.h"

#define RUNC_MAX_ARGS 48
#define SETUP_MS      30000 /* runc's start: at most this long */
#define DRAIN_MS      200   /* after the process ended: output still in the pty */

/* Writes all of buf to fd (blocking). */
static void put_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void put_str(int fd, const char *s)
{
    put_all(fd, s, strlen(s));
}

/* The master descriptor passed with one message on c, or -1. */
static int recv_fd(int c)
{
    char byte, ctl[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr m = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
    struct cmsghdr *h;
    int fd = -1;

    memset(ctl, 0, sizeof(ctl));
    if (recvmsg(c, &m, MSG_CMSG_CLOEXEC) < 0)
        return -1;
    h = CMSG_FIRSTHDR(&m);
    if (h && h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS &&
        h->cmsg_len == CMSG_LEN(sizeof(int)))
        memcpy(&fd, CMSG_DATA(h), sizeof(int));
    return fd;
}

static int code_of(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void copy_size(int from, int to)
{
    struct winsize ws;
    if (ioctl(from, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
        (void)ioctl(to, TIOCSWINSZ, &ws);
}

/* The relay (the forked child): never returns. */
static _Noreturn void relay(int tty, const char *dir, const char *sock, const char *pidfile,
                            char *const *argv)
{
    static char *const envp[] = {
        (char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    struct termios t;
    sigset_t mask;
    pid_t runc, pid = -1;
    int ls, sfd, master = -1, code = 126, status;
    bool done = false, out_open = true, in_open = true;
    char buf[16384];
    static char in[65536]; /* typed, not yet taken by the container's terminal */
    size_t in_n = 0;

    sigemptyset(&mask);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    for (int sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            signal(sig, SIG_DFL);
    }
    if (dup2(tty, 0) < 0 || dup2(tty, 1) < 0 || dup2(tty, 2) < 0)
        _exit(126);
    syscall(SYS_close_range, 3u, ~0u, 0u);
    (void)setsid();
    (void)ioctl(0, TIOCSCTTY, 0);
    if (tcgetattr(0, &t) == 0) {
        cfmakeraw(&t);
        (void)tcsetattr(0, TCSANOW, &t);
    }
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGWINCH);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    sfd = signalfd(-1, &mask, SFD_CLOEXEC);
    ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memcpy(sa.sun_path, sock, strlen(sock) + 1);
    if (sfd < 0 || ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(ls, 1) < 0) {
        put_str(2, "exec: cannot make the console socket\r\n");
        goto fail;
    }
    runc = fork();
    if (runc < 0)
        goto fail;
    if (runc == 0) {
        int nul = open("/dev/null", O_RDWR);
        sigemptyset(&mask);
        sigprocmask(SIG_SETMASK, &mask, NULL);
        (void)umask(022); /* oci.c's run_runc: runc makes mount points with it */
        if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0)
            _exit(127);
        execve(argv[0], argv, envp);
        _exit(127);
    }
    /* the master, or runc's failure */
    while (master < 0) {
        struct pollfd p[2] = {{.fd = ls, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        int n = poll(p, 2, SETUP_MS);
        if (n == 0) {
            put_str(2, "exec: runc gave no terminal in time\r\n");
            kill(runc, SIGKILL);
            goto fail;
        }
        if (n < 0 && errno != EINTR)
            goto fail;
        if (p[0].revents & POLLIN) {
            int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
            if (c >= 0) {
                struct ucred cr;
                socklen_t cl = sizeof(cr);
                /* only runc, our child (the socket's directory is root's 0700 anyway) */
                if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0 && cr.pid == runc)
                    master = recv_fd(c);
                close(c);
            }
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) < 0) {
            }
            if (master < 0 && waitpid(runc, &status, WNOHANG) == runc) {
                code = code_of(status);
                goto fail; /* runc wrote why on T */
            }
        }
    }
    close(ls);
    ls = -1;
    (void)unlink(sock);
    while (waitpid(runc, &status, 0) < 0 && errno == EINTR) {
    }
    if (code_of(status) != 0) {
        code = code_of(status);
        goto fail;
    }
    {
        int fd = open(pidfile, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
        if (fd >= 0)
            close(fd);
        pid = 0;
        for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
            pid = pid * 10 + (buf[i] - '0');
        if (pid <= 0) {
            put_str(2, "exec: runc wrote no pid file\r\n");
            goto fail;
        }
        (void)unlink(pidfile);
        (void)rmdir(dir);
    }
    copy_size(0, master);
    /* the master never blocks the relay: input the container's process does not read waits
     * in `in` (and, once that is full, in T: the caller's side), while output keeps flowing */
    {
        int fl = fcntl(master, F_GETFL);
        if (fl >= 0)
            (void)fcntl(master, F_SETFL, fl | O_NONBLOCK);
    }

    /* the relay, until the process ended and its terminal's output is drained */
    while (out_open) {
        struct pollfd p[3] = {{.fd = master, .events = POLLIN | (in_n ? POLLOUT : 0)},
                              {.fd = sfd, .events = POLLIN},
                              {.fd = in_open && in_n < sizeof(in) ? 0 : -1, .events = POLLIN}};
        int n = poll(p, 3, done ? DRAIN_MS : -1);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = read(master, buf, sizeof(buf));
            if (r > 0)
                put_all(1, buf, (size_t)r);
            else if (r == 0 || (errno != EINTR && errno != EAGAIN))
                out_open = false; /* EIO: no one in the container holds the terminal */
        }
        if (in_n && (p[0].revents & POLLOUT)) {
            ssize_t w = write(master, in, in_n);
            if (w > 0) {
                memmove(in, in + w, in_n - (size_t)w);
                in_n -= (size_t)w;
            } else if (w < 0 && errno != EINTR && errno != EAGAIN) {
                in_n = 0; /* the terminal went: what was typed has no reader */
                in_open = false;
            }
        }
        if (p[2].revents & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t r = read(0, in + in_n, sizeof(in) - in_n);
            if (r > 0)
                in_n += (size_t)r;
            else if (r == 0 || (errno != EINTR && errno != EAGAIN))
                in_open = false;
        }
        if (p[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof(si)) == sizeof(si) && si.ssi_signo == SIGWINCH)
                copy_size(0, master);
            for (;;) { /* the process, and any orphan of it re-parented to us */
                pid_t w = waitpid(-1, &status, WNOHANG);
                if (w <= 0)
                    break;
                if (w == pid) {
                    code = code_of(status);
                    done = true;
                }
            }
        }
    }
    while (!done) {
        pid_t w = waitpid(-1, &status, 0);
        if (w < 0 && errno != EINTR)
            break;
        if (w == pid) {
            code = code_of(status);
            done = true;
        }
    }
    _exit(code);
fail:
    (void)unlink(sock);
    (void)unlink(pidfile);
    (void)rmdir(dir);
    _exit(code);
}

int fatia_oci_console_exec(const char *const *prefix, const char *id, char *const *cmd, int tty,
                           pid_t *ret_pid, char *why, size_t why_n)
{
    char dir[] = "/tmp/fatia-tty-XXXXXX", sock[64], pidfile[64];
    char *argv[RUNC_MAX_ARGS];
    size_t n = 0;
    pid_t pid;

    for (size_t i = 0; prefix[i]; i++) {
        if (n >= RUNC_MAX_ARGS - 9)
            return -E2BIG;
        argv[n++] = (char *)prefix[i];
    }
    if (!mkdtemp(dir)) {
        int r = -errno;
        snprintf(why, why_n, "exec: cannot make a directory for the console socket: %s",
                 fatia_strerror(r));
        return r;
    }
    snprintf(sock, sizeof(sock), "%s/console.sock", dir);
    snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
    argv[n++] = (char *)"--detach";
    argv[n++] = (char *)"--tty";
    argv[n++] = (char *)"--console-socket";
    argv[n++] = sock;
    argv[n++] = (char *)"--pid-file";
    argv[n++] = pidfile;
    argv[n++] = (char *)id;
    for (size_t i = 0; cmd[i]; i++) {
        if (n >= RUNC_MAX_ARGS - 1) {
            (void)rmdir(dir);
            snprintf(why, why_n, "at most %d arguments", RUNC_MAX_ARGS - 1 - 10);
            return -E2BIG;
        }
        argv[n++] = cmd[i];
    }
    argv[n] = NULL;
    pid = fork();
    if (pid < 0) {
        int r = -errno;
        (void)rmdir(dir);
        snprintf(why, why_n, "exec: fork: %s", fatia_strerror(r));
        return r;
    }
    if (pid == 0)
        relay(tty, dir, sock, pidfile, argv);
    *ret_pid = pid;
    return 0;
}

/* ---- runc create with terminal: true (the shim's side: attach -t) ---- */

int fatia_oci_console_listen(struct fatia_oci_console *cs)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int r;

    snprintf(cs->dir, sizeof(cs->dir), "/tmp/fatia-tty-XXXXXX");
    cs->ls = -1;
    if (!mkdtemp(cs->dir))
        return -errno;
    snprintf(cs->sock, sizeof(cs->sock), "%s/console.sock", cs->dir);
    memcpy(sa.sun_path, cs->sock, strlen(cs->sock) + 1);
    cs->ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (cs->ls < 0 || bind(cs->ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        listen(cs->ls, 1) < 0) {
        r = -errno;
        fatia_oci_console_close(cs);
        return r;
    }
    return 0;
}

int fatia_oci_console_take(struct fatia_oci_console *cs)
{
    struct pollfd p = {.fd = cs->ls, .events = POLLIN};
    int c, fd;

    /* runc create connected and sent the master before it exited: it is queued */
    if (poll(&p, 1, 1000) <= 0)
        return -ETIMEDOUT;
    c = accept4(cs->ls, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return -errno;
    {
        int fl = fcntl(c, F_GETFL);
        if (fl >= 0)
            (void)fcntl(c, F_SETFL, fl & ~O_NONBLOCK);
    }
    fd = recv_fd(c);
    close(c);
    return fd >= 0 ? fd : -EPROTO;
}

void fatia_oci_console_close(struct fatia_oci_console *cs)
{
    if (cs->ls >= 0)
        close(cs->ls);
    cs->ls = -1;
    if (cs->sock[0])
        (void)unlink(cs->sock);
    (void)rmdir(cs->dir);
}
