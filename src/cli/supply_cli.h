/*
 * cli/supply_cli.h: what `fatia plan` and `fatia export gpu-operator` share: reading the fleet
 * and the policies (files, upstream device-plugin and mig-parted configs), the catalog, the
 * inventory, and the plan, reporting every problem on stderr.
 */
#ifndef FATIA_CLI_SUPPLY_CLI_H
#define FATIA_CLI_SUPPLY_CLI_H

#include "base/vec.h"
#include "cli/input.h"
#include "model/objset.h"
#include "supply/catalog.h"
#include "supply/config.h"
#include "supply/inventory.h"
#include "supply/plan.h"

enum supply_inv_mode {
    SUPPLY_INV_AUTO,
    SUPPLY_INV_SIM,
    SUPPLY_INV_NVML,
};

struct supply_opts {
    struct fatia_cli_input in; /* -f, -R, -o: fatia_cli_input_init it first */
    enum supply_inv_mode inventory;
    const char *catalog;
    const char *nvml_lib;
    const char *node_name;
    const char *pool;
    const char *device_plugin_config;
    const char *device_plugin_default;
    const char *mig_parted_config;
};

struct supply_session {
    struct fatia_objset set;
    struct fatia_catalog cat;
    struct fatia_supply_config cfg;
    struct fatia_inventory inv;
    struct fatia_plan *plan;
    bool have_cfg;
};

/* The long options both commands take (with FATIA_CLI_INPUT_OPTIONS), and their handling,
 * -f, -R and -o included: returns 1 when c was one of them, 0 when not, -1 on a bad value
 * (already reported). */
#define SUPPLY_LONG_OPTIONS                                                                      \
    FATIA_CLI_INPUT_OPTIONS, {"inventory", required_argument, NULL, 1001},                       \
        {"catalog", required_argument, NULL, 1002}, {"nvml-lib", required_argument, NULL, 1003}, \
        {"node-name", required_argument, NULL, 1004}, {"pool", required_argument, NULL, 1005},   \
        {"device-plugin-config", required_argument, NULL, 1006},                                 \
        {"mig-parted-config", required_argument, NULL, 1007},                                    \
    {                                                                                            \
        "device-plugin-default", required_argument, NULL, 1008                                   \
    }
int fatia_cli_supply_opt(struct supply_opts *o, int c, const char *arg, const char *cmd);
void fatia_cli_supply_opts_release(struct supply_opts *o);

/* Loads everything and plans. Prints problems; returns FATIA_EXIT_OK or FATIA_EXIT_FAIL. */
int fatia_cli_supply_session_open(struct supply_session *s, const struct supply_opts *o,
                                  const char *cmd);
/* Re-reads the inventory and plans again (after --apply). */
int fatia_cli_supply_session_replan(struct supply_session *s, const struct supply_opts *o,
                                    const char *cmd);
void fatia_cli_supply_session_close(struct supply_session *s);

/* Reads a whole file (at most 64 MiB) into a NUL-terminated buffer; NULL with errno set. */
char *fatia_cli_supply_read_file(const char *path, size_t *ret_n);

#endif
