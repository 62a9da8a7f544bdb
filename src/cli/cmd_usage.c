/*
 * cli/cmd_usage.c: `fatia usage -f PATH...`: resource-hours from UsageRecords (what fatiad's
 * usage controller keeps in the store), per namespace, ClusterQueue, hardware profile or user, over a
 * window; as a table, JSON or CSV (docs/selfservice.md, "Usage metering").
 *
 * The records come from files or stdin (`kubectl get usagerecords -A -o yaml | fatia usage -f -`,
 * a List is its items); the accounting is control/usage.h's, pure, with now passed in (--now, for
 * reports that must not move; the real time otherwise).
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/str.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/input.h"
#include "control/usage.h"
#include "model/objset.h"

static const char usage[] =
    "Usage: fatia usage -f PATH... [--since TIME] [--until TIME] [--now TIME]\n"
    "                   [--by namespace|queue|profile|user] [-o table|json|yaml|csv]\n"
    "\n"
    "Sum the usage that fatiad recorded (fatia.dev UsageRecord: one per admitted run of a\n"
    "Kueue Workload, with what its admission reserved) into resource-hours: GPU-hours\n"
    "(nvidia.com/gpu), slice-hours per slice resource (nvidia.com/gpu.shared, nvidia.com/mig-*),\n"
    "CPU-hours and memory byte-hours, per group. A running workload counts up to now.\n"
    "  kubectl get usagerecords -A -o yaml | fatia usage -f - --by queue\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH   file, directory or '-' (repeatable)\n"
    "  -R, --recursive       descend into subdirectories\n"
    "      --since TIME      from TIME (RFC 3339, or a duration before now: 24h)\n"
    "      --until TIME      to TIME (default now)\n"
    "      --now TIME        the time to count running workloads up to (default: the clock)\n"
    "      --by GROUP        namespace (default), queue, profile or user (who created the\n"
    "                        workload: fatiad's fatia.dev/creator)\n"
    "  -o, --output FORMAT   table (default), json, yaml or csv\n"
    "\n"
    "Exit status: 0 reported, 1 some input invalid or unreadable, 2 usage.\n";

/* One CSV field (RFC 4180): as is, or in double quotes with its quotes doubled when it holds a
 * comma, a quote or a line break (a user's name may: "O'Brien, Pat"). */
static void put_csv_field(const char *s, FILE *f)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int parse_when(const char *s, fatia_usec_t now, fatia_usec_t *ret)
{
    int64_t d;

    if (fatia_time_parse_rfc3339(s, ret) == 0)
        return 0;
    if (fatia_parse_duration_usec(s, &d) == 0 && d >= 0) {
        *ret = now - d;
        return 0;
    }
    return -EINVAL;
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {FATIA_CLI_INPUT_OPTIONS,
                                         {"since", required_argument, NULL, 'S'},
                                         {"until", required_argument, NULL, 'U'},
                                         {"now", required_argument, NULL, 'N'},
                                         {"by", required_argument, NULL, 'B'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const char *const headers[] = {"group", "resource", "hours", "records"};
    const char *since_s = NULL, *until_s = NULL, *by_s = "namespace";
    fatia_usec_t now = fatia_now_real_usec(), since = 0, until = 0;
    enum fatia_control_usage_by by = FATIA_USAGE_BY_NAMESPACE;
    struct fatia_control_usage_rec *recs = NULL;
    struct fatia_cli_input in;
    struct fatia_objset set;
    struct fatia_diag diag;
    struct fatia_object *o;
    bool csv = false;
    size_t n = 0, cap = 0;
    json_t *rows = NULL;
    int c, r, rc = FATIA_EXIT_OK;

    fatia_cli_input_init(&in, &fatia_cmd_usage, FATIA_OUT_TABLE);
    while ((c = getopt_long(argc, argv, "f:Ro:h", opts, NULL)) != -1) {
        if (c == 'o' && !strcmp(optarg, "csv")) {
            csv = true;
            continue;
        }
        r = fatia_cli_input_opt(&in, c, optarg);
        if (r < 0)
            goto usage_exit;
        if (r > 0)
            continue;
        switch (c) {
        case 'S':
            since_s = optarg;
            break;
        case 'U':
            until_s = optarg;
            break;
        case 'N':
            if (fatia_time_parse_rfc3339(optarg, &now) < 0) {
                fatia_cli_input_release(&in);
                return fatia_cli_usage_error(&fatia_cmd_usage, "--now: not an RFC 3339 time: '%s'",
                                             optarg);
            }
            break;
        case 'B':
            by_s = optarg;
            break;
        case 'h':
            fatia_cli_input_release(&in);
            return fatia_cli_help(&fatia_cmd_usage);
        default:
            fatia_cli_input_release(&in);
            return fatia_cli_usage_error(&fatia_cmd_usage, "unknown option");
        }
    }
    if (!strcmp(by_s, "namespace"))
        by = FATIA_USAGE_BY_NAMESPACE;
    else if (!strcmp(by_s, "queue"))
        by = FATIA_USAGE_BY_QUEUE;
    else if (!strcmp(by_s, "profile"))
        by = FATIA_USAGE_BY_PROFILE;
    else if (!strcmp(by_s, "user"))
        by = FATIA_USAGE_BY_USER;
    else {
        fatia_cli_input_release(&in);
        return fatia_cli_usage_error(&fatia_cmd_usage,
                                     "--by: '%s' (namespace, queue, profile or user)", by_s);
    }
    if ((since_s && parse_when(since_s, now, &since) < 0) ||
        (until_s && parse_when(until_s, now, &until) < 0)) {
        fatia_cli_input_release(&in);
        return fatia_cli_usage_error(&fatia_cmd_usage,
                                     "--since/--until: an RFC 3339 time or a duration (24h)");
    }
    if ((r = fatia_cli_input_args(&in, optind, argc, argv, true)) < 0)
        goto usage_exit;

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    if (fatia_cli_input_load(&in, &set, &diag) == -ENOMEM) {
        rc = FATIA_EXIT_FAIL;
        goto out;
    }
    if (fatia_diag_has_errors(&diag))
        rc = FATIA_EXIT_FAIL;
    for (size_t i = 0; (o = fatia_objset_next(&set, "UsageRecord", &i));) {
        char why[200];
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct fatia_control_usage_rec *nr = fatia_realloc(recs, nc * sizeof(*recs));
            if (!nr) {
                rc = FATIA_EXIT_FAIL;
                goto out;
            }
            recs = nr;
            cap = nc;
        }
        if (fatia_control_usage_rec_decode(o->obj, &recs[n], why, sizeof(why)) < 0) {
            fprintf(stderr, "fatia usage: %s: %s\n", o->id, why);
            rc = FATIA_EXIT_FAIL;
            continue;
        }
        n++;
    }
    fatia_diag_print(&diag, stderr);
    rows = fatia_control_usage_report(recs, n, since, until, now, by);
    if (!rows) {
        fprintf(stderr, "fatia usage: out of memory\n");
        rc = FATIA_EXIT_FAIL;
        goto out;
    }
    if (csv) {
        printf("%s,resource,hours,records\n", by_s);
        for (size_t k = 0; k < json_array_size(rows); k++) {
            const json_t *row = json_array_get(rows, k);
            put_csv_field(fatia_json_str(row, "group"), stdout);
            putchar(',');
            put_csv_field(fatia_json_str(row, "resource"), stdout);
            printf(",%s,%lld\n", fatia_json_str(row, "hours"),
                   (long long)json_integer_value(json_object_get(row, "records")));
        }
    } else if (in.out == FATIA_OUT_JSON || in.out == FATIA_OUT_YAML) {
        json_t *doc = json_pack("{s:s,s:O}", "by", by_s, "usage", rows);
        if (!doc || fatia_cli_print(doc, in.out) != FATIA_EXIT_OK)
            rc = FATIA_EXIT_FAIL;
        json_decref(doc);
    } else if (json_array_size(rows) == 0) {
        fprintf(stderr, "no usage in the window\n");
    } else {
        const char *hdr[] = {by_s, headers[1], headers[2], headers[3]};
        struct fatia_table *t = fatia_table_new(4, hdr);
        for (size_t k = 0; t && k < json_array_size(rows); k++) {
            const json_t *row = json_array_get(rows, k);
            const char *g = fatia_json_str(row, "group");
            fatia_table_addf(t, "%s\t%s\t%s\t%lld", g && *g ? g : "-",
                             fatia_json_str(row, "resource"), fatia_json_str(row, "hours"),
                             (long long)json_integer_value(json_object_get(row, "records")));
        }
        if (t)
            fatia_table_print(t, stdout);
        fatia_table_free(t);
    }
out:
    json_decref(rows);
    fatia_free(recs);
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    fatia_cli_input_release(&in);
    return rc;
usage_exit:
    rc = fatia_cli_input_exit(&in, r);
    fatia_cli_input_release(&in);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_usage = {
    .name = "usage",
    .summary = "GPU-, slice-, CPU- and memory-hours from fatiad's usage records",
    .usage = usage,
    .run = run,
};
