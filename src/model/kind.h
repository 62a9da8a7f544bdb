/*
 * model/kind.h: the registry of kinds fatia understands.
 *
 * One struct fatia_kind per kind: its group, versions, REST names, scope, the naming rule for
 * metadata.name, the schema of the whole object, the printer columns of its upstream CRD (for
 * `kubectl get`), and how older served versions convert to the storage version. The API server,
 * the validator, the CLI and the OpenAPI generator all read this one table.
 *
 * Versions: `version` is the storage (and preferred) version. `others` lists further served
 * versions with a to_storage conversion (and from_storage for serving them back). Conversion runs
 * before validation, so errors name storage-version paths; a conversion only moves and renames
 * members and never fails on a member of the wrong type (validation reports that afterwards).
 */
#ifndef FATIA_MODEL_KIND_H
#define FATIA_MODEL_KIND_H

#include <jansson.h>
#include <stdbool.h>

#include "model/schema.h"

enum fatia_name_rule {
    FATIA_NAME_SUBDOMAIN,    /* DNS-1123 subdomain, <= 253 (most kinds) */
    FATIA_NAME_LABEL,        /* DNS-1123 label, <= 63 (Namespace) */
    FATIA_NAME_SUBDOMAIN63,  /* subdomain that must also fit a label value (Job: job-name label) */
    FATIA_NAME_PATH_SEGMENT, /* anything but "", ".", "..", "/" and "%" (Node, Event) */
};

struct fatia_column {
    const char *name;      /* "Cohort" */
    const char *type;      /* "string" | "integer" | "number" | "boolean" | "date" */
    const char *json_path; /* ".spec.cohortName"; ignored when compute is set */
    int priority;          /* 0 = default view, 1 = -o wide only */
    const char *desc;
    /* A cell no JSONPath can give, as kubectl's built-in printers compute them (a Pod's READY
     * "1/2", a Job's DURATION): a new reference, or NULL for an empty cell. now is the server's
     * clock (microseconds since the epoch), passed in so the function stays pure. */
    json_t *(*compute)(const json_t *obj, int64_t now);
};

struct fatia_kind_version {
    const char *version;
    /* Converts an object of this version to the storage version, in place. */
    void (*to_storage)(json_t *obj);
    /* Converts a storage-version object to this version, in place (for serving it). */
    void (*from_storage)(json_t *obj);
    const char *warning; /* deprecation warning, or NULL */
};

/* A CRD's scale subresource: JSON paths (".spec.replicas") of the object's members. */
struct fatia_scale_paths {
    const char *spec_replicas;
    const char *status_replicas;
    const char *label_selector; /* NULL: none */
};

struct fatia_kind {
    const char *group; /* "" for the core group */
    const char *version;
    const char *kind;
    const char *plural;
    const char *singular;
    const char *const *short_names; /* NULL-terminated, may be NULL */
    const char *const *categories;  /* NULL-terminated, may be NULL */
    bool namespaced;
    bool has_status; /* serves a status subresource */
    enum fatia_name_rule name_rule;
    const struct fatia_schema *schema;  /* the whole object (apiVersion, kind, metadata, ...) */
    const struct fatia_column *columns; /* terminated by {NULL}; NULL = name and age only */
    /* columns are the whole row, as kubectl's Event printer: no Name first, no Age last */
    bool columns_whole;
    const struct fatia_kind_version *others; /* terminated by {NULL}; may be NULL */
    /* The only verbs served ("get", "list", "watch": CustomResourceDefinition), NULL-terminated;
     * NULL = every verb. Others answer 405 MethodNotAllowed. */
    const char *const *verbs;
    /* A custom kind's scale subresource (model/crd_kind.c); NULL: none (the compiled kinds'
     * are apiserver/scale.c's) */
    const struct fatia_scale_paths *scale;
};

/* All registered kinds, NULL-terminated, in a stable order. */
extern const struct fatia_kind *const fatia_kinds[];

/* Lookups. apiVersion is "group/version" or "v1" for the core group. A version that is served
 * (storage or other) matches; *ret_version gets the matched version entry (NULL = storage). */
const struct fatia_kind *fatia_kind_find(const char *api_version, const char *kind,
                                         const struct fatia_kind_version **ret_version);
/* The kind for a kind name alone ("ClusterQueue"), any group; NULL if unknown or ambiguous. */
const struct fatia_kind *fatia_kind_by_name(const char *kind);
/* By REST resource: group + plural ("kueue.x-k8s.io", "clusterqueues"). */
const struct fatia_kind *fatia_kind_by_resource(const char *group, const char *plural);
/* By any name a person types: plural, singular, short name, kind, with optional ".group". */
const struct fatia_kind *fatia_kind_by_any_name(const char *name);

/* Does k serve verb ("create", "list", ...; "deletecollection" and "patch" included)? */
bool fatia_kind_serves_verb(const struct fatia_kind *k, const char *verb);

/* "kueue.x-k8s.io/v1beta2" or "v1" into buf. */
void fatia_kind_api_version(const struct fatia_kind *k, char *buf, size_t n);

/* The lowercase kind used in object ids: "clusterqueue". */
void fatia_kind_lower(const struct fatia_kind *k, char *buf, size_t n);

/* Checks metadata.name against the kind's rule; false with why on failure. */
bool fatia_kind_check_name(const struct fatia_kind *k, const char *name, char *why, size_t n);

/* Extra checks: rules for whole objects of one kind that the model cannot make itself because
 * they need a layer above it (the demand layer compiles the CEL selectors of DeviceClasses and
 * ResourceClaims; CEL is src/cel, which the model may not call). They are a value, not a
 * registry: whoever decodes passes the set to fatia_object_decode / fatia_objset_load (and
 * fatiad's wiring to fatia_apiserver_new), so no program can decode with other rules than the
 * one its call sites name, and none depends on a start-up call it might forget. The demand
 * layer's set is fatia_demand_checks (demand/demand.h); NULL is "the schemas' rules only".
 *
 * fatia_object_decode runs a kind's extra checks on the whole object after its schema, exactly
 * like a schema check callback (same context, so errors carry file, line, object and field path;
 * read members through type-checking accessors: the object may have schema errors). */
struct fatia_check {
    const struct fatia_kind *kind;
    fatia_check_fn fn;
};

struct fatia_checks {
    const struct fatia_check *v;
    size_t n;
};

/* Runs the checks of cs (NULL: none) that are for k, in order. */
void fatia_checks_run(const struct fatia_checks *cs, const struct fatia_kind *k,
                      struct fatia_vctx *ctx, json_t *obj);

#endif
