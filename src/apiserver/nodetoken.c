/*
 * apiserver/nodetoken.c: node tokens valid on every replica of one store, from records in the
 * store that hold the token's SHA-256, never the token.
 *
 * Problem. A token of the tokens file (auth.c) is known to the replica whose data directory holds
 * the file. A node role given several replicas (`--server A,B`) must authenticate on each, and a
 * revocation must reach each.
 *
 * Model. A node token's record is a Secret in kube-system of type fatia.dev/node-token named
 * `fatia-node-token-<the first 32 hex digits of the token's SHA-256>`, label fatia.dev/node=NAME,
 * with data (base64, as every Secret's):
 *     sha256   the token's SHA-256, 64 lower-case hex digits
 *     user     system:node:NAME (NAME a DNS-1123 subdomain; nothing else may be recorded)
 *     expires  optional, RFC 3339: refused (401) from then on
 * `fatia token create --node NAME --record` prints it (the token goes to --token-file, the
 * record to stdout for `kubectl apply -f -`); it lives in the shared store, so every replica's
 * object table (fed by the store's watch on etcd) holds it. A bearer token that the tokens file
 * does not know and that has no dot (not a ServiceAccount JWT) is hashed; the record of that
 * name is read from the table and its whole sha256 compared with CRYPTO_memcmp. The identity is
 * fixed: user system:node:NAME, group system:nodes, no namespace grant; the Node authorizer and
 * node-restriction (nodeauth.c) then hold it to NAME's objects, as a file token of that node.
 *
 * Revocation: deleting the record (`kubectl -n kube-system delete secret -l fatia.dev/node=NAME`)
 * refuses the token at the next request on the replica that deleted it and, on another, as soon
 * as its watch brings the delete (etcd's watch: well under a second on loopback). A record being
 * deleted (deletionTimestamp) is refused too.
 *
 * Who may touch records (the admission plugin node-token-records below): create, update and
 * delete of a Secret of that type (or one turning into, or out of, it) is for system:masters
 * only, whatever RBAC grants: a token of every namespace (NAMESPACES "*", ClusterRole admin in
 * kube-system too) would otherwise mint node identities; a node may not write Secrets at all
 * (the Node authorizer), so a node token cannot mint another. Reading them is RBAC's rule for
 * kube-system Secrets (no tenant token of a set of namespaces reaches kube-system); a record read
 * gives a hash of a 256-bit random token, which authenticates nothing. The plugin also refuses
 * a record whose fields are malformed (a user that is not a node's), so what the authenticator
 * reads is what the plugin admitted; the authenticator re-checks every field anyway.
 *
 * Choices. The record is written by whoever makes the token, against the running cluster,
 * rather than mirrored from a replica's tokens file: a mirroring replica cannot tell a record
 * deleted (revoked) while it was down from one never written, and would bring a revoked token
 * back; with the record as the only copy there is one authority and one revocation. Rejected:
 * keeping node tokens themselves in the store (a read of kube-system would be a credential);
 * a per-replica list of hashes synchronised by files (a second, home-made replication); a
 * separate watch for the records (the object table is already the store's watch cache).
 *
 * Identities are interned per node name (nt_users, freed with the server), so the user a lookup
 * returns lives as long as the server, as the tokens file's users live until a reload.
 */
#include "base/compat.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "apiserver/auth.h"
#include "apiserver/internal.h"
#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/map.h"
#include "model/diag.h"
#include "model/kinds/kinds.h"
#include "model/labels.h"

#define NT_NS          "kube-system"
#define NT_NAME_PREFIX "fatia-node-token-"
#define NT_USER_PREFIX "system:node:"
#define NT_USERS_MAX   100000

struct nt_user {
    char *name;
    struct fatia_user u;
};

static const char *const nt_groups[] = {"system:nodes", NULL};
static const char *const nt_no_namespaces[] = {NULL}; /* NULL itself would be "*" */

int fatia_api_nodetoken_hash(const char *token, char hex[65])
{
    unsigned char md[32];
    unsigned int n = 0;

    if (EVP_Digest(token, strlen(token), md, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return -EIO;
    for (size_t i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    return 0;
}

/* The base64 value data[key] of a Secret, decoded into out (NUL-terminated), or false. */
static bool data_str(const json_t *data, const char *key, char *out, size_t n)
{
    const char *b = fatia_json_str(data, key);
    size_t len = b ? strlen(b) : 0;
    unsigned char tmp[400];
    int got;

    if (!b || len == 0 || len % 4 || len / 4 * 3 > sizeof(tmp))
        return false;
    got = EVP_DecodeBlock(tmp, (const unsigned char *)b, (int)len);
    if (got < 0)
        return false;
    got -= (b[len - 1] == '=') + (len > 1 && b[len - 2] == '=');
    if (got < 0 || (size_t)got >= n || memchr(tmp, '\0', (size_t)got))
        return false; /* too long, or a NUL inside */
    memcpy(out, tmp, (size_t)got);
    out[got] = '\0';
    return true;
}

/* Are the record's fields well formed? hash, user (the whole system:node:NAME) and expires out. */
static bool record_fields(const json_t *obj, char hash[65], char *user, size_t user_n,
                          fatia_usec_t *expires, const char **why)
{
    const json_t *data = json_object_get(obj, "data");
    const char *key;
    json_t *v;
    char exp[80];

    *expires = 0;
    if (!data_str(data, "sha256", hash, 65) || strlen(hash) != 64 ||
        strspn(hash, "0123456789abcdef") != 64) {
        *why = "data.sha256: expected the token's SHA-256 as 64 lower-case hex digits";
        return false;
    }
    if (!data_str(data, "user", user, user_n) ||
        strncmp(user, NT_USER_PREFIX, strlen(NT_USER_PREFIX)) ||
        !fatia_is_dns1123_subdomain(user + strlen(NT_USER_PREFIX), NULL, 0)) {
        *why = "data.user: expected system:node:NAME, NAME a DNS-1123 subdomain";
        return false;
    }
    if (json_object_get(data, "expires") &&
        (!data_str(data, "expires", exp, sizeof(exp)) ||
         fatia_time_parse_rfc3339(exp, expires) < 0 || *expires <= 0)) {
        *why = "data.expires: expected an RFC 3339 time";
        return false;
    }
    json_object_foreach((json_t *)data, key, v)
    {
        (void)v;
        if (strcmp(key, "sha256") && strcmp(key, "user") && strcmp(key, "expires")) {
            *why = "data: only sha256, user and expires (a record never holds a token)";
            return false;
        }
    }
    return true;
}

static bool is_record(const json_t *obj)
{
    const char *t = obj ? fatia_json_str(obj, "type") : NULL;
    return t && !strcmp(t, FATIA_NODE_TOKEN_TYPE);
}

static const struct fatia_user *intern(struct fatia_apiserver *s, const char *user)
{
    struct nt_user *x = fatia_strmap_get(&s->nt_users, user);

    if (x)
        return &x->u;
    if (s->nt_users.n >= NT_USERS_MAX)
        return NULL;
    x = fatia_calloc(1, sizeof(*x));
    if (!x || !(x->name = fatia_strdup(user))) {
        fatia_free(x);
        return NULL;
    }
    x->u.name = x->name;
    x->u.groups = nt_groups;
    x->u.namespaces = nt_no_namespaces;
    if (fatia_strmap_put(&s->nt_users, x->name, x) < 0) {
        fatia_free(x->name);
        fatia_free(x);
        return NULL;
    }
    return &x->u;
}

const struct fatia_user *fatia_api_nodetoken_authenticate(struct fatia_apiserver *s,
                                                          const char *token)
{
    struct rtable *t = fatia_api_server_table_for(s, &fatia_kind_secret);
    char hex[65], name[80], key[600], hash[65], user[300];
    const struct entry *e;
    const json_t *obj;
    fatia_usec_t expires;
    const char *why;

    if (!t || strlen(token) < 16 || fatia_api_nodetoken_hash(token, hex) < 0)
        return NULL;
    snprintf(name, sizeof(name), NT_NAME_PREFIX "%.32s", hex);
    fatia_api_entry_key(t, NT_NS, name, key, sizeof(key));
    e = fatia_api_rtable_find(t, key);
    obj = e && e->committed ? e->committed->tree : NULL;
    if (!is_record(obj) || json_object_get(json_object_get(obj, "metadata"), "deletionTimestamp") ||
        !record_fields(obj, hash, user, sizeof(user), &expires, &why) ||
        CRYPTO_memcmp(hash, hex, 64))
        return NULL;
    if (expires && fatia_now_real_usec() >= expires)
        return NULL;
    return intern(s, user);
}

void fatia_api_nodetoken_release(struct fatia_apiserver *s)
{
    for (size_t i = 0; i < s->nt_users.cap; i++) {
        struct nt_user *x = s->nt_users.slots[i].key ? s->nt_users.slots[i].val : NULL;
        if (x) {
            fatia_free(x->name);
            fatia_free(x);
        }
    }
    fatia_strmap_release(&s->nt_users);
}

static json_t *b64(const char *s)
{
    unsigned char out[512];
    size_t n = strlen(s);

    if (n > 300)
        return NULL;
    EVP_EncodeBlock(out, (const unsigned char *)s, (int)n);
    return json_string((const char *)out);
}

int fatia_token_node_record(struct fatia_buf *out, const char *token, const char *node,
                            fatia_usec_t expires)
{
    char hex[65], name[80], user[300], exp[64];
    json_t *rec, *data;
    char *text;
    int r;

    if (!fatia_is_dns1123_subdomain(node, NULL, 0) || strlen(token) < 16)
        return -EINVAL;
    r = fatia_api_nodetoken_hash(token, hex);
    if (r < 0)
        return r;
    snprintf(name, sizeof(name), NT_NAME_PREFIX "%.32s", hex);
    snprintf(user, sizeof(user), NT_USER_PREFIX "%s", node);
    data = json_pack("{s:o?,s:o?}", "sha256", b64(hex), "user", b64(user));
    if (data && expires) {
        if (fatia_time_format_rfc3339(expires, false, exp, sizeof(exp)) < 0 ||
            json_object_set_new(data, "expires", b64(exp)) < 0) {
            json_decref(data);
            return -EINVAL;
        }
    }
    rec = data ? json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:s,s:o}", "apiVersion", "v1", "kind",
                           "Secret", "metadata", "name", name, "namespace", NT_NS, "labels",
                           "fatia.dev/node", node, "type", FATIA_NODE_TOKEN_TYPE, "data", data)
               : NULL;
    if (!rec)
        return -ENOMEM;
    text = json_dumps(rec, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(rec);
    r = text ? fatia_buf_append(out, text, strlen(text)) : -ENOMEM;
    r = r < 0 ? r : fatia_buf_append(out, "\n", 1);
    free(text);
    return r < 0 ? r : 0;
}

/* ---- admission: node-token-records ---- */

static int refuse(struct fatia_admit_attrs *a, const char *msg)
{
    fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "type", "%s", msg);
    return -FATIA_E_FORBIDDEN;
}

static int admit(void *arg, struct fatia_admit_attrs *a)
{
    char hash[65], user[300], name[80];
    fatia_usec_t expires;
    const char *why;

    (void)arg;
    if (!is_record(a->obj) && !is_record(a->old))
        return 0;
    if (!fatia_user_is_admin(a->user))
        return refuse(a, "a Secret of type " FATIA_NODE_TOKEN_TYPE
                         " (a node token's record) is written and deleted by system:masters only");
    if (a->op == FATIA_ADMIT_DELETE)
        return 0;
    if (!is_record(a->obj))
        return refuse(a, "a node token's record cannot change its type: delete it");
    if (!a->ns || strcmp(a->ns, NT_NS))
        return refuse(a, "a node token's record lives in kube-system");
    if (!record_fields(a->obj, hash, user, sizeof(user), &expires, &why))
        return refuse(a, why);
    snprintf(name, sizeof(name), NT_NAME_PREFIX "%.32s", hash);
    if (!a->name || strcmp(a->name, name))
        return refuse(a, "a node token's record is named fatia-node-token-<first 32 hex digits "
                         "of data.sha256>");
    return 0;
}

static const struct fatia_kind *const nt_kinds[] = {&fatia_kind_secret, NULL};

int fatia_api_nodetoken_register(struct fatia_apiserver *s)
{
    return fatia_apiserver_add_admission(
        s, &(struct fatia_admission){
               .name = "node-token-records",
               .phase = FATIA_ADMIT_VALIDATING,
               .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE | FATIA_ADMIT_DELETE,
               .kinds = nt_kinds,
               .admit = admit,
               .arg = s,
           });
}
