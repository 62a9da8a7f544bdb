/*
 * controller/kueue.c: Kueue's workload names and small predicates over Pods (see kueue.h).
 *
 * The workload name must be Kueue's exactly, so that tooling that derives it (kueuectl, the
 * dashboards) finds the Workload of a Job: sha1 comes from OpenSSL's libcrypto, already linked by
 * the API server for TLS.
 */
#include "base/compat.h"

#include "controller/kueue.h"

#include <openssl/evp.h>

#include "base/json.h"
#include "base/str.h"
#include "controller/ctl.h"

void fatia_ctlr_kueue_workload_name(const char *kind, const char *group, const char *name,
                                    const char *uid, char *buf, size_t n)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    char prefix[260], hex[11];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    size_t plen;

    hex[0] = '\0';
    if (ctx && EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) == 1) {
        EVP_DigestUpdate(ctx, kind, strlen(kind));
        EVP_DigestUpdate(ctx, "\n", 1);
        EVP_DigestUpdate(ctx, group, strlen(group));
        EVP_DigestUpdate(ctx, "\n", 1);
        EVP_DigestUpdate(ctx, name, strlen(name));
        EVP_DigestUpdate(ctx, "\n", 1);
        EVP_DigestUpdate(ctx, uid ? uid : "", uid ? strlen(uid) : 0);
        if (EVP_DigestFinal_ex(ctx, md, &md_len) == 1 && md_len >= 3)
            snprintf(hex, sizeof(hex), "%02x%02x%02x", md[0], md[1], md[2]);
    }
    EVP_MD_CTX_free(ctx);
    hex[5] = '\0';
    snprintf(prefix, sizeof(prefix), "%s-%s", kind, name);
    for (char *p = prefix; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    plen = strlen(prefix);
    if (plen > 253 - 1 - 5)
        plen = 253 - 1 - 5;
    snprintf(buf, n, "%.*s-%s", (int)plen, prefix, hex);
}

bool fatia_ctlr_pod_terminal(const json_t *pod)
{
    const char *ph = fatia_json_str(json_object_get(pod, "status"), "phase");

    return ph && (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"));
}

bool fatia_ctlr_pod_done(const json_t *pod)
{
    if (fatia_ctlr_pod_terminal(pod))
        return true;
    if (!fatia_ctlr_obj_deleting(pod))
        return false;
    /* deleted: done once no node agent holds it (never bound, or the agent let go) */
    return !fatia_json_str(json_object_get(pod, "spec"), "nodeName") ||
           !fatia_ctlr_obj_has_finalizer(pod, AGENT_FINALIZER);
}

const json_t *fatia_ctlr_owner_of_kind(const json_t *obj, const char *av, const char *kind)
{
    const json_t *r = fatia_ctlr_obj_controller_ref(obj);
    const char *k = fatia_json_str(r, "kind"), *a = fatia_json_str(r, "apiVersion");

    if (!r || !k || strcmp(k, kind))
        return NULL;
    if (av && (!a || strcmp(a, av)))
        return NULL;
    return r;
}
