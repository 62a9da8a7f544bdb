/*
 * tests/unit/test_verdict.c: one verdict (issue 17 item 5). `fatia validate` and fatiad must
 * decide the same for every object: every document of every example (examples/), test input
 * (tests/data/, tests/golden/) and fuzz corpus entry (fuzz/corpus/object/) is decoded as
 * `fatia validate` decodes it (cmd_validate.c: a create, generateName standing for the name,
 * unknown fields errors under kubectl's default Strict validation, the demand layer's checks)
 * and sent to a real API server's write path as a dry-run create with fieldValidation=Strict
 * (its namespace created first, as the admin). Accepted by one and refused by the other is a
 * failure, printed with the file, the document and both answers. A kind the server does not
 * serve is refused by both (validate: unknown kind; server: 404). AlreadyExists (the same name
 * twice in one run, the namespaces made here) is not a verdict and counts as accepted.
 *
 * The three disagreements of the issue are pinned by name too: generateName, an unknown field
 * (HardwareProfile spec.displayName), NVIDIA's VfioDeviceConfig.iommu.
 */
#include "base/compat.h"

/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
/* clang-format on */

#include <sys/stat.h>

#include <dirent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>

#include "apiserver/apiserver.h"
#include "apiserver/internal.h"
#include "base/error.h"
#include "base/json.h"
#include "demand/demand.h"
#include "model/doc.h"
#include "model/kind.h"
#include "model/labels.h"
#include "model/object.h"
#include "store/store.h"

struct env {
    struct event_base *base;
    struct fatia_store *store;
    struct fatia_apiserver *s;
    size_t docs, objects, mismatches;
};

struct answer {
    bool done;
    int code;
    char msg[512];
};

static void on_done(void *arg, struct opres *r)
{
    struct answer *a = arg;

    a->done = true;
    a->code = r->code;
    if (r->status)
        snprintf(a->msg, sizeof(a->msg), "%s", nz(fatia_json_str(r->status, "message")));
}

static int server_create(struct env *e, const json_t *doc, const char *ns, bool dry_run, char *msg,
                         size_t msg_n)
{
    const char *av = fatia_json_str(doc, "apiVersion"), *kind = fatia_json_str(doc, "kind");
    const struct fatia_kind_version *ver = NULL;
    const struct fatia_kind *k = av && kind ? fatia_kind_find(av, kind, &ver) : NULL;
    struct answer a = {0};
    struct opctx c;

    if (!k) {
        snprintf(msg, msg_n, "404: no kind %s in %s", kind ? kind : "?", av ? av : "?");
        return 404;
    }
    c = (struct opctx){.s = e->s,
                       .user = &fatia_user_system,
                       .t = fatia_api_server_table_for(e->s, k),
                       .ver = ver,
                       .ns = k->namespaced ? ns : NULL,
                       .dry_run = dry_run,
                       .fv = FATIA_FV_STRICT};
    fatia_api_op_create(&c, (json_t *)doc, on_done, &a);
    for (int i = 0; i < 10000 && !a.done; i++)
        event_base_loop(e->base, EVLOOP_ONCE);
    assert_true(a.done);
    snprintf(msg, msg_n, "%d: %s", a.code, a.msg);
    return a.code;
}

static void ensure_namespace(struct env *e, const char *ns)
{
    char buf[512], msg[600];
    json_t *doc;

    if (!fatia_is_dns1123_label(ns, buf, sizeof(buf)))
        return; /* the server will say 404 or 422, validate 'invalid namespace' */
    doc = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata",
                    "name", ns);
    (void)server_create(e, doc, NULL, false, msg, sizeof(msg));
    json_decref(doc);
}

static bool validate_verdict(const json_t *root, const struct fatia_docset *set,
                             const struct fatia_doc *d, char *msg, size_t msg_n)
{
    json_t *copy = json_deep_copy(root);
    struct fatia_decode_opts o = {.file = d->file,
                                  .map = set->map,
                                  .pos = d->pos,
                                  .allow_generate_name = true,
                                  .strict_unknown = true};
    struct fatia_diag diag;
    struct fatia_object *obj = NULL;
    int r;

    fatia_diag_init(&diag);
    r = fatia_object_decode(copy, &o, &fatia_demand_checks, &diag, &obj);
    msg[0] = '\0';
    for (size_t i = 0; i < diag.n; i++)
        if (diag.v[i].level == FATIA_DIAG_ERROR) {
            snprintf(msg, msg_n, "%s: %s", nz(diag.v[i].path), diag.v[i].msg);
            break;
        }
    fatia_object_free(obj);
    fatia_diag_release(&diag);
    json_decref(copy);
    return r == 0;
}

static void check_file(struct env *e, const char *path)
{
    struct fatia_docset set;
    struct fatia_diag diag;
    FILE *f = fopen(path, "rb");
    char *data;
    long n;

    if (!f)
        return;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (n < 0 || n > (1 << 20)) {
        fclose(f);
        return;
    }
    data = malloc((size_t)n + 1);
    assert_non_null(data);
    if (fread(data, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(data);
        return;
    }
    fclose(f);
    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    (void)fatia_docset_load_buf(&set, path, data, (size_t)n, &diag);
    for (size_t i = 0; i < set.n; i++) {
        const struct fatia_doc *d = &set.docs[i];
        const json_t *meta = json_object_get(d->root, "metadata");
        const char *ns = fatia_json_str(meta, "namespace");
        char vmsg[600], smsg[600];
        bool vok, sok;
        int code;

        e->docs++;
        if (!json_is_object(d->root))
            continue;
        e->objects++;
        vok = validate_verdict(d->root, &set, d, vmsg, sizeof(vmsg));
        if (!ns || !*ns)
            ns = "default";
        ensure_namespace(e, ns);
        code = server_create(e, d->root, ns, true, smsg, sizeof(smsg));
        sok = code == 201 || code == 409;
        if (vok != sok) {
            e->mismatches++;
            fprintf(stderr, "DISAGREE %s doc %u: validate %s (%s), server %s (%s)\n", path,
                    d->index, vok ? "accepts" : "refuses", vmsg, sok ? "accepts" : "refuses", smsg);
        }
    }
    fatia_docset_release(&set);
    fatia_diag_release(&diag);
    free(data);
}

static bool wanted(const char *name, bool any)
{
    size_t n = strlen(name);

    if (any)
        return name[0] != '.';
    return (n > 5 && !strcmp(name + n - 5, ".yaml")) || (n > 4 && !strcmp(name + n - 4, ".yml")) ||
           (n > 5 && !strcmp(name + n - 5, ".json"));
}

static void walk(struct env *e, const char *dir, bool any)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    if (!d)
        return;
    while ((de = readdir(d))) {
        char p[4096];
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
        if (stat(p, &st) < 0)
            continue;
        if (S_ISDIR(st.st_mode))
            walk(e, p, any);
        else if (wanted(de->d_name, any))
            check_file(e, p);
    }
    closedir(d);
}

static int setup(void **state)
{
    struct env *e = calloc(1, sizeof(*e));

    e->base = event_base_new();
    assert_int_equal(fatia_store_open(":memory:", NULL, &e->store), 0);
    assert_int_equal(fatia_apiserver_new(e->base, e->store, &fatia_demand_checks, NULL, &e->s), 0);
    *state = e;
    return 0;
}

static void shutdown_done(void *arg)
{
    *(bool *)arg = true;
}

static int teardown(void **state)
{
    struct env *e = *state;
    bool done = false;

    fatia_apiserver_shutdown(e->s, shutdown_done, &done);
    for (int i = 0; i < 10000 && !done; i++)
        event_base_loop(e->base, EVLOOP_ONCE);
    fatia_apiserver_free(e->s);
    fatia_store_close(e->store);
    event_base_free(e->base);
    free(e);
    return 0;
}

static void test_every_input(void **state)
{
    struct env *e = *state;

    walk(e, FATIA_SOURCE_DIR "/examples", false);
    walk(e, FATIA_SOURCE_DIR "/tests/data", false);
    walk(e, FATIA_SOURCE_DIR "/tests/golden", false);
    walk(e, FATIA_SOURCE_DIR "/fuzz/corpus/object", true);
    fprintf(stderr, "%zu documents, %zu objects, %zu disagreements\n", e->docs, e->objects,
            e->mismatches);
    assert_true(e->objects > 500);
    assert_int_equal(e->mismatches, 0);
}

/* The three disagreements issue 17 names, each decided alike (and the right way). */
static void test_the_three(void **state)
{
    struct env *e = *state;
    static const char *const docs[] = {
        /* generateName: both create */
        "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"LocalQueue\",\"metadata\":"
        "{\"generateName\":\"lq-\",\"namespace\":\"default\"},\"spec\":{\"clusterQueue\":\"q\"}}",
        /* an unknown field: both refuse under Strict */
        "{\"apiVersion\":\"infrastructure.opendatahub.io/v1\",\"kind\":\"HardwareProfile\","
        "\"metadata\":{\"name\":\"hp\",\"namespace\":\"default\"},\"spec\":{\"displayName\":"
        "\"typo\",\"identifiers\":[{\"identifier\":\"cpu\",\"displayName\":\"CPU\","
        "\"defaultCount\":1,\"minCount\":1,\"resourceType\":\"CPU\"}],\"scheduling\":{\"type\":"
        "\"Node\",\"node\":{}}}}",
        /* VfioDeviceConfig.iommu: both accept */
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"vfio\",\"namespace\":\"default\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":"
        "\"gpu\",\"exactly\":{\"deviceClassName\":\"vfio.gpu.nvidia.com\"}}],\"config\":[{"
        "\"requests\":[\"gpu\"],\"opaque\":{\"driver\":\"gpu.nvidia.com\",\"parameters\":{"
        "\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"VfioDeviceConfig\",\"iommu\":"
        "{\"backendPolicy\":\"PreferIommuFD\",\"enableAPIDevice\":true}}}}]}}}",
        /* ... and a bad backend policy: both refuse */
        "{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\",\"metadata\":{\"name\":"
        "\"vfio2\",\"namespace\":\"default\"},\"spec\":{\"devices\":{\"requests\":[{\"name\":"
        "\"gpu\",\"exactly\":{\"deviceClassName\":\"vfio.gpu.nvidia.com\"}}],\"config\":[{"
        "\"requests\":[\"gpu\"],\"opaque\":{\"driver\":\"gpu.nvidia.com\",\"parameters\":{"
        "\"apiVersion\":\"resource.nvidia.com/v1beta1\",\"kind\":\"VfioDeviceConfig\",\"iommu\":"
        "{\"backendPolicy\":\"Sometimes\"}}}}]}}}",
    };
    static const bool want[] = {true, false, true, false};

    ensure_namespace(e, "default");
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(docs); i++) {
        struct fatia_docset set;
        struct fatia_diag diag;
        char vmsg[600], smsg[600];
        fatia_docset_init(&set);
        fatia_diag_init(&diag);
        assert_int_equal(fatia_docset_load_buf(&set, "case.json", docs[i], strlen(docs[i]), &diag),
                         0);
        assert_int_equal(set.n, 1);
        bool vok = validate_verdict(set.docs[0].root, &set, &set.docs[0], vmsg, sizeof(vmsg));
        int code = server_create(e, set.docs[0].root, "default", true, smsg, sizeof(smsg));
        if (vok != want[i] || (code == 201) != want[i])
            fprintf(stderr, "case %zu: validate %d (%s), server %s\n", i, vok, vmsg, smsg);
        assert_true(vok == want[i]);
        assert_true((code == 201) == want[i]);
        fatia_docset_release(&set);
        fatia_diag_release(&diag);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_the_three, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_input, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
