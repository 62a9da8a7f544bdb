/*
 * model/kinds/config.c: core v1 ConfigMap, Secret and ServiceAccount (k8s.io/api/core/v1).
 *
 * Rules taken from upstream (pkg/apis/core/validation: ValidateConfigMap, ValidateSecret,
 * ValidateServiceAccount): data keys are "config keys" (IsConfigMapKey: [-._a-zA-Z0-9]+, at most
 * 253, not "." or ".."), a key may not be in both data and binaryData, and the whole payload is
 * at most 1 MiB; a Secret's data values are base64 (the JSON form of []byte); a Secret of a
 * well-known type carries the keys that type requires (kubernetes.io/tls: tls.crt and tls.key,
 * dockerconfigjson: .dockerconfigjson, basic-auth and ssh-auth theirs).
 *
 * stringData is write-only, as upstream: the check callback merges it into data (base64 encoded;
 * a stringData key wins over the same data key) and removes it, so the stored and served object
 * never has stringData. That is a conversion, done here because this is the one place every write
 * of a Secret passes through (create, update, patch, apply, `fatia validate`); the walker calls
 * checks after the members were validated, so the merged values need no second check.
 *
 * Not done (said in docs/apiserver.md): `immutable: true` is stored but updates of data are not
 * refused yet (that needs the old object, which the schema walk does not see).
 */
#include "base/compat.h"

#include <ctype.h>

#include "base/buf.h"
#include "base/json.h"
#include "model/kinds/kinds.h"

#define ANY(name)                   \
    {                               \
        name, &fatia_s_any, 0, NULL \
    }

#define MAX_PAYLOAD (1u << 20)

static bool is_config_key(const char *k)
{
    size_t n = strlen(k);

    if (n == 0 || n > 253 || !strcmp(k, ".") || !strcmp(k, ".."))
        return false;
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
            return false;
    return true;
}

static int b64_val(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Standard base64 with padding, as Go's encoding/json decodes []byte. The decoded size goes to
 * *ret_n. */
static bool is_base64(const char *s, size_t *ret_n)
{
    size_t n = strlen(s), pad = 0;

    if (n % 4)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '=') {
            if (i < n - 2)
                return false;
            pad++;
        } else if (pad || b64_val((unsigned char)s[i]) < 0) {
            return false;
        }
    }
    *ret_n = n / 4 * 3 - pad;
    return true;
}

static void b64_encode(const unsigned char *in, size_t n, struct fatia_buf *out)
{
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    for (size_t i = 0; i < n; i += 3) {
        unsigned v = (unsigned)in[i] << 16;
        if (i + 1 < n)
            v |= (unsigned)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        fatia_buf_putc(out, tbl[(v >> 18) & 63]);
        fatia_buf_putc(out, tbl[(v >> 12) & 63]);
        fatia_buf_putc(out, i + 1 < n ? tbl[(v >> 6) & 63] : '=');
        fatia_buf_putc(out, i + 2 < n ? tbl[v & 63] : '=');
    }
}

/* Keys of m (an object) that are not config keys are errors at rel[key]. */
static void check_keys(struct fatia_vctx *ctx, json_t *obj, const char *member)
{
    json_t *m = json_object_get(obj, member), *v;
    const char *key;
    char path[300];

    json_object_foreach(m, key, v)
    {
        if (!is_config_key(key)) {
            snprintf(path, sizeof(path), "%s[%s]", member, key);
            fatia_verr_at(ctx, obj, path,
                          "a valid config key must consist of alphanumeric characters, '-', '_' "
                          "or '.' (e.g. 'key.name'), at most 253 characters");
        }
    }
}

/* ---- ConfigMap ---- */

static void check_configmap(struct fatia_vctx *ctx, json_t *cm)
{
    json_t *data = json_object_get(cm, "data"), *bin = json_object_get(cm, "binaryData"), *v;
    const char *key;
    size_t total = 0, n;
    char path[300];

    check_keys(ctx, cm, "data");
    check_keys(ctx, cm, "binaryData");
    json_object_foreach(data, key, v)
    {
        if (json_is_string(v))
            total += strlen(key) + json_string_length(v);
        if (json_object_get(bin, key)) {
            snprintf(path, sizeof(path), "data[%s]", key);
            fatia_verr_at(ctx, cm, path, "duplicate of key present in binaryData");
        }
    }
    json_object_foreach(bin, key, v)
    {
        if (!json_is_string(v))
            continue;
        snprintf(path, sizeof(path), "binaryData[%s]", key);
        if (!is_base64(json_string_value(v), &n))
            fatia_verr_at(ctx, cm, path, "illegal base64 data");
        else
            total += strlen(key) + n;
    }
    if (total > MAX_PAYLOAD)
        fatia_verr_at(ctx, cm, "", "too long: the data of a ConfigMap may not exceed %u bytes",
                      MAX_PAYLOAD);
}

static const struct fatia_schema base64_map = {FATIA_T_MAP, "Values are base64 encoded",
                                               .items = &fatia_s_string};

static const struct fatia_field configmap_fields[] = {FATIA_OBJECT_FIELDS,
                                                      {"data", &fatia_s_string_map, 0, NULL},
                                                      {"binaryData", &base64_map, 0, NULL},
                                                      {"immutable", &fatia_s_bool, 0, NULL},
                                                      {0}};
static const struct fatia_column configmap_columns[] = {
    {"Data", "integer", NULL, 0, "Number of keys", fatia_print_data_count}, {NULL}};
const struct fatia_kind fatia_kind_configmap = {
    .group = "",
    .version = "v1",
    .kind = "ConfigMap",
    .plural = "configmaps",
    .singular = "configmap",
    .short_names = (const char *const[]){"cm", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = configmap_fields,
                                           .check = check_configmap},
    .columns = configmap_columns};

/* ---- Secret ---- */

static const struct {
    const char *type;
    const char *keys[3];
} required_keys[] = {
    {"kubernetes.io/tls", {"tls.crt", "tls.key", NULL}},
    {"kubernetes.io/dockerconfigjson", {".dockerconfigjson", NULL, NULL}},
    {"kubernetes.io/dockercfg", {".dockercfg", NULL, NULL}},
    {"kubernetes.io/ssh-auth", {"ssh-privatekey", NULL, NULL}},
};

static void merge_string_data(json_t *secret)
{
    json_t *sd = json_object_get(secret, "stringData"), *v, *data;
    const char *key;

    if (!json_is_object(sd))
        return;
    data = fatia_json_object_ensure(secret, "data");
    if (!data)
        return;
    json_object_foreach(sd, key, v)
    {
        struct fatia_buf b = FATIA_BUF_INIT;
        if (!json_is_string(v))
            continue;
        b64_encode((const unsigned char *)json_string_value(v), json_string_length(v), &b);
        json_object_set_new(data, key, json_string(b.p));
        fatia_buf_release(&b);
    }
    json_object_del(secret, "stringData");
}

static void check_secret(struct fatia_vctx *ctx, json_t *s)
{
    json_t *data = json_object_get(s, "data"), *v;
    const char *type = fatia_json_str(s, "type"), *key;
    size_t total = 0, n;
    char path[300];

    check_keys(ctx, s, "data");
    check_keys(ctx, s, "stringData");
    json_object_foreach(data, key, v)
    {
        if (!json_is_string(v))
            continue;
        snprintf(path, sizeof(path), "data[%s]", key);
        if (!is_base64(json_string_value(v), &n))
            fatia_verr_at(ctx, s, path, "illegal base64 data");
        else
            total += strlen(key) + n;
    }
    json_object_foreach(json_object_get(s, "stringData"), key, v)
    {
        if (json_is_string(v))
            total += strlen(key) + json_string_length(v);
    }
    if (total > MAX_PAYLOAD)
        fatia_verr_at(ctx, s, "", "too long: the data of a Secret may not exceed %u bytes",
                      MAX_PAYLOAD);
    for (size_t i = 0; type && i < sizeof(required_keys) / sizeof(required_keys[0]); i++) {
        if (strcmp(type, required_keys[i].type))
            continue;
        for (const char *const *k = required_keys[i].keys; *k; k++) {
            if (!json_object_get(data, *k) &&
                !json_object_get(json_object_get(s, "stringData"), *k)) {
                snprintf(path, sizeof(path), "data[%s]", *k);
                fatia_verr_at(ctx, s, path, "required field is missing (type %s)", type);
            }
        }
    }
    if (type && !strcmp(type, "kubernetes.io/basic-auth") && !json_object_get(data, "username") &&
        !json_object_get(data, "password") &&
        !json_object_get(json_object_get(s, "stringData"), "username") &&
        !json_object_get(json_object_get(s, "stringData"), "password"))
        fatia_verr_at(ctx, s, "data",
                      "must contain at least one of username and password "
                      "(type kubernetes.io/basic-auth)");
    merge_string_data(s);
}

static const struct fatia_field secret_fields[] = {FATIA_OBJECT_FIELDS,
                                                   {"type", &fatia_s_string, 0, "\"Opaque\""},
                                                   {"data", &base64_map, 0, NULL},
                                                   {"stringData", &fatia_s_string_map, 0, NULL},
                                                   {"immutable", &fatia_s_bool, 0, NULL},
                                                   {0}};
static const struct fatia_column secret_columns[] = {
    {"Type", "string", ".type", 0, "The type of the secret"},
    {"Data", "integer", NULL, 0, "Number of keys", fatia_print_data_count},
    {NULL}};
const struct fatia_kind fatia_kind_secret = {
    .group = "",
    .version = "v1",
    .kind = "Secret",
    .plural = "secrets",
    .singular = "secret",
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = secret_fields,
                                           .check = check_secret},
    .columns = secret_columns};

/* ---- ServiceAccount ---- */

static const struct fatia_field objref_fields[] = {
    {"apiVersion", &fatia_s_string, 0, NULL}, {"kind", &fatia_s_string, 0, NULL},
    {"name", &fatia_s_string, 0, NULL},       {"namespace", &fatia_s_string, 0, NULL},
    {"uid", &fatia_s_string, 0, NULL},        {"resourceVersion", &fatia_s_string, 0, NULL},
    {"fieldPath", &fatia_s_string, 0, NULL},  {0}};
static const struct fatia_schema objref_list = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = objref_fields}};
static const struct fatia_field localref_fields[] = {{"name", &fatia_s_string, 0, NULL}, {0}};
const struct fatia_schema fatia_s_local_object_refs = {
    FATIA_T_ARRAY,
    .items = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = localref_fields}};

static const struct fatia_field sa_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"secrets", &objref_list, 0, NULL},
    {"imagePullSecrets", &fatia_s_local_object_refs, 0, NULL},
    {"automountServiceAccountToken", &fatia_s_bool, 0, NULL},
    {0}};
static const struct fatia_column sa_columns[] = {
    {"Secrets", "integer", NULL, 0, "Number of secrets", fatia_print_sa_secrets}, {NULL}};
const struct fatia_kind fatia_kind_serviceaccount = {
    .group = "",
    .version = "v1",
    .kind = "ServiceAccount",
    .plural = "serviceaccounts",
    .singular = "serviceaccount",
    .short_names = (const char *const[]){"sa", NULL},
    .namespaced = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sa_fields},
    .columns = sa_columns};
