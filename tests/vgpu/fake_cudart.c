/*
 * tests/vgpu/fake_cudart.c: the CUDA runtime's way into the driver, replayed for the tests.
 *
 * The CUDA 13 runtime (static or shared) reaches libcuda only like this
 * (reference/cuda-interposer.md §1.3, Appendix A):
 *   1. dlopen("libcuda.so.1"), then dlsym(handle, "cuGetProcAddress_v2");
 *   2. through that pointer: an empty-name probe, cuInit at 2000, and "cuGetProcAddress" at 11030
 *      and at 12000;
 *   3. every later lookup through the pointer re-fetched at 12000, with the versions and flags of
 *      data/cudart-13.0-requests.txt.
 * fake_rt_init() does exactly that from a separate shared object (so dlsym sees a caller that is
 * neither the test nor the interposer) and keeps every answer; tests then call the functions the
 * "runtime" holds, as cudaMalloc or torch would.
 */
#include "fake_cudart.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT      __attribute__((visibility("default")))
#define MAX_ANSWERS 640

typedef CUresult (*gpa_v2_fn)(const char *, void **, int, cuuint64_t, int *);
typedef CUresult (*gpa_v1_fn)(const char *, void **, int, cuuint64_t);

static struct fake_rt_answer answers[MAX_ANSWERS];
static int n_answers;
static void *driver;
static gpa_v2_fn gpa_dlsym, gpa_12000;
static gpa_v1_fn gpa_11030;

static int replay(gpa_v2_fn gpa, const char *symbol, int version, int flags)
{
    struct fake_rt_answer *a;

    if (n_answers == MAX_ANSWERS)
        return -1;
    a = &answers[n_answers++];
    snprintf(a->symbol, sizeof(a->symbol), "%s", symbol);
    a->version = version;
    a->flags = flags;
    a->status = -1;
    a->result = gpa(symbol, &a->fn, version, (cuuint64_t)flags, &a->status);
    return 0;
}

EXPORT int fake_rt_init(const char *requests_path)
{
    char line[256], sym[128];
    int version, flags, n = 0;
    FILE *f;

    driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!driver)
        return -1;
    gpa_dlsym = (gpa_v2_fn)dlsym(driver, "cuGetProcAddress_v2");
    if (!gpa_dlsym)
        return -2;
    f = fopen(requests_path, "r");
    if (!f)
        return -3;
    while (fgets(line, sizeof(line), f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        if (sscanf(line, "%127s %d %d", sym, &version, &flags) != 3) {
            fclose(f);
            return -4;
        }
        if (strcmp(sym, "\"\"") == 0)
            sym[0] = '\0';
        /* The first four requests go through the pointer dlsym gave, the rest through the one
         * re-fetched at 12000. */
        if (replay(n < 4 ? gpa_dlsym : gpa_12000, sym, version, flags) < 0) {
            fclose(f);
            return -5;
        }
        if (strcmp(sym, "cuGetProcAddress") == 0 && version == 11030)
            gpa_11030 = (gpa_v1_fn)answers[n_answers - 1].fn;
        if (strcmp(sym, "cuGetProcAddress") == 0 && version == 12000)
            gpa_12000 = (gpa_v2_fn)answers[n_answers - 1].fn;
        if (n == 3 && (!gpa_11030 || !gpa_12000)) {
            fclose(f);
            return -6;
        }
        if (n == 1) {
            CUresult (*init)(unsigned) = (CUresult(*)(unsigned))answers[n_answers - 1].fn;
            if (!init || init(0) != CUDA_SUCCESS) {
                fclose(f);
                return -7;
            }
        }
        n++;
    }
    fclose(f);
    return n;
}

EXPORT void *fake_rt_driver(void)
{
    return driver;
}

EXPORT void *fake_rt_fn(const char *symbol, int version, int flags)
{
    for (int i = 0; i < n_answers; i++) {
        if (strcmp(answers[i].symbol, symbol) == 0 && answers[i].version == version &&
            answers[i].flags == flags)
            return answers[i].fn;
    }
    return NULL;
}

EXPORT const struct fake_rt_answer *fake_rt_answers(int *ret_n)
{
    *ret_n = n_answers;
    return answers;
}

EXPORT CUresult fake_rt_gpa(const char *symbol, void **pfn, int version, int flags, int *status)
{
    return gpa_12000(symbol, pfn, version, (cuuint64_t)flags, status);
}

EXPORT CUresult fake_rt_gpa_v1(const char *symbol, void **pfn, int version, int flags)
{
    return gpa_11030(symbol, pfn, version, (cuuint64_t)flags);
}
