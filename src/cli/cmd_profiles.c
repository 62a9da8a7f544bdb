/*
 * cli/cmd_profiles.c: `fatia profiles -f PATH...`: the hardware profile catalog as a user reads
 * it: what each profile is called and is for, what it gives (each resource's default and the
 * range a user may pick from), where its work goes (a queue and priority, or which nodes), and
 * whether it is offered (disabled, dashboard visibility).
 *
 * The command reads files only; the work (parsing a profile into what it gives) is the demand
 * layer's (demand/profile.h). Profiles are listed in input order, filtered by namespace and by
 * dashboard feature when asked.
 */
#include "base/compat.h"

#include <getopt.h>

#include "base/buf.h"
#include "base/error.h"
#include "base/json.h"
#include "base/vec.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "demand/demand.h"
#include "demand/profile.h"
#include "model/objset.h"

static const char usage[] =
    "Usage: fatia profiles -f PATH... [-R] [-n NAMESPACE] [--feature workbench|model-serving]\n"
    "                      [-o table|json|yaml]\n"
    "\n"
    "List the hardware profiles (infrastructure.opendatahub.io HardwareProfile) found in the\n"
    "given files or directories as a user picks from them: display name, what the profile\n"
    "gives (each resource's default and allowed range), which queue and priority or which\n"
    "nodes its work goes to, whether it is disabled, and where the dashboard offers it.\n"
    "A workload uses a profile with the annotation opendatahub.io/hardware-profile-name (and\n"
    "-namespace when the profile lives elsewhere); see docs/demand.md.\n"
    "\n"
    "Options:\n"
    "  -f, --filename PATH   file, directory or '-' (repeatable)\n"
    "  -R, --recursive       descend into subdirectories\n"
    "  -n, --namespace NS    only profiles of this namespace\n"
    "      --feature NAME    only profiles offered for this dashboard feature\n"
    "  -o, --output FORMAT   table (default), json or yaml\n"
    "\n"
    "Exit status: 0 listed, 1 some input invalid or unreadable, 2 usage.\n";

static void gives(const struct fatia_profile *p, struct fatia_buf *b)
{
    for (size_t i = 0; i < p->n_ids; i++) {
        const struct fatia_profile_identifier *d = &p->ids[i];
        char def[64], lo[64], hi[64];
        fatia_quantity_format(&d->def, def, sizeof(def));
        fatia_quantity_format(&d->min, lo, sizeof(lo));
        if (d->has_max)
            fatia_quantity_format(&d->max, hi, sizeof(hi));
        (void)fatia_buf_printf(b, "%s%s %s", i ? ", " : "", d->identifier, def);
        if (!d->has_max || fatia_quantity_cmp(&d->min, &d->max) != 0)
            (void)fatia_buf_printf(b, " (%s-%s)", lo, d->has_max ? hi : "");
    }
    if (!p->n_ids)
        (void)fatia_buf_puts(b, "-");
}

static void where(const struct fatia_profile *p, struct fatia_buf *b)
{
    const char *key;
    json_t *v;
    size_t i, n = 0;

    switch (p->sched) {
    case FATIA_PROFILE_SCHED_QUEUE:
        (void)fatia_buf_printf(b, "queue %s", p->local_queue);
        if (p->priority_class)
            (void)fatia_buf_printf(b, ", priority %s", p->priority_class);
        return;
    case FATIA_PROFILE_SCHED_NODE:
        (void)fatia_buf_puts(b, "nodes");
        json_object_foreach(p->node_selector, key, v)(void) fatia_buf_printf(
            b, "%s%s=%s", n++ ? "," : " ", key, json_is_string(v) ? json_string_value(v) : "?");
        json_array_foreach(p->tolerations, i, v)
        {
            const char *k = fatia_json_str(v, "key"), *e = fatia_json_str(v, "effect");
            (void)fatia_buf_printf(b, "%s%s%s%s", i ? "," : "; tolerates ", k && *k ? k : "*",
                                   e && *e ? ":" : "", e && *e ? e : "");
        }
        return;
    default:
        (void)fatia_buf_puts(b, "any node");
    }
}

static void visibility(const struct fatia_profile *p, struct fatia_buf *b)
{
    if (!p->visibility || !p->visibility[0]) {
        (void)fatia_buf_puts(b, "all");
        return;
    }
    for (char **v = p->visibility; *v; v++)
        (void)fatia_buf_printf(b, "%s%s", v == p->visibility ? "" : ",", *v);
}

static int run(int argc, char **argv)
{
    static const struct option opts[] = {{"filename", required_argument, NULL, 'f'},
                                         {"recursive", no_argument, NULL, 'R'},
                                         {"namespace", required_argument, NULL, 'n'},
                                         {"feature", required_argument, NULL, 'F'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    static const char *const headers[] = {"name",  "display name", "gives",      "goes to",
                                          "state", "offered in",   "description"};
    FATIA_VEC(char *) paths = {0};
    enum fatia_output out = FATIA_OUT_TABLE;
    const char *ns_filter = NULL, *feature = NULL;
    bool recursive = false;
    struct fatia_objset set;
    struct fatia_diag diag;
    struct fatia_table *table = NULL;
    struct fatia_object *o;
    json_t *list = NULL;
    size_t shown = 0;
    int c, rc = FATIA_EXIT_OK;

    while ((c = getopt_long(argc, argv, "f:Rn:o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (FATIA_VEC_PUSH(&paths, optarg) < 0)
                return FATIA_EXIT_FAIL;
            break;
        case 'R':
            recursive = true;
            break;
        case 'n':
            ns_filter = optarg;
            break;
        case 'F':
            if (strcmp(optarg, "workbench") && strcmp(optarg, "model-serving")) {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_profiles,
                                             "unknown feature '%s' (workbench or model-serving)",
                                             optarg);
            }
            feature = optarg;
            break;
        case 'o':
            if (fatia_cli_parse_output(optarg, &out) < 0) {
                FATIA_VEC_RELEASE(&paths);
                return fatia_cli_usage_error(&fatia_cmd_profiles, "unknown output format '%s'",
                                             optarg);
            }
            break;
        case 'h':
            FATIA_VEC_RELEASE(&paths);
            return fatia_cli_help(&fatia_cmd_profiles);
        default:
            FATIA_VEC_RELEASE(&paths);
            return fatia_cli_usage_error(&fatia_cmd_profiles, "unknown option");
        }
    }
    for (; optind < argc; optind++)
        if (FATIA_VEC_PUSH(&paths, argv[optind]) < 0)
            return FATIA_EXIT_FAIL;
    if (!paths.n)
        return fatia_cli_usage_error(&fatia_cmd_profiles, "no input: give -f PATH");

    fatia_objset_init(&set);
    fatia_diag_init(&diag);
    if (fatia_objset_load(&set, paths.v, paths.n, recursive, &fatia_demand_checks, &diag) ==
        -ENOMEM) {
        fprintf(stderr, "fatia profiles: out of memory\n");
        rc = FATIA_EXIT_FAIL;
        goto out_release;
    }
    if (fatia_diag_has_errors(&diag))
        rc = FATIA_EXIT_FAIL;
    if (out == FATIA_OUT_TABLE)
        table = fatia_table_new(FATIA_ARRAY_SIZE(headers), headers);
    else
        list = json_array();
    if ((out == FATIA_OUT_TABLE && !table) || (out != FATIA_OUT_TABLE && !list)) {
        fprintf(stderr, "fatia profiles: out of memory\n");
        rc = FATIA_EXIT_FAIL;
        goto out_release;
    }
    for (size_t i = 0; (o = fatia_objset_next(&set, "HardwareProfile", &i));) {
        struct fatia_profile *p;
        char why[300];
        if (ns_filter && (!o->namespace || strcmp(o->namespace, ns_filter)))
            continue;
        if (fatia_profile_parse(o->obj, &p, why, sizeof(why)) < 0) {
            fprintf(stderr, "fatia profiles: %s\n", why);
            rc = FATIA_EXIT_FAIL;
            continue;
        }
        if (!fatia_profile_visible_in(p, feature)) {
            fatia_profile_free(p);
            continue;
        }
        shown++;
        if (table) {
            struct fatia_buf g = FATIA_BUF_INIT, w = FATIA_BUF_INIT, v = FATIA_BUF_INIT;
            char name[600];
            snprintf(name, sizeof(name), "%s/%s", p->namespace ? p->namespace : "", p->name);
            gives(p, &g);
            where(p, &w);
            visibility(p, &v);
            if (fatia_table_add(
                    table, (const char *const[]){name, p->display_name ? p->display_name : p->name,
                                                 g.p, w.p, p->disabled ? "disabled" : "enabled",
                                                 v.p, p->description ? p->description : ""}) < 0)
                rc = FATIA_EXIT_FAIL;
            fatia_buf_release(&g);
            fatia_buf_release(&w);
            fatia_buf_release(&v);
        } else if (json_array_append_new(list, fatia_profile_to_json(p)) < 0) {
            rc = FATIA_EXIT_FAIL;
        }
        fatia_profile_free(p);
    }
    fatia_diag_print(&diag, stderr);
    if (table) {
        if (shown)
            fatia_table_print(table, stdout);
        else
            fprintf(stderr, "no hardware profiles found\n");
    } else {
        json_t *doc = json_pack("{s:O}", "profiles", list);
        if (!doc || fatia_cli_print(doc, out) != FATIA_EXIT_OK)
            rc = FATIA_EXIT_FAIL;
        json_decref(doc);
    }
out_release:
    fatia_table_free(table);
    json_decref(list);
    fatia_diag_release(&diag);
    fatia_objset_release(&set);
    FATIA_VEC_RELEASE(&paths);
    return rc;
}

const struct fatia_cli_cmd fatia_cmd_profiles = {
    .name = "profiles",
    .summary = "list the hardware profile catalog as users pick from it",
    .usage = usage,
    .run = run,
};
