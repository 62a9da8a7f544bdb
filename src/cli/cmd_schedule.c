/*
 * cli/cmd_schedule.c: `fatia schedule -f PATH... [--cycles N] [--now TIME] [--requeue-batch D]
 * [-o json|table|yaml]`:
 * run Kueue scheduling cycles over manifests and print who is admitted, preempted and pending.
 *
 * The command loads and validates the objects (nothing runs on partial input: any invalid
 * document fails the run), hands them to the engine's one-shot driver
 * (control/oneshot.c, fatia_control_schedule) and prints. The JSON shape is fixed
 * (docs/control.md): {"admitted": [...], "preempted": [...], "pending": [...]}; the table view
 * shows the same for a person, then each ClusterQueue's usage against its quota. A run that
 * stops at the 1,000-cycle limit says so on stderr, and so does a run given Jobs or Pods, which
 * it does not schedule (their names, and how to get their Workloads from fatiad).
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
#include "cli/input.h"
#include "control/control.h"
#include "demand/demand.h"
#include "model/objset.h"

static const char usage[] =
    "Usage: fatia schedule -f PATH... [--cycles N] [--now TIME] [--requeue-batch DURATION]\n"
    "                      [-o table|json|yaml] [-R]\n"
    "\n"
    "Run Kueue scheduling cycles over ResourceFlavors, Cohorts, ClusterQueues, LocalQueues,\n"
    "WorkloadPriorityClasses, Namespaces (for namespaceSelector), a SchedulerConfig and\n"
    "Workloads, and print which workloads are admitted, preempted and still pending, with\n"
    "Kueue's messages. Workloads with status.admission and QuotaReserved=True are already\n"
    "admitted; metadata.creationTimestamp orders FIFO; priority is spec.priority or the\n"
    "WorkloadPriorityClass value. Jobs and Pods are not read (Kueue makes Workloads of them\n"
    "in fatiad): the run names those it skipped on stderr.\n"
    "\n"
    "Without --cycles the run repeats cycles until nothing changes, at most 1000; preempted\n"
    "workloads release their quota at once and queue again. The clock does not move.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH   file, directory or '-' (repeatable)\n"
    "  -R, --recursive       descend into subdirectories\n"
    "      --cycles N        run exactly N scheduling cycles (1 = one Kueue cycle)\n"
    "      --now TIME        the clock, RFC 3339 (default: the latest timestamp in the input)\n"
    "      --requeue-batch D delay the requeue of inadmissible workloads after a capacity\n"
    "                        event by D (Kueue: 1s), per root cohort; the clock does not move,\n"
    "                        so such requeues do not happen in the run (default 0: at once)\n"
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

/* Jobs and Pods in the input are not scheduled (the engine reads Workloads, which Kueue makes
 * of queued Jobs and Pods): say so on stderr, with counts and the first names, and how to get
 * the Workloads. Other kinds the engine does not read (HardwareProfiles, DeviceClasses, fleets)
 * are other commands' input and pass silently: examples/ holds them. */
#define SKIPPED_NAMES 5

static void report_skipped(const struct fatia_objset *set)
{
    static const char *const kinds[] = {"Job", "Pod"};
    size_t n[FATIA_ARRAY_SIZE(kinds)] = {0};
    size_t total = 0, printed = 0;

    for (size_t k = 0; k < FATIA_ARRAY_SIZE(kinds); k++) {
        size_t it = 0;
        while (fatia_objset_next(set, kinds[k], &it))
            n[k]++;
        total += n[k];
    }
    if (!total)
        return;
    fprintf(stderr, "fatia schedule: skipped");
    for (size_t k = 0; k < FATIA_ARRAY_SIZE(kinds); k++) {
        struct fatia_object *o;
        size_t it = 0, i = 0;
        if (!n[k])
            continue;
        fprintf(stderr, "%s %zu %s%s (", printed++ ? " and" : "", n[k], kinds[k],
                n[k] > 1 ? "s" : "");
        while ((o = fatia_objset_next(set, kinds[k], &it)) && i < SKIPPED_NAMES)
            fprintf(stderr, "%s%s%s%s", i++ ? ", " : "", o->namespace ? o->namespace : "",
                    o->namespace ? "/" : "", o->name ? o->name : "?");
        if (n[k] > SKIPPED_NAMES)
            fprintf(stderr, ", and %zu more", n[k] - SKIPPED_NAMES);
        fputc(')', stderr);
    }
    fprintf(
        stderr,
        ": fatia schedule reads Workloads only.\n"
        "  Kueue makes a Workload of each queued Job and Pod. To schedule them, create them in\n"
        "  fatiad (make run; kubectl create -f PATH), then:\n"
        "    kubectl get workloads -A -o yaml > workloads.yaml\n"
        "    fatia schedule -f examples/ -f workloads.yaml\n");
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {FATIA_CLI_INPUT_OPTIONS,
                                         {"cycles", required_argument, NULL, 'c'},
                                         {"now", required_argument, NULL, 'n'},
                                         {"requeue-batch", required_argument, NULL, 'b'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct fatia_cli_input in;
    struct fatia_schedule_opts so = {0};
    struct fatia_schedule_report rep;
    struct fatia_objset set;
    struct fatia_diag diag;
    int c, r, rc = FATIA_EXIT_OK;

    fatia_cli_input_init(&in, &fatia_cmd_schedule, FATIA_OUT_TABLE);
    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        r = fatia_cli_input_opt(&in, c, optarg);
        if (r < 0) {
            rc = fatia_cli_input_exit(&in, r);
            fatia_cli_input_release(&in);
            return rc;
        }
        if (r > 0)
            continue;
        switch (c) {
        case 'c':
            if (fatia_parse_int(optarg, 1, FATIA_SCHEDULE_MAX_CYCLES, &so.cycles) < 0) {
                fatia_cli_input_release(&in);
                return fatia_cli_usage_error(&fatia_cmd_schedule, "--cycles '%s': expected 1 to %d",
                                             optarg, FATIA_SCHEDULE_MAX_CYCLES);
            }
            break;
        case 'n':
            if (fatia_time_parse_rfc3339(optarg, &so.now) < 0) {
                fatia_cli_input_release(&in);
                return fatia_cli_usage_error(&fatia_cmd_schedule,
                                             "--now '%s': expected RFC 3339, e.g. "
                                             "2026-11-29T15:04:05Z",
                                             optarg);
            }
            so.have_now = true;
            break;
        case 'b':
            if (fatia_parse_duration_usec(optarg, &so.requeue_batch) < 0 || so.requeue_batch < 0) {
                fatia_cli_input_release(&in);
                return fatia_cli_usage_error(&fatia_cmd_schedule,
                                             "--requeue-batch '%s': expected a duration, e.g. 1s",
                                             optarg);
            }
            break;
        case 'h':
            fatia_cli_input_release(&in);
            return fatia_cli_help(&fatia_cmd_schedule);
        default:
            fatia_cli_input_release(&in);
            return fatia_cli_usage_error(&fatia_cmd_schedule, "unknown option");
        }
    }
    if ((r = fatia_cli_input_args(&in, optind, argc, argv, true)) < 0) {
        rc = fatia_cli_input_exit(&in, r);
        fatia_cli_input_release(&in);
        return rc;
    }

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    if (fatia_cli_input_load(&in, &set, &diag) == -ENOMEM) {
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
    report_skipped(&set);
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
    if (in.out == FATIA_OUT_TABLE)
        print_table(&rep);
    else
        rc = fatia_cli_print(rep.result, in.out);
    json_decref(rep.result);
    json_decref(rep.usage);
out:
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    fatia_cli_input_release(&in);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_schedule = {
    .name = "schedule",
    .summary = "run Kueue admission cycles over manifests: admitted, preempted, pending",
    .usage = usage,
    .run = run,
};
