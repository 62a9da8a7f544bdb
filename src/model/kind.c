/*
 * model/kind.c: the kind registry (see kind.h). The list below is the only place a new kind is
 * registered (the kinds of user-written CRDs join through crd_kind.c); lookups are linear over a few dozen entries, which is cheaper than a hash until the
 * list grows tenfold.
 */
#include "base/compat.h"

#include "model/kind.h"

#include <strings.h>

#include "base/error.h"
#include "model/crd_kind.h"
#include "model/kinds/kinds.h"
#include "model/labels.h"

const struct fatia_kind *const fatia_kinds[] = {
    &fatia_kind_namespace,
    &fatia_kind_node,
    &fatia_kind_pod,
    &fatia_kind_event,
    &fatia_kind_job,
    &fatia_kind_configmap,
    &fatia_kind_secret,
    &fatia_kind_serviceaccount,
    &fatia_kind_service,
    &fatia_kind_endpoints,
    &fatia_kind_endpointslice,
    &fatia_kind_persistentvolumeclaim,
    &fatia_kind_persistentvolume,
    &fatia_kind_storageclass,
    &fatia_kind_deployment,
    &fatia_kind_replicaset,
    &fatia_kind_statefulset,
    &fatia_kind_daemonset,
    &fatia_kind_cronjob,
    &fatia_kind_role,
    &fatia_kind_clusterrole,
    &fatia_kind_rolebinding,
    &fatia_kind_clusterrolebinding,
    &fatia_kind_poddisruptionbudget,
    &fatia_kind_resourcequota,
    &fatia_kind_limitrange,
    &fatia_kind_priorityclass,
    &fatia_kind_resourceflavor,
    &fatia_kind_clusterqueue,
    &fatia_kind_cohort,
    &fatia_kind_localqueue,
    &fatia_kind_workloadpriorityclass,
    &fatia_kind_workload,
    &fatia_kind_hardwareprofile,
    &fatia_kind_notebook,
    &fatia_kind_usagerecord,
    &fatia_kind_schedulerconfig,
    &fatia_kind_nodepool,
    &fatia_kind_gpusharingpolicy,
    &fatia_kind_inferencepool,
    &fatia_kind_inferenceservice,
    &fatia_kind_llminferenceservice,
    &fatia_kind_servingruntime,
    &fatia_kind_clusterservingruntime,
    &fatia_kind_deviceclass,
    &fatia_kind_resourceslice,
    &fatia_kind_resourceclaim,
    &fatia_kind_resourceclaimtemplate,
    &fatia_kind_crd,
    &fatia_kind_admissioncheck,
    &fatia_kind_provisioningrequestconfig,
    &fatia_kind_topology,
    &fatia_kind_lease,
    NULL,
};

static bool version_matches(const struct fatia_kind *k, const char *group, size_t group_n,
                            const char *version, const struct fatia_kind_version **ret)
{
    if (strlen(k->group) != group_n || strncmp(k->group, group, group_n) != 0)
        return false;
    if (strcmp(k->version, version) == 0) {
        *ret = NULL;
        return true;
    }
    for (const struct fatia_kind_version *v = k->others; v && v->version; v++) {
        if (strcmp(v->version, version) == 0) {
            *ret = v;
            return true;
        }
    }
    return false;
}

const struct fatia_kind *fatia_kind_find(const char *api_version, const char *kind,
                                         const struct fatia_kind_version **ret_version)
{
    const char *slash = strchr(api_version, '/');
    const char *group = slash ? api_version : "";
    size_t group_n = slash ? (size_t)(slash - api_version) : 0;
    const char *version = slash ? slash + 1 : api_version;
    const struct fatia_kind_version *v = NULL;

    for (size_t i = 0; fatia_kind_at(i); i++) {
        const struct fatia_kind *k = fatia_kind_at(i);
        if (strcmp(k->kind, kind) == 0 && version_matches(k, group, group_n, version, &v)) {
            if (ret_version)
                *ret_version = v;
            return k;
        }
    }
    return NULL;
}

const struct fatia_kind *fatia_kind_by_name(const char *kind)
{
    const struct fatia_kind *found = NULL;

    for (size_t i = 0; fatia_kind_at(i); i++) {
        if (strcmp(fatia_kind_at(i)->kind, kind) == 0) {
            if (found)
                return NULL;
            found = fatia_kind_at(i);
        }
    }
    return found;
}

const struct fatia_kind *fatia_kind_by_resource(const char *group, const char *plural)
{
    for (size_t i = 0; fatia_kind_at(i); i++)
        if (strcmp(fatia_kind_at(i)->group, group) == 0 &&
            strcmp(fatia_kind_at(i)->plural, plural) == 0)
            return fatia_kind_at(i);
    return NULL;
}

static bool names_match(const struct fatia_kind *k, const char *name, size_t n)
{
    if ((strlen(k->plural) == n && !strncmp(k->plural, name, n)) ||
        (strlen(k->singular) == n && !strncmp(k->singular, name, n)) ||
        (strlen(k->kind) == n && !strncasecmp(k->kind, name, n)))
        return true;
    for (const char *const *s = k->short_names; s && *s; s++)
        if (strlen(*s) == n && !strncmp(*s, name, n))
            return true;
    return false;
}

const struct fatia_kind *fatia_kind_by_any_name(const char *name)
{
    const char *dot = strchr(name, '.');
    size_t n = dot ? (size_t)(dot - name) : strlen(name);

    for (size_t i = 0; fatia_kind_at(i); i++) {
        const struct fatia_kind *k = fatia_kind_at(i);
        if (names_match(k, name, n) && (!dot || strcmp(dot + 1, k->group) == 0))
            return k;
    }
    return NULL;
}

bool fatia_kind_serves_verb(const struct fatia_kind *k, const char *verb)
{
    if (!k->verbs)
        return true;
    for (const char *const *v = k->verbs; *v; v++)
        if (!strcmp(*v, verb))
            return true;
    return false;
}

void fatia_kind_api_version(const struct fatia_kind *k, char *buf, size_t n)
{
    if (k->group[0])
        snprintf(buf, n, "%s/%s", k->group, k->version);
    else
        snprintf(buf, n, "%s", k->version);
}

void fatia_kind_lower(const struct fatia_kind *k, char *buf, size_t n)
{
    size_t i;

    for (i = 0; k->kind[i] && i + 1 < n; i++)
        buf[i] = (char)(k->kind[i] | 0x20);
    if (n)
        buf[i] = '\0';
}

bool fatia_kind_check_name(const struct fatia_kind *k, const char *name, char *why, size_t n)
{
    switch (k->name_rule) {
    case FATIA_NAME_LABEL:
        return fatia_is_dns1123_label(name, why, n);
    case FATIA_NAME_SUBDOMAIN:
        return fatia_is_dns1123_subdomain(name, why, n);
    case FATIA_NAME_SUBDOMAIN63:
        if (!fatia_is_dns1123_subdomain(name, why, n))
            return false;
        if (strlen(name) > 63) {
            snprintf(why, n, "must be no more than 63 characters (the job-name label holds it)");
            return false;
        }
        return true;
    case FATIA_NAME_PATH_SEGMENT:
        if (!*name || !strcmp(name, ".") || !strcmp(name, "..") || strpbrk(name, "/%")) {
            snprintf(why, n, "may not be empty, '.' or '..', and may not contain '/' or '%%'");
            return false;
        }
        return true;
    }
    return true;
}

void fatia_checks_run(const struct fatia_checks *cs, const struct fatia_kind *k,
                      struct fatia_vctx *ctx, json_t *obj)
{
    for (size_t i = 0; cs && i < cs->n; i++)
        if (cs->v[i].kind == k)
            cs->v[i].fn(ctx, obj);
}
