/*
 * model/objset.h: a set of decoded objects read from files: what every one-shot command
 * (validate, plan, schedule, sim, profiles) starts from.
 *
 * fatia_objset_load reads paths (files, directories, "-"), decodes every document, and reports
 * every problem of every file into one diag, including an object defined twice (same kind,
 * namespace and name), which names both places. Objects that failed to decode are not in the set;
 * callers that must not act on partial input check fatia_diag_has_errors first.
 *
 * Lookup by kind and key is O(1) (a hash of "Kind/ns/name").
 */
#ifndef FATIA_MODEL_OBJSET_H
#define FATIA_MODEL_OBJSET_H

#include "base/map.h"
#include "model/diag.h"
#include "model/doc.h"
#include "model/object.h"

struct fatia_objset {
    struct fatia_docset docs;
    struct fatia_object **v; /* in input order */
    size_t n, cap;
    struct fatia_strmap index; /* "Kind/ns/name" -> object; keys owned by the set */
    char **keys;
    size_t n_keys, keys_cap;
    struct fatia_strmap seen; /* "Kind/ns/name" of every document read -> its doc */
};

void fatia_objset_init(struct fatia_objset *set);
void fatia_objset_release(struct fatia_objset *set);

/* Loads and decodes everything under the paths, with the extra checks of checks (model/kind.h;
 * NULL: the schemas' rules only). Returns 0, -FATIA_E_INVALID (diag has errors; the valid
 * objects are still in the set), -ENOMEM. */
int fatia_objset_load(struct fatia_objset *set, char *const *paths, size_t n_paths, bool recursive,
                      const struct fatia_checks *checks, struct fatia_diag *diag);

/* Adds one already-decoded object (the set takes ownership). -FATIA_E_EXISTS if the same
 * kind/namespace/name is already there (the object is freed). */
int fatia_objset_add(struct fatia_objset *set, struct fatia_object *o);

/* Records the identity (kind, namespace, name) of a document, valid or not, and reports an error
 * naming both places when an earlier document had the same identity. Returns true for a
 * duplicate. fatia_objset_load calls it for every document; `fatia validate` does too. */
bool fatia_objset_check_duplicate(struct fatia_objset *set, const struct fatia_doc *d,
                                  struct fatia_diag *diag);

/* The object of kind `kind` ("ClusterQueue") named ns/name (ns NULL for cluster-scoped). */
struct fatia_object *fatia_objset_get(const struct fatia_objset *set, const char *kind,
                                      const char *ns, const char *name);

/* Iteration over one kind: for (size_t i = 0; (o = fatia_objset_next(set, "Workload", &i));) */
struct fatia_object *fatia_objset_next(const struct fatia_objset *set, const char *kind,
                                       size_t *iter);

#endif
