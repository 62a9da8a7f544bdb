/*
 * fuzz/fuzz_schedule.c: the admission engine over manifests (Kueue objects, namespaces, a
 * SchedulerConfig, workloads): whatever decodes is applied in `fatia schedule`'s order and up to
 * twenty cycles run, each followed by the release of its evictions, as the one-shot driver does.
 *
 * Invariants after every step: fatia_control_check holds (usage equals the admissions below each
 * node, no double admission, assignments match usage, queues consistent) and, when the input held
 * no admission of its own (input may be over-admitted; the engine never is), no active
 * ClusterQueue or root cohort exceeds its quota tree once the evictions are released. Any
 * violation aborts.
 */
#include "base/compat.h"

#include "base/error.h"
#include "base/json.h"
#include "control/control.h"
#include "demand/demand.h"
#include "model/object.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const order[] = {"SchedulerConfig", "Namespace", "WorkloadPriorityClass",
                                    "ResourceFlavor",  "Cohort",    "ClusterQueue",
                                    "LocalQueue",      "Workload",  NULL};

static void check(struct fatia_control *c, bool quota)
{
    char why[512];

    if (fatia_control_check(c, quota ? FATIA_CONTROL_CHECK_QUOTA : 0, why, sizeof(why)) < 0) {
        fprintf(stderr, "invariant violated: %s\n", why);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_docset set;
    struct fatia_diag diag;
    struct fatia_object **objs;
    struct fatia_control *c = NULL;
    bool input_admissions = false;
    const int64_t now = INT64_C(1767225600000000);

    if (size > 1 << 16)
        return 0;
    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    fatia_docset_load_buf(&set, "fuzz.yaml", (const char *)data, size, &diag);
    objs = calloc(set.n + 1, sizeof(*objs));
    if (!objs || fatia_control_new(&c) < 0)
        abort();
    for (size_t i = 0; i < set.n; i++) {
        struct fatia_decode_opts o = {.file = "fuzz.yaml", .map = set.map};
        if (fatia_object_decode(set.docs[i].root, &o, &fatia_demand_checks, &diag, &objs[i]) < 0)
            objs[i] = NULL;
        else if (fatia_json_path(objs[i]->obj, "status.admission"))
            input_admissions = true;
    }
    for (size_t k = 0; order[k]; k++)
        for (size_t i = 0; i < set.n; i++)
            if (objs[i] && !strcmp(objs[i]->kind->kind, order[k]) &&
                fatia_control_apply(c, objs[i]->obj, now, NULL) == -ENOMEM)
                abort();
    check(c, false);
    for (int cyc = 0; cyc < 20; cyc++) {
        const struct fatia_control_result *res;
        if (fatia_control_cycle(c, now, &res) < 0)
            abort();
        check(c, false);
        if (fatia_control_release_all(c, now) < 0)
            abort();
        check(c, !input_admissions);
        if (res->quiet && !fatia_control_has_work(c, now))
            break;
    }
    fatia_control_free(c);
    for (size_t i = 0; i < set.n; i++)
        fatia_object_free(objs[i]);
    free(objs);
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
    return 0;
}
