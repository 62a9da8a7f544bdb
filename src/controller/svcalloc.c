/*
 * controller/svcalloc.c: a Service's ClusterIP and nodePorts, allocated at admission as
 * kube-apiserver's service REST storage does (pkg/registry/core/service/storage: the IP
 * allocator over --service-cluster-ip-range, the port allocator over --service-node-port-range).
 *
 * Model: the service CIDR is 172.30.0.0/16 (OpenShift's default: outside 10.0.0.0/8, where the
 * agent's per-namespace pod bridges live, docs/agent.md, so a ClusterIP never collides with a pod
 * address); 172.30.0.1 is held back for `kubernetes`, as kube's first address is. Node ports are
 * 30000-32767. On create (a mutating plugin, after defaulting):
 *
 *   clusterIP ""       an address is allocated: the first free one from a start derived from
 *                      the Service's namespace and name (so concurrent fatiads on one host pick
 *                      different ones), then clusterIPs, ipFamilies [IPv4], ipFamilyPolicy
 *                      SingleStack are set;
 *   clusterIP "None"   headless: kept (clusterIPs ["None"]);
 *   clusterIP given    must be in the range and free, else 422 with kube's words;
 *   type ExternalName  no address;
 *   NodePort, LoadBalancer  each port without a nodePort gets a free one; a given one must be in
 *                      the range and free.
 *
 * On update, an omitted clusterIP (an apply of the original manifest) keeps the allocated one,
 * and so does an omitted nodePort of the same port and protocol; a changed clusterIP is refused
 * ("field is immutable") unless the type changes to or from ExternalName.
 *
 * "Free": not used by any Service in the API's cache and not handed out by this plugin in the
 * last 30 s (a write admitted but not yet committed, so two creates cannot get one address).
 * Rejected: an allocation bitmap object in the store (kube's RangeAllocation): the Services
 * themselves are the record on one API server; with several replicas (docs/fleet.md) the leader's
 * cache decides and a collision is possible in a 30 s window across replicas.
 */
#include "base/compat.h"

#include <arpa/inet.h>

#include <errno.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/hash.h"
#include "base/json.h"
#include "controller/ctl_internal.h"
#include "model/diag.h"

#define NET_BASE  0xAC1E0000u /* 172.30.0.0 */
#define NET_SIZE  65536u
#define PORT_MIN  30000
#define PORT_MAX  32767
#define HOLD_USEC (30 * FATIA_USEC_PER_SEC)

static json_t *recent; /* {"ip:A" or "port:N": monotonic time handed out} */

struct used {
    json_t *set; /* {"ip:A": true, "port:N": true} */
    const char *skip_ns, *skip_name;
};

static void add_used(void *arg, const json_t *obj)
{
    struct used *u = arg;
    const json_t *meta = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    const char *ns = fatia_json_str(meta, "namespace"), *name = fatia_json_str(meta, "name");
    const char *ip = fatia_json_str(spec, "clusterIP");
    char key[80];
    size_t i;
    json_t *p;

    if (u->skip_ns && ns && name && !strcmp(ns, u->skip_ns) && !strcmp(name, u->skip_name))
        return; /* the Service being updated */
    if (ip && ip[0] && strcmp(ip, "None")) {
        snprintf(key, sizeof(key), "ip:%s", ip);
        json_object_set_new(u->set, key, json_true());
    }
    json_array_foreach(json_object_get(spec, "ports"), i, p)
    {
        int64_t np;
        if (fatia_json_int(p, "nodePort", &np) && np > 0) {
            snprintf(key, sizeof(key), "port:%lld", (long long)np);
            json_object_set_new(u->set, key, json_true());
        }
    }
}

static bool taken(const struct used *u, const char *key)
{
    const json_t *t = json_object_get(recent, key);

    if (json_object_get(u->set, key))
        return true;
    return t && fatia_now_mono_usec() - (fatia_usec_t)json_integer_value(t) < HOLD_USEC;
}

static void hold(const char *key)
{
    const char *k;
    json_t *v, *tmp;
    fatia_usec_t now = fatia_now_mono_usec();

    if (!recent)
        recent = json_object();
    json_object_foreach_safe(recent, tmp, k, v)
    {
        if (now - (fatia_usec_t)json_integer_value(v) >= HOLD_USEC)
            json_object_del(recent, k);
    }
    json_object_set_new(recent, key, json_integer((json_int_t)now));
}

static uint32_t seed(const char *ns, const char *name, const char *salt)
{
    char buf[600];
    int n = snprintf(buf, sizeof(buf), "%s/%s/%s", ns ? ns : "", name ? name : "", salt);

    return (uint32_t)fatia_hash_chain64(buf, (size_t)(n > 0 ? n : 0), 0);
}

static int alloc_ip(const struct used *u, uint32_t start, char *ret, size_t n)
{
    for (uint32_t i = 0; i < NET_SIZE; i++) {
        uint32_t off = (start + i) % NET_SIZE;
        struct in_addr a;
        char key[80];
        if (off <= 1 || off == NET_SIZE - 1)
            continue; /* the network, kubernetes' address, the broadcast */
        a.s_addr = htonl(NET_BASE + off);
        inet_ntop(AF_INET, &a, ret, (socklen_t)n);
        snprintf(key, sizeof(key), "ip:%s", ret);
        if (!taken(u, key)) {
            hold(key);
            return 0;
        }
    }
    return -ENOSPC;
}

static int check_ip(struct fatia_admit_attrs *a, const struct used *u, const char *ip)
{
    struct in_addr addr;
    char key[80];

    if (inet_pton(AF_INET, ip, &addr) != 1 || (ntohl(addr.s_addr) & 0xFFFF0000u) != NET_BASE) {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.clusterIPs",
                       "spec.clusterIPs: Invalid value: [\"%s\"]: failed to allocate IP %s: "
                       "provided IP is not in the valid range. The range of valid IPs is "
                       "172.30.0.0/16",
                       ip, ip);
        return -FATIA_E_INVALID;
    }
    snprintf(key, sizeof(key), "ip:%s", ip);
    if (taken(u, key)) {
        fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.clusterIPs",
                       "spec.clusterIPs: Invalid value: [\"%s\"]: failed to allocate IP %s: "
                       "provided IP is already allocated",
                       ip, ip);
        return -FATIA_E_INVALID;
    }
    hold(key);
    return 0;
}

/* ip may point into spec (its own clusterIP): it is copied before spec changes. */
static void set_ip(json_t *spec, const char *ip_in)
{
    char ip[64];

    snprintf(ip, sizeof(ip), "%s", ip_in);
    json_object_set_new(spec, "clusterIP", json_string(ip));
    json_object_set_new(spec, "clusterIPs", json_pack("[s]", ip));
    if (strcmp(ip, "None")) {
        json_object_set_new(spec, "ipFamilies", json_pack("[s]", "IPv4"));
        if (!json_object_get(spec, "ipFamilyPolicy"))
            json_object_set_new(spec, "ipFamilyPolicy", json_string("SingleStack"));
    }
}

static const json_t *old_port(const json_t *old, const json_t *p)
{
    size_t i;
    json_t *o;
    int64_t want = 0, have = 0;
    const char *pr = fatia_json_str(p, "protocol");

    (void)fatia_json_int(p, "port", &want);
    json_array_foreach(fatia_json_path(old, "spec.ports"), i, o)
    {
        const char *opr = fatia_json_str(o, "protocol");
        if (fatia_json_int(o, "port", &have) && have == want &&
            !strcmp(pr ? pr : "TCP", opr ? opr : "TCP"))
            return o;
    }
    return NULL;
}

static int node_ports(struct fatia_admit_attrs *a, const struct used *u, json_t *spec)
{
    size_t i;
    json_t *p;

    json_array_foreach(json_object_get(spec, "ports"), i, p)
    {
        int64_t np = 0, onp = 0;
        char key[40];
        const json_t *o = a->old ? old_port(a->old, p) : NULL;
        if (!fatia_json_int(p, "nodePort", &np) || np == 0) {
            if (o && fatia_json_int(o, "nodePort", &onp) && onp > 0) {
                json_object_set_new(p, "nodePort", json_integer(onp));
                continue;
            }
            uint32_t start =
                seed(a->ns, fatia_json_str(json_object_get(a->obj, "metadata"), "name"), "port");
            np = 0;
            for (int k = 0; k <= PORT_MAX - PORT_MIN; k++) {
                int cand = PORT_MIN + (int)((start + (uint32_t)k) % (PORT_MAX - PORT_MIN + 1));
                snprintf(key, sizeof(key), "port:%d", cand);
                if (!taken(u, key)) {
                    np = cand;
                    break;
                }
            }
            if (!np) {
                fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.ports",
                               "spec.ports[%zu].nodePort: Internal error: range is full", i);
                return -FATIA_E_INVALID;
            }
            hold(key);
            json_object_set_new(p, "nodePort", json_integer(np));
            continue;
        }
        if (o && fatia_json_int(o, "nodePort", &onp) && onp == np)
            continue; /* kept */
        if (np < PORT_MIN || np > PORT_MAX) {
            fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.ports",
                           "spec.ports[%zu].nodePort: Invalid value: %lld: provided port is not "
                           "in the valid range. The range of valid ports is 30000-32767",
                           i, (long long)np);
            return -FATIA_E_INVALID;
        }
        snprintf(key, sizeof(key), "port:%lld", (long long)np);
        if (taken(u, key)) {
            fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.ports",
                           "spec.ports[%zu].nodePort: Invalid value: %lld: provided port is "
                           "already allocated",
                           i, (long long)np);
            return -FATIA_E_INVALID;
        }
        hold(key);
    }
    return 0;
}

static int svc_admit(void *arg, struct fatia_admit_attrs *a)
{
    struct fatia_client *c = arg;
    json_t *spec = json_object_get(a->obj, "spec");
    const char *type = fatia_json_str(spec, "type"), *ip = fatia_json_str(spec, "clusterIP");
    const json_t *ospec = a->old ? json_object_get(a->old, "spec") : NULL;
    const char *oip = fatia_json_str(ospec, "clusterIP"), *otype = fatia_json_str(ospec, "type");
    const char *name = fatia_json_str(json_object_get(a->obj, "metadata"), "name");
    struct used u = {json_object(), a->old ? a->ns : NULL, a->old ? name : NULL};
    bool ext = type && !strcmp(type, "ExternalName");
    bool oext = otype && !strcmp(otype, "ExternalName");
    char buf[64];
    int r = 0;

    if (!json_is_object(spec) || !u.set) {
        json_decref(u.set);
        return 0;
    }
    (void)fatia_client_cached_each(c, a->kind, NULL, add_used, &u);
    if (ext) {
        json_object_del(spec, "clusterIP");
        json_object_del(spec, "clusterIPs");
        goto out;
    }
    if (a->old && oip && oip[0] && !oext) {
        if (!ip || !ip[0]) {
            set_ip(spec, oip);
        } else if (strcmp(ip, oip)) {
            fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.clusterIPs[0]",
                           "spec.clusterIPs[0]: Invalid value: \"%s\": may not change once set",
                           ip);
            r = -FATIA_E_INVALID;
            goto out;
        }
    } else if (!ip || !ip[0]) {
        r = alloc_ip(&u, seed(a->ns, name, "ip"), buf, sizeof(buf));
        if (r < 0) {
            fatia_diag_add(a->diag, FATIA_DIAG_ERROR, NULL, 0, 0, NULL, "spec.clusterIPs",
                           "spec.clusterIPs: Internal error: failed to allocate a serviceIP: "
                           "range is full");
            r = -FATIA_E_INVALID;
            goto out;
        }
        set_ip(spec, buf);
    } else if (!strcmp(ip, "None")) {
        set_ip(spec, "None");
    } else if ((r = check_ip(a, &u, ip)) < 0) {
        goto out;
    } else {
        set_ip(spec, ip);
    }
    if (type && (!strcmp(type, "NodePort") || !strcmp(type, "LoadBalancer")))
        r = node_ports(a, &u, spec);
out:
    json_decref(u.set);
    return r;
}

int fatia_controller_svcalloc_plugin(struct fatia_client *client, struct fatia_admission *out)
{
    static const struct fatia_kind *kinds[2];

    kinds[0] = fatia_kind_find("v1", "Service", NULL);
    kinds[1] = NULL;
    if (!kinds[0])
        return -EINVAL;
    *out = (struct fatia_admission){.name = "service-ip-allocator",
                                    .phase = FATIA_ADMIT_MUTATING,
                                    .ops = FATIA_ADMIT_CREATE | FATIA_ADMIT_UPDATE,
                                    .kinds = kinds,
                                    .admit = svc_admit,
                                    .arg = client};
    return 0;
}
