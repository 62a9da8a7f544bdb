/*
 * model/crd_kind.h: kinds defined at run time by CustomResourceDefinitions (issue 17).
 *
 * A user's apiextensions.k8s.io/v1 CRD becomes a struct fatia_kind like the compiled ones: its
 * names, scope, served versions (the storage version, the others with `None` conversion: only
 * apiVersion changes), the status subresource flag, the printer columns, and the storage
 * version's openAPIV3Schema translated into the model's schema tables (crd_schema.c), so that
 * the one walker validates, defaults and prunes custom objects as it does every other object.
 *
 * Registry: the kind lookups of kind.h (fatia_kind_find, _by_resource, ...) also see the custom
 * kinds registered here; the set belongs to the process (fatiad serves one API server).
 * fatia_kind_at() walks compiled then registered kinds. A kind leaves the registry when its CRD
 * is deleted or replaced, but the struct stays alive until fatia_kind_custom_free_all (objects,
 * watches and informers may still point at it).
 */
#ifndef FATIA_MODEL_CRD_KIND_H
#define FATIA_MODEL_CRD_KIND_H

#include <jansson.h>
#include <stddef.h>

#include "model/kind.h"

#define FATIA_KIND_MAX_CUSTOM 256

/* Builds the kind of CRD crd (an apiextensions.k8s.io/v1 object, already schema-valid as a
 * CustomResourceDefinition). 0, or -FATIA_E_INVALID with why ("spec.versions[0].schema.
 * openAPIV3Schema.properties[spec].type: Unsupported value: ...") or -ENOMEM. The kind owns a
 * copy of crd. */
int fatia_kind_custom_new(const json_t *crd, const struct fatia_kind **ret, char *why, size_t n);

/* The allocations of one translated schema tree (crd_schema.c). */
struct fatia_schema_arena {
    void **v;
    size_t n, cap;
};

/* Translates the structural openAPIV3Schema js (borrowed: the tree's names and descriptions
 * point into it, so it must outlive the result) into schema tables allocated in a. root: js
 * is a whole object's schema (apiVersion, kind and metadata are the server's). path names js in
 * errors ("spec.versions[0].schema.openAPIV3Schema"). 0, or -FATIA_E_INVALID with why, or
 * -ENOMEM. */
int fatia_schema_from_openapi(struct fatia_schema_arena *a, const json_t *js, bool root,
                              const char *path, const struct fatia_schema **ret, char *why,
                              size_t n);
void fatia_schema_arena_release(struct fatia_schema_arena *a);
/* size zeroed bytes owned by a; NULL on OOM. */
void *fatia_schema_arena_alloc(struct fatia_schema_arena *a, size_t size);

/* Registers k (from fatia_kind_custom_new) for the lookups; -ENOSPC past FATIA_KIND_MAX_CUSTOM. */
int fatia_kind_custom_register(const struct fatia_kind *k);
/* Takes k out of the lookups (it stays allocated). */
void fatia_kind_custom_unregister(const struct fatia_kind *k);
/* Is k a kind built from a CRD? */
bool fatia_kind_is_custom(const struct fatia_kind *k);
/* Frees k now (it must not be registered nor referenced). */
void fatia_kind_custom_free(const struct fatia_kind *k);
/* Unregisters and frees every custom kind ever built (at the API server's end). */
void fatia_kind_custom_free_all(void);

/* The i-th kind, compiled kinds first, then the registered custom kinds; NULL past the end. */
const struct fatia_kind *fatia_kind_at(size_t i);

#endif
