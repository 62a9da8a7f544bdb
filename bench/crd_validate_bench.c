/*
 * bench/crd_validate_bench.c: validating, defaulting and pruning one custom object of a
 * user-written CRD (issue 17, item 6), as fatiad's write path does (fatia_object_decode over
 * the kind built from the CRD by model/crd_kind.c).
 *
 * The CRD's spec has FIELDS members (default 100) of every kind a CRD uses: integers with
 * minimum/maximum, strings with enum or maxLength, a default, booleans, arrays of strings with
 * maxItems, maps of strings, nested objects; the object sets every one of them (the walk is
 * worst-case: nothing skipped). Each run decodes ITERS fresh copies of the object (default
 * 2,000; the copies are made before the clock starts); the median of RUNS runs (default 5) is
 * printed in microseconds of CPU time per object.
 * Usage: bench_crd_validate [FIELDS] [RUNS] [ITERS]
 */
#include "base/compat.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "model/crd_kind.h"
#include "model/object.h"

/* The process's CPU time: on a shared machine the wall clock counts the time others' work
 * holds the cores; the CPU clock counts this work alone (it is one thread). */
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int arg(int argc, char **argv, int i, int def)
{
    return argc > i ? (int)strtol(argv[i], NULL, 10) : def;
}

int main(int argc, char **argv)
{
    int fields = arg(argc, argv, 1, 100), runs = arg(argc, argv, 2, 5);
    int iters = arg(argc, argv, 3, 2000);
    json_t *props = json_object(), *spec = json_object(), *crd, *obj, **copies;
    const struct fatia_kind *k;
    double *t = calloc((size_t)(runs > 0 ? runs : 1), sizeof(*t));
    char why[512], name[32];

    if (fields < 1 || runs < 1 || iters < 1 || !t)
        return 2;
    for (int i = 0; i < fields; i++) {
        snprintf(name, sizeof(name), "f%03d", i);
        switch (i % 6) {
        case 0:
            json_object_set_new(
                props, name,
                json_pack("{s:s,s:i,s:i}", "type", "integer", "minimum", 0, "maximum", 1000000));
            json_object_set_new(spec, name, json_integer(i * 7));
            break;
        case 1:
            json_object_set_new(props, name,
                                json_pack("{s:s,s:[s,s,s],s:s}", "type", "string", "enum", "Low",
                                          "Medium", "High", "default", "Low"));
            json_object_set_new(spec, name, json_string("High"));
            break;
        case 2:
            json_object_set_new(props, name,
                                json_pack("{s:s,s:i}", "type", "string", "maxLength", 63));
            json_object_set_new(spec, name, json_string("a-value-of-some-length"));
            break;
        case 3:
            json_object_set_new(props, name,
                                json_pack("{s:s,s:{s:s},s:i}", "type", "array", "items", "type",
                                          "string", "maxItems", 16));
            json_object_set_new(spec, name, json_pack("[s,s,s]", "a", "b", "c"));
            break;
        case 4:
            json_object_set_new(props, name,
                                json_pack("{s:s,s:{s:s}}", "type", "object", "additionalProperties",
                                          "type", "string"));
            json_object_set_new(spec, name, json_pack("{s:s,s:s}", "k1", "v1", "k2", "v2"));
            break;
        default:
            json_object_set_new(props, name,
                                json_pack("{s:s,s:{s:{s:s},s:{s:s,s:i}},s:[s]}", "type", "object",
                                          "properties", "enabled", "type", "boolean", "count",
                                          "type", "integer", "minimum", 1, "required", "enabled"));
            json_object_set_new(spec, name, json_pack("{s:b,s:i}", "enabled", 1, "count", 3));
        }
    }
    crd =
        json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:{s:s,s:s},s:s,s:[{s:s,s:b,s:b,s:{s:{s:s,s:{s:{s:s,"
                  "s:o}}}}}]}}",
                  "apiVersion", "apiextensions.k8s.io/v1", "kind", "CustomResourceDefinition",
                  "metadata", "name", "benches.example.com", "spec", "group", "example.com",
                  "names", "plural", "benches", "kind", "Bench", "scope", "Namespaced", "versions",
                  "name", "v1", "served", 1, "storage", 1, "schema", "openAPIV3Schema", "type",
                  "object", "properties", "spec", "type", "object", "properties", props);
    if (!crd || fatia_kind_custom_new(crd, &k, why, sizeof(why)) < 0 ||
        fatia_kind_custom_register(k) < 0) {
        fprintf(stderr, "bench_crd_validate: the CRD: %s\n", why);
        return 1;
    }
    obj = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "example.com/v1", "kind", "Bench",
                    "metadata", "name", "b1", "namespace", "default", "spec", spec);
    copies = calloc((size_t)iters, sizeof(*copies));
    if (!copies)
        return 2;
    for (int r = 0; r < runs; r++) {
        double t0;
        for (int i = 0; i < iters; i++)
            copies[i] = json_deep_copy(obj); /* made before the clock starts */
        t0 = now_us();
        for (int i = 0; i < iters; i++) {
            struct fatia_diag diag;
            struct fatia_object *o = NULL;
            fatia_diag_init(&diag);
            if (fatia_object_decode(copies[i], &(struct fatia_decode_opts){0}, NULL, &diag, &o) <
                0) {
                fatia_diag_print(&diag, stderr);
                return 1;
            }
            fatia_object_free(o);
            fatia_diag_release(&diag);
        }
        t[r] = (now_us() - t0) / iters;
        for (int i = 0; i < iters; i++)
            json_decref(copies[i]);
    }
    qsort(t, (size_t)runs, sizeof(*t), cmp);
    printf(
        "crd validation: %d-field object: median %.1f us of CPU per object (of %d runs of %d; min "
        "%.1f, max %.1f)\n",
        fields, t[runs / 2], runs, iters, t[0], t[runs - 1]);
    json_decref(obj);
    json_decref(crd);
    fatia_kind_custom_free_all();
    free(copies);
    free(t);
    return 0;
}
