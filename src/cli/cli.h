/*
 * cli/cli.h: what every `fatia` subcommand shares.
 *
 * A subcommand is a struct fatia_cli_cmd in its own file (cmd_<name>.c), listed once in main.c.
 * Its run() gets argv with argv[0] = the subcommand name, parses its options with getopt_long,
 * and returns an exit code:
 *     0 = success, 1 = the input was wrong or the work failed (messages on stderr),
 *     2 = usage error (unknown option, missing argument).
 * Structured output goes to stdout in one of -o table|json|yaml; diagnostics go to stderr.
 * The CLI is quiet by default (warnings and errors only); -v / FATIA_LOG=debug say more.
 */
#ifndef FATIA_CLI_CLI_H
#define FATIA_CLI_CLI_H

#include "base/compat.h"

#include <jansson.h>
#include <stdio.h>

#define FATIA_EXIT_OK    0
#define FATIA_EXIT_FAIL  1
#define FATIA_EXIT_USAGE 2

struct fatia_cli_cmd {
    const char *name;
    const char *summary; /* one line, for `fatia help` */
    const char *usage;   /* full help text for `fatia NAME --help` */
    int (*run)(int argc, char **argv);
};

enum fatia_output {
    FATIA_OUT_TABLE,
    FATIA_OUT_JSON,
    FATIA_OUT_YAML,
};

/* "table" | "json" | "yaml" (also "wide" as table). 0 or -EINVAL. */
int fatia_cli_parse_output(const char *s, enum fatia_output *ret);

/* Prints v as indented JSON or as YAML on stdout. Returns an exit code. */
int fatia_cli_print(const json_t *v, enum fatia_output fmt);

/* "fatia NAME: <message>\nTry 'fatia NAME --help'." on stderr; returns FATIA_EXIT_USAGE. */
int fatia_cli_usage_error(const struct fatia_cli_cmd *cmd, const char *fmt, ...) FATIA_PRINTF(2, 3);

/* The name in names[0..n) nearest to word, for "did you mean": a name word is a prefix of, else
 * the one at the smallest edit distance (insertions, deletions, substitutions, transpositions of
 * neighbours) when that is at most 2 and less than word's length, the first of equals; NULL when
 * none is near. */
const char *fatia_cli_nearest(const char *word, const char *const *names, size_t n);

/* Prints cmd->usage on stdout; returns FATIA_EXIT_OK. */
int fatia_cli_help(const struct fatia_cli_cmd *cmd);

/* A table for people: uppercase headers, columns padded to their widest cell, two spaces apart,
 * as kubectl prints. Cells are copied. */
struct fatia_table;
struct fatia_table *fatia_table_new(size_t n_cols, const char *const *headers);
/* Appends a row of n_cols cells (NULL prints as "<none>"). 0 or -ENOMEM. */
int fatia_table_add(struct fatia_table *t, const char *const *cells);
/* printf-style row: cells separated by '\t' in the formatted text. */
int fatia_table_addf(struct fatia_table *t, const char *fmt, ...) FATIA_PRINTF(2, 3);
void fatia_table_print(const struct fatia_table *t, FILE *f);
void fatia_table_free(struct fatia_table *t);

#endif
