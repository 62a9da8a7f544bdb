/*
 * model/doc.h: reading manifests (multi-document YAML, JSON) into jansson trees with positions.
 *
 * Model: a docset is what one command read: the documents of every file (in file order, then
 * document order), each a json_t tree, plus a source map that remembers the line and column of
 * every member and element. Errors found later (validation, admission) point back into the file
 * through the map. The tree type is jansson's because everything downstream (schemas, store, API)
 * speaks it; positions live beside the tree rather than in it, so that trees built from API bodies
 * (no positions) and from files (positions) are the same type.
 *
 * The map is keyed by (parent container, member key or element index), not by value pointer:
 * jansson shares one singleton for every true, false and null, so a value's own address does not
 * identify a place.
 *
 * YAML is resolved like sigs.k8s.io/yaml (go-yaml v2), so a manifest means here what it means to
 * kubectl: plain scalars null/~/"" -> null; true/false/yes/no/on/off/y/n in any of their cases ->
 * boolean; integers (decimal, 0x, 0o, 0 octal) -> integer; floats -> real; anything else, and every
 * quoted scalar, -> string. Anchors and aliases are expanded (bounded: a document may expand to at
 * most FATIA_DOC_MAX_NODES nodes). Duplicate keys in a mapping are an error. Empty documents are
 * skipped; a `kind: List` document is expanded into its items, as kubectl does.
 */
#ifndef FATIA_MODEL_DOC_H
#define FATIA_MODEL_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/diag.h"

#define FATIA_DOC_MAX_FILE_BYTES (64u << 20)
#define FATIA_DOC_MAX_NODES      (1u << 20)
#define FATIA_DOC_MAX_DEPTH      128

struct fatia_srcpos {
    uint32_t line; /* 1-based; 0 = unknown */
    uint32_t col;  /* 1-based */
};

struct fatia_srcmap;

struct fatia_doc {
    json_t *root;     /* owned reference */
    const char *file; /* borrowed from the docset; "-" for stdin */
    struct fatia_srcpos pos;
    unsigned index; /* 0-based position in its file */
};

struct fatia_docset {
    struct fatia_doc *docs;
    size_t n, cap;
    char **files;
    size_t n_files, files_cap;
    struct fatia_srcmap *map;
};

void fatia_docset_init(struct fatia_docset *set);
void fatia_docset_release(struct fatia_docset *set);

/* Loads a file, a directory (its *.yaml, *.yml and *.json files in name order; with recursive,
 * subdirectories too), or "-" (stdin). Syntax errors go to diag with their position and the
 * function goes on with the next document where the parser can. Returns 0 when everything read
 * parsed, -FATIA_E_PARSE when diag got errors, -ENOENT/-EACCES/... when a path cannot be read
 * (also reported in diag), -ENOMEM. */
int fatia_docset_load_path(struct fatia_docset *set, const char *path, bool recursive,
                           struct fatia_diag *diag);

/* Loads an in-memory buffer under a display name. Same returns. */
int fatia_docset_load_buf(struct fatia_docset *set, const char *name, const char *data, size_t n,
                          struct fatia_diag *diag);

/* Position of parent's member key (key != NULL) or element index (key == NULL). */
bool fatia_srcmap_member(const struct fatia_srcmap *map, const json_t *parent, const char *key,
                         size_t index, struct fatia_srcpos *ret);

/* Parses one YAML or JSON text into a single tree, without positions (API bodies, tests).
 * Multi-document input is refused. Returns 0, -FATIA_E_PARSE (why says where), -ENOMEM. */
int fatia_yaml_parse(const char *data, size_t n, json_t **ret, char *why, size_t why_n);

/* Appends the YAML form of v to out (block style, keys in the object's order, strings quoted
 * when they would read back as something else). */
int fatia_yaml_dump(const json_t *v, struct fatia_buf *out);

#endif
