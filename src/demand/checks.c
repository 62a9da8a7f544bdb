/*
 * demand/checks.c: the demand layer's validation rules for DRA objects, a constant set of extra
 * checks that every decoder passes to the model (see demand.h; model/kind.h).
 *
 * Upstream kube-apiserver compiles every CEL selector of a DeviceClass or a ResourceClaim(Template)
 * when the object is written and rejects it with the compiler's message, so an invalid selector
 * never reaches the scheduler; NVIDIA's DRA driver validates its opaque configs in its admission
 * webhook. fatia does both at decode time, so `fatia validate`, fatiad's API and every one-shot
 * command report the same errors with the field path and the column inside the expression.
 */
#include "base/compat.h"

#include "base/error.h"
#include "base/json.h"
#include "cel/cel.h"
#include "demand/demand.h"
#include "demand/dra.h"
#include "model/kind.h"
#include "model/kinds/kinds.h"

static void check_selectors(struct fatia_vctx *ctx, json_t *obj, const json_t *sels,
                            const char *prefix)
{
    size_t i;
    json_t *s;

    json_array_foreach(sels, i, s)
    {
        const json_t *e = json_object_get(json_object_get(s, "cel"), "expression");
        struct fatia_cel_program *p;
        char why[512], path[256];
        int r;
        if (!json_is_string(e))
            continue; /* the schema reports it */
        r = fatia_cel_compile(json_string_value(e), json_string_length(e), &p, why, sizeof(why));
        if (r == 0) {
            fatia_cel_program_free(p);
            continue;
        }
        snprintf(path, sizeof(path), "%s[%zu].cel.expression", prefix, i);
        if (r == -ENOMEM)
            ctx->diag->oom = true;
        else if (r == -FATIA_E_COST)
            fatia_verr_at(ctx, obj, path, "too complex, exceeds cost limit: %s", why);
        else
            fatia_verr_at(ctx, obj, path, "compilation failed: %s", why);
    }
}

static void check_configs(struct fatia_vctx *ctx, json_t *obj, const json_t *configs,
                          const char *prefix)
{
    size_t i;
    json_t *c;

    json_array_foreach(configs, i, c)
    {
        const json_t *op = json_object_get(c, "opaque");
        const char *driver = fatia_json_str(op, "driver");
        const json_t *params = json_object_get(op, "parameters");
        char path[128], why[256], full[400];
        if (!driver || strcmp(driver, FATIA_DRA_DRIVER_NVIDIA) || !json_is_object(params))
            continue;
        if (fatia_dra_nvidia_config_parse(params, NULL, path, sizeof(path), why, sizeof(why)) == 0)
            continue;
        snprintf(full, sizeof(full), "%s[%zu].opaque.parameters%s%s", prefix, i, path[0] ? "." : "",
                 path);
        fatia_verr_at(ctx, obj, full, "%s", why);
    }
}

static void check_claim_spec(struct fatia_vctx *ctx, json_t *obj, const json_t *spec,
                             const char *prefix)
{
    const json_t *devs = json_object_get(spec, "devices");
    size_t i, j;
    json_t *r, *sub;
    char path[256];

    json_array_foreach(json_object_get(devs, "requests"), i, r)
    {
        snprintf(path, sizeof(path), "%s.devices.requests[%zu].exactly.selectors", prefix, i);
        check_selectors(ctx, obj, json_object_get(json_object_get(r, "exactly"), "selectors"),
                        path);
        json_array_foreach(json_object_get(r, "firstAvailable"), j, sub)
        {
            snprintf(path, sizeof(path), "%s.devices.requests[%zu].firstAvailable[%zu].selectors",
                     prefix, i, j);
            check_selectors(ctx, obj, json_object_get(sub, "selectors"), path);
        }
    }
    snprintf(path, sizeof(path), "%s.devices.config", prefix);
    check_configs(ctx, obj, json_object_get(devs, "config"), path);
}

static void check_deviceclass(struct fatia_vctx *ctx, json_t *obj)
{
    const json_t *spec = json_object_get(obj, "spec");

    check_selectors(ctx, obj, json_object_get(spec, "selectors"), "spec.selectors");
    check_configs(ctx, obj, json_object_get(spec, "config"), "spec.config");
}

static void check_claim(struct fatia_vctx *ctx, json_t *obj)
{
    check_claim_spec(ctx, obj, json_object_get(obj, "spec"), "spec");
}

static void check_claim_template(struct fatia_vctx *ctx, json_t *obj)
{
    check_claim_spec(ctx, obj, fatia_json_path(obj, "spec.spec"), "spec.spec");
}

static const struct fatia_check checks[] = {
    {&fatia_kind_deviceclass, check_deviceclass},
    {&fatia_kind_resourceclaim, check_claim},
    {&fatia_kind_resourceclaimtemplate, check_claim_template},
};

const struct fatia_checks fatia_demand_checks = {checks, FATIA_ARRAY_SIZE(checks)};
