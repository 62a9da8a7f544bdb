/*
 * agent/podrefs.h: the ConfigMaps and Secrets a pod's containers refer to (env valueFrom
 * configMapKeyRef / secretKeyRef, envFrom), resolved through a lookup the caller gives, as pure
 * functions (no I/O).
 */
#ifndef FATIA_AGENT_PODREFS_H
#define FATIA_AGENT_PODREFS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The current ConfigMap (secret false) or Secret (secret true) called name in the pod's own
 * namespace, borrowed, or NULL when there is none. The lookup has no namespace argument: a pod
 * cannot name another namespace's object. */
typedef const json_t *(*fatia_pod_ref_get_fn)(void *ctx, bool secret, const char *name);

/* The pod's current ServiceAccount token for audience (NULL: fatiad's own) and lifetime, as
 * the agent keeps it (the TokenRequest bound to the pod, renewed at 80 % of its life), borrowed;
 * NULL while none was made yet (the volume waits, as kubelet's does). */
typedef const char *(*fatia_pod_token_fn)(void *ctx, const char *audience, int64_t exp_s);

struct fatia_podrefs {
    fatia_pod_ref_get_fn get;
    void *ctx;
    const char *ns; /* for messages */
    /* projected volumes' serviceAccountToken sources (NULL: refused) and downwardAPI sources
     * (pod: the Pod; NULL: refused) */
    fatia_pod_token_fn token;
    const json_t *pod;
    /* status.podIP's value for a fieldRef; NULL: 127.0.0.1 (the host's network). A container's
     * address is known only once its sandbox is on the network, after the spec is written: the
     * OCI runtime passes FATIA_OCI_POD_IP_MARK, which oci.c replaces at create time */
    const char *pod_ip;
};

/* The value of key in obj: a ConfigMap's data (or binaryData, decoded), a Secret's data
 * (decoded from base64). A new NUL-terminated string in *ret_value (fatia_free), its length in
 * *ret_n when ret_n is not NULL. 0, -ENODATA when the key is absent, -FATIA_E_INVALID when the
 * stored value is not base64, -ENOMEM. */
int fatia_pod_ref_value(const json_t *obj, bool secret, const char *key, char **ret_value,
                        size_t *ret_n);

/* Standard base64 with padding into a new buffer (NUL-terminated, fatia_free); the decoded
 * length in *ret_n. -FATIA_E_INVALID, -ENOMEM. */
int fatia_pod_ref_b64_decode(const char *s, char **ret, size_t *ret_n);

#endif
