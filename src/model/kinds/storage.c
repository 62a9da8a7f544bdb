/*
 * model/kinds/storage.c: core v1 PersistentVolumeClaim and PersistentVolume, storage.k8s.io/v1
 * StorageClass (k8s.io/api/core/v1, k8s.io/api/storage/v1).
 *
 * Rules taken from upstream (pkg/apis/core/validation ValidatePersistentVolumeClaimSpec,
 * ValidatePersistentVolumeSpec; pkg/apis/storage/validation): a claim names at least one access
 * mode and requests storage (a positive quantity); a volume has a capacity of storage and at most
 * one source; a StorageClass names its provisioner, reclaimPolicy defaults to Delete and
 * volumeBindingMode to Immediate (SetDefaults_StorageClass); a volume's
 * persistentVolumeReclaimPolicy defaults to Retain and volumeMode to Filesystem.
 *
 * Volume sources other than hostPath and local are kept but not interpreted (fatia has one box;
 * the agent's local-path provisioner is described in docs/agent.md).
 */
#include "base/compat.h"

#include "base/json.h"
#include "model/kinds/kinds.h"
#include "model/quantity.h"

#define ANY(name)                   \
    {                               \
        name, &fatia_s_any, 0, NULL \
    }

static const char *const access_modes[] = {"ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany",
                                           "ReadWriteOncePod", NULL};
static const struct fatia_schema access_mode_list = {
    FATIA_T_ARRAY, .items = &(const struct fatia_schema){FATIA_T_STRING, .enums = access_modes}};
static const char *const volume_modes[] = {"Filesystem", "Block", NULL};
static const struct fatia_schema volume_mode = {FATIA_T_STRING, .enums = volume_modes};

static const struct fatia_field vr_fields[] = {{"requests", &fatia_s_resource_list, 0, NULL},
                                               {"limits", &fatia_s_resource_list, 0, NULL},
                                               {0}};
static const struct fatia_field typed_ref_fields[] = {
    {"apiGroup", &fatia_s_string, 0, NULL},
    {"kind", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"name", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"namespace", &fatia_s_string, 0, NULL},
    {0}};
static const struct fatia_schema typed_ref = {FATIA_T_OBJECT, .fields = typed_ref_fields};

static void check_pvc_spec(struct fatia_vctx *ctx, json_t *spec)
{
    json_t *storage = fatia_json_path(spec, "resources.requests.storage");
    struct fatia_quantity q;

    if (!json_array_size(json_object_get(spec, "accessModes")))
        fatia_verr_at(ctx, spec, "accessModes", "at least 1 access mode is required");
    if (!storage)
        fatia_verr_at(ctx, spec, "resources.requests[storage]", "required field is missing");
    else if (fatia_quantity_parse_json(storage, &q, NULL, 0) == 0 && q.nano <= 0)
        fatia_verr_at(ctx, spec, "resources.requests[storage]", "must be greater than zero");
}

static const struct fatia_field pvc_spec_fields[] = {
    {"accessModes", &access_mode_list, 0, NULL},
    {"resources", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = vr_fields}, 0, NULL},
    {"storageClassName", &fatia_s_string, 0, NULL},
    {"volumeName", &fatia_s_string, 0, NULL},
    {"volumeMode", &volume_mode, 0, "\"Filesystem\""},
    {"selector", &fatia_s_label_selector, 0, NULL},
    {"dataSource", &typed_ref, 0, NULL},
    {"dataSourceRef", &typed_ref, 0, NULL},
    {"volumeAttributesClassName", &fatia_s_string, 0, NULL},
    {0}};
const struct fatia_schema fatia_s_pvc_spec = {FATIA_T_OBJECT, "A claim's wanted volume",
                                              .fields = pvc_spec_fields, .check = check_pvc_spec};
static const struct fatia_field pvc_fields[] = {FATIA_OBJECT_FIELDS,
                                                {"spec", &fatia_s_pvc_spec, FATIA_F_REQUIRED, NULL},
                                                {"status", &fatia_s_status_any, 0, NULL},
                                                {0}};
static const struct fatia_column pvc_columns[] = {
    {"Status", "string", ".status.phase", 0, "Pending, Bound or Lost"},
    {"Volume", "string", ".spec.volumeName", 0, "The bound volume"},
    {"Capacity", "string", ".status.capacity.storage", 0, "Capacity of the bound volume"},
    {"Access Modes", "string", NULL, 0, "Access modes of the bound volume",
     fatia_print_pvc_access_modes},
    {"StorageClass", "string", ".spec.storageClassName", 0, "The storage class"},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"VolumeMode", "string", ".spec.volumeMode", 1, "Filesystem or Block"},
    {NULL}};
const struct fatia_kind fatia_kind_persistentvolumeclaim = {
    .group = "",
    .version = "v1",
    .kind = "PersistentVolumeClaim",
    .plural = "persistentvolumeclaims",
    .singular = "persistentvolumeclaim",
    .short_names = (const char *const[]){"pvc", NULL},
    .namespaced = true,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pvc_fields},
    .columns = pvc_columns};

/* ---- PersistentVolume ---- */

static const char *const reclaim_policies[] = {"Retain", "Delete", "Recycle", NULL};
static const char *const sc_reclaim_policies[] = {"Retain", "Delete", NULL};
static const struct fatia_field host_path_fields[] = {
    {"path", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"type", &fatia_s_string, 0, NULL},
    {0}};
static const struct fatia_field local_fields[] = {
    {"path", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"fsType", &fatia_s_string, 0, NULL},
    {0}};

static const char *const pv_sources[] = {"hostPath",
                                         "local",
                                         "nfs",
                                         "csi",
                                         "iscsi",
                                         "fc",
                                         "rbd",
                                         "cephfs",
                                         "awsElasticBlockStore",
                                         "gcePersistentDisk",
                                         "azureDisk",
                                         "azureFile",
                                         "glusterfs",
                                         "flexVolume",
                                         NULL};

static void check_pv_spec(struct fatia_vctx *ctx, json_t *spec)
{
    int n = 0;

    if (!fatia_json_path(spec, "capacity.storage"))
        fatia_verr_at(ctx, spec, "capacity[storage]", "required field is missing");
    if (!json_array_size(json_object_get(spec, "accessModes")))
        fatia_verr_at(ctx, spec, "accessModes", "at least 1 access mode is required");
    for (const char *const *s = pv_sources; *s; s++)
        n += json_object_get(spec, *s) != NULL;
    if (n == 0)
        fatia_verr_at(ctx, spec, "", "must specify a volume type");
    else if (n > 1)
        fatia_verr_at(ctx, spec, "", "may not specify more than 1 volume type");
}

static const struct fatia_field pv_spec_fields[] = {
    {"capacity", &fatia_s_resource_list, 0, NULL},
    {"accessModes", &access_mode_list, 0, NULL},
    {"claimRef", &fatia_s_any, 0, NULL},
    {"persistentVolumeReclaimPolicy",
     &(const struct fatia_schema){FATIA_T_STRING, .enums = reclaim_policies}, 0, "\"Retain\""},
    {"storageClassName", &fatia_s_string, 0, NULL},
    {"mountOptions", &fatia_s_string_list, 0, NULL},
    {"volumeMode", &volume_mode, 0, "\"Filesystem\""},
    {"nodeAffinity", &fatia_s_any, 0, NULL},
    {"volumeAttributesClassName", &fatia_s_string, 0, NULL},
    {"hostPath", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = host_path_fields}, 0, NULL},
    {"local", &(const struct fatia_schema){FATIA_T_OBJECT, .fields = local_fields}, 0, NULL},
    ANY("nfs"),
    ANY("csi"),
    ANY("iscsi"),
    ANY("fc"),
    ANY("rbd"),
    ANY("cephfs"),
    ANY("awsElasticBlockStore"),
    ANY("gcePersistentDisk"),
    ANY("azureDisk"),
    ANY("azureFile"),
    ANY("glusterfs"),
    ANY("flexVolume"),
    {0}};
static const struct fatia_field pv_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"spec",
     &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pv_spec_fields, .check = check_pv_spec},
     FATIA_F_REQUIRED, NULL},
    {"status", &fatia_s_status_any, 0, NULL},
    {0}};
static const struct fatia_column pv_columns[] = {
    {"Capacity", "string", ".spec.capacity.storage", 0, "Size of the volume"},
    {"Access Modes", "string", NULL, 0, "Access modes", fatia_print_pv_access_modes},
    {"Reclaim Policy", "string", ".spec.persistentVolumeReclaimPolicy", 0,
     "What happens when the claim goes"},
    {"Status", "string", ".status.phase", 0, "Available, Bound, Released or Failed"},
    {"Claim", "string", NULL, 0, "The bound claim", fatia_print_pv_claim},
    {"StorageClass", "string", ".spec.storageClassName", 0, "The storage class"},
    {"Reason", "string", ".status.reason", 0, "Why the volume is in its phase"},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {"VolumeMode", "string", ".spec.volumeMode", 1, "Filesystem or Block"},
    {NULL}};
const struct fatia_kind fatia_kind_persistentvolume = {
    .group = "",
    .version = "v1",
    .kind = "PersistentVolume",
    .plural = "persistentvolumes",
    .singular = "persistentvolume",
    .short_names = (const char *const[]){"pv", NULL},
    .namespaced = false,
    .has_status = true,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = pv_fields},
    .columns = pv_columns};

/* ---- StorageClass ---- */

static const char *const binding_modes[] = {"Immediate", "WaitForFirstConsumer", NULL};
static const struct fatia_field sc_fields[] = {
    FATIA_OBJECT_FIELDS,
    {"provisioner", &fatia_s_nonempty_string, FATIA_F_REQUIRED, NULL},
    {"parameters", &fatia_s_string_map, 0, NULL},
    {"reclaimPolicy", &(const struct fatia_schema){FATIA_T_STRING, .enums = sc_reclaim_policies}, 0,
     "\"Delete\""},
    {"mountOptions", &fatia_s_string_list, 0, NULL},
    {"allowVolumeExpansion", &fatia_s_bool, 0, NULL},
    {"volumeBindingMode", &(const struct fatia_schema){FATIA_T_STRING, .enums = binding_modes}, 0,
     "\"Immediate\""},
    {"allowedTopologies", &fatia_s_any, 0, NULL},
    {0}};

/* kubectl's NAME of a StorageClass: " (default)" after the default class's name
 * (pkg/printers/internalversion printStorageClass, storageutil.IsDefaultAnnotation). */
static json_t *sc_name(const json_t *obj, int64_t now)
{
    const json_t *meta = json_object_get(obj, "metadata");
    const char *name = fatia_json_str(meta, "name"), *d;
    char buf[300];

    (void)now;
    d = fatia_json_str(json_object_get(meta, "annotations"),
                       "storageclass.kubernetes.io/is-default-class");
    if (!d)
        d = fatia_json_str(json_object_get(meta, "annotations"),
                           "storageclass.beta.kubernetes.io/is-default-class");
    snprintf(buf, sizeof(buf), "%s%s", name ? name : "",
             d && !strcmp(d, "true") ? " (default)" : "");
    return json_string(buf);
}

static const struct fatia_column sc_columns[] = {
    {"Name", "string", NULL, 0, "Name must be unique within a namespace.", sc_name},
    {"Provisioner", "string", ".provisioner", 0, "Who provisions the volumes"},
    {"ReclaimPolicy", "string", ".reclaimPolicy", 0, "Reclaim policy of provisioned volumes"},
    {"VolumeBindingMode", "string", ".volumeBindingMode", 0, "When volumes are bound"},
    {"AllowVolumeExpansion", "boolean", ".allowVolumeExpansion", 0, "Whether claims may grow"},
    {"Age", "date", ".metadata.creationTimestamp", 0, "Time since creation"},
    {NULL}};
const struct fatia_kind fatia_kind_storageclass = {
    .group = "storage.k8s.io",
    .version = "v1",
    .kind = "StorageClass",
    .plural = "storageclasses",
    .singular = "storageclass",
    .short_names = (const char *const[]){"sc", NULL},
    .namespaced = false,
    .name_rule = FATIA_NAME_SUBDOMAIN,
    .schema = &(const struct fatia_schema){FATIA_T_OBJECT, .fields = sc_fields},
    .columns = sc_columns,
    .columns_whole = true};
