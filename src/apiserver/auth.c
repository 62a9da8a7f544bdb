/*
 * apiserver/auth.c: the tokens file, authorization and kubeconfig files (see auth.h).
 *
 * Authorization is authz.c's (RBAC, with a token's NAMESPACES and ACCESS as bindings); this
 * file only reads the tokens.
 *
 * A parsed file is one struct fatia_auth generation: the tokens own their strings and the users
 * point into them. A reload builds a new generation and swaps it in whole, so a lookup never sees
 * half a file. Token comparison goes through a hash map keyed by the token; the map compares
 * whole strings only after the hash matched, which leaks no more than the hash of a guess.
 *
 * Expiry is checked at every lookup (an expired token is as unknown: 401). Revocation rewrites
 * the file without the revoked lines (a new file renamed over the old one, under the old one's
 * lock; writers that waited for that lock notice the rename and open the new file), and the
 * server sees it within a second, as any change. Choices rejected: a revocation list beside the
 * tokens (two files to keep consistent, and a revoked secret left on disk); truncating in place
 * (a crash in the middle would lose the admin's token).
 */
#include "base/compat.h"

#include "apiserver/auth.h"

#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "base/map.h"
#include "base/vec.h"
#include "model/doc.h"
#include "model/labels.h"

const struct fatia_user fatia_user_system = {
    .name = "system:fatiad",
    .groups = (const char *const[]){FATIA_GROUP_ADMIN, NULL},
};

struct token {
    char *token;
    const char *id;       /* "id=" field, or NULL; into line_copy */
    fatia_usec_t expires; /* "expires=" field (real time), 0 = never */
    char *line_copy;      /* owns the strings of user */
    struct fatia_user user;
    char **groups;     /* NULL-terminated, into line_copy */
    char **namespaces; /* NULL-terminated or NULL for "*" */
};

struct tokenset {
    FATIA_VEC(struct token) v;
    struct fatia_strmap map; /* token -> struct token* (keys borrowed from v) */
};

struct fatia_auth {
    char *path;
    struct tokenset *set;
    struct timespec mtime;
    off_t size;
    ino_t ino;
    fatia_usec_t checked_at;
};

bool fatia_user_is_admin(const struct fatia_user *u)
{
    return fatia_user_in_group(u, FATIA_GROUP_ADMIN);
}

static void tokenset_free(struct tokenset *ts)
{
    if (!ts)
        return;
    for (size_t i = 0; i < ts->v.n; i++) {
        fatia_free(ts->v.v[i].line_copy);
        fatia_free(ts->v.v[i].groups);
        fatia_free(ts->v.v[i].namespaces);
    }
    FATIA_VEC_RELEASE(&ts->v);
    fatia_strmap_release(&ts->map);
    fatia_free(ts);
}

/* Splits s in place at commas into a NULL-terminated array. */
static char **split_commas(char *s)
{
    size_t n = 1;
    char **v, *p;

    for (p = s; *p; p++)
        n += *p == ',';
    v = fatia_calloc(n + 1, sizeof(*v));
    if (!v)
        return NULL;
    n = 0;
    for (p = s;;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        if (*p)
            v[n++] = p;
        if (!c)
            break;
        p = c + 1;
    }
    return v;
}

static int parse_line(char *line, struct token *t, char *why, size_t why_n)
{
    char *f[9];
    size_t n = 0;
    char *p = line;

    while (n < 9) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        f[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
        if (*p)
            *p++ = '\0';
    }
    if (n < 5 || n > 7 || *p) {
        snprintf(why, why_n,
                 "expected 5 fields (TOKEN USER GROUPS NAMESPACES ACCESS) and optional id= and "
                 "expires=, got %zu",
                 n);
        return -FATIA_E_PARSE;
    }
    if (strlen(f[0]) < 16) {
        snprintf(why, why_n, "token too short (at least 16 characters)");
        return -FATIA_E_PARSE;
    }
    if (strcmp(f[4], "rw") && strcmp(f[4], "ro")) {
        snprintf(why, why_n, "access must be rw or ro, not '%s'", f[4]);
        return -FATIA_E_PARSE;
    }
    for (size_t i = 5; i < n; i++) {
        if (!strncmp(f[i], "id=", 3) && f[i][3] && !t->id) {
            t->id = f[i] + 3;
        } else if (!strncmp(f[i], "expires=", 8) && !t->expires) {
            if (fatia_time_parse_rfc3339(f[i] + 8, &t->expires) < 0 || t->expires <= 0) {
                snprintf(why, why_n, "expires: not an RFC 3339 time: '%s'", f[i] + 8);
                return -FATIA_E_PARSE;
            }
        } else {
            snprintf(why, why_n, "field %zu: expected id=ID or expires=TIME, not '%s'", i + 1,
                     f[i]);
            return -FATIA_E_PARSE;
        }
    }
    t->token = f[0];
    t->user.name = f[1];
    t->user.read_only = !strcmp(f[4], "ro");
    t->groups = strcmp(f[2], "-") ? split_commas(f[2]) : fatia_calloc(1, sizeof(char *));
    t->namespaces = strcmp(f[3], "*") ? split_commas(f[3]) : NULL;
    if (!t->groups || (strcmp(f[3], "*") && !t->namespaces))
        return -ENOMEM;
    t->user.groups = (const char *const *)t->groups;
    t->user.namespaces = (const char *const *)t->namespaces;
    return 0;
}

static int tokenset_parse(const char *text, size_t len, struct tokenset **ret, char *why,
                          size_t why_n)
{
    struct tokenset *ts = fatia_calloc(1, sizeof(*ts));
    const char *p = text, *end = text + len;
    unsigned lineno = 0;
    int r = 0;

    if (!ts)
        return -ENOMEM;
    fatia_strmap_init(&ts->map);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        struct token t = {0};
        char *line, *s;
        char lwhy[200];

        lineno++;
        line = fatia_strndup(p, n);
        p += n + (nl ? 1 : 0);
        if (!line) {
            r = -ENOMEM;
            goto out_free;
        }
        if (memchr(line, '\0', n) || strchr(line, '\r')) {
            /* NUL bytes or CRLF: strip a trailing CR, refuse the rest */
            s = strchr(line, '\r');
            if (s && s[1] == '\0')
                *s = '\0';
        }
        for (s = line; *s == ' ' || *s == '\t'; s++)
            ;
        if (!*s || *s == '#') {
            fatia_free(line);
            continue;
        }
        t.line_copy = line;
        r = parse_line(s, &t, lwhy, sizeof(lwhy));
        if (r == 0 && FATIA_VEC_PUSH(&ts->v, t) < 0)
            r = -ENOMEM;
        if (r < 0) {
            fatia_free(t.line_copy);
            fatia_free(t.groups);
            fatia_free(t.namespaces);
            if (r == -FATIA_E_PARSE)
                snprintf(why, why_n, "line %u: %s", lineno, lwhy);
            goto out_free;
        }
    }
    for (size_t i = 0; i < ts->v.n; i++) {
        if (fatia_strmap_has(&ts->map, ts->v.v[i].token)) {
            snprintf(why, why_n, "token of user '%s' is listed twice", ts->v.v[i].user.name);
            r = -FATIA_E_PARSE;
            goto out_free;
        }
        if (fatia_strmap_put(&ts->map, ts->v.v[i].token, &ts->v.v[i]) < 0) {
            r = -ENOMEM;
            goto out_free;
        }
    }
    *ret = ts;
    return 0;

out_free:
    tokenset_free(ts);
    return r;
}

static int read_file(const char *path, char **ret, size_t *ret_len, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct fatia_buf b = FATIA_BUF_INIT;
    char chunk[4096];
    ssize_t n;

    if (fd < 0)
        return -errno;
    if (fstat(fd, st) < 0) {
        int e = -errno;
        close(fd);
        return e;
    }
    fatia_buf_init(&b, 16 << 20);
    while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
        if (fatia_buf_append(&b, chunk, (size_t)n) < 0) {
            close(fd);
            fatia_buf_release(&b);
            return -FATIA_E_LIMIT;
        }
    }
    close(fd);
    if (n < 0) {
        fatia_buf_release(&b);
        return -errno;
    }
    *ret_len = b.len;
    *ret = fatia_buf_steal(&b);
    return *ret ? 0 : -ENOMEM;
}

static int load(struct fatia_auth *a, char *why, size_t why_n)
{
    struct tokenset *ts = NULL;
    struct stat st;
    size_t len = 0;
    char *text;
    int r;

    r = read_file(a->path, &text, &len, &st);
    if (r < 0) {
        snprintf(why, why_n, "cannot read: %s", fatia_strerror(r));
        return r;
    }
    r = tokenset_parse(text, len, &ts, why, why_n);
    fatia_free(text);
    if (r < 0)
        return r;
    tokenset_free(a->set);
    a->set = ts;
    a->mtime = st.st_mtim;
    a->size = st.st_size;
    a->ino = st.st_ino;
    return 0;
}

int fatia_auth_open(const char *path, struct fatia_auth **ret, char *why, size_t why_n)
{
    struct fatia_auth *a = fatia_calloc(1, sizeof(*a));
    int r;

    if (!a)
        return -ENOMEM;
    a->path = fatia_strdup(path);
    if (!a->path) {
        fatia_free(a);
        return -ENOMEM;
    }
    r = load(a, why, why_n);
    if (r < 0) {
        fatia_auth_free(a);
        return r;
    }
    a->checked_at = fatia_now_mono_usec();
    *ret = a;
    return 0;
}

int fatia_auth_parse(const char *text, size_t n, struct fatia_auth **ret, char *why, size_t why_n)
{
    struct fatia_auth *a = fatia_calloc(1, sizeof(*a));
    int r;

    if (!a)
        return -ENOMEM;
    r = tokenset_parse(text, n, &a->set, why, why_n);
    if (r < 0) {
        fatia_free(a);
        return r;
    }
    *ret = a;
    return 0;
}

void fatia_auth_free(struct fatia_auth *a)
{
    if (!a)
        return;
    tokenset_free(a->set);
    fatia_free(a->path);
    fatia_free(a);
}

/* Re-reads the file if it changed. force: check now (a token was not found: it may have just
 * been added); otherwise at most once a second (to notice revocations). */
static void maybe_reload(struct fatia_auth *a, bool force)
{
    fatia_usec_t now;
    struct stat st;
    char why[256];
    int r;

    if (!a->path)
        return;
    now = fatia_now_mono_usec();
    if (!force && now - a->checked_at < FATIA_USEC_PER_SEC)
        return;
    a->checked_at = now;
    if (stat(a->path, &st) < 0)
        return;
    if (st.st_mtim.tv_sec == a->mtime.tv_sec && st.st_mtim.tv_nsec == a->mtime.tv_nsec &&
        st.st_size == a->size && st.st_ino == a->ino)
        return;
    r = load(a, why, sizeof(why));
    if (r < 0)
        fatia_warn("tokens file '%s': %s, keeping the previous tokens", a->path, why);
    else
        fatia_info("tokens file '%s' reloaded: %zu tokens", a->path, a->set->v.n);
}

const struct fatia_user *fatia_auth_lookup(struct fatia_auth *a, const char *token)
{
    struct token *t;

    maybe_reload(a, false);
    t = fatia_strmap_get(&a->set->map, token);
    if (!t) {
        maybe_reload(a, true);
        t = fatia_strmap_get(&a->set->map, token);
    }
    if (t && t->expires && fatia_now_real_usec() >= t->expires)
        return NULL; /* expired: as unknown (401), as kube-apiserver answers an expired token */
    return t ? &t->user : NULL;
}

const char *fatia_auth_token_of(struct fatia_auth *a, const char *user)
{
    for (size_t i = 0; i < a->set->v.n; i++)
        if (!strcmp(a->set->v.v[i].user.name, user))
            return a->set->v.v[i].token;
    return NULL;
}

int fatia_token_generate(char out[FATIA_TOKEN_LEN + 1])
{
    unsigned char raw[FATIA_TOKEN_LEN / 2];
    size_t got = 0;

    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(out + 2 * i, 3, "%02x", raw[i]);
    return 0;
}

static bool valid_user(const char *s)
{
    if (!*s || strlen(s) > 253)
        return false;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == ',' || *s == '#' || *s == 0x7f)
            return false;
    return true;
}

int fatia_token_id_generate(char out[FATIA_TOKEN_ID_LEN + 1])
{
    char full[FATIA_TOKEN_LEN + 1];
    int r = fatia_token_generate(full);

    if (r < 0)
        return r;
    memcpy(out, full, FATIA_TOKEN_ID_LEN);
    out[FATIA_TOKEN_ID_LEN] = '\0';
    return 0;
}

/* Opens the tokens file (created 0600 if absent) locked exclusively. A revocation replaces the
 * file by rename under the lock of the old one, so a writer that got the lock of a file that is
 * no longer at path opens it again. The fd, or -errno. */
static int open_locked(const char *path)
{
    for (int tries = 0; tries < 100; tries++) {
        struct stat a, b;
        int fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        if (flock(fd, LOCK_EX) < 0 || fstat(fd, &a) < 0) {
            int e = -errno;
            close(fd);
            return e;
        }
        if (stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            return fd;
        close(fd);
    }
    return -EAGAIN;
}

int fatia_tokens_add(const char *path, const struct fatia_token_spec *t)
{
    struct fatia_buf line = FATIA_BUF_INIT;
    const char *const *groups = t->groups, *const *namespaces = t->namespaces;
    char when[40];
    int fd, r = 0;

    if (!valid_user(t->user) || strlen(t->token) < 16 || strpbrk(t->token, " \t\n#") ||
        (t->id && (!*t->id || strpbrk(t->id, " \t\n#"))))
        return -EINVAL;
    for (const char *const *g = groups; g && *g; g++)
        if (!valid_user(*g))
            return -EINVAL;
    for (const char *const *n = namespaces; n && *n; n++)
        if (strcmp(*n, "*") && strcmp(*n, "-") && !fatia_is_dns1123_label(*n, NULL, 0))
            return -EINVAL;
    r = fatia_buf_printf(&line, "%s %s ", t->token, t->user);
    for (const char *const *g = groups; r == 0 && g && *g; g++)
        r = fatia_buf_printf(&line, "%s%s", g == groups ? "" : ",", *g);
    if (r == 0 && (!groups || !*groups))
        r = fatia_buf_puts(&line, "-");
    r = r ? r : fatia_buf_putc(&line, ' ');
    for (const char *const *n = namespaces; r == 0 && n && *n; n++)
        r = fatia_buf_printf(&line, "%s%s", n == namespaces ? "" : ",", *n);
    if (r == 0 && (!namespaces || !*namespaces))
        r = fatia_buf_puts(&line, "*");
    r = r ? r : fatia_buf_printf(&line, " %s", t->read_only ? "ro" : "rw");
    if (r == 0 && t->id)
        r = fatia_buf_printf(&line, " id=%s", t->id);
    if (r == 0 && t->expires > 0) {
        r = fatia_time_format_rfc3339(t->expires - t->expires % FATIA_USEC_PER_SEC, false, when,
                                      sizeof(when));
        r = r < 0 ? r : fatia_buf_printf(&line, " expires=%s", when);
    }
    r = r ? r : fatia_buf_putc(&line, '\n');
    if (r < 0) {
        fatia_buf_release(&line);
        return r;
    }
    fd = open_locked(path);
    if (fd < 0) {
        r = fd;
        goto out_release;
    }
    errno = 0;
    if (write(fd, line.p, line.len) != (ssize_t)line.len || fsync(fd) < 0)
        r = errno ? -errno : -EIO;
    close(fd);
out_release:
    fatia_buf_release(&line);
    return r;
}

int fatia_tokens_append(const char *path, const char *token, const char *user,
                        const char *const *groups, const char *const *namespaces, bool read_only)
{
    return fatia_tokens_add(path, &(struct fatia_token_spec){.token = token,
                                                             .user = user,
                                                             .groups = groups,
                                                             .namespaces = namespaces,
                                                             .read_only = read_only});
}

/* Does a tokens-file line match user (field 2) or id (an id= field)? Comments never do. */
static bool line_matches(const char *p, size_t n, const char *user, const char *id)
{
    char *copy = fatia_strndup(p, n), *save = NULL, *f;
    bool m = false;
    int i = 0;

    if (!copy)
        return false;
    for (f = strtok_r(copy, " \t\r", &save); f; f = strtok_r(NULL, " \t\r", &save), i++) {
        if (i == 0 && *f == '#')
            break;
        if (i == 1 && user && !strcmp(f, user))
            m = true;
        if (i >= 5 && id && !strncmp(f, "id=", 3) && !strcmp(f + 3, id))
            m = true;
    }
    fatia_free(copy);
    return m;
}

int fatia_tokens_revoke(const char *path, const char *user, const char *id, size_t *ret_n)
{
    struct fatia_buf keep = FATIA_BUF_INIT;
    char tmp[4096], *text = NULL;
    size_t len = 0, n = 0;
    struct stat st;
    int fd, tfd = -1, r;

    if (!user && !id)
        return -EINVAL;
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.revoke.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    fd = open_locked(path);
    if (fd < 0)
        return fd;
    r = read_file(path, &text, &len, &st);
    if (r < 0)
        goto out;
    for (const char *p = text, *end = text + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t ln = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        if (line_matches(p, nl ? ln - 1 : ln, user, id))
            n++;
        else if (fatia_buf_append(&keep, p, ln) < 0) {
            r = -ENOMEM;
            goto out;
        }
        p += ln;
    }
    if (!n) {
        r = -ENOENT;
        goto out;
    }
    tfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    errno = 0;
    if (tfd < 0 || fchmod(tfd, 0600) < 0 ||
        (keep.len && write(tfd, keep.p, keep.len) != (ssize_t)keep.len) || fsync(tfd) < 0 ||
        rename(tmp, path) < 0) {
        r = errno ? -errno : -EIO;
        unlink(tmp);
        goto out;
    }
    *ret_n = n;
out:
    if (tfd >= 0)
        close(tfd);
    close(fd); /* releases the lock of the old file: a waiting writer opens the new one */
    fatia_free(text);
    fatia_buf_release(&keep);
    return r;
}

/* YAML double-quoted scalar of a string we wrote or validated. */
static int yaml_quote(struct fatia_buf *out, const char *s)
{
    int r = fatia_buf_putc(out, '"');
    for (; r == 0 && *s; s++) {
        if (*s == '"' || *s == '\\')
            r = fatia_buf_printf(out, "\\%c", *s);
        else if ((unsigned char)*s < ' ')
            r = fatia_buf_printf(out, "\\x%02x", (unsigned char)*s);
        else
            r = fatia_buf_putc(out, *s);
    }
    return r ? r : fatia_buf_putc(out, '"');
}

int fatia_kubeconfig_format(struct fatia_buf *out, const char *url, const char *ca,
                            const char *user, const char *token, const char *ns)
{
    int r = fatia_buf_puts(out, "apiVersion: v1\nkind: Config\nclusters:\n- name: fatia\n"
                                "  cluster:\n    server: ");
    r = r ? r : yaml_quote(out, url);
    if (ca) {
        r = r ? r : fatia_buf_puts(out, "\n    certificate-authority-data: ");
        r = r ? r : yaml_quote(out, ca);
    }
    r = r ? r : fatia_buf_puts(out, "\nusers:\n- name: ");
    r = r ? r : yaml_quote(out, user);
    r = r ? r : fatia_buf_puts(out, "\n  user:\n    token: ");
    r = r ? r : yaml_quote(out, token);
    r = r ? r
          : fatia_buf_puts(out, "\ncontexts:\n- name: fatia\n  context:\n    cluster: fatia\n"
                                "    user: ");
    r = r ? r : yaml_quote(out, user);
    if (ns) {
        r = r ? r : fatia_buf_puts(out, "\n    namespace: ");
        r = r ? r : yaml_quote(out, ns);
    }
    r = r ? r : fatia_buf_puts(out, "\ncurrent-context: fatia\npreferences: {}\n");
    return r;
}

int fatia_kubeconfig_write(const char *path, const char *url, const char *ca, const char *user,
                           const char *token, const char *ns)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    char tmp[4096];
    int fd, r;

    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return -ENAMETOOLONG;
    r = fatia_kubeconfig_format(&b, url, ca, user, token, ns);
    if (r < 0)
        goto out_release;
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        r = -errno;
        goto out_release;
    }
    if (fchmod(fd, 0600) < 0 || write(fd, b.p, b.len) != (ssize_t)b.len || fsync(fd) < 0) {
        r = errno ? -errno : -EIO;
        close(fd);
        unlink(tmp);
        goto out_release;
    }
    close(fd);
    if (rename(tmp, path) < 0) {
        r = -errno;
        unlink(tmp);
    }
out_release:
    fatia_buf_release(&b);
    return r;
}

int fatia_kubeconfig_server(const char *path, char *buf, size_t n, char **ret_ca)
{
    const char *ca;
    struct stat st;
    json_t *root = NULL;
    const char *server;
    size_t len;
    char *text, why[256];
    int r;

    r = read_file(path, &text, &len, &st);
    if (r < 0)
        return r;
    r = fatia_yaml_parse(text, len, &root, why, sizeof(why));
    fatia_free(text);
    if (r < 0)
        return r;
    server = json_string_value(fatia_json_path(root, "clusters[0].cluster.server"));
    if (!server || strlen(server) >= n) {
        json_decref(root);
        return -FATIA_E_PARSE;
    }
    snprintf(buf, n, "%s", server);
    ca = json_string_value(fatia_json_path(root, "clusters[0].cluster.certificate-authority-data"));
    *ret_ca = ca ? fatia_strdup(ca) : NULL;
    json_decref(root);
    return ca && !*ret_ca ? -ENOMEM : 0;
}
