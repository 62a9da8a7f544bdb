/*
 * cli/main.c: the `fatia` command: global options and the dispatch to subcommands.
 */
#include "base/compat.h"

#include "base/log.h"
#include "cli/cli.h"
#include "cli/commands.h"

static const struct fatia_cli_cmd *const commands[] = {
    &fatia_cmd_validate,
    &fatia_cmd_api_resources,
    &fatia_cmd_schedule,
    &fatia_cmd_plan,
    &fatia_cmd_export, /* supply */
    &fatia_cmd_token,
    &fatia_cmd_backup, /* store */
    &fatia_cmd_restore,
    &fatia_cmd_serve, /* serving */
    &fatia_cmd_engine_sim,
    &fatia_cmd_gateway,
    &fatia_cmd_profiles, /* demand */
    &fatia_cmd_place,    /* demand: placement */
    &fatia_cmd_sim,      /* simulator */
    &fatia_cmd_usage,    /* usage metering */
    &fatia_cmd_image,    /* node agent: container images */
    NULL,
};

static void print_help(FILE *f);

/* "fatia: unknown command 'X'" with the nearest command, if one is near; FATIA_EXIT_USAGE. */
static int unknown_command(const char *word)
{
    const char *names[FATIA_ARRAY_SIZE(commands)];
    const char *near;
    size_t n = 0;

    for (; commands[n]; n++)
        names[n] = commands[n]->name;
    near = fatia_cli_nearest(word, names, n);
    if (near) {
        fprintf(stderr, "fatia: unknown command '%s': did you mean '%s'?\n", word, near);
        fprintf(stderr, "Run 'fatia --help' for every command.\n");
    } else {
        fprintf(stderr, "fatia: unknown command '%s'\n", word);
        print_help(stderr);
    }
    return FATIA_EXIT_USAGE;
}

static void print_help(FILE *f)
{
    fprintf(f, "fatia: GPU-as-a-Service engine: slices, quotas, catalog, serving.\n\n"
               "Usage: fatia [-v] COMMAND [ARGS...]\n\nCommands:\n");
    for (size_t i = 0; commands[i]; i++)
        fprintf(f, "  %-14s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\nRun 'fatia COMMAND --help' for a command's options.\n"
               "Exit status: 0 success, 1 failure or invalid input, 2 usage error.\n");
}

int main(int argc, char **argv)
{
    int i = 1;

    fatia_log_set_ident("fatia");
    fatia_log_set_level(FATIA_LOG_WARNING);
    if (fatia_log_level_from_env() < 0)
        fprintf(stderr, "fatia: unknown FATIA_LOG level '%s', ignoring\n", getenv("FATIA_LOG"));
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
            fatia_log_set_level(fatia_log_get_level() < FATIA_LOG_INFO ? FATIA_LOG_INFO
                                                                       : FATIA_LOG_DEBUG);
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            print_help(stdout);
            return FATIA_EXIT_OK;
        } else if (!strcmp(argv[i], "--version")) {
            printf("fatia %s\n", FATIA_VERSION);
            return FATIA_EXIT_OK;
        } else {
            fprintf(stderr, "fatia: unknown option '%s'\n", argv[i]);
            print_help(stderr);
            return FATIA_EXIT_USAGE;
        }
    }
    if (i >= argc) {
        print_help(stderr);
        return FATIA_EXIT_USAGE;
    }
    if (!strcmp(argv[i], "help")) {
        if (i + 1 < argc)
            for (size_t c = 0; commands[c]; c++)
                if (!strcmp(commands[c]->name, argv[i + 1]))
                    return fatia_cli_help(commands[c]);
        if (i + 1 < argc)
            return unknown_command(argv[i + 1]);
        print_help(stdout);
        return FATIA_EXIT_OK;
    }
    for (size_t c = 0; commands[c]; c++)
        if (!strcmp(commands[c]->name, argv[i]))
            return commands[c]->run(argc - i, argv + i);
    return unknown_command(argv[i]);
}
