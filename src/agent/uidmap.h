/*
 * agent/uidmap.h: the unprivileged uid (and gid) each namespace's pods run as (DESIGN §7).
 *
 * Two sources: a file the administrator writes ("NAMESPACE UID[:GID]" per line, '#' comments),
 * and, for namespaces it does not list, uids given out from a range (base, base + count) and
 * recorded durably in the agent's state file, so that a namespace keeps its uid across restarts
 * and two namespaces never share one. The gid is the uid unless the file says otherwise.
 */
#ifndef FATIA_AGENT_UIDMAP_H
#define FATIA_AGENT_UIDMAP_H

#include <stddef.h>
#include <stdint.h>

struct fatia_uidmap_entry {
    char *ns;
    uint32_t uid, gid;
};

struct fatia_uidmap {
    struct fatia_uidmap_entry *v;
    size_t n, cap, n_fixed;
    char state_path[4096];
    uint32_t base, count;
};

#define FATIA_UIDMAP_DEFAULT_BASE  200000u
#define FATIA_UIDMAP_DEFAULT_COUNT 65536u

/* Reads map_file (NULL: none) and state_file (created when a uid is first given). 0,
 * -FATIA_E_PARSE (why names the file and line), -errno. */
int fatia_uidmap_load(struct fatia_uidmap *m, const char *map_file, const char *state_file,
                      uint32_t base, uint32_t count, char *why, size_t why_n);

/* The uid and gid of namespace ns, giving one out (and recording it, with fsync) when needed.
 * 0, -ENOSPC (the range is used up), -errno. */
int fatia_uidmap_get(struct fatia_uidmap *m, const char *ns, uint32_t *ret_uid, uint32_t *ret_gid);

void fatia_uidmap_release(struct fatia_uidmap *m);

#endif
