/*
 * model/kinds/printers_core.c: the computed cells of kubectl's built-in printers for the core
 * kinds of issue #18 (k8s.io/kubernetes pkg/printers/internalversion/printers.go: printConfigMap,
 * printSecret, printServiceAccount, printService, printEndpoints, printEndpointSlice,
 * printPersistentVolumeClaim, printPersistentVolume, printDeployment, printStatefulSet,
 * printCronJob, printRoleBinding, printResourceQuota), where no JSONPath gives the cell:
 *
 *     NAME   DATA   AGE        NAME  TYPE       CLUSTER-IP   EXTERNAL-IP  PORT(S)   AGE
 *     cfg    2      3s         web   ClusterIP  10.96.0.12   <none>       80/TCP    3s
 *
 * Each function is pure (the clock comes in and is unused: none of these cells is a duration) and
 * reads its object through type-checking accessors, so a member of the wrong type gives an
 * empty or "<none>" cell, never a crash. Rejected: a generic "count of a map" JSONPath extension;
 * kubectl's JSONPath has no length function, and the printers are few.
 */
#include "base/compat.h"

#include "base/buf.h"
#include "base/json.h"
#include "model/kinds/kinds.h"

static json_t *count_cell(size_t n)
{
    return json_integer((json_int_t)n);
}

json_t *fatia_print_data_count(const json_t *obj, int64_t now)
{
    (void)now;
    return count_cell(json_object_size(json_object_get(obj, "data")) +
                      json_object_size(json_object_get(obj, "binaryData")));
}

json_t *fatia_print_sa_secrets(const json_t *obj, int64_t now)
{
    (void)now;
    return count_cell(json_array_size(json_object_get(obj, "secrets")));
}

/* "80/TCP,443:30443/TCP" (printService's PORT(S)) */
json_t *fatia_print_service_ports(const json_t *svc, int64_t now)
{
    json_t *ports = fatia_json_path(svc, "spec.ports"), *p, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i;

    (void)now;
    json_array_foreach(ports, i, p)
    {
        int64_t port = 0, node = 0;
        const char *proto = fatia_json_str(p, "protocol");
        fatia_json_int(p, "port", &port);
        if (i)
            fatia_buf_putc(&b, ',');
        if (fatia_json_int(p, "nodePort", &node) && node)
            fatia_buf_printf(&b, "%" PRId64 ":%" PRId64 "/%s", port, node, proto ? proto : "TCP");
        else
            fatia_buf_printf(&b, "%" PRId64 "/%s", port, proto ? proto : "TCP");
    }
    ret = json_string(b.len ? b.p : "<none>");
    fatia_buf_release(&b);
    return ret;
}

/* EXTERNAL-IP: externalIPs, then load-balancer ingress; "<none>" (or "<pending>" for a
 * LoadBalancer without ingress). */
json_t *fatia_print_service_external_ip(const json_t *svc, int64_t now)
{
    json_t *ips = fatia_json_path(svc, "spec.externalIPs"), *v, *ret;
    json_t *ing = fatia_json_path(svc, "status.loadBalancer.ingress");
    const char *type = fatia_json_str(json_object_get(svc, "spec"), "type");
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i;

    (void)now;
    json_array_foreach(ips, i, v)
    {
        if (json_is_string(v))
            fatia_buf_printf(&b, "%s%s", b.len ? "," : "", json_string_value(v));
    }
    json_array_foreach(ing, i, v)
    {
        const char *ip = fatia_json_str(v, "ip"), *host = fatia_json_str(v, "hostname");
        if (ip || host)
            fatia_buf_printf(&b, "%s%s", b.len ? "," : "", ip ? ip : host);
    }
    if (b.len)
        ret = json_string(b.p);
    else
        ret = json_string(type && !strcmp(type, "LoadBalancer") ? "<pending>" : "<none>");
    fatia_buf_release(&b);
    return ret;
}

/* "10.0.0.1:80,10.0.0.2:80 + 3 more..." (printEndpoints' formatEndpoints, 3 shown) */
json_t *fatia_print_endpoints(const json_t *ep, int64_t now)
{
    json_t *subsets = json_object_get(ep, "subsets"), *ss, *a, *p, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i, j, k, shown = 0, more = 0;

    (void)now;
    json_array_foreach(subsets, i, ss)
    {
        json_t *addrs = json_object_get(ss, "addresses"), *ports = json_object_get(ss, "ports");
        json_array_foreach(addrs, j, a)
        {
            const char *ip = fatia_json_str(a, "ip");
            if (!ip)
                continue;
            if (!json_array_size(ports)) {
                if (shown < 3) {
                    fatia_buf_printf(&b, "%s%s", shown ? "," : "", ip);
                    shown++;
                } else {
                    more++;
                }
            }
            json_array_foreach(ports, k, p)
            {
                int64_t port = 0;
                fatia_json_int(p, "port", &port);
                if (shown < 3) {
                    fatia_buf_printf(&b, "%s%s:%" PRId64, shown ? "," : "", ip, port);
                    shown++;
                } else {
                    more++;
                }
            }
        }
    }
    if (more)
        fatia_buf_printf(&b, " + %zu more...", more);
    ret = json_string(b.len ? b.p : "<none>");
    fatia_buf_release(&b);
    return ret;
}

/* EndpointSlice PORTS "80,443" and ENDPOINTS "10.0.0.1,10.0.0.2 + 1 more..." */
json_t *fatia_print_slice_ports(const json_t *es, int64_t now)
{
    json_t *ports = json_object_get(es, "ports"), *p, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i;

    (void)now;
    json_array_foreach(ports, i, p)
    {
        int64_t port = 0;
        if (fatia_json_int(p, "port", &port))
            fatia_buf_printf(&b, "%s%" PRId64, b.len ? "," : "", port);
    }
    ret = json_string(b.len ? b.p : "<unset>");
    fatia_buf_release(&b);
    return ret;
}

json_t *fatia_print_slice_endpoints(const json_t *es, int64_t now)
{
    json_t *eps = json_object_get(es, "endpoints"), *e, *a, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i, j, shown = 0, more = 0;

    (void)now;
    json_array_foreach(eps, i, e)
    {
        json_array_foreach(json_object_get(e, "addresses"), j, a)
        {
            if (!json_is_string(a))
                continue;
            if (shown < 3)
                fatia_buf_printf(&b, "%s%s", shown++ ? "," : "", json_string_value(a));
            else
                more++;
        }
    }
    if (more)
        fatia_buf_printf(&b, " + %zu more...", more);
    ret = json_string(b.len ? b.p : "<unset>");
    fatia_buf_release(&b);
    return ret;
}

/* ACCESS MODES "RWO,ROX" (kubectl's GetAccessModesAsString, in its fixed order) */
static json_t *access_modes(const json_t *modes)
{
    static const char *const names[][2] = {{"ReadWriteOnce", "RWO"},
                                           {"ReadOnlyMany", "ROX"},
                                           {"ReadWriteMany", "RWX"},
                                           {"ReadWriteOncePod", "RWOP"}};
    struct fatia_buf b = FATIA_BUF_INIT;
    json_t *ret, *m;
    size_t i;

    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        json_array_foreach(modes, i, m)
        {
            if (json_is_string(m) && !strcmp(json_string_value(m), names[k][0])) {
                fatia_buf_printf(&b, "%s%s", b.len ? "," : "", names[k][1]);
                break;
            }
        }
    }
    ret = json_string(b.p);
    fatia_buf_release(&b);
    return ret;
}

json_t *fatia_print_pvc_access_modes(const json_t *pvc, int64_t now)
{
    (void)now;
    return access_modes(fatia_json_path(pvc, "status.accessModes"));
}

json_t *fatia_print_pv_access_modes(const json_t *pv, int64_t now)
{
    (void)now;
    return access_modes(fatia_json_path(pv, "spec.accessModes"));
}

/* PV CLAIM "ns/name" */
json_t *fatia_print_pv_claim(const json_t *pv, int64_t now)
{
    json_t *ref = fatia_json_path(pv, "spec.claimRef");
    const char *ns = fatia_json_str(ref, "namespace"), *name = fatia_json_str(ref, "name");
    char buf[600];

    (void)now;
    if (!name)
        return json_string("");
    snprintf(buf, sizeof(buf), "%s/%s", ns ? ns : "", name);
    return json_string(buf);
}

/* READY "ready/desired" (printDeployment, printStatefulSet) */
json_t *fatia_print_ready_of_replicas(const json_t *obj, int64_t now)
{
    int64_t want = 1, ready = 0;
    char buf[48];

    (void)now;
    fatia_json_int(json_object_get(obj, "spec"), "replicas", &want);
    fatia_json_int(json_object_get(obj, "status"), "readyReplicas", &ready);
    snprintf(buf, sizeof(buf), "%" PRId64 "/%" PRId64, ready, want);
    return json_string(buf);
}

/* CONTAINERS / IMAGES of a pod template (wide) */
static json_t *template_containers(const json_t *obj, const char *member)
{
    json_t *cs = fatia_json_path(obj, "spec.template.spec.containers"), *c, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i;

    json_array_foreach(cs, i, c)
    {
        const char *s = fatia_json_str(c, member);
        fatia_buf_printf(&b, "%s%s", i ? "," : "", s ? s : "");
    }
    ret = json_string(b.p);
    fatia_buf_release(&b);
    return ret;
}

json_t *fatia_print_template_containers(const json_t *obj, int64_t now)
{
    (void)now;
    return template_containers(obj, "name");
}

json_t *fatia_print_template_images(const json_t *obj, int64_t now)
{
    (void)now;
    return template_containers(obj, "image");
}

/* SELECTOR "app=web,tier in (a,b)" from spec.selector.matchLabels (and expressions) */
json_t *fatia_print_selector(const json_t *obj, int64_t now)
{
    json_t *sel = fatia_json_path(obj, "spec.selector"), *v, *e, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    const char *key;
    size_t i, j;

    (void)now;
    json_t *ml = json_object_get(sel, "matchLabels");
    /* a Service's selector is a plain map; a workload's a LabelSelector */
    if (!ml && !json_object_get(sel, "matchExpressions"))
        ml = sel;
    json_object_foreach(ml, key, v)
    {
        if (json_is_string(v))
            fatia_buf_printf(&b, "%s%s=%s", b.len ? "," : "", key, json_string_value(v));
    }
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e)
    {
        const char *k = fatia_json_str(e, "key"), *op = fatia_json_str(e, "operator");
        json_t *x;
        if (!k || !op)
            continue;
        if (b.len)
            fatia_buf_putc(&b, ',');
        if (!strcmp(op, "Exists")) {
            fatia_buf_printf(&b, "%s", k);
        } else if (!strcmp(op, "DoesNotExist")) {
            fatia_buf_printf(&b, "!%s", k);
        } else {
            fatia_buf_printf(&b, "%s %s (", k, !strcmp(op, "In") ? "in" : "notin");
            json_array_foreach(json_object_get(e, "values"), j, x) fatia_buf_printf(
                &b, "%s%s", j ? "," : "", json_is_string(x) ? json_string_value(x) : "");
            fatia_buf_putc(&b, ')');
        }
    }
    ret = json_string(b.len ? b.p : "<none>");
    fatia_buf_release(&b);
    return ret;
}

/* CronJob ACTIVE: the number of active Jobs */
json_t *fatia_print_cronjob_active(const json_t *cj, int64_t now)
{
    (void)now;
    return count_cell(json_array_size(fatia_json_path(cj, "status.active")));
}

/* RoleBinding ROLE "ClusterRole/view" */
json_t *fatia_print_binding_role(const json_t *rb, int64_t now)
{
    json_t *ref = json_object_get(rb, "roleRef");
    const char *kind = fatia_json_str(ref, "kind"), *name = fatia_json_str(ref, "name");
    char buf[600];

    (void)now;
    snprintf(buf, sizeof(buf), "%s/%s", kind ? kind : "", name ? name : "");
    return json_string(buf);
}

/* RoleBinding USERS / GROUPS / SERVICEACCOUNTS (wide) */
static json_t *subjects_of(const json_t *rb, const char *want)
{
    json_t *subs = json_object_get(rb, "subjects"), *s, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    size_t i;

    json_array_foreach(subs, i, s)
    {
        const char *kind = fatia_json_str(s, "kind"), *name = fatia_json_str(s, "name");
        const char *ns = fatia_json_str(s, "namespace");
        if (!kind || !name || strcmp(kind, want))
            continue;
        if (!strcmp(kind, "ServiceAccount"))
            fatia_buf_printf(&b, "%s%s/%s", b.len ? ", " : "", ns ? ns : "", name);
        else
            fatia_buf_printf(&b, "%s%s", b.len ? ", " : "", name);
    }
    ret = json_string(b.p);
    fatia_buf_release(&b);
    return ret;
}

json_t *fatia_print_binding_users(const json_t *rb, int64_t now)
{
    (void)now;
    return subjects_of(rb, "User");
}

json_t *fatia_print_binding_groups(const json_t *rb, int64_t now)
{
    (void)now;
    return subjects_of(rb, "Group");
}

json_t *fatia_print_binding_sas(const json_t *rb, int64_t now)
{
    (void)now;
    return subjects_of(rb, "ServiceAccount");
}

/* ResourceQuota REQUEST "pods: 1/10, requests.cpu: 0/4" (the non-limits resources) and LIMIT
 * (limits.*), in the order of status.hard's keys as stored (sorted: jansson keeps insertion
 * order, and the quota controller writes them sorted). */
static json_t *quota_cells(const json_t *rq, bool limits)
{
    json_t *hard = fatia_json_path(rq, "status.hard"), *used = fatia_json_path(rq, "status.used");
    json_t *v, *ret;
    struct fatia_buf b = FATIA_BUF_INIT;
    const char *key;

    if (!hard)
        hard = fatia_json_path(rq, "spec.hard");
    json_object_foreach(hard, key, v)
    {
        bool is_limit = !strncmp(key, "limits.", 7);
        char hv[64] = "", uv[64] = "0";
        json_t *u = json_object_get(used, key);
        if (is_limit != limits)
            continue;
        if (json_is_string(v))
            snprintf(hv, sizeof(hv), "%s", json_string_value(v));
        else
            fatia_json_number_text(v, hv, sizeof(hv));
        if (json_is_string(u))
            snprintf(uv, sizeof(uv), "%s", json_string_value(u));
        else if (u)
            fatia_json_number_text(u, uv, sizeof(uv));
        fatia_buf_printf(&b, "%s%s: %s/%s", b.len ? ", " : "", key, uv, hv);
    }
    ret = json_string(b.p);
    fatia_buf_release(&b);
    return ret;
}

json_t *fatia_print_quota_request(const json_t *rq, int64_t now)
{
    (void)now;
    return quota_cells(rq, false);
}

json_t *fatia_print_quota_limit(const json_t *rq, int64_t now)
{
    (void)now;
    return quota_cells(rq, true);
}

/* Integer status counters that kubectl's built-in printers show as 0 when unset (Go ints), where
 * a CRD column would show <none>. */
static json_t *status_count(const json_t *obj, const char *member)
{
    int64_t v = 0;

    fatia_json_int(json_object_get(obj, "status"), member, &v);
    return json_integer((json_int_t)v);
}

#define STATUS_COUNT(fn, member)               \
    json_t *fn(const json_t *obj, int64_t now) \
    {                                          \
        (void)now;                             \
        return status_count(obj, member);      \
    }

STATUS_COUNT(fatia_print_st_replicas, "replicas")
STATUS_COUNT(fatia_print_st_ready_replicas, "readyReplicas")
STATUS_COUNT(fatia_print_st_updated_replicas, "updatedReplicas")
STATUS_COUNT(fatia_print_st_available_replicas, "availableReplicas")
STATUS_COUNT(fatia_print_st_desired_scheduled, "desiredNumberScheduled")
STATUS_COUNT(fatia_print_st_current_scheduled, "currentNumberScheduled")
STATUS_COUNT(fatia_print_st_number_ready, "numberReady")
STATUS_COUNT(fatia_print_st_updated_scheduled, "updatedNumberScheduled")
STATUS_COUNT(fatia_print_st_number_available, "numberAvailable")
STATUS_COUNT(fatia_print_st_disruptions_allowed, "disruptionsAllowed")

/* CronJob TIMEZONE and LAST SCHEDULE: "<none>" when unset (printCronJob) */
json_t *fatia_print_cronjob_timezone(const json_t *cj, int64_t now)
{
    const char *tz = fatia_json_str(json_object_get(cj, "spec"), "timeZone");

    (void)now;
    return json_string(tz ? tz : "<none>");
}
