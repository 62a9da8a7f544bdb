/*
 * fuzz/fuzz_quantity.c: libFuzzer target for the quantity parser, and the label selector and
 * name checks that read the same kind of short untrusted text.
 *
 * Properties checked (any violation aborts, so libFuzzer records the input):
 *   - parse -> format -> parse gives an equal value (fatia_quantity_cmp == 0), and the canonical
 *     text is a fixed point of format (except BinarySI, which upstream does not keep: a binary
 *     1000000 prints "1000000", which reads back as the decimal "1M");
 *   - the canonical text fits the documented 64 bytes, Value/MilliValue agree with the value's
 *     sign, sub(q, q) is zero and add/sub never wrap;
 *   - a failed parse always says why and leaves the output alone;
 *   - the JSON entry point (a string value, trimmed) and parse_bytes do not crash;
 *   - the selector parser either fails with a reason or yields a selector whose requirements
 *     are valid (qualified-name keys, label values) and which can be matched and freed.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Isrc fuzz/fuzz_quantity.c src/model/
 * {quantity,labels,selector}.c src/base/{alloc,error,json,...}.c -ljansson
 */
#include "base/compat.h"

#include <errno.h>
#include <jansson.h>

#include "base/alloc.h"
#include "model/labels.h"
#include "model/quantity.h"
#include "model/selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                          \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "fuzz_quantity: check failed: %s (line %d)\n", #cond, __LINE__); \
            abort();                                                                         \
        }                                                                                    \
    } while (0)

static void check_quantity(const char *s)
{
    struct fatia_quantity q, back, sum;
    struct fatia_quantity untouched = {.nano = 42, .format = FATIA_Q_DECIMAL_EXPONENT};
    char text[64], text2[64], why[FATIA_WHY_MAX] = "";
    int n, r;
    uint64_t bytes;

    q = untouched;
    r = fatia_quantity_parse(s, &q, why, sizeof(why));
    if (r < 0) {
        CHECK(r == -EINVAL || r == -ERANGE);
        CHECK(why[0] != '\0');
        CHECK(q.nano == 42 && q.format == FATIA_Q_DECIMAL_EXPONENT);
        return;
    }
    n = fatia_quantity_format(&q, text, sizeof(text));
    CHECK(n > 0 && (size_t)n < sizeof(text) && strlen(text) == (size_t)n);
    r = fatia_quantity_parse(text, &back, why, sizeof(why));
    if (r != 0)
        fprintf(stderr, "'%s' -> '%s': %s\n", s, text, why);
    CHECK(r == 0);
    CHECK(fatia_quantity_cmp(&q, &back) == 0);
    fatia_quantity_format(&back, text2, sizeof(text2));
    if (q.format != FATIA_Q_BINARY_SI)
        CHECK(strcmp(text, text2) == 0);

    CHECK((fatia_quantity_value(&q) > 0) == (q.nano > 0));
    CHECK((fatia_quantity_value(&q) < 0) == (q.nano < 0));
    CHECK((fatia_quantity_milli(&q) < 0) == fatia_quantity_is_negative(&q));
    CHECK((fatia_quantity_milli(&q) == 0) == fatia_quantity_is_zero(&q));
    CHECK(fatia_quantity_sub(&q, &q, &sum) == 0 && fatia_quantity_is_zero(&sum));
    r = fatia_quantity_add(&q, &q, &sum);
    if (r == 0) {
        CHECK(fatia_quantity_sub(&sum, &q, &sum) == 0 && fatia_quantity_cmp(&sum, &q) == 0);
    } else {
        CHECK(r == -ERANGE);
    }
    r = fatia_quantity_parse_bytes(s, &bytes);
    CHECK(r == 0 || r == -EINVAL || r == -ERANGE);
    CHECK(r != -EINVAL || fatia_quantity_is_negative(&q));
}

static void check_json(const uint8_t *data, size_t size)
{
    json_t *v = json_stringn_nocheck((const char *)data, size);
    struct fatia_quantity q;
    char why[FATIA_WHY_MAX] = "";

    if (!v)
        return;
    if (fatia_quantity_parse_json(v, &q, why, sizeof(why)) < 0)
        CHECK(why[0] != '\0');
    json_decref(v);
}

static void check_selector(const char *s)
{
    struct fatia_selector *sel = NULL;
    char why[FATIA_WHY_MAX] = "";
    json_t *labels;
    int r;

    r = fatia_selector_parse(s, &sel, why, sizeof(why));
    if (r < 0) {
        CHECK(r == -EINVAL || r == -ENOMEM);
        CHECK(why[0] != '\0' && sel == NULL);
        return;
    }
    labels = json_object();
    for (size_t i = 0; i < sel->n_reqs; i++) {
        const struct fatia_sel_req *req = &sel->reqs[i];

        CHECK(fatia_is_qualified_name(req->key, NULL, 0));
        for (size_t j = 0; j < req->n_values; j++)
            CHECK(fatia_is_label_value(req->values[j], NULL, 0));
        if (req->n_values && labels)
            json_object_set_new(labels, req->key, json_string(req->values[0]));
    }
    (void)fatia_selector_matches(sel, labels);
    (void)fatia_selector_matches(sel, NULL);
    CHECK(fatia_selector_is_empty(sel) == (sel->n_reqs == 0));
    json_decref(labels);
    fatia_selector_free(sel);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fatia_malloc(size + 1);
    char why[FATIA_WHY_MAX];

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    check_quantity(s);
    check_json(data, size);
    check_selector(s);
    (void)fatia_is_qualified_name(s, why, sizeof(why));
    (void)fatia_is_label_value(s, why, sizeof(why));
    (void)fatia_is_dns1123_subdomain(s, why, sizeof(why));
    (void)fatia_is_dns1035_label(s, why, sizeof(why));
    fatia_free(s);
    return 0;
}
