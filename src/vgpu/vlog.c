/*
 * vgpu/vlog.c: one-line log messages for the interposer (see vlog.h).
 *
 * The destination file is opened on the first message, not at set-up, so that a process that
 * never logs never creates it. Rejected: stdio (its buffers and locks are not safe in every hook,
 * and a FILE shared with the program would interleave with its output).
 */
#include "base/compat.h"

#include "vgpu/vlog.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <unistd.h>

static _Atomic int log_level = FATIA_VGPU_LOG_OFF;
static _Atomic int log_fd = -1;
static char log_path[FATIA_VGPU_PATH_MAX];

void fatia_vgpu_log_setup(enum fatia_vgpu_log_level level, const char *path)
{
    size_t n = path ? strlen(path) : 0;

    if (n >= sizeof(log_path))
        n = 0;
    memcpy(log_path, path ? path : "", n);
    log_path[n] = '\0';
    atomic_store(&log_level, (int)level);
}

enum fatia_vgpu_log_level fatia_vgpu_log_level(void)
{
    return (enum fatia_vgpu_log_level)atomic_load_explicit(&log_level, memory_order_relaxed);
}

static int destination(void)
{
    int fd = atomic_load(&log_fd);
    int expected = -1;

    if (fd >= 0)
        return fd;
    if (!log_path[0])
        return 2;
    fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return 2;
    if (!atomic_compare_exchange_strong(&log_fd, &expected, fd)) {
        close(fd);
        return expected;
    }
    return fd;
}

void fatia_vgpu_log(enum fatia_vgpu_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"off", "error", "warning", "info", "debug"};
    char line[512];
    va_list ap;
    int n, m;

    if (level <= FATIA_VGPU_LOG_OFF || level > fatia_vgpu_log_level())
        return;
    n = snprintf(line, sizeof(line), "fatia-vgpu[%d]: %s: ", (int)getpid(), names[level]);
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    n += m;
    if ((size_t)n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    (void)!write(destination(), line, (size_t)n);
}
