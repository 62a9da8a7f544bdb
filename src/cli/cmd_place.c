/*
 * cli/cmd_place.c: `fatia place`: where would these pods and workloads go on this fleet?
 *
 * Reads a fleet (NodePools, GPUSharingPolicies), ResourceFlavors, Pods and Workloads, plans the
 * fleet (the supply layer, simulated inventory by default), and places the work with the demand
 * layer's one-shot driver (demand/place_oneshot.c: running pods first, then each workload or pod
 * in input order, committed as it is placed). --test asks of each one "could it ever fit, and
 * where" on the empty fleet instead. The table shows one line per pod (or the reason a workload
 * was not placed); -o json is the driver's document (docs/demand.md, "Placement").
 *
 * Admission is not this command's business (`fatia schedule` decides it): a Workload is placed as
 * its status.admission says, or, without one, as if admitted to unconstrained flavors.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/error.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/supply_cli.h"
#include "demand/place_oneshot.h"

static const char usage[] =
    "Usage: fatia place -f PATH... [--placement POLICY] [--test] [--dynamic-mig MODE]\n"
    "                   [-o table|json|yaml]\n"
    "\n"
    "Place Pods and admitted Workloads on the nodes and GPU slices of a fleet (NodePools and\n"
    "GPUSharingPolicies, planned as `fatia plan` does) and print where each pod goes and which\n"
    "devices each container gets, or why it cannot be placed (kube-scheduler's words). Pods\n"
    "with spec.nodeName are running: they are placed first, on their node. Then each Workload\n"
    "(all its pods or none) and each Pod, in input order, is placed and kept.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH       file, directory or '-' (repeatable)\n"
    "  -R, --recursive           descend into subdirectories\n"
    "      --placement POLICY    binpack (default), bestfit, spread or fragmentation\n"
    "      --test                place each on the empty fleet, keep nothing: could it ever\n"
    "                            fit, and where\n"
    "      --dynamic-mig MODE    off (default); free: re-lay MIG GPUs keeping instances in use;\n"
    "                            evict: also take instances of lower-priority pods\n"
    "      --inventory MODE      sim (default), auto or nvml\n"
    "      --catalog PATH        GPU catalog (default $FATIA_DATA_DIR/gpus or data/gpus)\n"
    "  -o, --output FORMAT       table (default), json or yaml\n"
    "\n"
    "Exit status: 0 done (some work may be unplaced: see the output), 1 invalid input, 2 usage.\n";

static int print_table(const json_t *doc)
{
    static const char *const h[] = {"WORKLOAD", "POD", "NODE", "DEVICES"};
    struct fatia_table *t = fatia_table_new(FATIA_ARRAY_SIZE(h), h);
    const json_t *gpus = json_object_get(doc, "gpus");
    size_t i, k, d;
    const json_t *p, *pod, *dev;

    if (!t)
        return FATIA_EXIT_FAIL;
    json_array_foreach(json_object_get(doc, "placements"), i, p)
    {
        const char *w = fatia_json_str(p, "workload");
        if (!json_is_true(json_object_get(p, "placed"))) {
            fatia_table_addf(t, "%s\t-\t-\tnot placed: %s", w, fatia_json_str(p, "reason"));
            continue;
        }
        json_array_foreach(json_object_get(p, "pods"), k, pod)
        {
            char devs[1024];
            size_t o = 0;
            devs[0] = '\0';
            json_array_foreach(json_object_get(pod, "devices"), d, dev)
            {
                const json_t *milli = json_object_get(dev, "gpuMilli");
                if (o < sizeof(devs))
                    o += (size_t)snprintf(devs + o, sizeof(devs) - o, "%s%s", d ? "," : "",
                                          fatia_json_str(dev, "id"));
                if (milli && o < sizeof(devs) && json_integer_value(milli) < 1000)
                    o += (size_t)snprintf(devs + o, sizeof(devs) - o, "(%lldm)",
                                          (long long)json_integer_value(milli));
            }
            fatia_table_addf(t, "%s\t%s\t%s\t%s", k ? "" : w, fatia_json_str(pod, "pod"),
                             fatia_json_str(pod, "node"), o ? devs : "-");
        }
        json_array_foreach(json_object_get(p, "migChanges"), k, pod)
        {
            char lay[512];
            size_t o = 0;
            const json_t *x;
            lay[0] = '\0';
            json_array_foreach(json_object_get(pod, "layout"), d, x) if (o < sizeof(lay)) o +=
                (size_t)snprintf(lay + o, sizeof(lay) - o, "%s%s", d ? "," : "",
                                 json_string_value(x));
            fatia_table_addf(t, "\t(MIG re-laid)\t%s\tGPU %lld: %s", fatia_json_str(pod, "node"),
                             (long long)json_integer_value(json_object_get(pod, "gpu")), lay);
        }
        json_array_foreach(json_object_get(p, "victims"), k, pod)
            fatia_table_addf(t, "\t(evicted)\t-\t%s", json_string_value(pod));
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);
    printf("\nGPUs: %lld, allocated %s, untouched %lld, full %lld (policy %s)\n",
           (long long)json_integer_value(json_object_get(gpus, "total")),
           fatia_json_str(gpus, "allocated"),
           (long long)json_integer_value(json_object_get(gpus, "untouched")),
           (long long)json_integer_value(json_object_get(gpus, "full")),
           fatia_json_str(doc, "policy"));
    return FATIA_EXIT_OK;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {SUPPLY_LONG_OPTIONS,
                                         {"placement", required_argument, NULL, 1200},
                                         {"test", no_argument, NULL, 1201},
                                         {"dynamic-mig", required_argument, NULL, 1202},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct supply_opts o = {0};
    struct supply_session s;
    struct fatia_place_opts po = {0};
    struct fatia_diag d;
    json_t *doc = NULL;
    int c, r, rc;

    fatia_cli_input_init(&o.in, &fatia_cmd_place, FATIA_OUT_TABLE);
    o.inventory = SUPPLY_INV_SIM;
    optind = 1;
    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        r = fatia_cli_supply_opt(&o, c, optarg, "place");
        if (r < 0) {
            fatia_cli_supply_opts_release(&o);
            return FATIA_EXIT_USAGE;
        }
        if (r > 0)
            continue;
        switch (c) {
        case 1200:
            if (fatia_place_policy_parse(optarg, &po.policy) < 0) {
                fatia_cli_supply_opts_release(&o);
                return fatia_cli_usage_error(
                    &fatia_cmd_place,
                    "unknown placement policy '%s': expected binpack, bestfit, spread or "
                    "fragmentation",
                    optarg);
            }
            break;
        case 1201:
            po.flags |= FATIA_PLACE_TEST;
            break;
        case 1202:
            if (!strcmp(optarg, "off"))
                po.mig = FATIA_PLACE_MIG_OFF;
            else if (!strcmp(optarg, "free"))
                po.mig = FATIA_PLACE_MIG_FREE;
            else if (!strcmp(optarg, "evict"))
                po.mig = FATIA_PLACE_MIG_EVICT;
            else {
                fatia_cli_supply_opts_release(&o);
                return fatia_cli_usage_error(&fatia_cmd_place,
                                             "unknown dynamic MIG mode '%s': expected off, free "
                                             "or evict",
                                             optarg);
            }
            break;
        case 'h':
            fatia_cli_supply_opts_release(&o);
            return fatia_cli_help(&fatia_cmd_place);
        default:
            fatia_cli_supply_opts_release(&o);
            return fatia_cli_usage_error(&fatia_cmd_place, "unknown option");
        }
    }
    if ((r = fatia_cli_input_args(&o.in, optind, argc, argv, true)) < 0) {
        rc = fatia_cli_input_exit(&o.in, r);
        fatia_cli_supply_opts_release(&o);
        return rc;
    }
    rc = fatia_cli_supply_session_open(&s, &o, "place");
    if (rc == FATIA_EXIT_OK) {
        fatia_diag_init(&d);
        r = fatia_place_oneshot(&s.set, s.plan, &po, &doc, &d);
        fatia_diag_print(&d, stderr);
        fatia_diag_release(&d);
        if (r == -ENOMEM)
            fprintf(stderr, "fatia place: out of memory\n");
        if (r < 0)
            rc = FATIA_EXIT_FAIL;
        else if (o.in.out == FATIA_OUT_TABLE)
            rc = print_table(doc);
        else
            rc = fatia_cli_print(doc, o.in.out);
        json_decref(doc);
    }
    fatia_cli_supply_session_close(&s);
    fatia_cli_supply_opts_release(&o);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_place = {
    .name = "place",
    .summary = "place pods and workloads on nodes and GPU slices",
    .usage = usage,
    .run = run,
};
