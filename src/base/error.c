/*
 * base/error.c: names and messages for error codes (see error.h for the convention).
 */
#include "base/compat.h"

#include "base/error.h"

#include <string.h>

struct err_entry {
    int code;
    const char *name;
    const char *msg;
};

static const struct err_entry err_table[] = {
#define FATIA_ERR_ROW(name, value, msg) {value, "FATIA_E_" #name, msg},
    FATIA_ERRNO_MAP(FATIA_ERR_ROW)
#undef FATIA_ERR_ROW
};

static const struct err_entry *find(int err)
{
    if (err < 0)
        err = -err;
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(err_table); i++)
        if (err_table[i].code == err)
            return &err_table[i];
    return NULL;
}

const char *fatia_strerror(int err)
{
    const struct err_entry *e = find(err);
    const char *s;

    if (e)
        return e->msg;
    s = strerrordesc_np(err < 0 ? -err : err);
    return s ? s : "unknown error";
}

const char *fatia_err_name(int err)
{
    const struct err_entry *e = find(err);
    const char *s;

    if (e)
        return e->name;
    s = strerrorname_np(err < 0 ? -err : err);
    return s ? s : "E?";
}

void fatia_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    fprintf(stderr, "fatia: assertion failed: %s (%s:%d, %s)\n", expr, file, line, func);
    abort();
}
