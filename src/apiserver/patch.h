/*
 * apiserver/patch.h: the three patch formats of the Kubernetes API.
 *
 *   - JSON merge patch (RFC 7386): objects merge member by member, null deletes, anything else
 *     (arrays included) replaces;
 *   - JSON patch (RFC 6902): a list of add / remove / replace / move / copy / test operations at
 *     JSON pointers;
 *   - strategic merge patch: a merge patch that knows, per field of the built-in kinds, which
 *     lists merge by a key (a Pod's containers by name, a container's env by name, ports by
 *     containerPort, conditions by type, ...) or as a set (finalizers), and honours the
 *     directives kubectl writes ($patch: replace|delete|merge, $setElementOrder/<list>,
 *     $deleteFromPrimitiveList/<list>, $retainKeys). The merge keys are upstream's
 *     patchStrategy/patchMergeKey tags (k8s.io/api); kinds outside the built-in set (CRDs) merge
 *     only their metadata lists strategically, everything else like a merge patch.
 *
 * All three leave doc unchanged and build a new tree in *ret. Errors: -EINVAL for a malformed
 * patch (400), -FATIA_E_CONFLICT when it does not apply (a failed test, a missing path: 422),
 * -ENOMEM; why says what and where. Pure functions: fuzzed by fuzz/fuzz_patch.c.
 */
#ifndef FATIA_APISERVER_PATCH_H
#define FATIA_APISERVER_PATCH_H

#include <jansson.h>
#include <stddef.h>

#include "model/kind.h"

#define FATIA_PATCH_MAX_OPS 10000

int fatia_patch_merge(const json_t *doc, const json_t *patch, json_t **ret, char *why,
                      size_t why_n);
int fatia_patch_json(const json_t *doc, const json_t *ops, json_t **ret, char *why, size_t why_n);
/* kind selects the merge keys (NULL: metadata only). */
int fatia_patch_strategic(const json_t *doc, const json_t *patch, const struct fatia_kind *kind,
                          json_t **ret, char *why, size_t why_n);

/* The merge keys of strategic merge patch, for server-side apply (fieldset.c): the fields table
 * of a kind's root object (opaque), and what it says of member name of an object whose table is
 * fields (NULL: none): a list merged by merge_key, a list of scalars merged as a set, the table
 * of the member's value (or of each list item). false when the table does not name it. */
struct fatia_smp_info {
    const char *merge_key;
    bool merge_set;
    const void *fields;
};

const void *fatia_patch_smp_root(const struct fatia_kind *k);
bool fatia_patch_smp_child(const void *fields, const char *name, struct fatia_smp_info *ret);

#endif
