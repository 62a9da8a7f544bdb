/*
 * apiserver/dashboard.c: the self-service dashboard's static files, served at `/` on the API's
 * own HTTPS port (apiserver.h, fatia_apiserver_set_dashboard).
 *
 * Model: the dashboard is a single-page application (web/, PatternFly + React, built by
 * scripts/dashboard-build into a directory of index.html and assets/). Everything it knows it
 * reads from this same origin's Kubernetes API with the user's bearer token, which the page keeps
 * in its own storage; so the files themselves hold nothing secret and are served without
 * authentication, like kube-apiserver's /version. Pages route by the URL's fragment (#/gpus), so
 * the server only ever sees `/`, `/index.html`, and files under `/assets/`. `/config.json` is
 * made here: the notebook proxy's origin (its port is chosen at start), for "open my workbench".
 *
 * The catalog: a tenant reads (get, list, watch) the HardwareProfiles of the catalog namespace
 * (fatia_apiserver_set_catalog_namespace; fatiad: gpu-catalog), whatever its token's namespaces,
 * as OpenShift AI lets every authenticated user read the dashboard namespace's profiles: the
 * catalog is what a data scientist picks from. Nothing else of that namespace, and no write.
 *
 * Invariants:
 *   - only a name of [A-Za-z0-9._-], not starting with '.', directly in the directory or in
 *     assets/, is served: no "..", no hidden file, no other subdirectory; the file is opened
 *     relative to the directory's descriptor with O_NOFOLLOW, and must be a regular file of at
 *     most MAX_FILE bytes;
 *   - a path the API routes (api, apis, version, healthz, ...) never reaches this file: the hook
 *     in handlers.c runs only for targets the router refused;
 *   - every answer carries a Content-Security-Policy that allows scripts and connections to this
 *     origin only, forms to the notebook proxy's login only ("Open" posts the token there, so
 *     that the proxy sets its own cookie), and forbids framing (the notebook proxy's origin
 *     cannot frame the dashboard), with nosniff and no-referrer.
 *
 * Choices rejected: embedding the built files in the binary (the build would need node for every
 * C build, and a rebuild of fatiad for a change of a page); a fallback to index.html for every
 * unknown path (history routing): it would answer 200 for typos of API paths, which confuses
 * kubectl's discovery; the token in a cookie (a cookie is sent by the browser on cross-site
 * requests too, which would make every API write a CSRF target; a bearer header is not).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <fcntl.h>
#include <unistd.h>

#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"
#include "rbac/rbac.h"

#define MAX_FILE (16u << 20)

struct fatia_api_dashboard {
    int dirfd;
    char *config; /* config.json: {"notebookOrigin": ...} */
    size_t config_n;
    char csp[800]; /* CSP, with form-action naming the notebook origin ("Open" posts there) */
};

static const char CSP[] = "default-src 'self'; script-src 'self'; connect-src 'self'; "
                          "img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
                          "font-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; "
                          "object-src 'none'; form-action";

int fatia_apiserver_set_dashboard(struct fatia_apiserver *s, const char *dir,
                                  const char *notebook_origin)
{
    struct fatia_api_dashboard *d;
    json_t *cfg;
    int fd;

    fatia_api_dashboard_free(s->dashboard);
    s->dashboard = NULL;
    if (!dir)
        return 0;
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    d = fatia_calloc(1, sizeof(*d));
    if (!d) {
        close(fd);
        return -ENOMEM;
    }
    d->dirfd = fd;
    cfg = json_pack("{s:s?}", "notebookOrigin", notebook_origin);
    d->config = cfg ? json_dumps(cfg, JSON_COMPACT) : NULL;
    json_decref(cfg);
    if (!d->config) {
        fatia_api_dashboard_free(d);
        return -ENOMEM;
    }
    d->config_n = strlen(d->config);
    /* an origin is scheme://host:port, no quote or semicolon: it cannot end the directive */
    if (notebook_origin && strpbrk(notebook_origin, "'; \"")) {
        fatia_api_dashboard_free(d);
        return -EINVAL;
    }
    snprintf(d->csp, sizeof(d->csp), "%s %s", CSP, notebook_origin ? notebook_origin : "'none'");
    s->dashboard = d;
    return 0;
}

void fatia_api_dashboard_free(struct fatia_api_dashboard *d)
{
    if (!d)
        return;
    close(d->dirfd);
    free(d->config);
    fatia_free(d);
}

static bool name_ok(const char *n)
{
    if (!n[0] || n[0] == '.' || strlen(n) > 200)
        return false;
    for (const char *p = n; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '_' || *p == '-'))
            return false;
    return true;
}

static const char *content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".woff2", "font/woff2"},
        {".woff", "font/woff"},
        {".ttf", "font/ttf"},
        {".json", "application/json"},
        {".ico", "image/x-icon"},
    };

    const char *dot = strrchr(name, '.');

    for (size_t i = 0; dot && i < FATIA_ARRAY_SIZE(types); i++)
        if (!strcmp(dot, types[i].ext))
            return types[i].type;
    return "application/octet-stream";
}

/* Reads dir/name (or dir/assets/name) whole. 0, -ENOENT (absent, not a regular file, a link),
 * -EFBIG, -ENOMEM, -EIO. */
static int read_file(const struct fatia_api_dashboard *d, bool in_assets, const char *name,
                     char **ret_buf, size_t *ret_n)
{
    char path[256];
    struct stat st;
    char *buf = NULL;
    size_t got = 0;
    int fd, r;

    snprintf(path, sizeof(path), "%s%s", in_assets ? "assets/" : "", name);
    fd = openat(d->dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ELOOP ? -ENOENT : -errno;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        r = -ENOENT;
        goto out;
    }
    if ((uint64_t)st.st_size > MAX_FILE) {
        r = -EFBIG;
        goto out;
    }
    buf = fatia_malloc((size_t)st.st_size + 1);
    if (!buf) {
        r = -ENOMEM;
        goto out;
    }
    while (got < (size_t)st.st_size) {
        ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            r = -EIO;
            goto out;
        }
        got += (size_t)n;
    }
    *ret_buf = buf;
    *ret_n = got;
    buf = NULL;
    r = 0;
out:
    fatia_free(buf);
    close(fd);
    return r;
}

static void add_headers(const struct fatia_api_dashboard *d, struct fatia_api_http_req *req)
{
    fatia_api_http_add_header(req, "Content-Security-Policy", d->csp);
    fatia_api_http_add_header(req, "X-Content-Type-Options", "nosniff");
    fatia_api_http_add_header(req, "Referrer-Policy", "no-referrer");
    fatia_api_http_add_header(req, "X-Frame-Options", "DENY");
}

bool fatia_api_dashboard_serve(struct fatia_apiserver *s, struct fatia_api_http_req *req,
                               const char *method, const struct fatia_api_target *t)
{
    const struct fatia_api_dashboard *d = s->dashboard;
    const char *name;
    bool in_assets = false;
    char *body = NULL;
    size_t n = 0;
    int r;

    if (!d || strcmp(method, "GET"))
        return false;
    if (t->n_seg == 0) {
        name = "index.html";
    } else if (t->n_seg == 1) {
        name = t->seg[0];
    } else if (t->n_seg == 2 && !strcmp(t->seg[0], "assets")) {
        name = t->seg[1];
        in_assets = true;
    } else {
        return false;
    }
    if (!name_ok(name))
        return false;
    if (!in_assets && !strcmp(name, "config.json")) {
        add_headers(d, req);
        fatia_api_http_add_header(req, "Cache-Control", "no-cache");
        fatia_api_http_reply(req, 200, "application/json", d->config, d->config_n);
        return true;
    }
    r = read_file(d, in_assets, name, &body, &n);
    if (r == -ENOENT)
        return false;
    add_headers(d, req);
    if (r < 0) {
        fatia_warn("dashboard: %s: %s", name, fatia_strerror(r));
        fatia_api_http_reply(req, 500, "text/plain; charset=utf-8", "dashboard file unreadable\n",
                             26);
        return true;
    }
    /* assets/ names carry the build's content hash; index.html names them, so it is never kept */
    fatia_api_http_add_header(req, "Cache-Control",
                              in_assets ? "public, max-age=31536000, immutable" : "no-cache");
    fatia_api_http_reply(req, 200, content_type(name), body, n);
    fatia_free(body);
    return true;
}

/* The catalog authorizer (authz.c's chain, before RBAC): get, list and watch of the
 * HardwareProfiles in the catalog namespace for every authenticated user; no opinion on
 * anything else, so RBAC decides the rest. */
static int catalog_authorizer(void *arg, const struct fatia_user *u,
                              const struct fatia_rbac_attrs *a, char *why, size_t why_n)
{
    struct fatia_apiserver *s = arg;
    (void)u;

    if (!s->catalog_ns || !a->resource_request || !a->ns || strcmp(a->ns, s->catalog_ns) ||
        !a->group || strcmp(a->group, "infrastructure.opendatahub.io") || !a->resource ||
        strcmp(a->resource, "hardwareprofiles") || (a->subresource && *a->subresource) ||
        (strcmp(a->verb, "get") && strcmp(a->verb, "list") && strcmp(a->verb, "watch")))
        return FATIA_AUTHZ_NO_OPINION;
    if (why && why_n)
        snprintf(why, why_n, "the hardware-profile catalog of namespace %s", s->catalog_ns);
    return FATIA_AUTHZ_ALLOW;
}

int fatia_apiserver_set_catalog_namespace(struct fatia_apiserver *s, const char *ns)
{
    char *c = NULL;
    bool first = !s->catalog_ns;

    if (ns && !(c = fatia_strdup(ns)))
        return -ENOMEM;
    fatia_free(s->catalog_ns);
    s->catalog_ns = c;
    if (first && c)
        return fatia_api_authorizer_add(s, catalog_authorizer, s);
    return 0;
}
