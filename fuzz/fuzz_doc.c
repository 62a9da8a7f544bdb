/*
 * fuzz/fuzz_doc.c: the manifest loader (YAML and JSON, positions, anchors, limits) and the YAML
 * writer. Invariant: whatever loads, dumps to YAML that loads back to an equal tree.
 */
#include "base/compat.h"

#include "base/buf.h"
#include "model/doc.h"

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
        struct fatia_buf b = FATIA_BUF_INIT;
        json_t *back = NULL;
        char why[256];
        if (fatia_yaml_dump(set.docs[i].root, &b) == 0) {
            if (fatia_yaml_parse(b.p, b.len, &back, why, sizeof(why)) < 0 ||
                !json_equal(back, set.docs[i].root)) {
                fprintf(stderr, "round trip failed:\n%s\n", b.p);
                abort();
            }
        }
        json_decref(back);
        fatia_buf_release(&b);
    }
    fatia_diag_release(&diag);
    fatia_docset_release(&set);
    return 0;
}
