/*
 * apiserver/openapi_pb.c: the OpenAPI v2 document in protocol buffers, as kubectl fetches it.
 *
 * client-go asks /openapi/v2 for application/com.github.proto-openapi.spec.v2@v1.0+protobuf
 * only (no JSON fallback), and `kubectl apply` of kubectl 1.27 fails without it. The message is
 * gnostic's openapi.v2.Document (github.com/google/gnostic-models, OpenAPIv2.proto). This file
 * encodes the JSON swagger document openapi.c built into that message, walking it with small
 * tables of (JSON member -> field number, kind). Vendor extensions (x-...) become NamedAny with
 * their value as YAML text, which is how gnostic carries them.
 *
 * Only the parts of Swagger 2.0 that openapi.c produces are mapped: info, paths with their
 * operations (tags, operationId, consumes, parameters, responses), definitions with type,
 * format, description, enum, bounds, required, properties, items, additionalProperties and
 * $ref. Anything else is skipped, never guessed.
 */
#include "base/compat.h"

#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "model/doc.h"

enum pbkind {
    PB_STRING,    /* string */
    PB_BOOL,      /* bool (varint) */
    PB_INT64,     /* int64 (varint) */
    PB_DOUBLE,    /* double (fixed64) */
    PB_STRINGS,   /* repeated string from a JSON array */
    PB_MSG,       /* a message from a JSON object */
    PB_NAMED_MAP, /* a JSON object -> repeated Named{name=1, value=2 msg}; wrapped (see wrap) */
    PB_MSGS,      /* repeated message from a JSON array */
    PB_ANYS,      /* repeated Any{yaml=2} from a JSON array */
    PB_TYPEITEM,  /* string -> TypeItem{value=1 repeated string} */
    PB_ITEMS,     /* object -> ItemsItem{schema=1 repeated Schema} */
    PB_ADDPROPS,  /* object -> AdditionalPropertiesItem{schema=1}, bool -> {boolean=2} */
    PB_PARAMS,    /* array of parameters -> repeated ParametersItem */
    PB_RESPONSES, /* object of code -> response -> Responses */
};

struct pbmsg;

struct pbfield {
    const char *json;
    int num;
    enum pbkind kind;
    const struct pbmsg *msg; /* PB_MSG, PB_NAMED_MAP (the value's), PB_MSGS */
    int wrap; /* PB_NAMED_MAP: the field number of the repeated Named inside a wrapper message
                 (Definitions.additional_properties = 1, Paths.path = 2); 0: no wrapper */
};

struct pbmsg {
    const struct pbfield *fields;
    int vendor; /* field number of repeated NamedAny vendor_extension; 0: none */
};

struct pbctx {
    int depth;
};

static int put_varint(struct fatia_buf *b, uint64_t v)
{
    unsigned char tmp[10];
    size_t n = 0;

    do {
        tmp[n] = (unsigned char)(v & 0x7f);
        v >>= 7;
        if (v)
            tmp[n] |= 0x80;
        n++;
    } while (v);
    return fatia_buf_append(b, tmp, n);
}

static int put_tag(struct fatia_buf *b, int num, int wire)
{
    return put_varint(b, ((uint64_t)num << 3) | (uint64_t)wire);
}

static int put_bytes(struct fatia_buf *b, int num, const void *p, size_t n)
{
    int r = put_tag(b, num, 2);

    r = r ? r : put_varint(b, n);
    return r ? r : fatia_buf_append(b, p, n);
}

static int put_str(struct fatia_buf *b, int num, const char *s)
{
    return put_bytes(b, num, s, strlen(s));
}

/* Appends a nested message: encodes it with fn into a scratch buffer, then as bytes. */
static int put_sub(struct fatia_buf *b, int num, const struct fatia_buf *sub)
{
    return put_bytes(b, num, sub->p, sub->len);
}

static int encode_msg(struct fatia_buf *b, const struct pbmsg *m, const json_t *v,
                      struct pbctx *cx);

/* Any{yaml=2} of a JSON value. */
static int encode_any(struct fatia_buf *b, const json_t *v)
{
    struct fatia_buf y = FATIA_BUF_INIT;
    int r = fatia_yaml_dump(v, &y);

    if (r == 0 && (y.len == 0 || y.p[y.len - 1] != '\n'))
        r = fatia_buf_putc(&y, '\n');
    r = r ? r : put_bytes(b, 2, y.p, y.len);
    fatia_buf_release(&y);
    return r;
}

static int put_named_any(struct fatia_buf *b, int num, const char *name, const json_t *v)
{
    struct fatia_buf na = FATIA_BUF_INIT, any = FATIA_BUF_INIT;
    int r = put_str(&na, 1, name);

    r = r ? r : encode_any(&any, v);
    r = r ? r : put_sub(&na, 2, &any);
    r = r ? r : put_sub(b, num, &na);
    fatia_buf_release(&na);
    fatia_buf_release(&any);
    return r;
}

/* ---- the message tables ---- */

extern const struct pbmsg fatia_api_pb_schema;

static const struct pbfield info_f[] = {
    {"title", 1, PB_STRING, NULL, 0}, {"version", 2, PB_STRING, NULL, 0}, {NULL, 0, 0, NULL, 0}};
static const struct pbmsg pb_info = {info_f, 7};

static const struct pbfield schema_f[] = {{"$ref", 1, PB_STRING, NULL, 0},
                                          {"format", 2, PB_STRING, NULL, 0},
                                          {"description", 4, PB_STRING, NULL, 0},
                                          {"maximum", 7, PB_DOUBLE, NULL, 0},
                                          {"minimum", 9, PB_DOUBLE, NULL, 0},
                                          {"maxLength", 11, PB_INT64, NULL, 0},
                                          {"minLength", 12, PB_INT64, NULL, 0},
                                          {"maxItems", 14, PB_INT64, NULL, 0},
                                          {"minItems", 15, PB_INT64, NULL, 0},
                                          {"required", 19, PB_STRINGS, NULL, 0},
                                          {"enum", 20, PB_ANYS, NULL, 0},
                                          {"additionalProperties", 21, PB_ADDPROPS, NULL, 0},
                                          {"type", 22, PB_TYPEITEM, NULL, 0},
                                          {"items", 23, PB_ITEMS, NULL, 0},
                                          {"properties", 25, PB_NAMED_MAP, &fatia_api_pb_schema, 1},
                                          {NULL, 0, 0, NULL, 0}};
const struct pbmsg fatia_api_pb_schema = {schema_f, 31};

static const struct pbfield operation_f[] = {
    {"tags", 1, PB_STRINGS, NULL, 0},        {"operationId", 5, PB_STRING, NULL, 0},
    {"consumes", 7, PB_STRINGS, NULL, 0},    {"parameters", 8, PB_PARAMS, NULL, 0},
    {"responses", 9, PB_RESPONSES, NULL, 0}, {NULL, 0, 0, NULL, 0}};
static const struct pbmsg pb_operation = {operation_f, 13};

static const struct pbfield pathitem_f[] = {
    {"get", 2, PB_MSG, &pb_operation, 0},   {"put", 3, PB_MSG, &pb_operation, 0},
    {"post", 4, PB_MSG, &pb_operation, 0},  {"delete", 5, PB_MSG, &pb_operation, 0},
    {"patch", 8, PB_MSG, &pb_operation, 0}, {NULL, 0, 0, NULL, 0}};
static const struct pbmsg pb_pathitem = {pathitem_f, 10};

static const struct pbfield document_f[] = {
    {"swagger", 1, PB_STRING, NULL, 0},
    {"info", 2, PB_MSG, &pb_info, 0},
    {"paths", 8, PB_NAMED_MAP, &pb_pathitem, 2},
    {"definitions", 9, PB_NAMED_MAP, &fatia_api_pb_schema, 1},
    {NULL, 0, 0, NULL, 0}};
static const struct pbmsg pb_document = {document_f, 16};

/* ---- special shapes ---- */

static int encode_param(struct fatia_buf *b, const json_t *p, struct pbctx *cx)
{
    struct fatia_buf inner = FATIA_BUF_INIT, param = FATIA_BUF_INIT, item = FATIA_BUF_INIT;
    const char *in = fatia_json_str(p, "in"), *name = fatia_json_str(p, "name");
    int r = 0;

    if (!in || !name)
        return 0;
    if (!strcmp(in, "body")) {
        /* BodyParameter{name=2, in=3, required=4, schema=5} */
        struct fatia_buf sch = FATIA_BUF_INIT;
        r = put_str(&inner, 2, name);
        r = r ? r : put_str(&inner, 3, in);
        if (!r && json_is_true(json_object_get(p, "required")))
            r = put_tag(&inner, 4, 0) ? -ENOMEM : put_varint(&inner, 1);
        r = r ? r : encode_msg(&sch, &fatia_api_pb_schema, json_object_get(p, "schema"), cx);
        r = r ? r : put_sub(&inner, 5, &sch);
        fatia_buf_release(&sch);
        r = r ? r : put_sub(&param, 1, &inner);
    } else {
        /* NonBodyParameter{query=3 | path=4}: required=1, in=2, name=4, type=6 (query) / 5 */
        struct fatia_buf nb = FATIA_BUF_INIT;
        bool path = !strcmp(in, "path");
        const char *type = fatia_json_str(p, "type");
        if (json_is_true(json_object_get(p, "required"))) {
            r = put_tag(&inner, 1, 0);
            r = r ? r : put_varint(&inner, 1);
        }
        r = r ? r : put_str(&inner, 2, in);
        r = r ? r : put_str(&inner, 4, name);
        if (type)
            r = r ? r : put_str(&inner, path ? 5 : 6, type);
        r = r ? r : put_sub(&nb, path ? 4 : 3, &inner);
        r = r ? r : put_sub(&param, 2, &nb);
        fatia_buf_release(&nb);
    }
    r = r ? r : put_sub(&item, 1, &param);
    r = r ? r : put_sub(b, 8, &item);
    fatia_buf_release(&inner);
    fatia_buf_release(&param);
    fatia_buf_release(&item);
    return r;
}

static int encode_responses(struct fatia_buf *b, const json_t *resp, struct pbctx *cx)
{
    struct fatia_buf all = FATIA_BUF_INIT;
    const char *code;
    json_t *v;
    int r = 0;

    json_object_foreach((json_t *)resp, code, v)
    {
        struct fatia_buf response = FATIA_BUF_INIT, rv = FATIA_BUF_INIT, named = FATIA_BUF_INIT,
                         item = FATIA_BUF_INIT, sch = FATIA_BUF_INIT;
        const char *desc = fatia_json_str(v, "description");
        r = put_str(&response, 1, desc ? desc : "");
        if (!r && json_object_get(v, "schema")) {
            r = encode_msg(&sch, &fatia_api_pb_schema, json_object_get(v, "schema"), cx);
            r = r ? r : put_sub(&item, 1, &sch);      /* SchemaItem.schema */
            r = r ? r : put_sub(&response, 2, &item); /* Response.schema */
        }
        r = r ? r : put_sub(&rv, 1, &response); /* ResponseValue.response */
        r = r ? r : put_str(&named, 1, code);   /* NamedResponseValue.name */
        r = r ? r : put_sub(&named, 2, &rv);    /* .value */
        r = r ? r : put_sub(&all, 1, &named);   /* Responses.response_code */
        fatia_buf_release(&response);
        fatia_buf_release(&rv);
        fatia_buf_release(&named);
        fatia_buf_release(&item);
        fatia_buf_release(&sch);
        if (r)
            break;
    }
    r = r ? r : put_sub(b, 9, &all);
    fatia_buf_release(&all);
    return r;
}

static int encode_field(struct fatia_buf *b, const struct pbfield *f, const json_t *v,
                        struct pbctx *cx)
{
    struct fatia_buf sub = FATIA_BUF_INIT;
    size_t i;
    json_t *el;
    const char *key;
    int r = 0;

    switch (f->kind) {
    case PB_STRING:
        if (json_is_string(v))
            r = put_str(b, f->num, json_string_value(v));
        break;
    case PB_BOOL:
        if (json_is_true(v)) {
            r = put_tag(b, f->num, 0);
            r = r ? r : put_varint(b, 1);
        }
        break;
    case PB_INT64:
        if (json_is_integer(v)) {
            r = put_tag(b, f->num, 0);
            r = r ? r : put_varint(b, (uint64_t)json_integer_value(v));
        }
        break;
    case PB_DOUBLE:
        if (json_is_number(v)) {
            double d = json_number_value(v);
            uint64_t bits;
            memcpy(&bits, &d, sizeof(bits));
            unsigned char le[8];
            for (int k = 0; k < 8; k++)
                le[k] = (unsigned char)(bits >> (8 * k));
            r = put_tag(b, f->num, 1);
            r = r ? r : fatia_buf_append(b, le, 8);
        }
        break;
    case PB_STRINGS:
        json_array_foreach(v, i, el) if (json_is_string(el) && r == 0) r =
            put_str(b, f->num, json_string_value(el));
        break;
    case PB_MSG:
        r = encode_msg(&sub, f->msg, v, cx);
        r = r ? r : put_sub(b, f->num, &sub);
        break;
    case PB_MSGS:
        json_array_foreach(v, i, el)
        {
            fatia_buf_reset(&sub);
            r = r ? r : encode_msg(&sub, f->msg, el, cx);
            r = r ? r : put_sub(b, f->num, &sub);
        }
        break;
    case PB_ANYS:
        json_array_foreach(v, i, el)
        {
            fatia_buf_reset(&sub);
            r = r ? r : encode_any(&sub, el);
            r = r ? r : put_sub(b, f->num, &sub);
        }
        break;
    case PB_NAMED_MAP: {
        struct fatia_buf wrapper = FATIA_BUF_INIT;
        json_object_foreach((json_t *)v, key, el)
        {
            struct fatia_buf named = FATIA_BUF_INIT, val = FATIA_BUF_INIT;
            r = r ? r : put_str(&named, 1, key);
            r = r ? r : encode_msg(&val, f->msg, el, cx);
            r = r ? r : put_sub(&named, 2, &val);
            r = r ? r : put_sub(&wrapper, f->wrap, &named);
            fatia_buf_release(&named);
            fatia_buf_release(&val);
        }
        r = r ? r : put_sub(b, f->num, &wrapper);
        fatia_buf_release(&wrapper);
        break;
    }
    case PB_TYPEITEM:
        if (json_is_string(v)) {
            r = put_str(&sub, 1, json_string_value(v));
            r = r ? r : put_sub(b, f->num, &sub);
        }
        break;
    case PB_ITEMS:
        if (json_is_object(v)) {
            struct fatia_buf sch = FATIA_BUF_INIT;
            r = encode_msg(&sch, &fatia_api_pb_schema, v, cx);
            r = r ? r : put_sub(&sub, 1, &sch);
            r = r ? r : put_sub(b, f->num, &sub);
            fatia_buf_release(&sch);
        }
        break;
    case PB_ADDPROPS:
        if (json_is_object(v)) {
            struct fatia_buf sch = FATIA_BUF_INIT;
            r = encode_msg(&sch, &fatia_api_pb_schema, v, cx);
            r = r ? r : put_sub(&sub, 1, &sch);
            fatia_buf_release(&sch);
        } else if (json_is_boolean(v)) {
            r = put_tag(&sub, 2, 0);
            r = r ? r : put_varint(&sub, json_is_true(v));
        }
        r = r ? r : put_sub(b, f->num, &sub);
        break;
    case PB_PARAMS:
        json_array_foreach(v, i, el) if (r == 0) r = encode_param(b, el, cx);
        break;
    case PB_RESPONSES:
        if (json_is_object(v))
            r = encode_responses(b, v, cx);
        break;
    }
    fatia_buf_release(&sub);
    return r;
}

static int encode_msg(struct fatia_buf *b, const struct pbmsg *m, const json_t *v, struct pbctx *cx)
{
    const char *key;
    json_t *el;
    int r = 0;

    if (!json_is_object(v))
        return 0;
    if (++cx->depth > 64) {
        cx->depth--;
        return -FATIA_E_LIMIT;
    }
    /* fields in table order, so the encoding is deterministic */
    for (const struct pbfield *f = m->fields; f->json && r == 0; f++) {
        json_t *fv = json_object_get(v, f->json);
        if (fv)
            r = encode_field(b, f, fv, cx);
    }
    if (m->vendor) {
        json_object_foreach((json_t *)v, key, el)
        {
            if (r == 0 && !strncmp(key, "x-", 2))
                r = put_named_any(b, m->vendor, key, el);
        }
    }
    cx->depth--;
    return r;
}

/* The protobuf form of a swagger 2.0 JSON document. */

int fatia_api_openapi_v2_protobuf(const json_t *doc, struct fatia_buf *out)
{
    struct pbctx cx = {0};

    return encode_msg(out, &pb_document, doc, &cx);
}
