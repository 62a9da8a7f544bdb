/*
 * cli/input.h: the input and output options every `fatia` command that reads manifests shares:
 * -f/--filename PATH (repeatable; also as plain arguments), -R/--recursive, -o/--output FORMAT,
 * and loading the objects with their diagnostics.
 */
#ifndef FATIA_CLI_INPUT_H
#define FATIA_CLI_INPUT_H

#include "base/vec.h"
#include "cli/cli.h"
#include "model/objset.h"

struct fatia_cli_input {
    const struct fatia_cli_cmd *cmd; /* for messages: "fatia NAME: ..." */
    FATIA_VEC(char *) paths;         /* borrowed from argv */
    bool recursive;
    enum fatia_output out;
};

/* The long options, for a command's struct option table (short: "f:Ro:"). */
#define FATIA_CLI_INPUT_OPTIONS                                                        \
    {"filename", required_argument, NULL, 'f'}, {"recursive", no_argument, NULL, 'R'}, \
    {                                                                                  \
        "output", required_argument, NULL, 'o'                                         \
    }

/* out is the default output (FATIA_OUT_TABLE for most commands). */
void fatia_cli_input_init(struct fatia_cli_input *in, const struct fatia_cli_cmd *cmd,
                          enum fatia_output out);
void fatia_cli_input_release(struct fatia_cli_input *in);

/* -o FORMAT for a command that takes no -f (api-resources, serve): 0, or -EINVAL after the
 * usage error ("unknown output format 'X'"). */
int fatia_cli_output_opt(const struct fatia_cli_cmd *cmd, const char *arg, enum fatia_output *out);

/* One getopt result: 1 when c was -f, -R or -o and is taken, 0 when it is not one of them,
 * -EINVAL after a usage error on stderr (an unknown output format, named), -ENOMEM. */
int fatia_cli_input_opt(struct fatia_cli_input *in, int c, const char *arg);

/* After getopt: argv[first..argc) are more paths; with required, no path at all is a usage error
 * ("no input: give -f PATH"). 0, -EINVAL (reported) or -ENOMEM. */
int fatia_cli_input_args(struct fatia_cli_input *in, int first, int argc, char **argv,
                         bool required);

/* The exit code of a negative result of the two above: FATIA_EXIT_USAGE or, for -ENOMEM (said
 * on stderr), FATIA_EXIT_FAIL. */
int fatia_cli_input_exit(const struct fatia_cli_input *in, int r);

/* Loads every path into set (fatia_objset_load). Problems go to diag; -ENOMEM is also said on
 * stderr. */
int fatia_cli_input_load(const struct fatia_cli_input *in, struct fatia_objset *set,
                         struct fatia_diag *diag);

#endif
