/*
 * agent/imguser.c: "user[:group]" against an image's /etc/passwd and /etc/group (imguser.h).
 *
 * Model: runc's libcontainer/user GetExecUser, which containerd and CRI-O also follow for an
 * image's User: the user part, when a number, matches the passwd entry of that uid (for its gid)
 * and stands alone without one; when a name, it must match an entry's name. The group part,
 * when given, is the gid it names (a number stands alone, a name must be in /etc/group); when
 * not, the gid is the passwd entry's and the supplementary groups are those of /etc/group that
 * list the matched user's name among their members. The first matching line wins.
 *
 * Invariants: pure (no I/O: the caller reads the files inside the image's rootfs); every id
 * returned is at most max_id; an unknown name is an error, never uid 0. The errors are the
 * runtime's (-EINVAL, -ERANGE: the agent reports CreateContainerError, as kubelet does for
 * runc's "unable to find user"), not the pod's configuration's.
 *
 * Rejected: runc's leniency over a malformed line (a uid field that is not a number reads as 0,
 * so "evil:x:abc:abc" would make root): such lines are skipped; NSS (the host's files or
 * services are never the container's).
 */
#include "base/compat.h"

#include "agent/imguser.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define FIELDS 8

/* Splits one line (no newline) on ':' into at most FIELDS fields of buf; their count. */
static size_t split(const char *line, size_t len, char *buf, size_t buf_n, char **f)
{
    size_t n = 0;

    if (len >= buf_n)
        return 0;
    memcpy(buf, line, len);
    buf[len] = '\0';
    /* runc trims the line's surrounding white space */
    while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t' || buf[len - 1] == '\r'))
        buf[--len] = '\0';
    while (*buf == ' ' || *buf == '\t')
        buf++;
    if (!*buf)
        return 0;
    f[n++] = buf;
    for (char *p = buf; *p && n < FIELDS; p++) {
        if (*p == ':') {
            *p = '\0';
            f[n++] = p + 1;
        }
    }
    return n;
}

/* A decimal id of at most max; false for anything else. */
static bool id_of(const char *s, uint32_t max, uint32_t *ret)
{
    uint64_t v = 0;

    if (!*s)
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max)
            return false;
    }
    *ret = (uint32_t)v;
    return true;
}

typedef bool (*line_fn)(char **f, size_t n, void *ctx);

/* Calls fn on each line of text with its fields; stops when fn returns false. */
static void each_line(const char *text, line_fn fn, void *ctx)
{
    char buf[4096], *f[FIELDS];

    for (const char *p = text; p && *p;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        size_t n = split(p, len, buf, sizeof(buf), f);

        if (n > 0 && !fn(f, n, ctx))
            return;
        p = nl ? nl + 1 : NULL;
    }
}

struct user_q {
    const char *name; /* by name, or NULL */
    uint32_t uid;     /* by uid, when name is NULL */
    bool found;
    char matched[256];
    uint32_t m_uid, m_gid;
    char home[256];
};

static bool user_line(char **f, size_t n, void *ctx)
{
    struct user_q *q = ctx;
    uint32_t uid, gid;

    if (n < 4 || !id_of(f[2], UINT32_MAX - 1, &uid) || !id_of(f[3], UINT32_MAX - 1, &gid))
        return true;
    if (q->name ? strcmp(f[0], q->name) != 0 : uid != q->uid)
        return true;
    q->found = true;
    snprintf(q->matched, sizeof(q->matched), "%s", f[0]);
    q->m_uid = uid;
    q->m_gid = gid;
    if (n >= 6 && f[5][0] == '/' && strlen(f[5]) < sizeof(q->home))
        snprintf(q->home, sizeof(q->home), "%s", f[5]);
    return false;
}

struct group_q {
    const char *name;   /* the group by name, or NULL */
    const char *member; /* else: every group listing this user, or NULL */
    struct fatia_imguser *out;
    uint32_t max;
    bool found;
    uint32_t gid;
};

static bool group_line(char **f, size_t n, void *ctx)
{
    struct group_q *q = ctx;
    uint32_t gid;

    if (n < 3 || !id_of(f[2], UINT32_MAX - 1, &gid))
        return true;
    if (q->name) {
        if (strcmp(f[0], q->name))
            return true;
        q->found = true;
        q->gid = gid;
        return false;
    }
    if (n < 4 || gid > q->max)
        return true; /* a supplementary group outside the container's range cannot be set */
    for (char *m = f[3]; *m;) {
        size_t l = strcspn(m, ",");
        if (l == strlen(q->member) && !strncmp(m, q->member, l)) {
            bool dup = false;
            for (size_t i = 0; i < q->out->n_groups; i++)
                dup = dup || q->out->groups[i] == gid;
            if (!dup && q->out->n_groups < FATIA_IMGUSER_MAX_GROUPS)
                q->out->groups[q->out->n_groups++] = gid;
            break;
        }
        m += l + (m[l] == ',');
    }
    return true;
}

int fatia_oci_imguser_resolve(const char *spec, const struct fatia_imguser_files *files,
                              uint32_t max_id, struct fatia_imguser *ret, char *why, size_t why_n)
{
    const char *colon = strchr(spec ? spec : "", ':');
    char user[256], group[256];
    struct user_q uq = {0};
    bool by_uid;

    memset(ret, 0, sizeof(*ret));
    spec = spec ? spec : "";
    snprintf(user, sizeof(user), "%.*s", (int)(colon ? (size_t)(colon - spec) : strlen(spec)),
             spec);
    snprintf(group, sizeof(group), "%s", colon ? colon + 1 : "");
    if (strlen(spec) > 250) {
        snprintf(why, why_n, "user '%.60s...': too long", spec);
        return -EINVAL;
    }
    by_uid = !user[0] || id_of(user, UINT32_MAX - 1, &uq.uid);
    if (!user[0])
        uq.uid = 0;
    else if (!by_uid)
        uq.name = user;
    if (by_uid && uq.uid > max_id) {
        snprintf(why, why_n, "user '%s': uid %u is out of 0..%u", spec, uq.uid, max_id);
        return -ERANGE;
    }
    if (files && files->passwd)
        each_line(files->passwd, user_line, &uq);
    if (uq.found) {
        if (uq.m_uid > max_id || uq.m_gid > max_id) {
            snprintf(why, why_n, "user '%s': the image's /etc/passwd gives %u:%u, out of 0..%u",
                     spec, uq.m_uid, uq.m_gid, max_id);
            return -ERANGE;
        }
        ret->uid = uq.m_uid;
        ret->gid = uq.m_gid;
        snprintf(ret->home, sizeof(ret->home), "%s", uq.home);
    } else if (!by_uid) {
        snprintf(why, why_n, "unable to find user %s: no matching entries in passwd file%s", user,
                 files && files->passwd ? "" : " (the image has no /etc/passwd)");
        return -EINVAL;
    } else {
        ret->uid = uq.uid;
    }
    if (group[0]) {
        struct group_q gq = {.name = group, .max = max_id, .out = ret};
        uint32_t gid;

        if (id_of(group, UINT32_MAX - 1, &gid)) {
            gq.found = true;
            gq.gid = gid;
        } else if (files && files->group) {
            each_line(files->group, group_line, &gq);
        }
        if (!gq.found) {
            snprintf(why, why_n, "unable to find group %s: no matching entries in group file%s",
                     group, files && files->group ? "" : " (the image has no /etc/group)");
            return -EINVAL;
        }
        if (gq.gid > max_id) {
            snprintf(why, why_n, "user '%s': gid %u is out of 0..%u", spec, gq.gid, max_id);
            return -ERANGE;
        }
        ret->gid = gq.gid;
    } else if (uq.found && files && files->group) {
        struct group_q gq = {.member = uq.matched, .max = max_id, .out = ret};
        each_line(files->group, group_line, &gq);
    }
    return 0;
}
