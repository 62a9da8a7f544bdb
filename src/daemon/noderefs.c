/*
 * daemon/noderefs.c: the objects a pod names, for the node role's fetches by name (see
 * noderefs.h).
 *
 * Model. The same walk as the Node authorizer's (apiserver/nodeauth.c pod_uses), which decides
 * what a node may read: every object the authorizer would grant for this pod is listed, and
 * nothing else, so the client never asks for what it will be refused. The namespace is always
 * the pod's: a pod cannot name another namespace's object.
 *
 * Invariants: a name that is not a DNS-1123 subdomain is never listed, so that a name such as
 * "../../team-b/persistentvolumeclaims/data", which the URL's dot segments would resolve into
 * another namespace's path, is never requested (the API validates names when objects are made,
 * not the names a pod spec refers to).
 *
 * Rejected: sharing the authorizer's walk (it lives in the API server's layer, which the node
 * role does not link, and it answers "does this pod use X", not "what does it use").
 */
#include "base/compat.h"

#include "noderefs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"

bool fatia_noderefs_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;

    if (n == 0 || n > 253 || !strcmp(name, ".") || !strcmp(name, ".."))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.'))
            return false;
    return true;
}

static int add(json_t *out, const char *plural, const char *ns, const char *name)
{
    char key[600];

    if (!fatia_noderefs_name_ok(name) || !ns)
        return 0;
    snprintf(key, sizeof(key), "%s/%s/%s", plural, ns, name);
    if (json_object_get(out, key))
        return 0;
    return json_object_set_new(out, key, json_pack("[s,s,s]", plural, ns, name)) < 0 ? -ENOMEM : 0;
}

static int container_refs(const json_t *c, const char *ns, json_t *out)
{
    const json_t *e;
    size_t i;
    int r = 0;

    json_array_foreach(json_object_get(c, "env"), i, e)
    {
        const json_t *vf = json_object_get(e, "valueFrom");
        r = r ? r
              : add(out, "secrets", ns,
                    fatia_json_str(json_object_get(vf, "secretKeyRef"), "name"));
        r = r ? r
              : add(out, "configmaps", ns,
                    fatia_json_str(json_object_get(vf, "configMapKeyRef"), "name"));
    }
    json_array_foreach(json_object_get(c, "envFrom"), i, e)
    {
        r = r ? r
              : add(out, "secrets", ns, fatia_json_str(json_object_get(e, "secretRef"), "name"));
        r = r ? r
              : add(out, "configmaps", ns,
                    fatia_json_str(json_object_get(e, "configMapRef"), "name"));
    }
    return r;
}

static int volume_refs(const json_t *pod, const json_t *v, const char *ns, json_t *out)
{
    const json_t *src;
    size_t i;
    int r = add(out, "secrets", ns, fatia_json_str(json_object_get(v, "secret"), "secretName"));

    r = r ? r : add(out, "configmaps", ns, fatia_json_str(json_object_get(v, "configMap"), "name"));
    r = r ? r
          : add(out, "persistentvolumeclaims", ns,
                fatia_json_str(json_object_get(v, "persistentVolumeClaim"), "claimName"));
    if (r == 0 && json_object_get(v, "ephemeral")) {
        const char *pn = fatia_json_str(json_object_get(pod, "metadata"), "name"),
                   *vn = fatia_json_str(v, "name");
        char eph[600];
        snprintf(eph, sizeof(eph), "%s-%s", pn ? pn : "", vn ? vn : "");
        r = add(out, "persistentvolumeclaims", ns, eph);
    }
    json_array_foreach(json_object_get(json_object_get(v, "projected"), "sources"), i, src)
    {
        r = r ? r : add(out, "secrets", ns, fatia_json_str(json_object_get(src, "secret"), "name"));
        r = r ? r
              : add(out, "configmaps", ns,
                    fatia_json_str(json_object_get(src, "configMap"), "name"));
    }
    return r;
}

int fatia_noderefs_of_pod(const json_t *pod, json_t *out)
{
    static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
    const json_t *spec = json_object_get(pod, "spec"), *x;
    const char *ns = fatia_json_str(json_object_get(pod, "metadata"), "namespace");
    size_t i;
    int r = 0;

    if (!ns)
        return 0;
    json_array_foreach(json_object_get(spec, "volumes"), i, x)
    {
        r = r ? r : volume_refs(pod, x, ns, out);
    }
    json_array_foreach(json_object_get(spec, "imagePullSecrets"), i, x)
    {
        r = r ? r : add(out, "secrets", ns, fatia_json_str(x, "name"));
    }
    for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
        json_array_foreach(json_object_get(spec, lists[l]), i, x)
        {
            r = r ? r : container_refs(x, ns, out);
        }
    }
    return r;
}
