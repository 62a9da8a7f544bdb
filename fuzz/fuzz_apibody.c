/*
 * fuzz/fuzz_apibody.c: request bodies through the API server's write path (decode, conversion,
 * defaulting, validation, pruning, admission, metadata rules) as a dry-run create of the kind the
 * first byte picks, on an in-memory store. Invariants: no crash, and every body gets exactly one
 * answer, synchronously (dry runs never wait for a commit), with a code a client understands.
 */
#include "base/compat.h"

#include <event2/event.h>

#include "apiserver/internal.h"
#include "demand/demand.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fatia_apiserver *srv;

static void answered(void *arg, struct opres *r)
{
    int *code = arg;

    if (*code || !r->code || (!r->status && !r->ver))
        abort();
    *code = r->code;
}

static void setup(void)
{
    struct event_base *base = event_base_new();
    struct fatia_store *store;
    json_t *ns;
    int code = 0;

    if (!base || fatia_store_open(":memory:", NULL, &store) < 0 ||
        fatia_apiserver_new(base, store, &fatia_demand_checks, NULL, &srv) < 0)
        abort();
    ns = json_pack("{s:s,s:s,s:{s:s}}", "apiVersion", "v1", "kind", "Namespace", "metadata", "name",
                   "default");
    fatia_api_op_create(
        &(struct opctx){.s = srv,
                        .user = &fatia_user_system,
                        .t = fatia_api_server_table_by_resource(srv, "", "namespaces")},
        ns, answered, &code);
    while (!code)
        event_base_loop(base, EVLOOP_ONCE);
    json_decref(ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rtable *t;
    json_t *body;
    int code = 0;

    if (size < 1 || size > 1 << 16)
        return 0;
    if (!srv)
        setup();
    t = &srv->tables[data[0] % srv->n_tables];
    body = json_loadb((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
    if (!body)
        return 0;
    fatia_api_op_create(&(struct opctx){.s = srv,
                                        .user = &fatia_user_system,
                                        .t = t,
                                        .ns = t->kind->namespaced ? "default" : NULL,
                                        .dry_run = true,
                                        .fv = (data[0] & 0x80) ? FATIA_FV_STRICT : FATIA_FV_WARN},
                        body, answered, &code);
    if (!code)
        abort();
    json_decref(body);
    return 0;
}
