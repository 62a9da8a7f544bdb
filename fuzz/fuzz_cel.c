/*
 * fuzz/fuzz_cel.c: libFuzzer target for the CEL selector compiler and evaluator (and, through
 * matches(), the RE2-syntax regex engine).
 *
 * The input is an expression. Properties checked (a violation aborts):
 *   - compilation either succeeds or fails with a code of the documented set and a message that
 *     starts with "line:column: ";
 *   - a compiled program evaluates on three devices (a GPU, a MIG device, a device of another
 *     driver) to a result, a runtime error with a message, or the cost limit, never anything
 *     else; the cost spent never exceeds the limit by more than one operation's charge, and
 *     never exceeds the compiler's worst-case estimate when that estimate is within the limit;
 *   - evaluation is deterministic: a second run gives the same result and cost.
 * No input may crash, hang (the cost limit bounds every loop) or leak (ASan in replay).
 * The first line of a corpus file may also be tried as a regex directly, which reaches
 * patterns that are not valid CEL strings.
 */
#include "base/compat.h"

#include "base/error.h"
#include "cel/cel.h"
#include "cel/cel_regex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                     \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuzz_cel: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                    \
        }                                                                               \
    } while (0)

static struct fatia_semver ver;
static struct fatia_cel_attr gpu_attrs[] = {
    {"type", FATIA_CEL_ATTR_STRING, 0, false, "gpu", NULL},
    {"productName", FATIA_CEL_ATTR_STRING, 0, false, "NVIDIA H200", NULL},
    {"driverVersion", FATIA_CEL_ATTR_VERSION, 0, false, "580.159.4", &ver},
    {"fatia.dev/nvlinkIsland", FATIA_CEL_ATTR_INT, 3, false, NULL, NULL},
    {"fatia.dev/simulated", FATIA_CEL_ATTR_BOOL, 0, true, NULL, NULL},
};
static struct fatia_cel_attr mig_attrs[] = {
    {"type", FATIA_CEL_ATTR_STRING, 0, false, "mig", NULL},
    {"profile", FATIA_CEL_ATTR_STRING, 0, false, "1g.18gb", NULL},
    {"parentUUID", FATIA_CEL_ATTR_STRING, 0, false, "GPU-0000", NULL},
};
static struct fatia_cel_capacity caps[2];
static struct fatia_cel_device devs[3] = {
    {"gpu.nvidia.com", gpu_attrs, 5, caps, 1, false},
    {"gpu.nvidia.com", mig_attrs, 3, caps, 2, true},
    {"dra.example.com", NULL, 0, NULL, 0, false},
};

static void setup(void)
{
    static bool done;

    if (done)
        return;
    CHECK(fatia_semver_parse("580.159.4", false, &ver, NULL, 0) == 0);
    caps[0].name = "memory";
    CHECK(fatia_quantity_parse("141Gi", &caps[0].value, NULL, 0) == 0);
    caps[1].name = "multiprocessors";
    CHECK(fatia_quantity_parse("16", &caps[1].value, NULL, 0) == 0);
    done = true;
}

static void try_regex(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    struct fatia_cel_regex *re;
    char why[256] = "";
    bool m;
    int r;

    if (nl)
        size = (size_t)(nl - data);
    if (size > 512)
        return;
    r = fatia_cel_regex_compile((const char *)data, size, &re, why, sizeof(why));
    if (r < 0) {
        CHECK(r == -EINVAL || r == -ENOMEM);
        CHECK(r == -ENOMEM || why[0]);
        return;
    }
    CHECK(fatia_cel_regex_search(re, "NVIDIA H200 gpu-0 1g.18gb\nline two", 34, &m) == 0);
    fatia_cel_regex_free(re);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_cel_program *p;
    char why[512] = "";
    int r;

    setup();
    try_regex(data, size);
    r = fatia_cel_compile((const char *)data, size, &p, why, sizeof(why));
    if (r < 0) {
        unsigned line, col;
        CHECK(r == -FATIA_E_PARSE || r == -FATIA_E_TYPE || r == -FATIA_E_COST ||
              r == -FATIA_E_LIMIT || r == -ENOMEM);
        CHECK(r == -ENOMEM || sscanf(why, "%u:%u: ", &line, &col) == 2);
        return 0;
    }
    for (size_t i = 0; i < 3; i++) {
        bool m1 = false, m2 = false;
        uint64_t c1 = 0, c2 = 0, limit = i == 2 ? 5000 : 0;
        int r1 = fatia_cel_eval_device(p, &devs[i], limit, &m1, &c1, why, sizeof(why));
        int r2 = fatia_cel_eval_device(p, &devs[i], limit, &m2, &c2, why, sizeof(why));
        CHECK(r1 == 0 || r1 == -FATIA_E_EVAL || r1 == -FATIA_E_COST || r1 == -ENOMEM);
        CHECK(r1 == r2 && c1 == c2 && (r1 != 0 || m1 == m2));
        CHECK(r1 != -FATIA_E_EVAL || why[0]);
        if (r1 != -FATIA_E_COST && fatia_cel_program_max_cost(p) <= FATIA_CEL_COST_LIMIT)
            CHECK(c1 <= fatia_cel_program_max_cost(p));
    }
    fatia_cel_program_free(p);
    return 0;
}
