/*
 * apiserver/pb_schema.h: the shape of the Kubernetes protobuf message tables that scripts/pb-gen
 * generates (pb_schema.c) from the upstream .proto files in third_party/k8s-api-proto.
 */
#ifndef FATIA_APISERVER_PB_SCHEMA_H
#define FATIA_APISERVER_PB_SCHEMA_H

#include <stddef.h>
#include <stdint.h>

enum fatia_pb_kind {
    FATIA_PB_STRING,
    FATIA_PB_BYTES,
    FATIA_PB_BOOL,
    FATIA_PB_INT32,
    FATIA_PB_INT64,
    FATIA_PB_UINT32,
    FATIA_PB_UINT64,
    FATIA_PB_SINT32,
    FATIA_PB_SINT64,
    FATIA_PB_DOUBLE,
    FATIA_PB_FLOAT,
    FATIA_PB_FIXED32,
    FATIA_PB_FIXED64,
    FATIA_PB_MESSAGE,
};

enum fatia_pb_label {
    FATIA_PB_ONE,
    FATIA_PB_REPEATED,
    FATIA_PB_MAP,    /* map<string, kind> */
    FATIA_PB_INLINE, /* a message whose members are the parent's in JSON (Go's ",inline") */
};

/* Messages whose JSON form is not an object of their fields (apimachinery's own marshalers). */
enum fatia_pb_special {
    FATIA_PB_SP_NONE,
    FATIA_PB_SP_TIME,        /* {1 seconds, 2 nanos} <-> "2006-01-02T15:04:05Z" */
    FATIA_PB_SP_MICROTIME,   /* the same <-> "2006-01-02T15:04:05.000000Z" */
    FATIA_PB_SP_DURATION,    /* {1 nanoseconds} <-> Go's "1h2m3s" */
    FATIA_PB_SP_RAWJSON,     /* {1 bytes} holding JSON (FieldsV1, RawExtension) <-> that JSON */
    FATIA_PB_SP_QUANTITY,    /* {1 string} <-> the string */
    FATIA_PB_SP_INTORSTRING, /* {1 type, 2 intVal, 3 strVal} <-> a number or a string */
    FATIA_PB_SP_STRLIST,     /* {repeated string items = 1} <-> an array of strings */
};

struct fatia_pb_field {
    uint32_t num;
    uint8_t kind;  /* enum fatia_pb_kind (of the value, for a map) */
    uint8_t label; /* enum fatia_pb_label */
    int16_t msg;   /* index in fatia_api_pb_msgs of a FATIA_PB_MESSAGE, else -1 */
    const char *name;
};

struct fatia_pb_msg {
    const char *name;                    /* "k8s.io.api.core.v1.Pod" */
    const struct fatia_pb_field *fields; /* sorted by num */
    uint8_t special;                     /* enum fatia_pb_special */
    uint16_t n_fields;
};

/* Sorted by name. */
extern const struct fatia_pb_msg fatia_api_pb_msgs[];
extern const size_t fatia_api_pb_n_msgs;

#endif
