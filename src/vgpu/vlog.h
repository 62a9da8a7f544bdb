/*
 * vgpu/vlog.h: the interposer's own logging, silent unless FATIA_VGPU_LOG asks.
 *
 * The library runs inside arbitrary programs whose stdout and stderr may be parsed (nvidia-smi's
 * CSV output, a server's JSON logs), so it writes nothing by default. When asked, each message is
 * one line, "fatia-vgpu[<pid>]: <level>: <text>", written with a single write(2) to stderr or to
 * FATIA_VGPU_LOG_FILE (opened O_APPEND, so several processes can share it). No stdio, no
 * allocation: it is safe from any hook.
 */
#ifndef FATIA_VGPU_VLOG_H
#define FATIA_VGPU_VLOG_H

#include "vgpu/config.h"

/* Sets the level and the destination (NULL or "": stderr). The path is copied. */
void fatia_vgpu_log_setup(enum fatia_vgpu_log_level level, const char *path);

enum fatia_vgpu_log_level fatia_vgpu_log_level(void);

void fatia_vgpu_log(enum fatia_vgpu_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define VLOG(level, ...)                                            \
    do {                                                            \
        if (__builtin_expect(fatia_vgpu_log_level() >= (level), 0)) \
            fatia_vgpu_log((level), __VA_ARGS__);                   \
    } while (0)

#endif
