/*
 * fuzz/fuzz_bodycheck.c: the look at a request body before parsing (apiserver/limits.c) against
 * jansson's parse of the same text. Invariants: no crash, no read past the body; a refusal has
 * a status of 400, 413 or 422 and a message; a body it lets through that parses has no nesting
 * deeper than the limit and no object or list of more than FATIA_API_MAX_MEMBERS members; a
 * body refused for depth or members that parses really is that deep or that wide.
 */
#include "base/compat.h"

#include <jansson.h>

#include "apiserver/internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DEPTH 8 /* small, so that short inputs reach it */

/* depth of v and its widest container */
static void shape(const json_t *v, unsigned d, unsigned *max_d, size_t *max_n)
{
    const char *k;
    json_t *m;
    size_t i;

    if (!json_is_object(v) && !json_is_array(v))
        return;
    if (d > *max_d)
        *max_d = d;
    if (json_is_object(v)) {
        if (json_object_size(v) > *max_n)
            *max_n = json_object_size(v);
        json_object_foreach((json_t *)v, k, m) shape(m, d + 1, max_d, max_n);
    } else {
        if (json_array_size(v) > *max_n)
            *max_n = json_array_size(v);
        json_array_foreach(v, i, m) shape(m, d + 1, max_d, max_n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[400] = "";
    int code = 0;
    int r = fatia_api_body_check((const char *)data, size, DEPTH, why, sizeof(why), &code);
    json_t *v;
    unsigned d = 0;
    size_t n = 0;

    if (r < 0 &&
        ((code != 400 && code != 413 && code != 422) || !why[0] || !memchr(why, '\0', sizeof(why))))
        abort();
    v = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!v)
        return 0;
    shape(v, 1, &d, &n);
    json_decref(v);
    if (r == 0 && (d > DEPTH || n > FATIA_API_MAX_MEMBERS))
        abort();
    if (r < 0 && code == 400 && d <= DEPTH)
        abort();
    if (r < 0 && code == 422 && n <= FATIA_API_MAX_MEMBERS)
        abort();
    return 0;
}
