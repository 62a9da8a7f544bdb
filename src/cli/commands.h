/*
 * cli/commands.h: the subcommands of `fatia`, one per cmd_<name>.c, listed in main.c.
 */
#ifndef FATIA_CLI_COMMANDS_H
#define FATIA_CLI_COMMANDS_H

#include "cli/cli.h"

extern const struct fatia_cli_cmd fatia_cmd_validate;
extern const struct fatia_cli_cmd fatia_cmd_api_resources;
extern const struct fatia_cli_cmd fatia_cmd_schedule;
extern const struct fatia_cli_cmd fatia_cmd_plan;
extern const struct fatia_cli_cmd fatia_cmd_export;
extern const struct fatia_cli_cmd fatia_cmd_token;
extern const struct fatia_cli_cmd fatia_cmd_backup; /* store */
extern const struct fatia_cli_cmd fatia_cmd_restore;
extern const struct fatia_cli_cmd fatia_cmd_serve;
extern const struct fatia_cli_cmd fatia_cmd_engine_sim;
extern const struct fatia_cli_cmd fatia_cmd_gateway;
extern const struct fatia_cli_cmd fatia_cmd_profiles;
extern const struct fatia_cli_cmd fatia_cmd_usage;
extern const struct fatia_cli_cmd fatia_cmd_place; /* demand: placement */
extern const struct fatia_cli_cmd fatia_cmd_sim;   /* simulator */
extern const struct fatia_cli_cmd fatia_cmd_image; /* node agent: container images */

#endif
