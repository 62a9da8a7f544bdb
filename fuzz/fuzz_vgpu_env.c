/*
 * fuzz/fuzz_vgpu_env.c: libFuzzer target for the interposer's environment parsing
 * (src/vgpu/config.c), which runs inside every process of a slice on text the node agent wrote.
 *
 * The input is read as an environment: "NAME=VALUE" lines. Properties checked (any violation
 * aborts, so libFuzzer records the input):
 *   - the parser never reads past a value or writes past its buffers, and every string it keeps
 *     is NUL-terminated and no longer than the value it came from;
 *   - any_limit is true exactly when some device has a cap, and a limit variable that does not
 *     parse caps its device at 0 and counts one error (fail closed);
 *   - n_errors > 0 exactly when first_error is non-empty; n_uuids is within 0..16;
 *   - every line's value run through fatia_vgpu_parse_size either fails with -EINVAL/-ERANGE
 *     leaving the output alone, or succeeds and agrees with a slow reference parser.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Isrc fuzz/fuzz_vgpu_env.c src/vgpu/config.c
 */
#include "base/compat.h"

#include <errno.h>

#include "vgpu/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "fuzz_vgpu_env: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

#define MAX_VARS 32

__extension__ typedef unsigned __int128 u128;

struct env {
    char *name[MAX_VARS];
    char *value[MAX_VARS];
    int n;
};

static const char *env_get(void *ctx, const char *name)
{
    struct env *e = ctx;

    /* The last definition wins, as with setenv. */
    for (int i = e->n - 1; i >= 0; i--) {
        if (strcmp(e->name[i], name) == 0)
            return e->value[i];
    }
    return NULL;
}

/* A slow, obviously right parser: digits then one of the suffixes, with 128-bit arithmetic. */
static int ref_size(const char *s, uint64_t *ret)
{
    static const char *const sfx[] = {"",  "Ki", "Mi", "Gi", "Ti", "Pi",
                                      "k", "K",  "M",  "G",  "T",  "P"};
    static const u128 mult[] = {
        1,    (u128)1 << 10, (u128)1 << 20, (u128)1 << 30, (u128)1 << 40, (u128)1 << 50,
        1000, 1000,          1000000,       1000000000,    1000000000000, 1000000000000000};
    u128 v = 0;
    size_t i = 0;

    while (s[i] >= '0' && s[i] <= '9') {
        v = v * 10 + (unsigned)(s[i] - '0');
        if (v > UINT64_MAX)
            return -ERANGE; /* too many digits: out of range, whatever follows */
        i++;
    }
    if (i == 0)
        return -EINVAL;
    for (size_t k = 0; k < FATIA_ARRAY_SIZE(sfx); k++) {
        if (strcmp(s + i, sfx[k]) == 0) {
            v *= mult[k];
            if (v >= UINT64_MAX)
                return -ERANGE;
            *ret = (uint64_t)v;
            return 0;
        }
    }
    return -EINVAL;
}

static void check_size(const char *s)
{
    uint64_t got = 12345, want = 0;
    int r = fatia_vgpu_parse_size(s, &got);
    int rr = ref_size(s, &want);

    CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
    CHECK(r == rr);
    if (r == 0)
        CHECK(got == want);
    else
        CHECK(got == 12345);
}

static void check_config(const struct fatia_vgpu_config *c, struct env *e)
{
    bool any = false;

    CHECK(c->n_uuids >= 0 && c->n_uuids <= FATIA_VGPU_MAX_DEVICES);
    CHECK(memchr(c->shared_file, 0, sizeof(c->shared_file)));
    CHECK(memchr(c->log_file, 0, sizeof(c->log_file)));
    CHECK(memchr(c->first_error, 0, sizeof(c->first_error)));
    CHECK((c->n_errors > 0) == (c->first_error[0] != '\0'));
    CHECK(c->log_level >= FATIA_VGPU_LOG_OFF && c->log_level <= FATIA_VGPU_LOG_DEBUG);
    for (int i = 0; i < c->n_uuids; i++) {
        size_t len = strnlen(c->uuids[i], FATIA_VGPU_UUID_MAX);

        CHECK(len > 0 && len < FATIA_VGPU_UUID_MAX);
        for (size_t k = 0; k < len; k++)
            CHECK(c->uuids[i][k] > ' ' && c->uuids[i][k] <= '~' && c->uuids[i][k] != ',');
    }
    if (c->shared_file[0]) {
        const char *v = env_get(e, "FATIA_VGPU_SHARED_FILE");

        CHECK(v && strcmp(v, c->shared_file) == 0 && v[0] == '/');
    }
    for (int i = 0; i < FATIA_VGPU_MAX_DEVICES; i++) {
        char name[40];
        const char *v;
        uint64_t want;

        any |= c->limit[i] != FATIA_VGPU_NO_LIMIT;
        snprintf(name, sizeof(name), "FATIA_VGPU_MEMORY_LIMIT_%d", i);
        v = env_get(e, name);
        if (!v)
            v = env_get(e, "FATIA_VGPU_MEMORY_LIMIT");
        if (c->shared_file[0] || !env_get(e, "FATIA_VGPU_SHARED_FILE") ||
            !env_get(e, "FATIA_VGPU_SHARED_FILE")[0]) {
            /* No accounting-file error: the limit is exactly what the variables say. */
            if (!v)
                CHECK(c->limit[i] == FATIA_VGPU_NO_LIMIT);
            else if (ref_size(v, &want) == 0)
                CHECK(c->limit[i] == want);
            else
                CHECK(c->limit[i] == 0);
        } else {
            CHECK(c->limit[i] == 0); /* a bad accounting file path caps everything at 0 */
        }
    }
    CHECK(any == c->any_limit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    struct fatia_vgpu_config cfg;
    struct env e = {.n = 0};
    char *p;

    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    /* Lines "NAME=VALUE"; a NUL byte ends the input, as it would end an environment string. */
    for (p = text; *p && e.n < MAX_VARS;) {
        char *end = strchr(p, '\n'), *eq;

        if (end)
            *end = '\0';
        eq = strchr(p, '=');
        if (eq) {
            *eq = '\0';
            e.name[e.n] = p;
            e.value[e.n] = eq + 1;
            e.n++;
            check_size(eq + 1);
        } else {
            check_size(p);
        }
        if (!end)
            break;
        p = end + 1;
    }
    fatia_vgpu_config_load(&cfg, env_get, &e);
    check_config(&cfg, &e);
    {
        enum fatia_vgpu_log_level l = FATIA_VGPU_LOG_INFO;
        int r = fatia_vgpu_parse_log_level(text, &l);

        CHECK(r == 0 || r == -EINVAL);
        CHECK(l >= FATIA_VGPU_LOG_OFF && l <= FATIA_VGPU_LOG_DEBUG);
    }
    free(text);
    return 0;
}
