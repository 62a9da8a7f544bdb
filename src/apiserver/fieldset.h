/*
 * apiserver/fieldset.h: field sets (managedFields' FieldsV1) and the merge of server-side apply,
 * as structured-merge-diff defines them. Pure functions over JSON trees: no I/O, no clock.
 *
 * A field set is a FieldsV1 tree: an object whose keys name the children of a value ("f:name" a
 * member, "k:{\"name\":\"a\"}" the item of an associative list with that key, "v:\"x\"" the item
 * of a set list) and "." the value itself. A node is a member of the set when it is {} or has
 * ".". Every operation keeps that form (normalized: no empty non-member nodes).
 *
 * Types come from the kind's schema table (an array with list_key is a map list) and from the
 * merge keys of strategic merge patch (patch.c: containers by name, env by name, finalizers as
 * a set, ...). Everything else: objects are granular, lists atomic (structured-merge-diff's
 * default for lists without x-kubernetes-list-type).
 */
#ifndef FATIA_APISERVER_FIELDSET_H
#define FATIA_APISERVER_FIELDSET_H

#include <jansson.h>
#include <stdbool.h>

#include "model/kind.h"

enum fatia_api_fs_list {
    FATIA_FS_ATOMIC,
    FATIA_FS_MAP,
    FATIA_FS_SET
};

/* The type of a value: its schema (NULL: unknown, deduced from the value) and its strategic
 * merge table (NULL: none); how a list value merges. */
struct fatia_api_fs_type {
    const struct fatia_schema *s;
    const void *smp;
    enum fatia_api_fs_list list;
    const char *key; /* FATIA_FS_MAP: the key member */
    bool map;        /* a map (labels), not a struct: its set has "." */
};

/* The root type of kind k's objects (k NULL: all unknown). */
struct fatia_api_fs_type fatia_api_fs_root(const struct fatia_kind *k);

enum fatia_api_fs_part {
    FATIA_FS_MAIN,   /* everything but apiVersion, kind, system metadata (and status when the
                        kind has a status subresource) */
    FATIA_FS_STATUS, /* .status only */
};

/* The field set of object obj (new reference; an empty object for nothing). leaves: an apply
 * configuration's set (leaves and list items; maps such as labels are not members themselves,
 * as structured-merge-diff's ToFieldSet); else an object's, where a map is a member too (so
 * that a diff sees a map appear or go). */
json_t *fatia_api_fs_of(const json_t *obj, const struct fatia_kind *k, enum fatia_api_fs_part part,
                        bool leaves);

enum fatia_api_fs_op {
    FATIA_FS_UNION,
    FATIA_FS_DIFF,
    FATIA_FS_INTERSECT
};

/* a op b (either may be NULL: empty); a new reference, never NULL (an empty object). */
json_t *fatia_api_fs_combine(const json_t *a, const json_t *b, enum fatia_api_fs_op op);
bool fatia_api_fs_empty(const json_t *fs);

/* The members of fs whose values differ between objects a and b (a leaf: by value; a "."
 * member: present in one only). New reference. */
json_t *fatia_api_fs_changed(const json_t *fs, const json_t *a, const json_t *b,
                             const struct fatia_kind *k);

/* What an update changed, part of old against part of new (either may be NULL): *ret_chg the
 * fields added or changed, *ret_removed those that went (new references, possibly empty). The
 * same as the set differences of fatia_api_fs_of's sets and fatia_api_fs_changed on their
 * intersection, walking only where the two differ. */
void fatia_api_fs_diff(const json_t *old, const json_t *new, const struct fatia_kind *k,
                       enum fatia_api_fs_part part, json_t **ret_chg, json_t **ret_removed);

/* Calls fn for each member of fs with its path in structured-merge-diff's notation
 * (".spec.containers[name=\"c\"].image"). */
void fatia_api_fs_paths(const json_t *fs, void (*fn)(void *arg, const char *path), void *arg);

/* Merges apply configuration cfg into live (both objects of kind k): a new tree. Members of
 * cfg replace or merge into live's by type; live's others stay. */
json_t *fatia_api_fs_merge(const json_t *live, const json_t *cfg, const struct fatia_kind *k);

/* An apply configuration may not name one item of a map list twice: 0, or -EINVAL with the
 * path and the key in why (".spec.containers: duplicate entries for key [name=\"a\"]"). */
int fatia_api_fs_check(const json_t *cfg, const struct fatia_kind *k, char *why, size_t n);

/* Removes the members of fs from obj (in place). */
void fatia_api_fs_remove(json_t *obj, const json_t *fs, const struct fatia_kind *k);

#endif
