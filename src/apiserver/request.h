/*
 * apiserver/request.h: parsing of request targets (path and query) into Kubernetes routes.
 *
 * A target is percent-decoded once, segment by segment and parameter by parameter, into one
 * owned buffer; everything else holds views into it. Paths follow the upstream layout:
 *
 *     /api/v1/RESOURCE[/NAME[/SUB]]                         core, cluster-scoped or all namespaces
 *     /api/v1/namespaces/NS/RESOURCE[/NAME[/SUB]]           core, namespaced
 *     /apis/GROUP/VERSION/...                               the same below a group
 *     /api/v1/watch/...  /apis/G/V/watch/...                the old watch prefix (watch=true)
 *     /api /api/v1 /apis /apis/G /apis/G/V                  discovery
 *     /openapi/v2 /openapi/v3 /openapi/v3/api/v1 /openapi/v3/apis/G/V
 *     /version /healthz /livez /readyz (and their sub-checks)
 *
 * /api/v1/namespaces/NAME/status (and /finalize) is the namespace's own subresource, as
 * upstream. Parsing allocates one buffer and is pure: it is fuzzed (fuzz/fuzz_apiurl.c).
 */
#ifndef FATIA_APISERVER_REQUEST_H
#define FATIA_APISERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/client.h" /* enum fatia_field_validation, enum fatia_patch_type */

#define FATIA_API_MAX_SEGS   16
#define FATIA_API_MAX_PARAMS 32
#define FATIA_API_MAX_TARGET 8192

struct fatia_api_param {
    const char *key;
    const char *val; /* "" when the parameter has no '=' */
};

struct fatia_api_target {
    char *buf; /* owned */
    const char *seg[FATIA_API_MAX_SEGS];
    size_t n_seg;
    struct fatia_api_param params[FATIA_API_MAX_PARAMS];
    size_t n_params;
};

/* Splits and decodes a target ("/api/v1/pods?labelSelector=app%3Dweb"). Empty segments (double
 * or trailing slashes) are dropped. 0, -EINVAL (not absolute, bad percent-encoding, a NUL or '/'
 * encoded in a segment), -E2BIG (too many segments or parameters, or longer than
 * FATIA_API_MAX_TARGET), -ENOMEM. */
int fatia_api_target_parse(const char *t, size_t n, struct fatia_api_target *ret);
void fatia_api_target_release(struct fatia_api_target *t);
/* The value of the first parameter named key, or NULL. */
const char *fatia_api_target_param(const struct fatia_api_target *t, const char *key);

enum fatia_api_route_type {
    FATIA_ROUTE_VERSION,
    FATIA_ROUTE_HEALTH,
    FATIA_ROUTE_METRICS,       /* /metrics */
    FATIA_ROUTE_API,           /* /api */
    FATIA_ROUTE_API_V1,        /* /api/v1 (or another version: group "" version V) */
    FATIA_ROUTE_APIS,          /* /apis */
    FATIA_ROUTE_GROUP,         /* /apis/G */
    FATIA_ROUTE_GROUP_VERSION, /* /apis/G/V */
    FATIA_ROUTE_OPENAPI_V2,
    FATIA_ROUTE_OPENAPI_V3,    /* the root listing */
    FATIA_ROUTE_OPENAPI_V3_GV, /* group "" for api/v1 */
    FATIA_ROUTE_RESOURCE,
};

struct fatia_api_route {
    enum fatia_api_route_type type;
    const char *group; /* "" for core */
    const char *version;
    const char *resource; /* plural */
    const char *ns;       /* NULL: cluster-scoped, or every namespace */
    const char *name;     /* NULL: the collection */
    const char *sub;      /* NULL, "status", "log", ... */
    bool watch_prefix;    /* came through /watch/ */
};

/* Routes a parsed target. 0, or -ENOENT when no route matches (a 404). */
int fatia_api_route_parse(const struct fatia_api_target *t, struct fatia_api_route *ret);

struct fatia_api_query {
    const char *label_selector; /* NULL when absent */
    const char *field_selector;
    const char *continue_token;
    const char *resource_version;
    const char *resource_version_match;
    const char *propagation_policy;
    const char *container;
    int64_t limit;           /* 0: none */
    int64_t timeout_seconds; /* -1: none */
    int64_t grace_period;    /* -1: none */
    int64_t tail_lines;      /* -1: all */
    int64_t limit_bytes;     /* -1: none */
    int64_t since_seconds;   /* -1: none */
    bool watch;
    bool allow_bookmarks;
    bool send_initial_events;
    bool dry_run;
    bool follow;
    bool previous;
    bool timestamps;
    int include_object; /* Table rows: 0 None, 1 Metadata (default), 2 Object */
    enum fatia_field_validation fv;
    const char *field_manager; /* fieldManager; NULL when absent */
    bool force;                /* force=true (server-side apply) */
};

/* Reads the query parameters the server knows (others are ignored, as upstream does). 0, or
 * -EINVAL with a message in why for a malformed value (limit=abc, dryRun=Maybe). */
int fatia_api_query_parse(const struct fatia_api_target *t, struct fatia_api_query *ret, char *why,
                          size_t why_n);

#endif
