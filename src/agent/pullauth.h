/*
 * agent/pullauth.h: a pod's imagePullSecrets as the credentials file the image puller reads
 * (containers-auth.json, skopeo's --authfile), pure (src/agent/pullauth.c).
 */
#ifndef FATIA_AGENT_PULLAUTH_H
#define FATIA_AGENT_PULLAUTH_H

#include <jansson.h>

struct fatia_podrefs;

/* {"auths": {registry: {"auth": ...}, ...}} from the pod's spec.imagePullSecrets, each Secret
 * looked up in the pod's own namespace (refs): kubernetes.io/dockerconfigjson (.dockerconfigjson)
 * and kubernetes.io/dockercfg (.dockercfg); the first Secret naming a registry wins. A missing
 * Secret, or one of another type, is skipped as kubelet does (the pull may then fail). NULL when
 * no Secret gives a credential; else a new reference. *ret_skipped: names skipped, comma-separated
 * into buf (may be NULL). */
json_t *fatia_agent_pull_auth(const json_t *pod, const struct fatia_podrefs *refs, char *skipped,
                              size_t skipped_n);

#endif
