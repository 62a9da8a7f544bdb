/*
 * fuzz/fuzz_crdschema.c: a user-written CustomResourceDefinition's schema (model/crd_schema.c,
 * crd_kind.c) and the validation of custom objects by it (issue 17, item 6). The input is a YAML
 * stream: the first document is taken as a CRD (its kind built, any shape), the others as
 * objects of it. Invariants: no crash, no leak; building a kind from a CRD either succeeds or
 * says why; a decoded object decodes again, unchanged, with no error (validation, pruning and
 * defaulting are idempotent).
 */
#include "base/compat.h"

#include "model/crd_kind.h"
#include "model/objset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct fatia_kind *k = NULL;
    struct fatia_docset set;
    struct fatia_diag diag;
    char why[1024] = "";

    if (size > 1 << 16)
        return 0;
    fatia_docset_init(&set);
    fatia_diag_init(&diag);
    fatia_docset_load_buf(&set, "fuzz.yaml", (const char *)data, size, &diag);
    if (set.n && fatia_kind_custom_new(set.docs[0].root, &k, why, sizeof(why)) < 0) {
        if (!why[0])
            abort(); /* a refusal always says why (or it was out of memory: not here) */
        k = NULL;
    }
    if (k && fatia_kind_custom_register(k) == 0) {
        for (size_t i = 1; i < set.n; i++) {
            struct fatia_decode_opts o = {.file = "fuzz.yaml", .map = set.map};
            struct fatia_object *obj = NULL, *again = NULL;
            struct fatia_diag d2;
            json_t *copy;

            if (fatia_object_decode(set.docs[i].root, &o, NULL, &diag, &obj) < 0)
                continue;
            copy = json_deep_copy(obj->obj);
            fatia_diag_init(&d2);
            if (fatia_object_decode(copy, &(struct fatia_decode_opts){0}, NULL, &d2, &again) < 0 ||
                !json_equal(again->obj, obj->obj)) {
                fatia_diag_print(&d2, stderr);
                abort();
            }
            fatia_object_free(again);
            fatia_diag_release(&d2);
            json_decref(copy);
            fatia_object_free(obj);
        }
    }
    fatia_kind_custom_free_all();
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
    return 0;
}
