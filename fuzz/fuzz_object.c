/*
 * fuzz/fuzz_object.c: the object decoder (kind lookup, conversion, schema walk, cross-field
 * rules, defaults) over any tree the loader accepts. Invariants: no crash; a decoded object
 * decodes again, unchanged, with no error (validation and defaulting are idempotent).
 */
#include "base/compat.h"

#include "demand/demand.h"
#include "model/objset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_docset set;
    struct fatia_diag diag;

    if (size > 1 << 16)
        return 0;
    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    fatia_docset_load_buf(&set, "fuzz.yaml", (const char *)data, size, &diag);
    for (size_t i = 0; i < set.n; i++) {
        struct fatia_decode_opts o = {.file = "fuzz.yaml", .map = set.map};
        struct fatia_object *obj = NULL, *again = NULL;
        struct fatia_diag d2;
        json_t *copy;

        if (fatia_object_decode(set.docs[i].root, &o, &fatia_demand_checks, &diag, &obj) < 0)
            continue;
        copy = json_deep_copy(obj->obj);
        fatia_diag_init(&d2);
        if (fatia_object_decode(copy, &(struct fatia_decode_opts){0}, &fatia_demand_checks, &d2,
                                &again) < 0 ||
            !json_equal(again->obj, obj->obj)) {
            fatia_diag_print(&d2, stderr);
            abort();
        }
        fatia_object_free(again);
        fatia_diag_release(&d2);
        json_decref(copy);
        fatia_object_free(obj);
    }
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
    return 0;
}
