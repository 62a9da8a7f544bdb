/*
 * cli/cmd_token.c: `fatia token create`: a bearer token for a tenant, and the kubeconfig to use
 * it; `fatia token revoke`: tokens out of the file.
 *
 * `create --node NAME --record` makes a node token for every replica of one store: the token goes
 * to --output-file only, and its record (the token's SHA-256, apiserver/nodetoken.c) to stdout,
 * to be applied by a cluster admin; the tokens file is not touched, so `revoke` (a file
 * command) does not revoke it: deleting the record does (`kubectl -n kube-system delete secret
 * -l fatia.dev/node=NAME`, which revoke's error names). Why a record and not a mirror of the
 * tokens file: nodetoken.c.
 *
 * `create --node NAME` makes a node's token (user system:node:NAME, group system:nodes, no
 * namespace grant): what `fatiad --role node` presents; apiserver/nodeauth.c holds it to NAME's
 * objects. Rejected: a bootstrap-token flow (a CSR signed by the control plane): one file copied
 * to the node is what the other tokens are too, and revocation stays `fatia token revoke`.
 *
 * A token gets an id (not a secret: it names the token for `revoke --id`, printed on stderr)
 * and, with --ttl, an expiry (the server refuses it from then on: 401).
 *
 * The token is appended to DATA_DIR/tokens (apiserver/auth.h), which a running fatiad re-reads
 * within a second; the kubeconfig printed on stdout points at the server and certificate of
 * DATA_DIR/kubeconfig (the admin kubeconfig fatiad writes at every start), so it works at once.
 * DATA_DIR is --data-dir, else .fatia; never $FATIA_DATA_DIR, which names the catalog's data
 * directory (base/datadir.h), so that pointing it at data/ cannot put tokens there.
 *
 * The kubeconfig is a credential: whatever the umask, nobody but its owner may read what this
 * command writes. --output-file FILE is opened (created or truncated, never through a symbolic
 * link) and set to 0600 with fchmod before a byte is written. When stdout is a regular file
 * (`> alice.kubeconfig`, which the shell creates 0644 under the usual umask 022), it is set to
 * 0600 the same way before the kubeconfig is written; a regular file owned by someone else is
 * refused rather than written world-readable. A pipe or a terminal is left as it is. Rejected:
 * refusing `>` altogether (the README and users' habits use it); writing to a temporary file
 * and renaming (the shell has already created the file that stdout names).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <ctype.h>
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>

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
    "                          [--output-file FILE]\n"
    "       fatia token create --node NAME [--ttl DURATION] [--data-dir DIR] [--output-file FILE]\n"
    "       fatia token create --node NAME --record --output-file TOKEN_FILE [--ttl DURATION]\n"
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
    "      --node NAME        a node's token: user system:node:NAME, group system:nodes, no\n"
    "                         namespace; the Node authorizer and node-restriction hold it to\n"
    "                         that node's objects (for `fatiad --role node --token FILE`)\n"
    "      --record           (with --node) a token for every replica of one store: the token\n"
    "                         alone goes to --output-file (0600), nothing to the tokens file,\n"
    "                         and its record (a kube-system Secret holding its SHA-256) to\n"
    "                         stdout, for `kubectl apply -f -` as a cluster admin; revoked by\n"
    "                         `kubectl -n kube-system delete secret -l fatia.dev/node=NAME`\n"
    "      --ttl DURATION     the token expires after DURATION (24h, 90m; default: never)\n"
    "      --id ID            (revoke) the token's id, as create printed it\n"
    "  -d, --data-dir DIR     fatiad's data directory (default .fatia; $FATIA_DATA_DIR is the\n"
    "                         catalog's data directory, not this one, and is not read)\n"
    "      --output-file FILE write the kubeconfig to FILE instead of stdout\n"
    "\n"
    "The kubeconfig written (to FILE, or to stdout when stdout is a file) is made 0600\n"
    "whatever the umask.\n"
    "\n"
    "Example:\n"
    "  fatia token create --user alice --namespace team-a > alice.kubeconfig\n"
    "  KUBECONFIG=alice.kubeconfig kubectl get localqueues -n team-a\n";

/* Makes fd, open for writing the kubeconfig, readable by its owner only: 0, or an exit code
 * after a message. Only regular files are changed. */
static int make_private(int fd, const char *what)
{
    struct stat st;

    if (fstat(fd, &st) < 0) {
        fprintf(stderr, "fatia token: cannot stat %s: %s\n", what, fatia_strerror(-errno));
        return FATIA_EXIT_FAIL;
    }
    if (!S_ISREG(st.st_mode))
        return 0;
    if (st.st_uid != geteuid()) {
        fprintf(stderr,
                "fatia token: %s is a file owned by uid %u, not by you: not writing a token "
                "others may read (use --output-file)\n",
                what, (unsigned)st.st_uid);
        return FATIA_EXIT_FAIL;
    }
    if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0) {
        fprintf(stderr, "fatia token: cannot make %s private (chmod 0600): %s\n", what,
                fatia_strerror(-errno));
        return FATIA_EXIT_FAIL;
    }
    return 0;
}

/* Writes the kubeconfig to file (or stdout when NULL), 0600 whatever the umask. An exit code. */
static int write_private(const char *file, const struct fatia_buf *b)
{
    int fd = STDOUT_FILENO, rc;

    if (file) {
        fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
            fprintf(stderr, "fatia token: cannot create '%s': %s\n", file, fatia_strerror(-errno));
            return FATIA_EXIT_FAIL;
        }
    }
    rc = make_private(fd, file ? file : "stdout");
    for (size_t off = 0; rc == 0 && off < b->len;) {
        ssize_t n = write(fd, b->p + off, b->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "fatia token: cannot write %s: %s\n", file ? file : "stdout",
                    fatia_strerror(n < 0 ? -errno : -EIO));
            rc = FATIA_EXIT_FAIL;
            break;
        }
        off += (size_t)n;
    }
    if (file && close(fd) < 0 && rc == 0) {
        fprintf(stderr, "fatia token: cannot write '%s': %s\n", file, fatia_strerror(-errno));
        rc = FATIA_EXIT_FAIL;
    }
    return rc;
}

static int run_revoke(int argc, char **argv)
{
    static const struct option opts[] = {{"user", required_argument, NULL, 'u'},
                                         {"id", required_argument, NULL, 'i'},
                                         {"data-dir", required_argument, NULL, 'd'},
                                         {NULL, 0, NULL, 0}};
    const char *user = NULL, *id = NULL, *dir = ".fatia";
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
    snprintf(path, sizeof(path), "%s/tokens", dir);
    r = fatia_tokens_revoke(path, user, id, &n);
    if (r == -ENOENT) {
        fprintf(stderr, "fatia token revoke: no token of %s%s%s in '%s'\n", user ? "user " : "id ",
                user ? user : id, user && id ? " (or that id)" : "", path);
        if (user && !strncmp(user, "system:node:", 12))
            fprintf(stderr,
                    "a node token made with --record lives in the store, not here: revoke it on "
                    "every replica with `kubectl -n kube-system delete secret -l "
                    "fatia.dev/node=%s`\n",
                    user + 12);
        return FATIA_EXIT_FAIL;
    }
    if (r < 0) {
        fprintf(stderr, "fatia token revoke: '%s': %s\n", path, fatia_strerror(r));
        return FATIA_EXIT_FAIL;
    }
    fprintf(stderr, "revoked %zu token%s\n", n, n == 1 ? "" : "s");
    return FATIA_EXIT_OK;
}

/* A Node's name: a DNS subdomain (lower-case alphanumerics, '-' and '.', at most 253). */
static bool valid_node_name(const char *s)
{
    size_t n = strlen(s);

    if (!n || n > 253 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
        return false;
    for (const char *p = s; *p; p++)
        if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.'))
            return false;
    return true;
}

/* --node NAME --record: the token to file, its record (apiserver/nodetoken.c) to stdout. */
static int create_record(const char *node, const char *file, int64_t ttl)
{
    char token[FATIA_TOKEN_LEN + 1];
    struct fatia_buf rec = FATIA_BUF_INIT, tok = FATIA_BUF_INIT;
    int r, rc = FATIA_EXIT_FAIL;

    if (!node || !file)
        return fatia_cli_usage_error(&fatia_cmd_token,
                                     "--record takes --node NAME and --output-file TOKEN_FILE");
    r = fatia_token_generate(token);
    r = r ? r : fatia_token_node_record(&rec, token, node, ttl ? fatia_now_real_usec() + ttl : 0);
    r = r ? r : fatia_buf_printf(&tok, "%s\n", token);
    if (r < 0) {
        fprintf(stderr, "fatia token: %s\n", fatia_strerror(r));
        goto out;
    }
    rc = write_private(file, &tok);
    if (rc == FATIA_EXIT_OK && fwrite(rec.p, 1, rec.len, stdout) != rec.len)
        rc = FATIA_EXIT_FAIL;
out:
    fatia_buf_release(&rec);
    fatia_buf_release(&tok);
    return rc;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"user", required_argument, NULL, 'u'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"read-only", no_argument, NULL, 'r'},
                                         {"group", required_argument, NULL, 'g'},
                                         {"data-dir", required_argument, NULL, 'd'},
                                         {"ttl", required_argument, NULL, 't'},
                                         {"output-file", required_argument, NULL, 'O'},
                                         {"node", required_argument, NULL, 'N'},
                                         {"record", no_argument, NULL, 'R'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *user = NULL, *dir = ".fatia", *out_file = NULL, *node = NULL;
    char node_user[300];
    const char **namespaces = fatia_xcalloc((size_t)argc + 1, sizeof(char *));
    const char **groups = fatia_xcalloc((size_t)argc + 1, sizeof(char *));
    size_t n_ns = 0, n_groups = 0;
    bool read_only = false, record = false;
    int64_t ttl = 0;
    char path[4096], server[1024], token[FATIA_TOKEN_LEN + 1], id[FATIA_TOKEN_ID_LEN + 1];
    struct fatia_buf out = FATIA_BUF_INIT;
    char *ca = NULL;
    int c, r, rc = FATIA_EXIT_FAIL;

    if (argc >= 2 && !strcmp(argv[1], "revoke")) {
        rc = run_revoke(argc - 1, argv + 1);
        goto out;
    }
    if (argc < 2 || strcmp(argv[1], "create")) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            rc = fatia_cli_help(&fatia_cmd_token);
            goto out;
        }
        if (argc >= 2 && fatia_cli_nearest(argv[1], (const char *const[]){"create", "revoke"}, 2))
            rc = fatia_cli_usage_error(
                &fatia_cmd_token, "unknown subcommand '%s': did you mean '%s'?", argv[1],
                fatia_cli_nearest(argv[1], (const char *const[]){"create", "revoke"}, 2));
        else
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
        case 'O':
            out_file = optarg;
            break;
        case 'N':
            node = optarg;
            break;
        case 'R':
            record = true;
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
    if (node) {
        if (user || n_ns || n_groups || read_only || !valid_node_name(node)) {
            rc = fatia_cli_usage_error(&fatia_cmd_token,
                                       user || n_ns || n_groups || read_only
                                           ? "--node takes no --user, --namespace, --group or "
                                             "--read-only: a node's identity is fixed"
                                           : "--node: expected a node name (a DNS subdomain)");
            goto out;
        }
        snprintf(node_user, sizeof(node_user), "system:node:%s", node);
        user = node_user;
        groups[n_groups++] = "system:nodes";
        namespaces[n_ns++] = "-";
    }
    if (record) {
        rc = create_record(node, out_file, ttl);
        goto out;
    }
    if (!user || !n_ns || optind != argc) {
        rc = fatia_cli_usage_error(&fatia_cmd_token, "--user and --namespace are required");
        goto out;
    }
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
                                node || !strcmp(namespaces[0], "*") ? NULL : namespaces[0]);
    if (r < 0) {
        fprintf(stderr, "fatia token: %s\n", fatia_strerror(r));
        goto out;
    }
    rc = write_private(out_file, &out);
    if (rc == FATIA_EXIT_OK)
        fprintf(stderr, "token id %s (fatia token revoke --id %s)\n", id, id);
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
