/*
 * agent/localpath.h: the node agent's side of PersistentVolumeClaims (src/agent/localpath.c):
 * a claim's directory for a pod's persistentVolumeClaim volume, the claims' sizes for the
 * storage check, and the removal of directories whose PersistentVolume is gone.
 */
#ifndef FATIA_AGENT_LOCALPATH_H
#define FATIA_AGENT_LOCALPATH_H

#include <jansson.h>
#include <stddef.h>

struct fatia_agent;

/* The directory of claim `claim` of namespace ns, into ret (made, mode 0777, when it is one of
 * the local-path provisioner's under POD_DIR/pv/). -ESRCH with kubelet's or the scheduler's
 * words in why while the claim is missing or not bound to a volume that names it (the pod waits
 * for it); -FATIA_E_INVALID (a volume of a kind the agent does not mount), -errno. */
int fatia_agent_claim_path(struct fatia_agent *a, const char *ns, const char *claim, char *ret,
                           size_t n, char *why, size_t why_n);

/* The pod's claims as [{"claim", "path", "capacity": bytes}] (bound ones only), new
 * reference. */
json_t *fatia_agent_pod_claims(struct fatia_agent *a, const json_t *pod);

/* Removes POD_DIR/pv/pvc-* directories no PersistentVolume names any more (reclaimPolicy
 * Delete: the provisioner deleted the volume). */
void fatia_agent_localpath_gc(struct fatia_agent *a);

#endif
