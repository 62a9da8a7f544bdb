/*
 * cli/cmd_export.c: `fatia export gpu-operator`: the sharing policies as the NVIDIA GPU Operator
 * takes them: a k8s-device-plugin ConfigMap, a mig-parted ConfigMap, and the fleet with the node
 * labels that select them (nvidia.com/device-plugin.config, nvidia.com/mig.config).
 *
 * Only upstream fields carry the policy: `fatia plan` on the exported files (with
 * --device-plugin-config and --mig-parted-config) gives the same slices, which
 * tests/supply/export.sh checks with every annotation stripped. What the operator cannot express
 * (fractions, per-GPU sharing, fatia's memory caps) is refused with the field that says it
 * (supply/upstream.h).
 */
#include "base/compat.h"

#include <sys/stat.h>

#include <getopt.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/supply_cli.h"
#include "model/doc.h"
#include "supply/upstream.h"

static const char usage[] =
    "Usage: fatia export gpu-operator [-f PATH]... [-d DIR] [-o yaml|json]\n"
    "\n"
    "Render the sharing policies for a cluster that runs the NVIDIA GPU Operator: a\n"
    "k8s-device-plugin ConfigMap (one config per sharing policy and MIG strategy), a mig-parted\n"
    "ConfigMap (one config per MIG policy, an entry per product), and the fleet with the node\n"
    "labels that select them. Only upstream fields carry the policy: `fatia plan` on the\n"
    "exported files gives the same slices. Policies the operator cannot express are refused\n"
    "with the field that says them.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH    fleet and policies (repeatable; default: the default fleet)\n"
    "  -d, --output-dir DIR   write device-plugin-config, mig-parted-config and fleet files there\n"
    "                         (default: one stream on stdout)\n"
    "  -o, --output FORMAT    yaml (default) or json\n"
    "      --inventory MODE   sim (default), nvml or auto\n"
    "  (and --catalog, --nvml-lib, --node-name, --pool as for `fatia plan`)\n"
    "\n"
    "Helm: --set devicePlugin.config.name=fatia-device-plugin-config\n"
    "      --set migManager.config.name=fatia-mig-parted-config\n"
    "\n"
    "Exit status: 0 exported, 1 invalid input or not expressible upstream, 2 usage.\n";

static int emit(const json_t *v, enum fatia_output out, FILE *f)
{
    struct fatia_buf b = FATIA_BUF_INIT;
    int r = out == FATIA_OUT_JSON
                ? fatia_json_dump_buf(v, &b, JSON_INDENT(2) | JSON_REAL_PRECISION(17))
                : fatia_yaml_dump(v, &b);

    if (r == 0 &&
        (fwrite(b.p, 1, b.len, f) != b.len || (out == FATIA_OUT_JSON && fputc('\n', f) < 0)))
        r = -EIO;
    fatia_buf_release(&b);
    return r;
}

static int write_file(const char *dir, const char *name, const json_t *v, enum fatia_output out)
{
    char path[4096];
    FILE *f;
    int r;

    snprintf(path, sizeof(path), "%s/%s.%s", dir, name, out == FATIA_OUT_JSON ? "json" : "yaml");
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "fatia export: cannot write '%s': %s\n", path, fatia_strerror(-errno));
        return FATIA_EXIT_FAIL;
    }
    r = emit(v, out, f);
    if (fclose(f) != 0 || r < 0) {
        fprintf(stderr, "fatia export: cannot write '%s'\n", path);
        return FATIA_EXIT_FAIL;
    }
    printf("wrote %s\n", path);
    return FATIA_EXIT_OK;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {SUPPLY_LONG_OPTIONS,
                                         {"output-dir", required_argument, NULL, 'd'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct supply_opts o = {0};
    struct supply_session s;
    enum fatia_output out = FATIA_OUT_YAML;
    const char *dir = NULL;
    struct fatia_diag d;
    json_t *doc = NULL, *fleet;
    int c, r, rc;

    optind = 1;
    fatia_cli_input_init(&o.in, &fatia_cmd_export, FATIA_OUT_YAML);
    o.inventory = SUPPLY_INV_SIM;
    while ((c = getopt_long(argc, argv, "f:Rd:o:h", opts, NULL)) != -1) {
        /* -o: yaml or json only (the helper would take a table) */
        if (c == 'o') {
            if (fatia_cli_parse_output(optarg, &out) < 0 || out == FATIA_OUT_TABLE) {
                fatia_cli_supply_opts_release(&o);
                return fatia_cli_usage_error(&fatia_cmd_export, "output must be yaml or json");
            }
            continue;
        }
        r = fatia_cli_supply_opt(&o, c, optarg, "export");
        if (r < 0) {
            fatia_cli_supply_opts_release(&o);
            return FATIA_EXIT_USAGE;
        }
        if (r > 0)
            continue;
        switch (c) {
        case 'd':
            dir = optarg;
            break;
        case 'h':
            fatia_cli_supply_opts_release(&o);
            return fatia_cli_help(&fatia_cmd_export);
        default:
            fatia_cli_supply_opts_release(&o);
            return fatia_cli_usage_error(&fatia_cmd_export, "unknown option");
        }
    }
    if (optind >= argc || strcmp(argv[optind], "gpu-operator") != 0) {
        fatia_cli_supply_opts_release(&o);
        return fatia_cli_usage_error(&fatia_cmd_export, "export what? (supported: gpu-operator)");
    }
    if ((r = fatia_cli_input_args(&o.in, optind + 1, argc, argv, false)) < 0) {
        rc = fatia_cli_input_exit(&o.in, r);
        fatia_cli_supply_opts_release(&o);
        return rc;
    }
    rc = fatia_cli_supply_session_open(&s, &o, "export");
    if (rc != FATIA_EXIT_OK)
        goto out;
    fatia_diag_init(&d);
    if (fatia_upstream_export(s.plan, &d, &doc) < 0)
        rc = FATIA_EXIT_FAIL;
    fatia_diag_print(&d, stderr);
    fatia_diag_release(&d);
    if (rc != FATIA_EXIT_OK)
        goto out;
    fleet = json_pack("{s:s,s:s,s:O}", "apiVersion", "v1", "kind", "List", "items",
                      json_object_get(doc, "fleet"));
    if (dir) {
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            fprintf(stderr, "fatia export: cannot create '%s': %s\n", dir, fatia_strerror(-errno));
            rc = FATIA_EXIT_FAIL;
        }
        if (rc == FATIA_EXIT_OK)
            rc = write_file(dir, "device-plugin-config", json_object_get(doc, "devicePlugin"), out);
        if (rc == FATIA_EXIT_OK && !json_is_null(json_object_get(doc, "migParted")))
            rc = write_file(dir, "mig-parted-config", json_object_get(doc, "migParted"), out);
        if (rc == FATIA_EXIT_OK)
            rc = write_file(dir, "fleet", fleet, out);
    } else if (out == FATIA_OUT_JSON) {
        if (emit(doc, out, stdout) < 0)
            rc = FATIA_EXIT_FAIL;
    } else {
        json_t *items = json_object_get(doc, "fleet"), *x;
        size_t i;
        bool first = true;
        const char *keys[] = {"devicePlugin", "migParted"};
        for (size_t k = 0; k < 2; k++) {
            json_t *v = json_object_get(doc, keys[k]);
            if (json_is_null(v))
                continue;
            printf("%s", first ? "" : "---\n");
            first = false;
            if (emit(v, out, stdout) < 0)
                rc = FATIA_EXIT_FAIL;
        }
        json_array_foreach(items, i, x)
        {
            printf("---\n");
            if (emit(x, out, stdout) < 0)
                rc = FATIA_EXIT_FAIL;
        }
    }
    json_decref(fleet);
out:
    json_decref(doc);
    fatia_cli_supply_session_close(&s);
    fatia_cli_supply_opts_release(&o);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_export = {
    .name = "export",
    .summary = "render sharing policies for the NVIDIA GPU Operator (device plugin, mig-parted)",
    .usage = usage,
    .run = run,
};
