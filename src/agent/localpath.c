/*
 * agent/localpath.c: PersistentVolumeClaims on the node (the provisioner's API side is
 * src/controller/localpath.c).
 *
 * Model: a claim's data lives in POD_DIR/pv/<pv name> (pv.spec.hostPath.path, which the
 * provisioner sets to it), outside every pod's own directory, so it outlives its pods. A pod's
 * persistentVolumeClaim volume is resolved here from the API's cache of the pod's own namespace
 * (the lookup takes the pod's namespace, never one from the pod spec): the claim must be Bound
 * to a volume whose claimRef names the claim's uid, so a tenant who writes another's volume name
 * into spec.volumeName of a claim gets nothing. The directory is made on first use (0777: the
 * container's users are the namespace's host range, and POD_DIR/pv is 0711 so no other host user
 * can find it); the containers runtime bind-mounts it (oci_pod.c links it as
 * RUN_DIR/volumes/<name>).
 *
 * Reclaim: the provisioner deletes a Delete volume when its claim goes; the agent removes a
 * POD_DIR/pv/pvc-* directory once no PersistentVolume has named it for 30 s of storage checks in
 * a row, and only when the cache answered the listing: a cache still filling (a replica syncing
 * from etcd at start, docs/fleet.md) never removes data. A Retain volume stays, Released, with
 * its directory.
 *
 * Size: requests.storage is the volume's capacity; the storage check (agent.c) measures each
 * mounted claim's directory every 2 s and evicts the pods writing to one over its capacity, as
 * kubelet does for ephemeral storage. Rejected: a loop-mounted filesystem per claim (needs a
 * loop device per claim and root in every mode) and project quotas (not on this host's
 * filesystem).
 */
#include "base/compat.h"

#include "agent/localpath.h"

#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "base/clock.h"
#include "base/error.h"
#include "base/json.h"
#include "base/log.h"
#include "client/client.h"
#include "model/kind.h"
#include "model/quantity.h"

static const json_t *cached(struct fatia_agent *a, const char *group_version, const char *kind,
                            const char *ns, const char *name)
{
    const struct fatia_kind *k = fatia_kind_find(group_version, kind, NULL);

    return k && name ? fatia_client_cached(a->client, k, ns, name) : NULL;
}

static void pv_root(const struct fatia_agent *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s/pv", a->pod_dir);
}

int fatia_agent_claim_path(struct fatia_agent *a, const char *ns, const char *claim, char *ret,
                           size_t n, char *why, size_t why_n)
{
    const json_t *pvc = cached(a, "v1", "PersistentVolumeClaim", ns, claim), *pv;
    const char *vn, *uid, *ref, *path, *phase;
    char root[1300];
    size_t rl;

    if (!pvc) {
        snprintf(why, why_n, "persistentvolumeclaim \"%s\" not found", claim);
        return -ESRCH;
    }
    vn = fatia_json_str(json_object_get(pvc, "spec"), "volumeName");
    phase = fatia_json_str(json_object_get(pvc, "status"), "phase");
    uid = fatia_json_str(json_object_get(pvc, "metadata"), "uid");
    pv = cached(a, "v1", "PersistentVolume", NULL, vn);
    if (!vn || !pv || !phase || strcmp(phase, "Bound")) {
        snprintf(why, why_n, "pod has unbound immediate PersistentVolumeClaims (claim %s)", claim);
        return -ESRCH;
    }
    ref = fatia_json_str(fatia_json_path(pv, "spec.claimRef"), "uid");
    if (!ref || !uid || strcmp(ref, uid)) {
        snprintf(why, why_n, "persistentvolumeclaim \"%s\": volume %s is bound to another claim",
                 claim, vn);
        return -ESRCH;
    }
    path = fatia_json_str(fatia_json_path(pv, "spec.hostPath"), "path");
    if (!path)
        path = fatia_json_str(fatia_json_path(pv, "spec.local"), "path");
    if (!path || path[0] != '/' || strstr(path, "/../") || strlen(path) >= n) {
        snprintf(why, why_n,
                 "persistentvolumeclaim \"%s\": volume %s has no hostPath or local path the "
                 "agent can mount",
                 claim, vn);
        return -FATIA_E_INVALID;
    }
    snprintf(ret, n, "%s", path);
    pv_root(a, root, sizeof(root));
    rl = strlen(root);
    if (!strncmp(path, root, rl) && path[rl] == '/' && !strchr(path + rl + 1, '/')) {
        /* one of the provisioner's: made on first use */
        if (mkdir(root, 0711) < 0 && errno != EEXIST)
            goto io;
        if (mkdir(path, 0777) < 0 && errno != EEXIST)
            goto io;
        (void)chmod(path, 0777);
    } else if (access(path, F_OK) < 0) {
        goto io;
    }
    return 0;
io:
    snprintf(why, why_n, "persistentvolumeclaim \"%s\": cannot make '%.300s': %s", claim, path,
             fatia_strerror(-errno));
    return -EIO;
}

json_t *fatia_agent_pod_claims(struct fatia_agent *a, const json_t *pod)
{
    const char *ns = fatia_json_str(json_object_get(pod, "metadata"), "namespace");
    json_t *out = json_array(), *v;
    size_t i;

    json_array_foreach(fatia_json_path(pod, "spec.volumes"), i, v)
    {
        const char *cn = fatia_json_str(json_object_get(v, "persistentVolumeClaim"), "claimName");
        const json_t *pvc = cached(a, "v1", "PersistentVolumeClaim", ns, cn), *pv;
        char path[1400], why[300];
        const char *cap;
        uint64_t bytes = 0;
        if (!cn || !pvc)
            continue;
        pv = cached(a, "v1", "PersistentVolume", NULL,
                    fatia_json_str(json_object_get(pvc, "spec"), "volumeName"));
        cap = fatia_json_str(fatia_json_path(pv, "spec.capacity"), "storage");
        if (!cap || fatia_quantity_parse_bytes(cap, &bytes) < 0 ||
            fatia_agent_claim_path(a, ns, cn, path, sizeof(path), why, sizeof(why)) < 0)
            continue;
        json_array_append_new(out, json_pack("{s:s,s:s,s:I}", "claim", cn, "path", path, "capacity",
                                             (json_int_t)bytes));
    }
    return out;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        (void)rmdir(path);
    else
        (void)unlink(path);
    return 0;
}

struct pv_names {
    json_t *names;
};

static void add_name(void *arg, const json_t *obj)
{
    struct pv_names *pn = arg;
    const char *name = fatia_json_str(json_object_get(obj, "metadata"), "name");

    if (name)
        json_object_set_new(pn->names, name, json_true());
}

#define GONE_FOR (30 * FATIA_USEC_PER_SEC)

void fatia_agent_localpath_gc(struct fatia_agent *a)
{
    static json_t *missing; /* {pv name: monotonic time first seen without a PV} */
    fatia_usec_t now = fatia_now_mono_usec();
    const struct fatia_kind *k = fatia_kind_find("v1", "PersistentVolume", NULL);
    struct pv_names pn = {json_object()};
    char root[1300], path[1600];
    struct dirent *e;
    DIR *d;

    pv_root(a, root, sizeof(root));
    if (!k || !(d = opendir(root))) {
        json_decref(pn.names);
        return;
    }
    if (fatia_client_cached_each(a->client, k, NULL, add_name, &pn) < 0) {
        closedir(d);
        json_decref(pn.names);
        return; /* no answer: remove nothing */
    }
    if (!missing)
        missing = json_object();
    while ((e = readdir(d))) {
        const json_t *since;
        if (strncmp(e->d_name, "pvc-", 4))
            continue;
        if (json_object_get(pn.names, e->d_name)) {
            json_object_del(missing, e->d_name);
            continue;
        }
        since = json_object_get(missing, e->d_name);
        if (!since) {
            json_object_set_new(missing, e->d_name, json_integer((json_int_t)now));
            continue;
        }
        if (now - (fatia_usec_t)json_integer_value(since) < GONE_FOR)
            continue;
        json_object_del(missing, e->d_name);
        snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
        fatia_info("agent: volume %s is gone: removing '%s'", e->d_name, path);
        (void)nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
    json_decref(pn.names);
}
