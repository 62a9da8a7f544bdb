/*
 * model/schema.h: declarative schemas for Kubernetes objects, and the walker that applies them.
 *
 * Model: every kind fatia understands is described once, as a tree of static tables (struct
 * fatia_schema and struct fatia_field). One walker (fatia_schema_validate) uses the tables to
 *   - check types, enums, formats (DNS names, label keys, quantities, times) and ranges,
 *   - fill in upstream defaults where a field is absent (ClusterQueue queueingStrategy ->
 *     BestEffortFIFO),
 *   - warn about unknown fields (kubectl --validate=warn), never fail on them,
 *   - run a kind's cross-field rules (the CEL rules of upstream CRDs, webhook checks) through
 *     check callbacks, after the fields below them,
 * and reports every problem with its path and source position into a struct fatia_diag. The API
 * server generates its OpenAPI documents from the same tables, so kubectl's client-side view of a
 * kind and fatia's own validation cannot drift apart.
 *
 * Rejected alternative: hand-written decoders into C structs per kind. They would duplicate the
 * schema three times (decoder, validator, OpenAPI) and every engine wants its own compact layout
 * anyway; engines read validated trees, where every field has the promised type.
 *
 * Tables are built bottom-up as static const data:
 *
 *     static const struct fatia_field quota_fields[] = {
 *         {"name", &fatia_s_resource_name, FATIA_F_REQUIRED},
 *         {"nominalQuota", &fatia_s_quantity_nonneg, FATIA_F_REQUIRED},
 *         {0}};
 *     static const struct fatia_schema quota = {FATIA_T_OBJECT, .fields = quota_fields};
 */
#ifndef FATIA_MODEL_SCHEMA_H
#define FATIA_MODEL_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/buf.h"
#include "model/diag.h"
#include "model/doc.h"

enum fatia_stype {
    FATIA_T_ANY,    /* anything; kept as is, not descended into */
    FATIA_T_STRING, /* enums / format / min..max length */
    FATIA_T_INT,    /* JSON integer; min..max when FATIA_S_MIN / FATIA_S_MAX */
    FATIA_T_NUMBER, /* integer or real */
    FATIA_T_BOOL,
    FATIA_T_QUANTITY,      /* string or number parsing as a Kubernetes quantity */
    FATIA_T_INT_OR_STRING, /* integer or string (IntOrString) */
    FATIA_T_TIME,          /* RFC 3339 string */
    FATIA_T_OBJECT,        /* fields; unknown members warned about unless FATIA_S_OPEN */
    FATIA_T_ARRAY,         /* items; min..max count */
    FATIA_T_MAP,           /* string keys (key_format) to items; min..max count */
};

enum fatia_sformat {
    FATIA_FMT_NONE,
    FATIA_FMT_DNS1123_LABEL,
    FATIA_FMT_DNS1123_SUBDOMAIN,
    FATIA_FMT_DNS1035_LABEL,
    FATIA_FMT_QUALIFIED_NAME, /* label and annotation keys */
    FATIA_FMT_LABEL_VALUE,
    FATIA_FMT_RESOURCE_NAME,
};

/* fatia_schema.flags */
#define FATIA_S_NULLABLE (1u << 0) /* null is accepted (and means "unset") */
#define FATIA_S_MIN      (1u << 1) /* min applies */
#define FATIA_S_MAX      (1u << 2) /* max applies */
#define FATIA_S_NONNEG   (1u << 3) /* QUANTITY: must be >= 0 */
#define FATIA_S_OPEN     (1u << 4) /* OBJECT: unknown members are fine, kept, not warned about */
#define FATIA_S_POSITIVE (1u << 5) /* QUANTITY: must be > 0 */
/* A CustomResourceDefinition's schema (model/crd_schema.c): errors in kube-apiserver's words for
 * custom resources (kube-openapi's validator through apiextensions-apiserver: "Required value",
 * "Invalid value: 30: spec.size in body should be less than or equal to 10", ...) */
#define FATIA_S_KUBE (1u << 6)

/* fatia_field.flags */
#define FATIA_F_REQUIRED (1u << 0)

struct fatia_vctx;
struct fatia_schema;

/* A cross-field rule, run on a value of the right type after its members were checked, even if
 * some of them had errors: it must read members through type-checking accessors (fatia_json_str,
 * fatia_json_int, fatia_quantity_parse_json) and skip what is missing or mistyped. It reports
 * through fatia_verr_at / fatia_vwarn_at. */
typedef void (*fatia_check_fn)(struct fatia_vctx *ctx, json_t *v);

struct fatia_field {
    const char *name;
    const struct fatia_schema *schema;
    unsigned flags;
    const char *def; /* JSON text of the default, set when the field is absent; NULL = none */
};

/* What a CRD's schema node asks beyond the walker (model/crd_schema.c): checks a layer above makes
 * (apiserver/crd_rules.c, with src/cel), since the model may not call CEL. */
struct fatia_schema_crd {
    const char *pattern; /* STRING: an ECMA/RE2 regular expression the value must match */
    const json_t *rules; /* x-kubernetes-validations: [{rule, message, messageExpression,
                             reason, fieldPath}], borrowed from the kind's CRD */
    const json_t *node;  /* the node's JSON schema, when it has a format, exclusiveMinimum/
                            Maximum, number bounds, multipleOf or anyOf/allOf/oneOf/not */
    const char *def;     /* an array item's or map value's default (JSON text): replaces a null
                            one when the node is not nullable (members' are fatia_field.def) */
};

struct fatia_schema {
    enum fatia_stype type;
    const char *desc; /* one line, for OpenAPI and `fatia explain` */
    unsigned flags;
    enum fatia_sformat format;        /* STRING */
    enum fatia_sformat key_format;    /* MAP keys */
    const char *const *enums;         /* STRING: NULL-terminated list of allowed values */
    int64_t min, max;                 /* INT value; STRING length; ARRAY / MAP count */
    const struct fatia_field *fields; /* OBJECT: terminated by an entry with name NULL */
    const struct fatia_schema *items; /* ARRAY elements, MAP values */
    const char *list_key;             /* ARRAY of objects keyed by this member: no duplicates */
    fatia_check_fn check;
    const struct fatia_schema_crd *crd; /* NULL but in a CRD's schema with patterns or rules */
};

/* The walk's state. Create with fatia_vctx_init, release with fatia_vctx_release. */
struct fatia_vctx {
    struct fatia_diag *diag;
    const struct fatia_srcmap *map; /* NULL when the tree has no positions */
    const char *file;               /* borrowed; NULL for API bodies */
    struct fatia_srcpos obj_pos;    /* where the object starts: the fallback position */
    char object[320];               /* "clusterqueue/team-a" */
    bool apply_defaults;
    bool warn_unknown;
    /* the path to the value being checked */
    struct fatia_buf path;

    struct {
        const json_t *parent;
        const char *key; /* NULL: index into an array */
        size_t index;
        size_t path_len; /* path.len before this step */
    } stack[FATIA_DOC_MAX_DEPTH + 8];

    int depth;
    char relkeys[12][256]; /* keys of the steps of a relative report path (fatia_verr_at) */
};

void fatia_vctx_init(struct fatia_vctx *ctx, struct fatia_diag *diag,
                     const struct fatia_srcmap *map, const char *file);
void fatia_vctx_release(struct fatia_vctx *ctx);
void fatia_vctx_set_object(struct fatia_vctx *ctx, const char *object, struct fatia_srcpos pos);

/* Validates (and defaults) v against s, reporting at the current path. Returns the number of
 * errors it added. v may be modified (defaults); it is never freed or replaced. */
size_t fatia_schema_validate(struct fatia_vctx *ctx, const struct fatia_schema *s, json_t *v);

/* Reporting from check callbacks. rel is a path relative to v ("resources[0].nominalQuota", or
 * "" for v itself); the position is the deepest existing step of it. */
void fatia_verr_at(struct fatia_vctx *ctx, const json_t *v, const char *rel, const char *fmt, ...)
    FATIA_PRINTF(4, 5);
void fatia_vwarn_at(struct fatia_vctx *ctx, const json_t *v, const char *rel, const char *fmt, ...)
    FATIA_PRINTF(4, 5);

/* Path stack, for callers that walk part of a tree themselves before calling validate. */
void fatia_vctx_push_key(struct fatia_vctx *ctx, const json_t *parent, const char *key);
void fatia_vctx_push_index(struct fatia_vctx *ctx, const json_t *parent, size_t index);
void fatia_vctx_pop(struct fatia_vctx *ctx);

/* Shared leaf schemas. */
extern const struct fatia_schema fatia_s_string;
extern const struct fatia_schema fatia_s_nonempty_string;
extern const struct fatia_schema fatia_s_int;
extern const struct fatia_schema fatia_s_int32;
extern const struct fatia_schema fatia_s_int_nonneg;
extern const struct fatia_schema fatia_s_bool;
extern const struct fatia_schema fatia_s_number;
extern const struct fatia_schema fatia_s_any;
extern const struct fatia_schema fatia_s_time;
extern const struct fatia_schema fatia_s_quantity;
extern const struct fatia_schema fatia_s_quantity_nonneg;
extern const struct fatia_schema fatia_s_int_or_string;
extern const struct fatia_schema fatia_s_dns_label;
extern const struct fatia_schema fatia_s_dns_subdomain;
extern const struct fatia_schema fatia_s_qualified_name;
extern const struct fatia_schema fatia_s_resource_name;
extern const struct fatia_schema fatia_s_string_list;
extern const struct fatia_schema fatia_s_string_map;     /* string -> string, any keys */
extern const struct fatia_schema fatia_s_label_map;      /* label keys -> label values */
extern const struct fatia_schema fatia_s_annotation_map; /* qualified keys -> strings */
extern const struct fatia_schema fatia_s_resource_list;  /* resource name -> quantity >= 0 */
extern const struct fatia_schema fatia_s_label_selector; /* metav1.LabelSelector */
extern const struct fatia_schema fatia_s_toleration;
extern const struct fatia_schema fatia_s_tolerations;
extern const struct fatia_schema fatia_s_taint;
extern const struct fatia_schema fatia_s_taints;
extern const struct fatia_schema fatia_s_object_meta;
extern const struct fatia_schema fatia_s_condition;
extern const struct fatia_schema fatia_s_conditions;

/* Human name of a schema type, for messages: "string", "integer", "quantity", ... */
const char *fatia_stype_name(enum fatia_stype t);

#endif
