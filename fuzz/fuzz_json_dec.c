/*
 * fuzz/fuzz_json_dec.c: base/json_dec.c's parser against jansson's json_loadb on arbitrary bytes,
 * under the flags fatiad uses. Invariant: both give equal trees with the same dump (key order),
 * or both NULL with the same error text, line, column and position.
 */
#include "base/compat.h"

#include <jansson.h>

#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const char *p, size_t n, size_t flags)
{
    json_error_t ej, ef;
    json_t *want = json_loadb(p, n, flags, &ej), *got = fatia_json_loadb(p, n, flags, &ef);
    json_t *fast = fatia_json_loadb_fast(p, n, flags);

    if ((fast && !want) || (fast && !json_equal(fast, want)))
        abort();
    if (!want != !got || strcmp(ej.text, ef.text) || strcmp(ej.source, ef.source) ||
        ej.line != ef.line || ej.column != ef.column || ej.position != ef.position)
        abort();
    if (want) {
        char *a = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
        char *b = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!a || !b || strcmp(a, b) || !json_equal(want, got))
            abort();
        free(a);
        free(b);
    }
    json_decref(want);
    json_decref(got);
    json_decref(fast);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;

    same(p, size, JSON_REJECT_DUPLICATES);
    same(p, size, 0);
    same(p, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES);
    same(p, size, JSON_DECODE_ANY | JSON_ALLOW_NUL);
    return 0;
}
