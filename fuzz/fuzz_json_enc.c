/*
 * fuzz/fuzz_json_enc.c: base/json_enc.c's compact encoder against jansson's json_dumpb on every
 * document jansson parses (any top-level value). Invariant: the same bytes under JSON_COMPACT and
 * JSON_COMPACT | JSON_REAL_PRECISION(15) (fatiad's two), or both refuse.
 */
#include "base/compat.h"

#include <jansson.h>

#include "base/buf.h"
#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const json_t *v, size_t flags)
{
    struct fatia_buf b;
    size_t wn = json_dumpb(v, NULL, 0, flags);
    char *want = wn ? malloc(wn) : NULL;
    int r;

    if (wn && (!want || json_dumpb(v, want, wn, flags) != wn))
        abort();
    fatia_buf_init(&b, 0);
    r = fatia_json_encode_compact(v, &b, flags);
    if ((r == 0) != (wn != 0) || (wn && (b.len != wn || memcmp(b.p, want, wn))))
        abort();
    fatia_buf_release(&b);
    free(want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

    if (!v)
        return 0;
    same(v, JSON_COMPACT);
    same(v, JSON_COMPACT | JSON_REAL_PRECISION(15));
    same(v, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    return 0;
}
