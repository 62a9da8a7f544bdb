/*
 * cli/cmd_schedule.c: `fatia schedule -f PATH... [--cycles N] [--now TIME] [-o json|table|yaml]`:
 * run Kueue scheduling cycles over manifests and print who is admitted, preempted and pending.
 *
 * The command loads and validates the objects (nothing runs on partial input: any invalid
 * document fails the run), hands them to the engine's one-shot driver
 * (control/oneshot.c, fatia_control_schedule) and prints. The JSON shape is fixed
 * (docs/control.md): {"admitted": [...], "preempted": [...], "pending": [...]}; the table view
 * shows the same for a person, then each ClusterQueue's usage against its quota. A run that
 * stops at the 1,000-cycle limit says so on stderr.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "base/vec.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "control/control.h"
#include "demand/demand.h"
#include "model/objset.h"

static const char usage[] =
    "Usage: fatia schedule -f PATH... [--cycles N] [--now TIME] [-o table|json|yaml] [-R]\n"
    "\n"
    "Run Kueue scheduling cycles over ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,\n"
    "WorkloadPriorityClasses, Namespaces (for namespaceSelector), a SchedulerConfig and\n"
    "Workloads, and print which workloads are admitted, preempted and still pending, with\n"
    "Kueue's messages. Workloads with status.admission and QuotaReserved=True are already\n"
    "admitted; metadata.creationTimestamp orders FIFO; priority is spec.priority or the\n"
    "WorkloadPriorityClass value.\n"
    "\n"
    "Without --cycles the run repeats cycles until nothing changes, at most 1000; preempted\n"
    "workloads release their quota at once and queue again. The clock does not move.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH   file, directory or '-' (repeatable)\n"
    "  -R, --recursive       descend into subdirectories\n"
    "      --cycles N        run exactly N scheduling cycles (1 = one Kueue cycle)\n"
    "      --now TIME        the clock, RFC 3339 (default: the latest timestamp in the input)\n"
    "  -o, --output FORMAT   table (default), json or yaml\n"
    "\n"
    "Exit status: 0 done, 1 invalid input, 2 usage.\n";

static void print_table(const struct fatia_schedule_report *rep)
{
    const json_t *res = rep->result;
    static const char *const adm_h[] = {"WORKLOAD", "CLUSTERQUEUE", "POD SETS"};
    static const char *const pre_h[] = {"WORKLOAD", "REASON"};
    static const char *const pen_h[] = {"WORKLOAD", "CLUSTERQUEUE", "MESSAGE"};
    static const char *const use_h[] = {"CLUSTERQUEUE", "COHORT", "FLAVOR", "RESOURCE",
                                        "NOMINAL",      "BORROW", "USAGE",  "BORROWED"};
    struct fatia_table *t;
    size_t i;
    json_t *x;
    char buf[2048];

    printf("ADMITTED (%zu)\n", json_array_size(json_object_get(res, "admitted")));
    t = fatia_table_new(3, adm_h);
    json_array_foreach(json_object_get(res, "admitted"), i, x)
    {
        size_t j;
        json_t *ps;
        size_t off = 0;
        buf[0] = '\0';
        json_array_foreach(json_object_get(x, "podSets"), j, ps)
        {
            const char *k;
            json_t *f;
            off += (size_t)snprintf(buf + off, off < sizeof(buf) ? sizeof(buf) - off : 0,
                                    "%s%s x%" JSON_INTEGER_FORMAT, j ? "; " : "",
                                    fatia_json_str(ps, "name"),
                                    json_integer_value(json_object_get(ps, "count")));
            json_object_foreach(json_object_get(ps, "flavors"), k, f) off +=
                (size_t)snprintf(buf + off, off < sizeof(buf) ? sizeof(buf) - off : 0, " %s=%s", k,
                                 json_string_value(f));
        }
        const char *cells[] = {fatia_json_str(x, "workload"), fatia_json_str(x, "clusterQueue"),
                               buf};
        fatia_table_add(t, cells);
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);

    printf("\nPREEMPTED (%zu)\n", json_array_size(json_object_get(res, "preempted")));
    t = fatia_table_new(2, pre_h);
    json_array_foreach(json_object_get(res, "preempted"), i, x)
    {
        const char *cells[] = {fatia_json_str(x, "workload"), fatia_json_str(x, "reason")};
        fatia_table_add(t, cells);
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);

    printf("\nPENDING (%zu)\n", json_array_size(json_object_get(res, "pending")));
    t = fatia_table_new(3, pen_h);
    json_array_foreach(json_object_get(res, "pending"), i, x)
    {
        const char *cells[] = {fatia_json_str(x, "workload"), fatia_json_str(x, "clusterQueue"),
                               fatia_json_str(x, "message")};
        fatia_table_add(t, cells);
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);

    printf("\nUSAGE\n");
    t = fatia_table_new(8, use_h);
    json_array_foreach(rep->usage, i, x)
    {
        const char *r = fatia_json_str(x, "resource");
        char nominal[64], blimit[64] = "-", use[64], borrowed[64];
        int64_t v;
        fatia_json_int(x, "nominal", &v);
        fatia_control_format_amount(r, v, nominal, sizeof(nominal));
        if (fatia_json_int(x, "borrowingLimit", &v))
            fatia_control_format_amount(r, v, blimit, sizeof(blimit));
        fatia_json_int(x, "usage", &v);
        fatia_control_format_amount(r, v, use, sizeof(use));
        fatia_json_int(x, "borrowed", &v);
        fatia_control_format_amount(r, v, borrowed, sizeof(borrowed));
        const char *cells[] = {fatia_json_str(x, "clusterQueue"),
                               fatia_json_str(x, "cohort"),
                               fatia_json_str(x, "flavor"),
                               r,
                               nominal,
                               blimit,
                               use,
                               borrowed};
        fatia_table_add(t, cells);
    }
    fatia_table_print(t, stdout);
    fatia_table_free(t);
    printf("\n%d cycle(s) at %s\n", rep->cycles_run,
           (fatia_time_format_rfc3339(rep->now, false, buf, sizeof(buf)), buf));
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"filename", required_argument, NULL, 'f'},
                                         {"recursive", no_argument, NULL, 'R'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"cycles", required_argument, NULL, 'c'},
                                         {"now", required_argument, NULL, 'n'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    FATIA_VEC(char *) paths = {0};
    enum fatia_output out = FATIA_OUT_TABLE;
    struct fatia_schedule_opts so = {0};
    struct fatia_schedule_report rep;
    struct fatia_objset set;
    struct fatia_diag diag;
    bool recursive = false;
    int c, r, rc = FATIA_EXIT_OK;

    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (FATIA_VEC_PUSH(&paths, optarg) < 0)
                return FATIA_EXIT_FAIL;
            break;
        case 'R':
            recursive = true;
            break;
        case 'o':
            if (fatia_cli_parse_output(optarg, &out) < 0) {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_schedule, "unknown output format '%s'",
                                             optarg);
            }
            break;
        case 'c':
            if (fatia_parse_int(optarg, 1, FATIA_SCHEDULE_MAX_CYCLES, &so.cycles) < 0) {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_schedule, "--cycles '%s': expected 1 to %d",
                                             optarg, FATIA_SCHEDULE_MAX_CYCLES);
            }
            break;
        case 'n':
            if (fatia_time_parse_rfc3339(optarg, &so.now) < 0) {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_schedule,
                                             "--now '%s': expected RFC 3339, e.g. "
                                             "2026-11-29T15:04:05Z",
                                             optarg);
            }
            so.have_now = true;
            break;
        case 'h':
            FATIA_VEC_RELEASE(&paths);
            return fatia_cli_help(&fatia_cmd_schedule);
        default:
            FATIA_VEC_RELEASE(&paths);
            return fatia_cli_usage_error(&fatia_cmd_schedule, "unknown option");
        }
    }
    for (; optind < argc; optind++)
        if (FATIA_VEC_PUSH(&paths, argv[optind]) < 0)
            return FATIA_EXIT_FAIL;
    if (!paths.n)
        return fatia_cli_usage_error(&fatia_cmd_schedule, "no input: give -f PATH");

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    r = fatia_objset_load(&set, paths.v, paths.n, recursive, &fatia_demand_checks, &diag);
    if (r == -ENOMEM) {
        fprintf(stderr, "fatia schedule: out of memory\n");
        rc = FATIA_EXIT_FAIL;
        goto out;
    }
    if (fatia_diag_has_errors(&diag)) {
        fatia_diag_print(&diag, stderr);
        fprintf(stderr, "fatia schedule: the input has errors; nothing was scheduled\n");
        rc = FATIA_EXIT_FAIL;
        goto out;
    }
    fatia_diag_print(&diag, stderr); /* warnings */
    fatia_diag_release(&diag);
    fatia_diag_init(&diag);
    r = fatia_control_schedule(&set, &so, &rep, &diag);
    fatia_diag_print(&diag, stderr);
    if (r < 0) {
        fprintf(stderr, "fatia schedule: %s\n", fatia_strerror(r));
        rc = FATIA_EXIT_FAIL;
        goto out;
    }
    if (rep.capped)
        fprintf(stderr,
                "fatia schedule: stopped after %d cycles (the limit); some queues had not "
                "settled\n",
                rep.cycles_run);
    if (out == FATIA_OUT_TABLE)
        print_table(&rep);
    else
        rc = fatia_cli_print(rep.result, out);
    json_decref(rep.result);
    json_decref(rep.usage);
out:
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    FATIA_VEC_RELEASE(&paths);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_schedule = {
    .name = "schedule",
    .summary = "run Kueue admission cycles over manifests: admitted, preempted, pending",
    .usage = usage,
    .run = run,
};
