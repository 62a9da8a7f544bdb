/*
 * agent/imguser.h: a container's user "user[:group]" (an image's User, or the ids of its
 * securityContext) resolved against the image's own /etc/passwd and /etc/group, as runc's
 * libcontainer/user GetExecUser does. Pure: the files' text comes in (oci_pod.c reads them inside
 * the image's rootfs, never the host's).
 */
#ifndef FATIA_AGENT_IMGUSER_H
#define FATIA_AGENT_IMGUSER_H

#include <stddef.h>
#include <stdint.h>

#define FATIA_IMGUSER_MAX_GROUPS 32

/* The image's account files (NULL: the image has none). */
struct fatia_imguser_files {
    const char *passwd, *group;
};

struct fatia_imguser {
    uint32_t uid, gid;
    size_t n_groups; /* supplementary groups: the groups that list the user by name */
    uint32_t groups[FATIA_IMGUSER_MAX_GROUPS];
    char home[256]; /* the passwd entry's home directory (absolute), "" without one */
};

/* Resolves spec ("", "name", "uid", "name:group", "uid:gid", ...) against files:
 *   - the user: a number is that uid (its passwd entry, if any, gives the gid); a name must be
 *     in passwd; "" is uid 0;
 *   - the group: a number is that gid; a name must be in group; none: the passwd entry's gid
 *     (0 without one), and the user's supplementary groups (group entries listing its name);
 *   - ids are at most max_id (the container's range) where given by number or by the files;
 *   - home: the matched passwd entry's directory when it is absolute (runc sets HOME from it
 *     when the environment has none).
 * 0; -EINVAL for a name without an entry (runc's words: "unable to find user NAME: no matching
 * entries in passwd file") or a spec too long, -ERANGE for an id out of 0..max_id; with why. */
int fatia_oci_imguser_resolve(const char *spec, const struct fatia_imguser_files *files,
                              uint32_t max_id, struct fatia_imguser *ret, char *why, size_t why_n);

#endif
