/*
 * vgpu/conffile.h: the interposer's configuration file, read from a fixed path compiled into the
 * library (FATIA_VGPU_CONF_PATH, /etc/fatia/vgpu.conf by default) and never from a path the
 * environment names. Lines are KEY=VALUE with the keys of the FATIA_VGPU_* variables
 * (docs/vgpu.md), '#' starts a comment line; nothing else is allowed.
 *
 * When the file exists it is the whole configuration: the environment's FATIA_VGPU_* are ignored.
 * conffile.c's header comment gives the rules (fail closed, unnamed ordinals).
 */
#ifndef FATIA_VGPU_CONFFILE_H
#define FATIA_VGPU_CONFFILE_H

#include <stddef.h>

#include "vgpu/config.h"

#ifndef FATIA_VGPU_CONF_PATH
#define FATIA_VGPU_CONF_PATH "/etc/fatia/vgpu.conf"
#endif

#define FATIA_VGPU_CONF_MAX_BYTES 8192
#define FATIA_VGPU_CONF_MAX_KEYS  24

/* A parsed file: keys and values point into text. */
struct fatia_vgpu_conffile {
    char text[FATIA_VGPU_CONF_MAX_BYTES];
    size_t len;
    const char *key[FATIA_VGPU_CONF_MAX_KEYS];
    const char *value[FATIA_VGPU_CONF_MAX_KEYS];
    int n;
    char error[96];
};

/* Splits f->text (f->len bytes, NUL-terminated) into pairs in place. 0, or -EINVAL with
 * f->error naming the line and the problem. */
int fatia_vgpu_conffile_parse(struct fatia_vgpu_conffile *f);

/* The value of a key, or NULL: the lookup fatia_vgpu_config_load takes (ctx is the file). */
const char *fatia_vgpu_conffile_get(void *ctx, const char *name);

/* Loads cfg from the file at path. -ENOENT: there is no file (cfg untouched; the caller may fall
 * back to the environment). 0: cfg holds the file's configuration (cfg->from_file). Any other
 * error: the file exists but is unusable, and cfg caps every device at 0 with the reason in
 * cfg->first_error. Not thread-safe (one static buffer): call it once. */
int fatia_vgpu_config_load_file(struct fatia_vgpu_config *cfg, const char *path);

#endif
