/*
 * fuzz/fuzz_apiurl.c: request targets -> segments, parameters, routes, query options
 * (apiserver/request.h). Invariants: no crash; every segment and parameter is a NUL-terminated
 * string inside the decoded buffer; a route's strings are segments of the target.
 */
#include "base/compat.h"

#include "apiserver/request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fatia_api_target t;
    struct fatia_api_route r;
    struct fatia_api_query q;
    char why[256];

    if (fatia_api_target_parse((const char *)data, size, &t) < 0)
        return 0;
    for (size_t i = 0; i < t.n_seg; i++)
        if (strlen(t.seg[i]) > size)
            abort();
    if (fatia_api_route_parse(&t, &r) == 0 && r.type == FATIA_ROUTE_RESOURCE && !r.resource)
        abort();
    (void)fatia_api_query_parse(&t, &q, why, sizeof(why));
    (void)fatia_api_target_param(&t, "watch");
    fatia_api_target_release(&t);
    return 0;
}
