/*
 * fuzz/fuzz_patch.c: the three patch formats (apiserver/patch.h). The input is a document and a
 * patch separated by a NUL byte; the first byte picks the format (and, for strategic patches,
 * the kind). Invariants: no crash, the document is never modified, and a JSON merge patch is
 * idempotent (applying it to its own result changes nothing, RFC 7386).
 */
#include "base/compat.h"

#include "apiserver/patch.h"
#include "base/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *sep;
    json_t *doc, *patch, *copy, *res = NULL, *again = NULL;
    char why[512];
    int mode;

    if (size < 2 || size > 1 << 16)
        return 0;
    mode = data[0] % 8;
    sep = memchr(p + 1, '\0', size - 1);
    if (!sep)
        return 0;
    doc = json_loadb(p + 1, (size_t)(sep - p - 1), JSON_DECODE_ANY, NULL);
    patch = json_loadb(sep + 1, size - (size_t)(sep - p) - 1, JSON_DECODE_ANY, NULL);
    if (!doc || !patch)
        goto out;
    copy = json_deep_copy(doc);
    if (mode == 0) {
        if (fatia_patch_merge(doc, patch, &res, why, sizeof(why)) == 0 &&
            (fatia_patch_merge(res, patch, &again, why, sizeof(why)) < 0 ||
             !json_equal(res, again)))
            abort();
    } else if (mode == 1) {
        (void)fatia_patch_json(doc, patch, &res, why, sizeof(why));
    } else {
        /* strategic, for a kind of the registry */
        size_t n = 0;
        while (fatia_kinds[n])
            n++;
        (void)fatia_patch_strategic(doc, patch, fatia_kinds[(size_t)(mode - 2) % n], &res, why,
                                    sizeof(why));
    }
    if (!json_equal(doc, copy))
        abort();
    json_decref(copy);
out:
    json_decref(res);
    json_decref(again);
    json_decref(doc);
    json_decref(patch);
    return 0;
}
