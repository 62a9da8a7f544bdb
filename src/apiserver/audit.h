/*
 * apiserver/audit.h: the audit log (audit.c): one audit.k8s.io/v1 Event per HTTP write, JSON
 * lines at kube-apiserver's Metadata level, rotated by size.
 */
#ifndef FATIA_APISERVER_AUDIT_H
#define FATIA_APISERVER_AUDIT_H

#include <jansson.h>
#include <stdint.h>

#define FATIA_AUDIT_DEFAULT_MAX_BYTES (100ull << 20) /* kube-apiserver's --audit-log-maxsize 100 */
#define FATIA_AUDIT_DEFAULT_KEEP      5              /* rotated files kept: FILE.1 .. FILE.5 */

struct fatia_audit;

/* Opens (appends to, creating 0600) the log at path. max_bytes 0 and keep 0: the defaults.
 * 0, -ENOMEM, -errno. */
int fatia_audit_open(const char *path, uint64_t max_bytes, unsigned keep, struct fatia_audit **ret);
void fatia_audit_free(struct fatia_audit *a);

/* Appends one event as a JSON line, rotating first when the line would take the file past its
 * size. 0 or the write's error (reported once; the line is dropped). */
int fatia_audit_write(struct fatia_audit *a, const json_t *event);

#endif
