/*
 * cli/cmd_api_resources.c: `fatia api-resources`: the kinds fatia understands, as
 * `kubectl api-resources` lists them.
 *
 * The kinds are turned into JSON once (kind_json) and the table is printed from that JSON, so
 * that -o json|yaml and the table cannot disagree. (The JSON was once packed with a format whose
 * order did not match its arguments, which crashed every run: tests/cli/api-resources.sh runs
 * every -o.)
 */
#include "base/compat.h"

#include <getopt.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/input.h"
#include "model/kind.h"

static const char usage[] = "Usage: fatia api-resources [-o table|json|yaml]\n"
                            "\n"
                            "List the kinds fatia reads and serves: name, short names, API\n"
                            "version, scope and the other served versions.\n"
                            "\n"
                            "Options:\n"
                            "  -o, --output FORMAT   table (default), json or yaml\n"
                            "\n"
                            "Exit status: 0 listed, 2 usage.\n";

/* One kind as JSON: {"name", "shortNames": [...], "apiVersion", "namespaced", "kind",
 * "alsoServed": [...]}. NULL on out of memory. */
static json_t *kind_json(const struct fatia_kind *k)
{
    json_t *shorts = json_array(), *others = json_array();
    char av[128];

    for (const char *const *s = k->short_names; s && *s; s++)
        json_array_append_new(shorts, json_string(*s));
    for (const struct fatia_kind_version *v = k->others; v && v->version; v++)
        json_array_append_new(others, json_string(v->version));
    fatia_kind_api_version(k, av, sizeof(av));
    /* "o" steals the arrays, also when the pack fails. */
    return json_pack("{s:s,s:o,s:s,s:b,s:s,s:o}", "name", k->plural, "shortNames", shorts,
                     "apiVersion", av, "namespaced", k->namespaced, "kind", k->kind, "alsoServed",
                     others);
}

/* "a,b,c" of a JSON array of strings. */
static void join(const json_t *a, char *buf, size_t size)
{
    size_t i, n = 0;
    json_t *x;

    buf[0] = '\0';
    json_array_foreach(a, i, x) n += (size_t)snprintf(buf + n, n < size ? size - n : 0, "%s%s",
                                                      n ? "," : "", json_string_value(x));
}

static int print_table(const json_t *list)
{
    struct fatia_table *t =
        fatia_table_new(6, (const char *const[]){"name", "shortnames", "apiversion", "namespaced",
                                                 "kind", "also served"});
    size_t i;
    json_t *k;

    if (!t)
        goto oom;
    json_array_foreach(list, i, k)
    {
        char shorts[128], others[128];
        join(json_object_get(k, "shortNames"), shorts, sizeof(shorts));
        join(json_object_get(k, "alsoServed"), others, sizeof(others));
        if (fatia_table_add(t,
                            (const char *const[]){
                                json_string_value(json_object_get(k, "name")), shorts,
                                json_string_value(json_object_get(k, "apiVersion")),
                                json_is_true(json_object_get(k, "namespaced")) ? "true" : "false",
                                json_string_value(json_object_get(k, "kind")), others}) < 0)
            goto oom;
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);
    return FATIA_EXIT_OK;
oom:
    fatia_table_free(t);
    fprintf(stderr, "fatia api-resources: out of memory\n");
    return FATIA_EXIT_FAIL;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    enum fatia_output out = FATIA_OUT_TABLE;
    json_t *list;
    int c, rc;

    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        if (c == 'h')
            return fatia_cli_help(&fatia_cmd_api_resources);
        if (c != 'o')
            return fatia_cli_usage_error(&fatia_cmd_api_resources, "unknown option");
        if (fatia_cli_output_opt(&fatia_cmd_api_resources, optarg, &out) < 0)
            return FATIA_EXIT_USAGE;
    }
    if (optind < argc)
        return fatia_cli_usage_error(&fatia_cmd_api_resources, "unexpected argument '%s'",
                                     argv[optind]);
    list = json_array();
    for (size_t i = 0; list && fatia_kinds[i]; i++)
        if (json_array_append_new(list, kind_json(fatia_kinds[i])) < 0) {
            json_decref(list);
            list = NULL;
        }
    if (!list) {
        fprintf(stderr, "fatia api-resources: out of memory\n");
        return FATIA_EXIT_FAIL;
    }
    rc = out == FATIA_OUT_TABLE ? print_table(list) : fatia_cli_print(list, out);
    json_decref(list);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_api_resources = {
    .name = "api-resources",
    .summary = "list the kinds fatia reads and serves",
    .usage = usage,
    .run = run,
};
