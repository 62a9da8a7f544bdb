/*
 * cli/cmd_token.c: `fatia token create`: a bearer token for a tenant, and the kubeconfig to use
 * it; `fatia token revoke`: tokens out of the file.
 *
 * A token gets an id (not a secret: it names the token for `revoke --id`, printed on stderr)
 * and, with --ttl, an expiry (the server refuses it from then on: 401).
 *
 * The token is appended to DATA_DIR/tokens (apiserver/auth.h), which a running fatiad re-reads
 * within a second; the kubeconfig printed on stdout points at the server and certificate of
 * DATA_DIR/kubeconfig (the admin kubeconfig fatiad writes at every start), so it works at once.
 */
#include "base/compat.h"

#include <getopt.h>

#include "apiserver/auth.h"
#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"

static const char usage[] =
    "Usage: fatia token create --user NAME --namespace NS [--namespace NS2 ...] [--read-only]\n"
    "                          [--group GROUP ...] [--ttl DURATION] [--data-dir DIR]\n"
    "       fatia token revoke (--user NAME | --id ID) [--data-dir DIR]\n"
    "\n"
    "create adds a bearer token to fatiad's tokens file and prints a kubeconfig that uses it\n"
    "(the token's id goes to stderr). revoke removes every token of a user, or the token of an\n"
    "id; a running fatiad refuses it within a second.\n"
    "\n"
    "  -u, --user NAME        the user the token authenticates as\n"
    "  -n, --namespace NS     a namespace the user may act in (repeatable; '*' for every one)\n"
    "      --read-only        get, list and watch only\n"
    "  -g, --group GROUP      a group of the user (repeatable; system:masters is an admin)\n"
    "      --ttl DURATION     the token expires after DURATION (24h, 90m; default: never)\n"
    "      --id ID            (revoke) the token's id, as create printed it\n"
    "  -d, --data-dir DIR     fatiad's data directory (default $FATIA_DATA_DIR, else .fatia)\n"
    "\n"
    "Example:\n"
    "  fatia token create --user alice --namespace team-a > alice.kubeconfig\n"
    "  KUBECONFIG=alice.kubeconfig kubectl get localqueues -n team-a\n";

static int revoke(int argc, char **argv)
{
    static const struct option opts[] = {{"user", required_argument, NULL, 'u'},
                                         {"id", required_argument, NULL, 'i'},
                                         {"data-dir", required_argument, NULL, 'd'},
                                         {NULL, 0, NULL, 0}};
    const char *user = NULL, *id = NULL, *dir = getenv("FATIA_DATA_DIR");
    char path[4096];
    size_t n = 0;
    int c, r;

    while ((c = getopt_long(argc, argv, "u:i:d:", opts, NULL)) != -1) {
        switch (c) {
        case 'u':
            user = optarg;
            break;
        case 'i':
            id = optarg;
            break;
        case 'd':
            dir = optarg;
            break;
        default:
            return fatia_cli_usage_error(&fatia_cmd_token, "bad option");
        }
    }
    if ((!user && !id) || optind != argc)
        return fatia_cli_usage_error(&fatia_cmd_token, "revoke needs --user or --id");
    snprintf(path, sizeof(path), "%s/tokens", dir ? dir : ".fatia");
    r = fatia_tokens_revoke(path, user, id, &n);
    if (r == -ENOENT) {
        fprintf(stderr, "fatia token revoke: no token of %s%s%s in '%s'\n", user ? "user " : "id ",
                user ? user : id, user && id ? " (or that id)" : "", path);
        return FATIA_EXIT_FAIL;
    }
    if (r < 0) {
        fprintf(stderr, "fatia token revoke: '%s': %s\n", path, fatia_strerror(r));
        return FATIA_EXIT_FAIL;
    }
    fprintf(stderr, "revoked %zu token%s\n", n, n == 1 ? "" : "s");
    return FATIA_EXIT_OK;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"user", required_argument, NULL, 'u'},     {"namespace", required_argument, NULL, 'n'},
        {"read-only", no_argument, NULL, 'r'},      {"group", required_argument, NULL, 'g'},
        {"data-dir", required_argument, NULL, 'd'}, {"ttl", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0}};
    const char *user = NULL, *dir = getenv("FATIA_DATA_DIR");
    const char **namespaces = fatia_xcalloc((size_t)argc + 1, sizeof(char *));
    const char **groups = fatia_xcalloc((size_t)argc + 1, sizeof(char *));
    size_t n_ns = 0, n_groups = 0;
    bool read_only = false;
    int64_t ttl = 0;
    char path[4096], server[1024], token[FATIA_TOKEN_LEN + 1], id[FATIA_TOKEN_ID_LEN + 1];
    struct fatia_buf out = FATIA_BUF_INIT;
    char *ca = NULL;
    int c, r, rc = FATIA_EXIT_FAIL;

    if (argc >= 2 && !strcmp(argv[1], "revoke")) {
        rc = revoke(argc - 1, argv + 1);
        goto out;
    }
    if (argc < 2 || strcmp(argv[1], "create")) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            rc = fatia_cli_help(&fatia_cmd_token);
            goto out;
        }
        rc = fatia_cli_usage_error(&fatia_cmd_token, "expected 'create' or 'revoke'");
        goto out;
    }
    argc--;
    argv++;
    while ((c = getopt_long(argc, argv, "u:n:g:d:h", opts, NULL)) != -1) {
        switch (c) {
        case 'u':
            user = optarg;
            break;
        case 'n':
            namespaces[n_ns++] = optarg;
            break;
        case 'g':
            groups[n_groups++] = optarg;
            break;
        case 'r':
            read_only = true;
            break;
        case 'd':
            dir = optarg;
            break;
        case 't':
            if (fatia_parse_duration_usec(optarg, &ttl) < 0 || ttl <= 0) {
                rc = fatia_cli_usage_error(&fatia_cmd_token,
                                           "--ttl: expected a positive duration (24h, 90m)");
                goto out;
            }
            break;
        case 'h':
            rc = fatia_cli_help(&fatia_cmd_token);
            goto out;
        default:
            rc = fatia_cli_usage_error(&fatia_cmd_token, "bad option");
            goto out;
        }
    }
    if (!user || !n_ns || optind != argc) {
        rc = fatia_cli_usage_error(&fatia_cmd_token, "--user and --namespace are required");
        goto out;
    }
    if (!dir)
        dir = ".fatia";
    snprintf(path, sizeof(path), "%s/kubeconfig", dir);
    r = fatia_kubeconfig_server(path, server, sizeof(server), &ca);
    if (r < 0) {
        fprintf(stderr,
                "fatia token: cannot read the server address from '%s': %s (has fatiad run with "
                "--data-dir %s?)\n",
                path, fatia_strerror(r), dir);
        goto out;
    }
    r = fatia_token_generate(token);
    r = r ? r : fatia_token_id_generate(id);
    if (r < 0) {
        fprintf(stderr, "fatia token: cannot generate a token: %s\n", fatia_strerror(r));
        goto out;
    }
    snprintf(path, sizeof(path), "%s/tokens", dir);
    r = fatia_tokens_add(
        path, &(struct fatia_token_spec){.token = token,
                                         .user = user,
                                         .groups = groups,
                                         .namespaces = namespaces,
                                         .read_only = read_only,
                                         .id = id,
                                         .expires = ttl ? fatia_now_real_usec() + ttl : 0});
    if (r == -EINVAL) {
        fprintf(stderr, "fatia token: invalid user, group or namespace name\n");
        goto out;
    }
    if (r < 0) {
        fprintf(stderr, "fatia token: cannot add to '%s': %s\n", path, fatia_strerror(r));
        goto out;
    }
    r = fatia_kubeconfig_format(&out, server, ca, user, token,
                                strcmp(namespaces[0], "*") ? namespaces[0] : NULL);
    if (r < 0) {
        fprintf(stderr, "fatia token: %s\n", fatia_strerror(r));
        goto out;
    }
    fwrite(out.p, 1, out.len, stdout);
    fprintf(stderr, "token id %s (fatia token revoke --id %s)\n", id, id);
    rc = FATIA_EXIT_OK;
out:
    fatia_buf_release(&out);
    fatia_free(ca);
    fatia_free(namespaces);
    fatia_free(groups);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_token = {
    .name = "token",
    .summary = "create a bearer token and a kubeconfig for a tenant of fatiad",
    .usage = usage,
    .run = run,
};
