/*
 * cli/input.c: -f/-R/-o and loading manifests, once for every command (see input.h).
 *
 * Model: a command's getopt loop offers each option to fatia_cli_input_opt first and handles
 * only its own; after the loop, fatia_cli_input_args takes the plain arguments as more paths.
 * Paths are borrowed from argv (they outlive the command). The messages are those the commands
 * printed before the helper existed ("unknown output format 'X'", "no input: give -f PATH"), so
 * that moving a command onto it changes no output (tests/cli/snapshot.bash compares). Rejected:
 * a table-driven option parser replacing getopt_long (every command keeps its own options and
 * order of checks; only the shared ones move here).
 */
#include "base/compat.h"

#include "cli/input.h"

#include "base/error.h"
#include "demand/demand.h"

void fatia_cli_input_init(struct fatia_cli_input *in, const struct fatia_cli_cmd *cmd,
                          enum fatia_output out)
{
    memset(in, 0, sizeof(*in));
    in->cmd = cmd;
    in->out = out;
}

void fatia_cli_input_release(struct fatia_cli_input *in)
{
    FATIA_VEC_RELEASE(&in->paths);
}

int fatia_cli_output_opt(const struct fatia_cli_cmd *cmd, const char *arg, enum fatia_output *out)
{
    if (fatia_cli_parse_output(arg, out) < 0) {
        fatia_cli_usage_error(cmd, "unknown output format '%s'", arg);
        return -EINVAL;
    }
    return 0;
}

int fatia_cli_input_opt(struct fatia_cli_input *in, int c, const char *arg)
{
    switch (c) {
    case 'f':
        return FATIA_VEC_PUSH(&in->paths, (char *)arg) < 0 ? -ENOMEM : 1;
    case 'R':
        in->recursive = true;
        return 1;
    case 'o':
        return fatia_cli_output_opt(in->cmd, arg, &in->out) < 0 ? -EINVAL : 1;
    }
    return 0;
}

int fatia_cli_input_args(struct fatia_cli_input *in, int first, int argc, char **argv,
                         bool required)
{
    for (int i = first; i < argc; i++)
        if (FATIA_VEC_PUSH(&in->paths, argv[i]) < 0)
            return -ENOMEM;
    if (required && !in->paths.n) {
        fatia_cli_usage_error(in->cmd, "no input: give -f PATH");
        return -EINVAL;
    }
    return 0;
}

int fatia_cli_input_exit(const struct fatia_cli_input *in, int r)
{
    if (r == -ENOMEM) {
        fprintf(stderr, "fatia %s: out of memory\n", in->cmd->name);
        return FATIA_EXIT_FAIL;
    }
    return FATIA_EXIT_USAGE;
}

int fatia_cli_input_load(const struct fatia_cli_input *in, struct fatia_objset *set,
                         struct fatia_diag *diag)
{
    int r =
        fatia_objset_load(set, in->paths.v, in->paths.n, in->recursive, &fatia_demand_checks, diag);

    if (r == -ENOMEM)
        fprintf(stderr, "fatia %s: out of memory\n", in->cmd->name);
    return r;
}
