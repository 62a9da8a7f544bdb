/*
 * apiserver/auth.h: bearer tokens, who may do what, and kubeconfig files.
 *
 * The tokens file (DATA_DIR/tokens, mode 0600) has one token per line:
 *
 *     # TOKEN  USER  GROUPS  NAMESPACES  ACCESS
 *     5c0f...  admin   system:masters  *           rw
 *     9a1e...  alice   -               team-a      ro
 *
 * GROUPS and NAMESPACES are comma-separated ("-" for no group, "*" for every namespace); ACCESS is
 * rw or ro. Two optional fields may follow: id=ID (a name for the token, not a secret: `fatia token
 * revoke --id`) and expires=RFC3339 (the token is refused, 401, from then on). Blank lines and # comments are ignored. The server re-reads the file when it changes
 * (checked at most once a second), so `fatia token create` takes effect without a restart; a file
 * that no longer parses is reported and the previous tokens stay in force.
 *
 * A node token may instead live in the shared store as a record of its hash (nodetoken.c,
 * fatia_token_node_record below), valid on every replica of that store; the file's tokens are
 * its own replica's only.
 *
 * Authorization is RBAC (authz.c): system:masters may do anything; a token's NAMESPACES and
 * ACCESS are bindings of ClusterRole admin (rw) or view (ro) in those namespaces ("*": every
 * namespace; "-": none), beside the stored RoleBindings and ClusterRoleBindings.
 */
#ifndef FATIA_APISERVER_AUTH_H
#define FATIA_APISERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "apiserver/apiserver.h"
#include "base/buf.h"
#include "base/clock.h"

#define FATIA_TOKEN_LEN    64 /* hex characters of a generated token */
#define FATIA_TOKEN_ID_LEN 12 /* hex characters of a generated token id */

struct fatia_auth;

/* Opens the tokens file (it must exist). 0, -ENOENT, -FATIA_E_PARSE (why says where), -ENOMEM. */
int fatia_auth_open(const char *path, struct fatia_auth **ret, char *why, size_t why_n);
void fatia_auth_free(struct fatia_auth *a);

/* The user of a token (borrowed until the next lookup that reloads), or NULL. Reloads the file
 * if it changed. */
const struct fatia_user *fatia_auth_lookup(struct fatia_auth *a, const char *token);

/* The token of the first line for user (borrowed until the next reload), or NULL. */
const char *fatia_auth_token_of(struct fatia_auth *a, const char *user);

/* Parses tokens-file text into an auth set (no path: no reloads). For tests and fuzzing. */
int fatia_auth_parse(const char *text, size_t n, struct fatia_auth **ret, char *why, size_t why_n);

/* Generates a token (FATIA_TOKEN_LEN hex characters + NUL) from the kernel's random source. */
int fatia_token_generate(char out[FATIA_TOKEN_LEN + 1]);

/* Appends a token line to the tokens file (created 0600 if absent), under an exclusive lock.
 * namespaces NULL = "*". Validates user and namespace names. 0, -EINVAL, -errno. */
int fatia_tokens_append(const char *path, const char *token, const char *user,
                        const char *const *groups, const char *const *namespaces, bool read_only);

/* A token line. groups: NULL-terminated or NULL; namespaces: NULL = "*"; id NULL = none;
 * expires 0 = never (real time, microseconds since the epoch; written to the second). */
struct fatia_token_spec {
    const char *token;
    const char *user;
    const char *const *groups;
    const char *const *namespaces;
    bool read_only;
    const char *id;
    fatia_usec_t expires;
};

/* Appends a token line as fatia_tokens_append does, with its id and expiry. */
int fatia_tokens_add(const char *path, const struct fatia_token_spec *t);

/* A token id (FATIA_TOKEN_ID_LEN hex characters + NUL). */
int fatia_token_id_generate(char out[FATIA_TOKEN_ID_LEN + 1]);

/* Removes every token of user (when not NULL) and every token whose id is id (when not NULL)
 * from the tokens file, under its lock, atomically (rename). *ret_n: how many. 0, -ENOENT (none
 * matched; the file is unchanged), -EINVAL (neither given), -errno. */
int fatia_tokens_revoke(const char *path, const char *user, const char *id, size_t *ret_n);

/* The record of a node token in the shared store (apiserver/nodetoken.c): a kube-system Secret
 * of type fatia.dev/node-token holding the token's SHA-256, never the token, as JSON for
 * `kubectl apply -f -` (appended to out). expires 0 = never. 0, -EINVAL, -ENOMEM. */
int fatia_token_node_record(struct fatia_buf *out, const char *token, const char *node,
                            fatia_usec_t expires);

/* The kubeconfig of one user for the server at url, as YAML (appended to out). ns and ca (the
 * base64 certificate-authority-data of an https url) may be NULL. */
int fatia_kubeconfig_format(struct fatia_buf *out, const char *url, const char *ca,
                            const char *user, const char *token, const char *ns);

/* Writes a kubeconfig file atomically, mode 0600. 0 or -errno. */
int fatia_kubeconfig_write(const char *path, const char *url, const char *ca, const char *user,
                           const char *token, const char *ns);

/* Reads the server URL and certificate-authority-data (NULL when absent; free with fatia_free)
 * of the first cluster of a kubeconfig. 0, -ENOENT, -FATIA_E_PARSE. */
int fatia_kubeconfig_server(const char *path, char *buf, size_t n, char **ret_ca);

#endif
