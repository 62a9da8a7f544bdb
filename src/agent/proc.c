/*
 * agent/proc.c: /proc facts and pid-reuse-safe signals (see proc.h).
 *
 * /proc/PID/stat is "pid (comm) state ppid pgrp session ... starttime ..."; comm may hold spaces
 * and parentheses, so the fields are counted from the last ')'. The start time is field 22.
 *
 * Rejected: kill(pid, sig) after a start-time check. Between the check and the kill the process
 * can exit and its pid be given to another process; a pidfd pins the process the check saw.
 */
#include "base/compat.h"

#include "agent/proc.h"

#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "base/error.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

static int read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t len;

    if (fd < 0)
        return -errno;
    len = read(fd, buf, n - 1);
    if (len < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    close(fd);
    buf[len] = '\0';
    return (int)len;
}

int fatia_proc_stat(pid_t pid, struct fatia_proc_stat *ret)
{
    char path[64], buf[1024], *p, *end;
    struct fatia_proc_stat st = {0};
    unsigned long long v[20];
    int r;

    if (pid <= 0)
        return -ESRCH;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    r = read_small(path, buf, sizeof(buf));
    if (r < 0)
        return r == -ENOENT ? -ESRCH : r;
    p = strrchr(buf, ')');
    if (!p || p[1] != ' ' || !p[2])
        return -EPROTO;
    st.state = p[2];
    p += 3;
    /* fields 4 .. 22: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime
     * stime cutime cstime priority nice threads itrealvalue starttime */
    for (int i = 0; i < 19; i++) {
        errno = 0;
        if (*p == '-') {
            (void)strtoll(p, &end, 10);
            v[i] = 0;
        } else {
            v[i] = strtoull(p, &end, 10);
        }
        if (end == p || errno)
            return -EPROTO;
        p = end;
        while (*p == ' ')
            p++;
    }
    st.ppid = (pid_t)v[0];
    st.pgrp = (pid_t)v[1];
    st.session = (pid_t)v[2];
    st.start = v[18];
    *ret = st;
    return 0;
}

int fatia_proc_start_time(pid_t pid, uint64_t *ret_start)
{
    struct fatia_proc_stat st;
    int r = fatia_proc_stat(pid, &st);

    if (r < 0)
        return r;
    *ret_start = st.start;
    return 0;
}

bool fatia_proc_alive(pid_t pid, uint64_t start)
{
    struct fatia_proc_stat st;

    if (fatia_proc_stat(pid, &st) < 0 || st.state == 'Z' || st.state == 'X')
        return false;
    return start == 0 || st.start == start;
}

int fatia_proc_signal(pid_t pid, uint64_t start, int sig)
{
    int fd, r = 0;

    if (pid <= 0)
        return -ESRCH;
    fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0) {
        if (errno != ENOSYS)
            return errno == ESRCH ? -ESRCH : -errno;
        /* Kernels before 5.3: check, then kill (the window cannot be closed there). */
        if (!fatia_proc_alive(pid, start))
            return -ESRCH;
        return kill(pid, sig) < 0 ? -errno : 0;
    }
    if (!fatia_proc_alive(pid, start))
        r = -ESRCH;
    else if (syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0) < 0)
        r = -errno;
    close(fd);
    return r;
}

/* Counts (send: false, stops at the first) or signals (send: true) the live processes of group
 * pgrp in session sid started at or after min_start. */
static int scan_group(pid_t pgrp, pid_t sid, uint64_t min_start, int sig, bool send)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    int n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        struct fatia_proc_stat st;
        char *end;
        long pid = strtol(e->d_name, &end, 10);

        if (*end || pid <= 0)
            continue;
        if (fatia_proc_stat((pid_t)pid, &st) < 0 || st.pgrp != pgrp || st.session != sid ||
            st.state == 'Z' || st.state == 'X' || st.start < min_start)
            continue;
        if (!send) {
            n++;
            break;
        }
        if (fatia_proc_signal((pid_t)pid, st.start, sig) == 0)
            n++;
    }
    closedir(d);
    return n;
}

bool fatia_proc_group_alive(pid_t pgrp, pid_t sid, uint64_t min_start)
{
    if (pgrp <= 0)
        return false;
    return scan_group(pgrp, sid, min_start, 0, false) > 0;
}

int fatia_proc_group_signal(pid_t pgrp, pid_t sid, uint64_t min_start, int sig)
{
    if (pgrp <= 0)
        return 0;
    return scan_group(pgrp, sid, min_start, sig, true);
}

int fatia_proc_boot_id(char *buf, size_t n)
{
    int r = read_small("/proc/sys/kernel/random/boot_id", buf, n);

    if (r < 0)
        return r;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}
