/*
 * agent/oci_pod.h: the agent's preparation of a pod for the OCI runtime (oci_pod.c).
 */
#ifndef FATIA_AGENT_OCI_POD_H
#define FATIA_AGENT_OCI_POD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fatia_podrefs;

struct fatia_env;
struct fatia_image_store;

struct fatia_oci_pod {
    const json_t *pod;
    const char *ns;
    const char *pod_dir; /* DATA/agent/pods/<uid> */
    const char *run_dir; /* POD_DIR/run/<uid> */
    uint32_t host_base;  /* the namespace's host id range */
    const struct fatia_image_store *images;
    const char *host_path_namespaces; /* comma-separated, "*": all; NULL: none */
    bool host_network;
    const struct fatia_pod_devices *devs; /* the pod's devices (podspec.h) */
    const char *cdi_dir;      /* the admin's CDI specs (POD_DIR/cdi, *.json): they win */
    const char *cdi_node_dir; /* the agent's spec of the node's slices (POD_DIR/cdi/<node>) */
    /* pulls: the node's auth file (--agent registry-auth), the registries reached without TLS
     * verification (--agent insecure-registries, "host:port,..."), and the hook that gives
     * the credentials of the pod's imagePullSecrets (an auth file written for this pull; the
     * agent's: agent/pullauth.h); 0 with ret_path empty: none, use the node's */
    const char *auth_file;
    const char *insecure_registries;
    int (*pull_secrets_auth)(void *arg, const json_t *pod, char *ret_path, size_t n);
    void *pull_secrets_arg;
    /* the pod's ConfigMaps and Secrets, for configMap, secret and projected volumes */
    const struct fatia_podrefs *refs;
    /* the directory of a persistentVolumeClaim volume's claim (agent/localpath.h) */
    int (*claim_path)(void *arg, const char *claim, char *ret, size_t n, char *why, size_t why_n);
    void *claim_arg;
    /* a workbench's persistent home (agent/nbhome.c), bound at each container's HOME unless a
     * volumeMount has that path (a claim the template mounts there wins); NULL: none */
    const char *nb_home;
    /* the images were pulled and unpacked for this start (imgpull.h): no pull here */
    bool prefetched;
};

/* Whether ns is in a comma-separated list ("*": every namespace; NULL: none). */
bool fatia_oci_ns_listed(const char *list, const char *ns);

/* kubelet's imagePullPolicy of a container: as set, else Always for ":latest" or no tag,
 * IfNotPresent for another tag or a digest. */
const char *fatia_oci_pull_policy(const json_t *ctr, const char *image);

/* Whether image's registry (its host:port) is in the comma-separated list. */
bool fatia_oci_insecure(const char *list, const char *image);

/* The pod's etc/ files and volume directories. *ret_tmpfs: [{"path","size","uid"}] of the
 * medium: Memory emptyDirs for the shim to mount. 0, -FATIA_E_INVALID (why: the field path),
 * -errno. */
int fatia_oci_pod_prepare(const struct fatia_oci_pod *op, json_t **ret_tmpfs, char *why,
                          size_t why_n);

/* The disk emptyDirs with a sizeLimit, for the shim to hold (shim_storage.h): *ret
 * [{"volume","path","bytes","sizeLimit"}] (path: run_dir/volumes/<name>, as prepare lays them
 * out). Pure. 0, -FATIA_E_INVALID (why: spec.volumes[i].emptyDir.sizeLimit), -ENOMEM. */
int fatia_oci_pod_disk_limits(const json_t *pod, const char *run_dir, json_t **ret, char *why,
                              size_t why_n);

/* One container: its argv (*ret_argv), its bundle template, and its spec.json "oci" object
 * (*ret_oci: image, imageID, lowerdir, rootUid, rootGid; hostUid, hostGid: its user's host ids). env is what the agent computed for it.
 * -ENOENT (the image is not in the store), -FATIA_E_INVALID, -errno; why set. */
int fatia_oci_ctr_prepare(const struct fatia_oci_pod *op, const json_t *ctr,
                          const struct fatia_env *env, json_t **ret_argv, json_t **ret_oci,
                          char *why, size_t why_n);

#endif
