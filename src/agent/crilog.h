/*
 * agent/crilog.h: container log files in the CRI format kubelet and containerd use.
 *
 * One file per container instance (attempt), one line per chunk of output:
 *
 *     2026-11-29T15:19:57.123456Z stdout F the text of one line
 *     2026-11-29T15:19:57.123460Z stderr P the first 16 KiB of a longer line
 *
 * "F" ends a line; "P" is part of one that continues on the next entry of the same stream. The
 * timestamp is the moment the supervisor read the bytes, so `kubectl logs --timestamps` and
 * `--since` work. The supervisor (shim.c) writes with fatia_crilog_*; the log provider (logs.c)
 * reads with fatia_crilog_parse.
 *
 * Size bound: when a file would pass max_bytes it is renamed to PATH.1 (replacing an older one)
 * and a new PATH begins, so one instance never holds more than 2 x max_bytes on disk. Readers
 * read PATH.1, then PATH.
 */
#ifndef FATIA_AGENT_CRILOG_H
#define FATIA_AGENT_CRILOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

/* The longest entry written: longer lines are cut into "P" entries of this size. */
#define FATIA_CRILOG_MAX_LINE 16384

struct fatia_crilog {
    int fd;             /* -1 when closed */
    uint64_t size;      /* bytes in the current file */
    uint64_t max_bytes; /* rotate beyond this; 0: never */
    char path[4096];
};

/* Opens (appending) or creates path. 0 or -errno. */
int fatia_crilog_open(struct fatia_crilog *l, const char *path, uint64_t max_bytes);

/* Writes one entry (one write(2)): msg must not hold '\n'. stream is "stdout" or "stderr". 0 or
 * -errno. */
int fatia_crilog_write(struct fatia_crilog *l, fatia_usec_t t, const char *stream, const char *msg,
                       size_t n, bool partial);

void fatia_crilog_close(struct fatia_crilog *l);

/* Splits a byte stream into entries: complete lines become "F" entries, a line that fills the
 * buffer a "P" entry. */
struct fatia_linebuf {
    size_t len;
    char buf[FATIA_CRILOG_MAX_LINE];
};

/* Feeds n bytes read from stream at time t into lb, writing the entries that complete. */
int fatia_linebuf_feed(struct fatia_linebuf *lb, struct fatia_crilog *l, const char *stream,
                       fatia_usec_t t, const char *data, size_t n);

/* Writes what is left (a last line without '\n') as a "P" entry. */
int fatia_linebuf_flush(struct fatia_linebuf *lb, struct fatia_crilog *l, const char *stream,
                        fatia_usec_t t);

/* One parsed entry; pointers into the caller's line. */
struct fatia_crilog_entry {
    fatia_usec_t t;
    const char *ts; /* the timestamp text */
    size_t ts_len;
    bool is_stderr;
    bool partial;
    const char *msg;
    size_t msg_len;
};

/* Parses one line (without its '\n'). 0 or -FATIA_E_PARSE. */
int fatia_crilog_parse(const char *line, size_t n, struct fatia_crilog_entry *ret);

#endif
