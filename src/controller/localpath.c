/*
 * controller/localpath.c: the local-path provisioner (provisioner fatia.dev/local-path) and the
 * default StorageClass `local-path`, after kube-controller-manager's persistentvolume binder
 * (pkg/controller/volume/persistentvolume/pv_controller.go: syncUnboundClaim, syncVolume,
 * reclaimVolume) and Rancher's local-path-provisioner, cut to one box.
 *
 * Model:
 *
 *   StorageClass  `local-path` is created once at start when the API has no StorageClass of
 *                 that name (reclaimPolicy Delete, volumeBindingMode WaitForFirstConsumer, the
 *                 default-class annotation); the admin may edit or delete it afterwards.
 *   claim         Pending, no spec.volumeName, its class (spec.storageClassName, else the
 *                 default class, which is then written into the claim as kube's retroactive
 *                 default assignment does) provisioned by fatia.dev/local-path; with
 *                 WaitForFirstConsumer only once a pod of its namespace names it (Immediate: at
 *                 once): the PV `pvc-<claim uid>` is created (capacity = requests.storage, the
 *                 claim's accessModes, the class's reclaimPolicy, claimRef with the claim's uid,
 *                 hostPath <dir>/pvc-<uid>, the agent's pod directory's pv/), then the claim is
 *                 bound (spec.volumeName, status Bound with capacity and accessModes) and the
 *                 PV's status set Bound.
 *   volume        provisioned here, whose claim is gone (not in the cache, or another uid):
 *                 reclaimPolicy Delete: the PV is deleted (the agent removes its directory once
 *                 no PV names it); Retain: status Released, the directory and its data kept.
 *
 * The directory itself is the node agent's (it makes it when a pod mounts the claim and removes
 * it when its PV is gone: src/agent/localpath.c): the controller never touches the filesystem.
 * Invariant: a PV's name carries its claim's uid, so a claim deleted and created again under the
 * same name never gets the old data (a Retained PV stays Released, bound to nobody).
 *
 * Rejected: binding claims to pre-existing PVs of the class (static provisioning: only PVs
 * this provisioner made are bound by it; an admin's own PV with a claimRef is left to the admin),
 * and selectors and dataSource (clones), which the local-path class does not serve.
 */
#include "base/compat.h"

#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"
#include "controller/ctl_internal.h"

#define PROVISIONER   "fatia.dev/local-path"
#define CLASS         "local-path"
#define DEFAULT_ANN   "storageclass.kubernetes.io/is-default-class"
#define PROVISIONED   "pv.kubernetes.io/provisioned-by"
#define BIND_DONE_ANN "pv.kubernetes.io/bind-completed"

struct localpath_ctl {
    struct ctl *ctl;
    struct wq *q;
    struct informer *classes, *claims, *volumes, *pods;
    bool class_done;
};

static const json_t *get(const json_t *o, const char *k)
{
    return json_object_get(o, k);
}

static const json_t *default_class(struct localpath_ctl *lc)
{
    const json_t *best = NULL;

    INFORMER_FOREACH(lc->classes, it)
    {
        const char *v = fatia_json_str(get(get(it->obj, "metadata"), "annotations"), DEFAULT_ANN);
        if (v && !strcmp(v, "true"))
            best = it->obj;
    }
    return best;
}

static void ensure_class(struct localpath_ctl *lc)
{
    json_t *sc;

    if (lc->class_done)
        return;
    if (!lc->classes->synced) {
        fatia_ctlr_wq_add_after(lc->q, "sc", FATIA_USEC_PER_SEC);
        return;
    }
    lc->class_done = true;
    if (fatia_ctlr_informer_get(lc->classes, NULL, CLASS))
        return;
    sc = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:s,s:s,s:s}", "apiVersion", "storage.k8s.io/v1",
                   "kind", "StorageClass", "metadata", "name", CLASS, "annotations", DEFAULT_ANN,
                   default_class(lc) ? "false" : "true", "provisioner", PROVISIONER,
                   "reclaimPolicy", "Delete", "volumeBindingMode", "WaitForFirstConsumer");
    if (sc)
        fatia_ctlr_create(lc->ctl, sc, &(struct op_opts){.quiet_conflict = true});
    json_decref(sc);
}

/* Whether a pod of ns names the claim. */
static bool consumed(struct localpath_ctl *lc, const char *ns, const char *claim)
{
    INFORMER_FOREACH(lc->pods, it)
    {
        const char *pns = fatia_ctlr_meta_str(it->obj, "namespace");
        size_t i;
        json_t *v;
        if (!pns || strcmp(pns, ns) || fatia_ctlr_obj_deleting(it->obj))
            continue;
        json_array_foreach(get(get(it->obj, "spec"), "volumes"), i, v)
        {
            const char *cn = fatia_json_str(get(v, "persistentVolumeClaim"), "claimName");
            if (cn && !strcmp(cn, claim))
                return true;
        }
    }
    return false;
}

static void bind_claim(struct localpath_ctl *lc, const char *key, const json_t *pvc,
                       const char *pv_name, const char *class_name)
{
    json_t *c = json_deep_copy(pvc), *spec = json_object_get(c, "spec"), *meta, *ann;

    if (!c)
        return;
    meta = json_object_get(c, "metadata");
    ann = json_object_get(meta, "annotations");
    if (!ann) {
        ann = json_object();
        json_object_set_new(meta, "annotations", ann);
    }
    json_object_set_new(ann, BIND_DONE_ANN, json_string("yes"));
    json_object_set_new(ann, "volume.kubernetes.io/storage-provisioner", json_string(PROVISIONER));
    json_object_set_new(spec, "volumeName", json_string(pv_name));
    if (!fatia_json_str(spec, "storageClassName"))
        json_object_set_new(spec, "storageClassName", json_string(class_name));
    fatia_ctlr_update(lc->ctl, c, &(struct op_opts){.wq = lc->q, .key = key});
    json_decref(c);
}

static void claim_status(struct localpath_ctl *lc, const char *key, const json_t *pvc,
                         const json_t *pv)
{
    const json_t *st = get(pvc, "status");
    json_t *c;

    if (fatia_json_str(st, "phase") && !strcmp(fatia_json_str(st, "phase"), "Bound"))
        return;
    c = json_deep_copy(pvc);
    if (!c)
        return;
    json_object_set_new(c, "status",
                        json_pack("{s:s,s:O,s:O}", "phase", "Bound", "accessModes",
                                  get(get(pv, "spec"), "accessModes"), "capacity",
                                  get(get(pv, "spec"), "capacity")));
    fatia_ctlr_update_status(lc->ctl, c, &(struct op_opts){.wq = lc->q, .key = key});
    json_decref(c);
}

static void volume_phase(struct localpath_ctl *lc, const json_t *pv, const char *phase)
{
    const char *have = fatia_json_str(get(pv, "status"), "phase");
    char key[300];
    json_t *c;

    if (have && !strcmp(have, phase))
        return;
    c = json_deep_copy(pv);
    if (!c)
        return;
    json_object_set_new(c, "status", json_pack("{s:s}", "phase", phase));
    snprintf(key, sizeof(key), "pv:%s", fatia_ctlr_meta_str(pv, "name"));
    fatia_ctlr_update_status(lc->ctl, c, &(struct op_opts){.wq = lc->q, .key = key});
    json_decref(c);
}

static void sync_claim(struct localpath_ctl *lc, const char *key, const char *nskey)
{
    char ns[256], pv_name[200];
    const char *name = fatia_ctlr_split_key(nskey, ns, sizeof(ns));
    const json_t *pvc = fatia_ctlr_informer_get(lc->claims, ns, name), *spec, *cls, *pv;
    const char *cn, *uid, *vn, *mode;

    if (!pvc || fatia_ctlr_obj_deleting(pvc))
        return;
    spec = get(pvc, "spec");
    uid = fatia_ctlr_meta_str(pvc, "uid");
    cn = fatia_json_str(spec, "storageClassName");
    cls = cn ? fatia_ctlr_informer_get(lc->classes, NULL, cn) : default_class(lc);
    if (!cls || !uid || !fatia_json_str(cls, "provisioner") ||
        strcmp(fatia_json_str(cls, "provisioner"), PROVISIONER))
        return; /* another provisioner's, or a class not there yet */
    snprintf(pv_name, sizeof(pv_name), "pvc-%s", uid);
    vn = fatia_json_str(spec, "volumeName");
    if (vn && strcmp(vn, pv_name))
        return; /* bound by someone else to a volume of theirs */
    pv = fatia_ctlr_informer_get(lc->volumes, NULL, pv_name);
    if (pv) {
        const char *ref_uid = fatia_json_str(get(get(pv, "spec"), "claimRef"), "uid");
        if (!ref_uid || strcmp(ref_uid, uid))
            return;
        if (!vn)
            bind_claim(lc, key, pvc, pv_name, fatia_ctlr_meta_str(cls, "name"));
        else
            claim_status(lc, key, pvc, pv);
        volume_phase(lc, pv, "Bound");
        return;
    }
    mode = fatia_json_str(cls, "volumeBindingMode");
    if (mode && !strcmp(mode, "WaitForFirstConsumer") && !consumed(lc, ns, name)) {
        /* kube's "waiting for first consumer to be created before binding" */
        if (!fatia_json_str(get(pvc, "status"), "phase")) {
            json_t *c = json_deep_copy(pvc);
            if (c) {
                json_object_set_new(c, "status", json_pack("{s:s}", "phase", "Pending"));
                fatia_ctlr_update_status(lc->ctl, c, &(struct op_opts){.wq = lc->q, .key = key});
            }
            json_decref(c);
            fatia_ctlr_event(lc->ctl, pvc, "persistentvolume-controller", "Normal",
                             "WaitForFirstConsumer",
                             "waiting for first consumer to be created before binding");
        }
        return;
    }
    {
        const char *rp = fatia_json_str(cls, "reclaimPolicy");
        const char *dir = fatia_ctlr_opts(lc->ctl)->local_path_dir;
        char path[1400];
        json_t *o;
        snprintf(path, sizeof(path), "%s/%s", dir && dir[0] ? dir : "/var/lib/fatia/pv", pv_name);
        o = json_pack("{s:s,s:s,s:{s:s,s:{s:s}},s:{s:{s:O},s:O,s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s,s:s},"
                      "s:{s:s,s:s}}}",
                      "apiVersion", "v1", "kind", "PersistentVolume", "metadata", "name", pv_name,
                      "annotations", PROVISIONED, PROVISIONER, "spec", "capacity", "storage",
                      fatia_json_path(spec, "resources.requests.storage"), "accessModes",
                      get(spec, "accessModes"), "persistentVolumeReclaimPolicy", rp ? rp : "Delete",
                      "storageClassName", fatia_ctlr_meta_str(cls, "name"), "volumeMode",
                      "Filesystem", "claimRef", "kind", "PersistentVolumeClaim", "apiVersion", "v1",
                      "namespace", ns, "name", name, "uid", uid, "hostPath", "path", path, "type",
                      "DirectoryOrCreate");
        if (o)
            fatia_ctlr_create(lc->ctl, o,
                              &(struct op_opts){.wq = lc->q, .key = key, .quiet_conflict = true});
        json_decref(o);
        fatia_ctlr_event(lc->ctl, pvc, "local-path-provisioner", "Normal", "ProvisioningSucceeded",
                         "Successfully provisioned volume %s", pv_name);
    }
}

static void sync_volume(struct localpath_ctl *lc, const char *name)
{
    const json_t *pv = fatia_ctlr_informer_get(lc->volumes, NULL, name), *ref, *pvc;
    const char *by, *rp, *ns, *cn, *uid;
    char key[300];

    if (!pv || fatia_ctlr_obj_deleting(pv))
        return;
    by = fatia_json_str(get(get(pv, "metadata"), "annotations"), PROVISIONED);
    if (!by || strcmp(by, PROVISIONER))
        return;
    ref = get(get(pv, "spec"), "claimRef");
    ns = fatia_json_str(ref, "namespace");
    cn = fatia_json_str(ref, "name");
    uid = fatia_json_str(ref, "uid");
    pvc = ns && cn ? fatia_ctlr_informer_get(lc->claims, ns, cn) : NULL;
    if (pvc && uid && fatia_ctlr_meta_str(pvc, "uid") &&
        !strcmp(fatia_ctlr_meta_str(pvc, "uid"), uid)) {
        if (ns && cn) {
            snprintf(key, sizeof(key), "pvc:%s/%s", ns, cn);
            fatia_ctlr_wq_add(lc->q, key);
        }
        return;
    }
    if (!lc->claims->synced)
        return;
    rp = fatia_json_str(get(pv, "spec"), "persistentVolumeReclaimPolicy");
    if (rp && !strcmp(rp, "Delete")) {
        snprintf(key, sizeof(key), "pv:%s", name);
        fatia_ctlr_delete(lc->ctl, fatia_kind_find("v1", "PersistentVolume", NULL), NULL, name,
                          fatia_ctlr_meta_str(pv, "uid"),
                          &(struct op_opts){.wq = lc->q, .key = key, .quiet_missing = true});
        return;
    }
    volume_phase(lc, pv, "Released");
}

static void reconcile(void *arg, const char *key)
{
    struct localpath_ctl *lc = arg;

    if (!strcmp(key, "sc"))
        ensure_class(lc);
    else if (!strncmp(key, "pvc:", 4))
        sync_claim(lc, key, key + 4);
    else if (!strncmp(key, "pv:", 3))
        sync_volume(lc, key + 3);
}

static void on_claim(void *arg, const json_t *old, const json_t *obj)
{
    struct localpath_ctl *lc = arg;
    const json_t *o = obj ? obj : old;
    char key[600], k2[560];

    fatia_ctlr_obj_key(o, k2, sizeof(k2));
    snprintf(key, sizeof(key), "pvc:%s", k2);
    if (obj)
        fatia_ctlr_wq_add(lc->q, key);
    /* a claim gone: its volumes are reclaimed */
    INFORMER_FOREACH(lc->volumes, it)
    {
        const json_t *ref = get(get(it->obj, "spec"), "claimRef");
        const char *u = fatia_json_str(ref, "uid"), *mine = fatia_ctlr_meta_str(o, "uid");
        if (!obj && u && mine && !strcmp(u, mine)) {
            snprintf(key, sizeof(key), "pv:%s", fatia_ctlr_meta_str(it->obj, "name"));
            fatia_ctlr_wq_add(lc->q, key);
        }
    }
}

static void on_volume(void *arg, const json_t *old, const json_t *obj)
{
    struct localpath_ctl *lc = arg;
    char key[300];

    (void)old;
    if (!obj)
        return;
    snprintf(key, sizeof(key), "pv:%s", fatia_ctlr_meta_str(obj, "name"));
    fatia_ctlr_wq_add(lc->q, key);
}

static void on_class(void *arg, const json_t *old, const json_t *obj)
{
    struct localpath_ctl *lc = arg;
    char key[600], k2[560];

    (void)old;
    (void)obj;
    INFORMER_FOREACH(lc->claims, it)
    {
        if (fatia_json_str(get(it->obj, "spec"), "volumeName"))
            continue;
        fatia_ctlr_obj_key(it->obj, k2, sizeof(k2));
        snprintf(key, sizeof(key), "pvc:%s", k2);
        fatia_ctlr_wq_add(lc->q, key);
    }
}

/* A new pod may be the first consumer of a WaitForFirstConsumer claim. */
static void on_pod(void *arg, const json_t *old, const json_t *obj)
{
    struct localpath_ctl *lc = arg;
    size_t i;
    json_t *v;

    if (old || !obj)
        return;
    json_array_foreach(get(get(obj, "spec"), "volumes"), i, v)
    {
        const char *cn = fatia_json_str(get(v, "persistentVolumeClaim"), "claimName");
        char key[600];
        if (!cn)
            continue;
        snprintf(key, sizeof(key), "pvc:%s/%s", fatia_ctlr_meta_str(obj, "namespace"), cn);
        fatia_ctlr_wq_add(lc->q, key);
    }
}

int fatia_ctlr_localpath_ctl_new(struct ctl *c, struct localpath_ctl **ret)
{
    struct localpath_ctl *lc = fatia_calloc(1, sizeof(*lc));
    int rc;

    if (!lc)
        return -ENOMEM;
    lc->ctl = c;
    lc->q = fatia_ctlr_wq_new(c, "local-path", reconcile, lc);
    lc->classes =
        fatia_ctlr_informer(c, fatia_kind_find("storage.k8s.io/v1", "StorageClass", NULL));
    lc->claims = fatia_ctlr_informer(c, fatia_kind_find("v1", "PersistentVolumeClaim", NULL));
    lc->volumes = fatia_ctlr_informer(c, fatia_kind_find("v1", "PersistentVolume", NULL));
    lc->pods = fatia_ctlr_informer(c, fatia_kind_find("v1", "Pod", NULL));
    if (!lc->q || !lc->classes || !lc->claims || !lc->volumes || !lc->pods) {
        fatia_ctlr_localpath_ctl_free(lc);
        return -ENOMEM;
    }
    if ((rc = fatia_ctlr_informer_on(lc->claims, on_claim, lc)) < 0 ||
        (rc = fatia_ctlr_informer_on(lc->volumes, on_volume, lc)) < 0 ||
        (rc = fatia_ctlr_informer_on(lc->classes, on_class, lc)) < 0 ||
        (rc = fatia_ctlr_informer_on(lc->pods, on_pod, lc)) < 0) {
        fatia_ctlr_localpath_ctl_free(lc);
        return rc;
    }
    fatia_ctlr_wq_add_after(lc->q, "sc", FATIA_USEC_PER_SEC / 2);
    *ret = lc;
    return 0;
}

void fatia_ctlr_localpath_ctl_free(struct localpath_ctl *lc)
{
    if (!lc)
        return;
    fatia_ctlr_wq_free(lc->q);
    fatia_free(lc);
}
