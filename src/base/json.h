/*
 * base/json.h: helpers over jansson, fatia's one JSON tree type.
 *
 * Every object in fatia is a jansson json_t tree: decoded from YAML or JSON, validated and
 * defaulted by the model layer's schemas, stored as JSON text, served unchanged. Policy engines
 * read validated trees into compact structs of their own. These helpers are the small pieces
 * every layer needs; all of them borrow their arguments and return borrowed references unless
 * they say otherwise.
 *
 * Numbers: jansson keeps integers as int64 and others as double. A quantity written as a bare
 * number (`cpu: 0.1`) must stay exact, so fatia_json_number_text() prints a real with the fewest
 * digits that read back to the same double ("0.1", not "0.10000000000000001"): that is the text
 * the user wrote whenever it had 17 significant digits or fewer.
 */
#ifndef FATIA_BASE_JSON_H
#define FATIA_BASE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"

/* "string", "integer", "number", "boolean", "null", "object", "array". */
const char *fatia_json_type_name(const json_t *v);

/* Text of a number value (integer or real) into buf. Returns 0, or -EINVAL if v is no number. */
int fatia_json_number_text(const json_t *v, char *buf, size_t n);

/* Looks up a dotted path with optional indexes: "spec.resourceGroups[0].flavors". NULL when any
 * step is missing or of the wrong type. */
json_t *fatia_json_path(const json_t *root, const char *path);

/* Member access that tolerates a NULL or non-object parent. */
const char *fatia_json_str(const json_t *obj, const char *key);        /* NULL if not a string */
bool fatia_json_int(const json_t *obj, const char *key, int64_t *ret); /* false if not an integer */
bool fatia_json_bool(const json_t *obj, const char *key, bool def);

/* Gets obj[key] as an object/array, creating it when absent. NULL on OOM or when a member of
 * another type is in the way. */
json_t *fatia_json_object_ensure(json_t *obj, const char *key);
json_t *fatia_json_array_ensure(json_t *obj, const char *key);

/* Appends compact (flags as json_dumps) JSON text of v to b. 0, -ENOMEM or -FATIA_E_LIMIT. */
int fatia_json_dump_buf(const json_t *v, struct fatia_buf *b, size_t flags);
/* json_dump_callback(v, .., flags)'s bytes appended to b, by json_enc.c's encoder where flags
 * are JSON_COMPACT [| JSON_REAL_PRECISION(n)] and v an object or array (jansson otherwise);
 * 0, or -ENOMEM with b as it was (also for what jansson cannot dump: invalid UTF-8). */
int fatia_json_encode_compact(const json_t *v, struct fatia_buf *b, size_t flags);

/* json_loadb(p, n, flags, err)'s tree, or its NULL with its error, by json_dec.c's parser where
 * that is certain (flags within JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, and
 * the common text: ASCII and valid UTF-8 strings, escapes, integers) and by json_loadb itself
 * for everything else, errors included. A new reference, or NULL. */
json_t *fatia_json_loadb(const char *p, size_t n, size_t flags, json_error_t *err);
/* json_dec.c's parser alone: json_loadb's tree, or NULL where it gives the input to jansson
 * (tests/unit/test_json_dec.c checks how often it does). */
json_t *fatia_json_loadb_fast(const char *p, size_t n, size_t flags);

/* Deep equality that treats 1 and 1.0 as equal (jansson's json_equal does not). */
bool fatia_json_equal(const json_t *a, const json_t *b);

#endif
