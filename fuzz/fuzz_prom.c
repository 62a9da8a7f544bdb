/*
 * fuzz/fuzz_prom.c: libFuzzer target for the Prometheus scanner (gateway/prom.c) that reads
 * every model server's /metrics, 20 times a second, as outside input.
 *
 * Properties (a violation aborts): the scan never reads outside the text (ASan), counts no more
 * sample lines than there are lines, and reports only finite values it found; a KV usage it
 * reports came from a parsable number.
 */
#include "base/compat.h"

#include <math.h>

#include "gateway/prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "fuzz_prom: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_engine_metrics m;
    size_t lines = 1;
    int used;

    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    used = fatia_prom_scan_vllm((const char *)data, size, &m);
    CHECK(used >= 0 && (size_t)used <= lines);
    if (m.have & FATIA_PROM_WAITING)
        CHECK(!isnan(m.waiting));
    if (m.have & FATIA_PROM_KV)
        CHECK(!isnan(m.kv_usage));
    if (m.have & FATIA_PROM_CACHECFG)
        CHECK(m.block_size >= 1);
    return 0;
}
