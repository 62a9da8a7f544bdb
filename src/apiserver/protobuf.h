/*
 * apiserver/protobuf.h: application/vnd.kubernetes.protobuf, to and from the JSON trees fatiad
 * serves (protobuf.c; the message tables are pb_schema.c, generated from the upstream .proto).
 */
#ifndef FATIA_APISERVER_PROTOBUF_H
#define FATIA_APISERVER_PROTOBUF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "apiserver/pb_schema.h"
#include "base/buf.h"

#define FATIA_API_PB_MEDIA "application/vnd.kubernetes.protobuf"

/* The message of a full name ("k8s.io.api.core.v1.Pod"); NULL if none. */
const struct fatia_pb_msg *fatia_api_pb_find(const char *name);
/* The message of a kind of an apiVersion ("batch/v1", "Job"): built-in kinds only; NULL for
 * the others (custom resources, Table), which speak JSON only. */
const struct fatia_pb_msg *fatia_api_pb_for_kind(const char *api_version, const char *kind);

/* One message's bytes -> its JSON form (no apiVersion/kind). Unknown fields are skipped; a
 * malformed message is -EINVAL with why filled. */
int fatia_api_pb_decode(const struct fatia_pb_msg *m, const void *p, size_t n, json_t **ret,
                        char *why, size_t why_n);
/* A JSON object -> the message's bytes, appended to out. Members the message lacks are left
 * out (fatia's own fields of a built-in kind have no number). */
int fatia_api_pb_encode(const struct fatia_pb_msg *m, const json_t *v, struct fatia_buf *out);

/* The "k8s\0" + runtime.Unknown envelope. unwrap: -> the object, apiVersion and kind set from
 * the envelope's typeMeta; -ENOENT when the kind has no message (why says which). */
int fatia_api_pb_unwrap(const void *p, size_t n, json_t **ret, char *why, size_t why_n);
/* obj (with apiVersion and kind) -> the envelope, appended to out; -ENOENT if no message. */
int fatia_api_pb_wrap(const json_t *obj, struct fatia_buf *out);

/* One watch event as a protobuf watch stream carries it: a 4-byte big-endian length, then a
 * meta/v1 WatchEvent {1 type, 2 object: RawExtension {1 raw: the enveloped object}}; appended
 * to out. -ENOENT if the object's kind has no message. */
int fatia_api_pb_watch_frame(const char *type, const json_t *obj, struct fatia_buf *out);

/* Whether an Accept header's choice is protobuf (pb_negotiate.c); false for JSON/YAML/any. */
bool fatia_api_pb_accepted(const char *accept, size_t n);

/* Drops the zero-valued members of a decoded body that schema does not know (pb_prune.c). */
struct fatia_schema;
void fatia_api_pb_prune_zeros(json_t *obj, const struct fatia_schema *schema);

#endif
