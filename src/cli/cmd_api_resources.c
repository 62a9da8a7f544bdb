/*
 * cli/cmd_api_resources.c: `fatia api-resources`: the kinds fatia understands, as
 * `kubectl api-resources` lists them.
 */
#include "base/compat.h"

#include <getopt.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "model/kind.h"

static const char usage[] = "Usage: fatia api-resources [-o table|json|yaml]\n"
                            "\n"
                            "List the kinds fatia reads and serves: name, short names, API\n"
                            "version, scope and the other served versions.\n";

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    enum fatia_output out = FATIA_OUT_TABLE;
    json_t *list = json_array();
    struct fatia_table *t;
    int c, rc;

    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h')
            return fatia_cli_help(&fatia_cmd_api_resources);
        if (c != 'o' || fatia_cli_parse_output(optarg, &out) < 0)
            return fatia_cli_usage_error(&fatia_cmd_api_resources, "bad option");
    }
    t = fatia_table_new(6, (const char *const[]){"name", "shortnames", "apiversion", "namespaced",
                                                 "kind", "also served"});
    for (size_t i = 0; fatia_kinds[i]; i++) {
        const struct fatia_kind *k = fatia_kinds[i];
        char av[128], shorts[128] = "", others[128] = "";
        size_t n = 0, m = 0;
        for (const char *const *s = k->short_names; s && *s; s++)
            n += (size_t)snprintf(shorts + n, sizeof(shorts) - n, "%s%s", n ? "," : "", *s);
        for (const struct fatia_kind_version *v = k->others; v && v->version; v++)
            m += (size_t)snprintf(others + m, sizeof(others) - m, "%s%s", m ? "," : "", v->version);
        fatia_kind_api_version(k, av, sizeof(av));
        fatia_table_add(t,
                        (const char *const[]){k->plural, shorts, av,
                                              k->namespaced ? "true" : "false", k->kind, others});
        json_array_append_new(list, json_pack("{s:s,s:s,s:s,s:b,s:s}", "name", k->plural,
                                              "apiVersion", av, "kind", k->kind, "shortNames",
                                              shorts, "namespaced", k->namespaced));
    }
    if (out == FATIA_OUT_TABLE) {
        fatia_table_print(t, stdout);
        rc = FATIA_EXIT_OK;
    } else {
        rc = fatia_cli_print(list, out);
    }
    fatia_table_free(t);
    json_decref(list);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_api_resources = {
    .name = "api-resources",
    .summary = "list the kinds fatia reads and serves",
    .usage = usage,
    .run = run,
};
