/*
 * vgpu/config.h: the interposer's configuration, read from FATIA_VGPU_* environment variables.
 *
 * The parser is pure: it reads variables through a callback (getenv in the library, a table in
 * the tests and the fuzz target) and writes a fixed-size struct, so it allocates nothing and can
 * run before anything else in an arbitrary process. docs/vgpu.md lists the variables.
 *
 * Fail closed: a limit that does not parse caps its device at 0 bytes (every allocation then
 * fails with CUDA_ERROR_OUT_OF_MEMORY), so that a mistake in the agent never removes a tenant's
 * isolation; the error is kept in the struct and logged when logging is on.
 */
#ifndef FATIA_VGPU_CONFIG_H
#define FATIA_VGPU_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_VGPU_MAX_DEVICES 16
#define FATIA_VGPU_NO_LIMIT    UINT64_MAX
#define FATIA_VGPU_PATH_MAX    512
#define FATIA_VGPU_UUID_MAX    96

enum fatia_vgpu_log_level {
    FATIA_VGPU_LOG_OFF = 0,
    FATIA_VGPU_LOG_ERROR,
    FATIA_VGPU_LOG_WARNING,
    FATIA_VGPU_LOG_INFO,
    FATIA_VGPU_LOG_DEBUG,
};

struct fatia_vgpu_config {
    /* Bytes per CUDA device ordinal as the process sees it; FATIA_VGPU_NO_LIMIT: not capped. */
    uint64_t limit[FATIA_VGPU_MAX_DEVICES];
    bool any_limit;
    /* Read from the fixed configuration file (conffile.h), not the environment: the file's caps
     * then also win over the accounting file's header, which the tenant can write. */
    bool from_file;
    /* The slice's accounting file; empty: this process accounts alone (anonymous memory). */
    char shared_file[FATIA_VGPU_PATH_MAX];
    /* GPU UUIDs in CUDA ordinal order (FATIA_VGPU_DEVICE_UUIDS), used to map NVML handles. */
    char uuids[FATIA_VGPU_MAX_DEVICES][FATIA_VGPU_UUID_MAX];
    int n_uuids;
    enum fatia_vgpu_log_level log_level;
    char log_file[FATIA_VGPU_PATH_MAX];
    /* Problems found while parsing: how many, and the first one, for the log. */
    int n_errors;
    char first_error[192];
};

/* Returns the value of an environment variable, or NULL when unset. */
typedef const char *(*fatia_vgpu_getenv_fn)(void *ctx, const char *name);

/* Fills cfg from the variables get returns. Never fails: problems are counted in cfg->n_errors
 * (first one in cfg->first_error) and handled as the header comment says. */
void fatia_vgpu_config_load(struct fatia_vgpu_config *cfg, fatia_vgpu_getenv_fn get, void *ctx);

/* Parses a byte count: decimal digits and an optional suffix, binary Ki Mi Gi Ti Pi or decimal
 * k K M G T P (Kubernetes quantity suffixes). No sign, space or fraction. 0, -EINVAL or -ERANGE;
 * *ret is written only on success. */
int fatia_vgpu_parse_size(const char *s, uint64_t *ret);

/* off|error|warning|info|debug, or 0..4. 0 or -EINVAL. */
int fatia_vgpu_parse_log_level(const char *s, enum fatia_vgpu_log_level *ret);

#endif
