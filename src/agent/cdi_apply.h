/*
 * agent/cdi_apply.h: Container Device Interface specs (CDI SPEC v1.x, the JSON `nvidia-ctk cdi
 * generate` writes) read and applied to a container's OCI config (cdi_apply.c; the node spec itself is written by cdi.c).
 *
 * The agent's devices are kind fatia.dev/gpu, one device per slice, named by the slice id, in
 * spec files under POD_DIR/cdi/ (written by the slice side, #16b); a container gets the
 * containerEdits of exactly its slices (and a spec's top-level containerEdits when one of its
 * devices is asked for).
 */
#ifndef FATIA_AGENT_CDI_APPLY_H
#define FATIA_AGENT_CDI_APPLY_H

#include <jansson.h>
#include <stddef.h>

#define FATIA_CDI_KIND "fatia.dev/gpu"

/* The containerEdits of the devices named (kind/name pairs: names[i] of kind) from the spec
 * files (*.json) of dir, later files winning for a name given twice, merged into one edits object
 * (new reference): {"env": [...], "deviceNodes": [...], "mounts": [...], "hooks": [...],
 * "additionalGIDs": [...]}. -ENOENT with why naming the first device no spec has,
 * -FATIA_E_PARSE with why naming the file and field of a malformed spec. */
int fatia_cdi_edits(const char *dir, const char *kind, const char *const *names, size_t n,
                    json_t **ret, char *why, size_t why_n);

/* Adds edits (a containerEdits object) to *acc (made when NULL). */
void fatia_cdi_merge(json_t **acc, const json_t *edits);

/* Applies edits to an OCI config (runtime-spec 1.0): env (replacing a variable of the same
 * name), deviceNodes (linux.devices, and an allow rule in linux.resources.devices for each, its
 * major/minor read from the host node when the spec gives none), mounts (bind, the spec's
 * options), hooks (by hookName), additionalGIDs. Reads the host only to stat device nodes.
 * 0, -ENOENT / -EINVAL with why (the node or field). */
int fatia_cdi_apply(json_t *config, const json_t *edits, char *why, size_t why_n);

#endif
