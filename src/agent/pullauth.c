/*
 * agent/pullauth.c: imagePullSecrets for the image puller, as kubelet's
 * pkg/credentialprovider/secrets MakeDockerKeyring reads them.
 *
 * Model: each Secret the pod names in spec.imagePullSecrets is read from the pod's own
 * namespace only (refs has no namespace argument: a Secret of another namespace is "not found"),
 * decoded, and its registries merged into one containers-auth.json document; the agent writes it
 * into the pod's directory (0600, root's) and hands its path to skopeo --authfile for this pod's
 * pulls only, so a tenant's credentials never serve another pod's pull. Choices: the first Secret
 * naming a registry wins (kubelet tries them all in order; skopeo takes one per registry); a
 * Secret missing or malformed is skipped with a warning naming it, never its content.
 */
#include "base/compat.h"

#include "agent/pullauth.h"

#include "agent/podrefs.h"
#include "base/alloc.h"
#include "base/json.h"

static void note(char *buf, size_t n, const char *name)
{
    size_t l;

    if (!buf || !n)
        return;
    l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", l ? "," : "", name);
}

json_t *fatia_agent_pull_auth(const json_t *pod, const struct fatia_podrefs *refs, char *skipped,
                              size_t skipped_n)
{
    json_t *auths = json_object(), *ref;
    size_t i;

    if (skipped && skipped_n)
        skipped[0] = '\0';
    json_array_foreach(fatia_json_path(pod, "spec.imagePullSecrets"), i, ref)
    {
        const char *name = fatia_json_str(ref, "name"), *type, *b64;
        const json_t *sec = name ? refs->get(refs->ctx, true, name) : NULL;
        bool legacy;
        json_t *doc, *m;
        char *raw = NULL;
        size_t rn = 0;
        const char *reg;
        json_t *v;
        if (!sec) {
            note(skipped, skipped_n, name ? name : "");
            continue;
        }
        type = fatia_json_str(sec, "type");
        legacy = type && !strcmp(type, "kubernetes.io/dockercfg");
        b64 = fatia_json_str(json_object_get(sec, "data"),
                             legacy ? ".dockercfg" : ".dockerconfigjson");
        if (!b64 || fatia_pod_ref_b64_decode(b64, &raw, &rn) < 0) {
            note(skipped, skipped_n, name);
            continue;
        }
        doc = json_loadb(raw, rn, 0, NULL);
        fatia_free(raw);
        m = legacy ? doc : json_object_get(doc, "auths");
        if (!json_is_object(m)) {
            json_decref(doc);
            note(skipped, skipped_n, name);
            continue;
        }
        json_object_foreach(m, reg, v)
        {
            if (json_is_object(v) && !json_object_get(auths, reg))
                json_object_set(auths, reg, v);
        }
        json_decref(doc);
    }
    if (json_object_size(auths) == 0) {
        json_decref(auths);
        return NULL;
    }
    return json_pack("{s:o}", "auths", auths);
}
