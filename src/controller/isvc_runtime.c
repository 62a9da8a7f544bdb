/*
 * controller/isvc_runtime.c: the predictor container a ServingRuntime names (isvc_runtime.h), as
 * KServe's predictor reconciler builds it (pkg/controller/v1beta1/inferenceservice/components/
 * predictor.go: MergeRuntimeContainers, then ReplacePlaceholders over the InferenceService's
 * ObjectMeta).
 *
 * Model. The runtime's spec.containers[0] is the base; predictor.model is a Container plus the
 * model fields (modelFormat, runtime, storageUri, storage, protocolVersion), and its container
 * fields merge over the base as a strategic merge patch does for a Container: scalars and
 * objects other than resources replace (image, command, readinessProbe, ...), env merges by name,
 * ports by containerPort, resources.limits / resources.requests key by key, and args, as KServe
 * special-cases, concatenate (the runtime's, then the model's). The name stays the runtime's
 * (kserve-container when it has none). Then the Go-template placeholders of the InferenceService's
 * metadata are expanded in command, args and env values: {{.Name}}, {{.Namespace}},
 * {{.Labels.K}}, {{.Annotations.K}}, {{index .Labels "K"}}, {{index .Annotations "K"}}; a missing
 * label or annotation is the empty string. Any other action is refused (-EINVAL, naming the
 * runtime and the field), where Go's template would fail too, rather than passed on verbatim.
 *
 * The port the InferencePool targets is the merged container's first containerPort, else 8080
 * (KServe's default for a runtime container without ports). Nothing of engine-sim is added: no
 * PATH, no $(POD_IP), no --slice/--gpus (engine-sim's flags, which a vLLM image does not know);
 * the vLLM sizing (`fatia serve plan`) goes into the runtime's or the model's args
 * (docs/serving.md).
 *
 * Rejected: a real Go template engine (ranges, pipes and functions in a runtime are rare and an
 * engine is large); keeping unknown placeholders verbatim (the server would start with "{{...}}"
 * as a flag value and fail far from the cause).
 */
#include "base/compat.h"

#include "controller/isvc_runtime.h"

#include "base/error.h"
#include "base/json.h"

static const char *const MODEL_ONLY[] = {"modelFormat", "runtime",         "storageUri",
                                         "storage",     "protocolVersion", NULL};

static bool model_only(const char *k)
{
    for (int i = 0; MODEL_ONLY[i]; i++)
        if (!strcmp(k, MODEL_ONLY[i]))
            return true;
    return false;
}

/* Merges the entries of over into base (arrays of objects) by the string or integer key. */
static int merge_by(json_t *base, const json_t *over, const char *key)
{
    size_t i, j;
    json_t *o, *b;

    json_array_foreach(over, i, o)
    {
        const json_t *ok = json_object_get(o, key);
        bool done = false;
        json_array_foreach(base, j, b)
        {
            if (ok && json_equal(json_object_get(b, key), ok)) {
                if (json_array_set(base, j, o) < 0)
                    return -ENOMEM;
                done = true;
                break;
            }
        }
        if (!done && json_array_append(base, o) < 0)
            return -ENOMEM;
    }
    return 0;
}

static int merge_field(json_t *ctr, const char *k, json_t *v)
{
    json_t *have = json_object_get(ctr, k);

    if (!strcmp(k, "name"))
        return 0;
    if ((!strcmp(k, "args") || !strcmp(k, "env") || !strcmp(k, "ports")) && json_is_array(v) &&
        json_is_array(have)) {
        if (!strcmp(k, "args"))
            return json_array_extend(have, v) < 0 ? -ENOMEM : 0;
        return merge_by(have, v, !strcmp(k, "env") ? "name" : "containerPort");
    }
    if (!strcmp(k, "resources") && json_is_object(v) && json_is_object(have)) {
        const char *rk;
        json_t *rv;
        json_object_foreach(v, rk, rv)
        {
            json_t *hv = json_object_get(have, rk);
            if (json_is_object(rv) && json_is_object(hv)) {
                if (json_object_update(hv, rv) < 0)
                    return -ENOMEM;
            } else if (json_object_set(have, rk, rv) < 0) {
                return -ENOMEM;
            }
        }
        return 0;
    }
    return json_object_set(ctr, k, v) < 0 ? -ENOMEM : 0;
}

/* The value of one placeholder action (trimmed text between the braces), or NULL. */
static const char *lookup(const json_t *meta, const char *act, size_t n, char *key, size_t keylen)
{
    const char *map = NULL;

    if (n == 5 && !strncmp(act, ".Name", 5))
        return fatia_json_str(meta, "name") ? fatia_json_str(meta, "name") : "";
    if (n == 10 && !strncmp(act, ".Namespace", 10))
        return fatia_json_str(meta, "namespace") ? fatia_json_str(meta, "namespace") : "";
    if (n > 8 && !strncmp(act, ".Labels.", 8)) {
        map = "labels";
        snprintf(key, keylen, "%.*s", (int)(n - 8), act + 8);
    } else if (n > 13 && !strncmp(act, ".Annotations.", 13)) {
        map = "annotations";
        snprintf(key, keylen, "%.*s", (int)(n - 13), act + 13);
    } else if (n > 6 && !strncmp(act, "index ", 6)) {
        const char *p = act + 6, *end = act + n, *q;
        while (p < end && *p == ' ')
            p++;
        if (end - p > 8 && !strncmp(p, ".Labels ", 8)) {
            map = "labels";
            p += 8;
        } else if (end - p > 13 && !strncmp(p, ".Annotations ", 13)) {
            map = "annotations";
            p += 13;
        } else {
            return NULL;
        }
        while (p < end && *p == ' ')
            p++;
        if (p >= end || *p != '"' || end - p < 2 || end[-1] != '"')
            return NULL;
        q = p + 1;
        if (memchr(q, '"', (size_t)(end - 1 - q)))
            return NULL;
        snprintf(key, keylen, "%.*s", (int)(end - 1 - q), q);
    }
    if (!map)
        return NULL;
    return fatia_json_str(json_object_get(meta, map), key)
               ? fatia_json_str(json_object_get(meta, map), key)
               : "";
}

/* s with its placeholders expanded: a new string, or NULL with *ret_bad set (-EINVAL) or not
 * (-ENOMEM). */
static json_t *expand(const json_t *meta, const char *s, bool *ret_bad)
{
    size_t cap = strlen(s) * 2 + 64, len = 0;
    char *out = malloc(cap), key[300];
    json_t *r;

    *ret_bad = false;
    if (!out)
        return NULL;
    while (*s) {
        const char *open = strstr(s, "{{"), *close, *a, *b, *v;
        size_t lit = open ? (size_t)(open - s) : strlen(s), vl;
        if (len + lit + 1 > cap) {
            char *n = realloc(out, cap = len + lit + cap);
            if (!n)
                goto fail;
            out = n;
        }
        memcpy(out + len, s, lit);
        len += lit;
        if (!open)
            break;
        close = strstr(open + 2, "}}");
        if (!close) {
            *ret_bad = true;
            goto fail;
        }
        for (a = open + 2; a < close && *a == ' '; a++)
            ;
        for (b = close; b > a && b[-1] == ' '; b--)
            ;
        v = lookup(meta, a, (size_t)(b - a), key, sizeof(key));
        if (!v) {
            *ret_bad = true;
            goto fail;
        }
        vl = strlen(v);
        if (len + vl + 1 > cap) {
            char *n = realloc(out, cap = len + vl + cap);
            if (!n)
                goto fail;
            out = n;
        }
        memcpy(out + len, v, vl);
        len += vl;
        s = close + 2;
    }
    out[len] = 0;
    r = json_string(out);
    free(out);
    return r;
fail:
    free(out);
    return NULL;
}

/* Expands the strings of arr (command, args) or the env values in place. */
static int expand_list(const json_t *meta, json_t *arr, bool env, const char *rt, const char *field,
                       char *err, size_t errlen)
{
    size_t i;
    json_t *v;

    json_array_foreach(arr, i, v)
    {
        json_t *target = env ? json_object_get(v, "value") : v, *n;
        bool bad;
        if (!json_is_string(target))
            continue;
        n = expand(meta, json_string_value(target), &bad);
        if (!n && bad) {
            snprintf(err, errlen,
                     "runtime %.200s: spec.containers[0].%s[%zu]%s: %.200s: unsupported template "
                     "(only {{.Name}}, {{.Namespace}}, {{.Labels.K}}, {{.Annotations.K}}, {{index "
                     ".Labels \"K\"}}, {{index .Annotations \"K\"}})",
                     rt, field, i, env ? ".value" : "", json_string_value(target));
            return -EINVAL;
        }
        if (!n || (env ? json_object_set_new(v, "value", n) : json_array_set_new(arr, i, n)) < 0)
            return -ENOMEM;
    }
    return 0;
}

int fatia_ctlr_isvc_runtime_container(const json_t *runtime, const json_t *isvc, char *err,
                                      size_t errlen, json_t **ret_ctr, int *ret_port)
{
    const json_t *base = json_array_get(fatia_json_path(runtime, "spec.containers"), 0);
    const json_t *model = fatia_json_path(isvc, "spec.predictor.model");
    const json_t *meta = json_object_get(isvc, "metadata");
    const char *rt = fatia_json_str(json_object_get(runtime, "metadata"), "name");
    const char *k;
    json_t *ctr, *v;
    size_t i;
    int rc;

    *ret_ctr = NULL;
    *ret_port = FATIA_CTLR_RUNTIME_PORT;
    if (!fatia_json_str(base, "image") || !*fatia_json_str(base, "image"))
        return 0;
    if (!(ctr = json_deep_copy(base)))
        return -ENOMEM;
    rc = -ENOMEM;
    if (!fatia_json_str(ctr, "name") &&
        json_object_set_new(ctr, "name", json_string("kserve-container")) < 0)
        goto fail;
    if (json_is_object(model)) {
        json_object_foreach((json_t *)model, k, v)
        {
            if (!model_only(k) && (rc = merge_field(ctr, k, v)) < 0)
                goto fail;
        }
    }
    rt = rt ? rt : "";
    if ((rc = expand_list(meta, json_object_get(ctr, "command"), false, rt, "command", err,
                          errlen)) < 0 ||
        (rc = expand_list(meta, json_object_get(ctr, "args"), false, rt, "args", err, errlen)) <
            0 ||
        (rc = expand_list(meta, json_object_get(ctr, "env"), true, rt, "env", err, errlen)) < 0)
        goto fail;
    json_array_foreach(json_object_get(ctr, "ports"), i, v)
    {
        int64_t p;
        if (fatia_json_int(v, "containerPort", &p) && p >= 1 && p <= 65535) {
            *ret_port = (int)p;
            break;
        }
    }
    *ret_ctr = ctr;
    return 0;
fail:
    json_decref(ctr);
    return rc;
}
