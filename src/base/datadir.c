/*
 * base/datadir.c: the one resolver of fatia's data directory (see datadir.h).
 *
 * The environment is read on every call rather than cached, so a test or a program that sets
 * FATIA_DATA_DIR before it loads data sees it, with no initialisation order to get wrong; the
 * callers read data files once at start, so the cost is nil.
 */
#include "base/compat.h"

#include "base/datadir.h"

#include <stdio.h>
#include <stdlib.h>

const char *fatia_data_dir(void)
{
    const char *d = getenv("FATIA_DATA_DIR");

    return d && *d ? d : FATIA_SOURCE_DIR "/data";
}

void fatia_data_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", fatia_data_dir(), rel);
}
