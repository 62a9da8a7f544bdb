/*
 * model/object.h: decoding a document into a validated, defaulted object of a known kind.
 *
 * fatia_object_decode is the one entry from outside input to a trusted object: it resolves
 * apiVersion and kind in the registry, converts an older served version to the storage version,
 * checks metadata (name rule of the kind, namespace, labels, annotations), validates and defaults
 * the rest against the kind's schema, and names the object in every diagnostic
 * ("clusterqueue/team-a", or "localqueue/team-a/ml" for namespaced objects: kind/namespace/name).
 *
 * Objects own one reference to their JSON tree; the tree is the object (no copy into C structs).
 */
#ifndef FATIA_MODEL_OBJECT_H
#define FATIA_MODEL_OBJECT_H

#include <jansson.h>

#include "model/diag.h"
#include "model/doc.h"
#include "model/kind.h"

struct fatia_object {
    const struct fatia_kind *kind;
    json_t *obj;           /* owned; storage version, defaulted */
    const char *name;      /* borrowed from obj; NULL when only generateName is set */
    const char *namespace; /* borrowed from obj; NULL if cluster-scoped or unset */
    char id[320];          /* kind/name or kind/namespace/name */
    const char *file;      /* borrowed; NULL for API bodies */
    struct fatia_srcpos pos;
    const char *warning; /* deprecation warning of the version it was written in, or NULL */
};

struct fatia_decode_opts {
    const char *file;               /* for diagnostics; may be NULL */
    const struct fatia_srcmap *map; /* positions; may be NULL */
    struct fatia_srcpos pos;        /* where the document starts */
    bool allow_generate_name;       /* API create: name may come from generateName */
    bool no_defaults;               /* validate only */
    /* Unknown fields are errors ("unknown field"), as the API server refuses them
     * under fieldValidation=Strict, kubectl's default; else warnings. */
    bool strict_unknown;
};

/* Is e the schema walker's report of an unknown field (a warning, or an error under
 * strict_unknown)? The API server and `fatia validate` decide with this one rule. */
bool fatia_diag_is_unknown_field(const struct fatia_diag_entry *e);

/* Decodes root (borrowed; the object takes its own reference and may modify the tree) and runs
 * the extra checks of its kind in checks (model/kind.h; NULL: the schema's rules only). Every
 * problem goes to diag. Returns 0 and *ret on success, -FATIA_E_INVALID if diag got errors (no
 * object), -ENOMEM. Warnings alone do not fail. */
int fatia_object_decode(json_t *root, const struct fatia_decode_opts *opts,
                        const struct fatia_checks *checks, struct fatia_diag *diag,
                        struct fatia_object **ret);

void fatia_object_free(struct fatia_object *o);

/* Builds the id of an object ("clusterqueue/team-a"). */
void fatia_object_format_id(const struct fatia_kind *k, const char *ns, const char *name, char *buf,
                            size_t n);

#endif
