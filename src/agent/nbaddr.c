/*
 * agent/nbaddr.c: where a workbench's Jupyter listens when its pod runs in a container
 * (docs/selfservice.md, "The Jupyter proxy").
 *
 * Model: a workbench pod in a runc container has a network namespace of its own, with one
 * address on its namespace's bridge (agent/cni.c); its Jupyter (the workbench image's
 * fatia-workbench) listens there on the container's first containerPort, else 8888 (Kubeflow's
 * notebook port), and nowhere on the host. fatiad's workbench proxy and the culler connect to
 * that address: the host reaches every bridge, while a pod of another namespace cannot (the
 * bridges are isolated from each other: cni.c's FATIA-ISOLATE chain).
 *
 * Trust: the address is the one the shim's CNI result gave this pod (the shim's status file,
 * written by root), never the Pod's status.podIP, which an API client could write: a forged one
 * would send a tenant's session to another namespace's Jupyter. The pod is the one named
 * <notebook>-0 in the notebook's namespace; another pod of that namespace with that name belongs
 * to the same tenant and gains nothing.
 *
 * What it does not stop: a process of the host (any host user) can reach a pod's address, as on
 * any Kubernetes node; Jupyter's own token is off because the proxy is the authentication.
 *
 * Rejected: a port on the host (portmap: the host's port space shared by every workbench, and a
 * listener outside the pod); the unix socket in the home that the process mode uses (it would work
 * through the home's bind mount, but a workbench image would need fatia's own command line;
 * Kubeflow's images serve a port of the pod); connecting
 * inside the pod's network namespace with setns, as port-forward does (a thread per connection).
 */
#include "base/compat.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/agent_int.h"
#include "agent/nbhome.h"
#include "base/json.h"

#define NB_PORT 8888

int fatia_agent_nb_addr(const struct fatia_agent *a, const char *ns, const char *name, char *ip,
                        size_t ip_n, int *ret_port)
{
    char pname[300];

    if (!a || !ns || !name)
        return -EINVAL;
    snprintf(pname, sizeof(pname), "%s-0", name);
    for (const struct apod *p = a->pods; p; p = p->next) {
        const json_t *spec, *port;
        const char *rt, *pip;
        json_int_t v;
        if (strcmp(p->ns, ns) || strcmp(p->name, pname) || p->st != AP_ACTIVE || !p->shim)
            continue;
        rt = fatia_json_str(p->shim, "runtime");
        pip = fatia_json_str(p->shim, "podIP");
        spec = json_object_get(p->pod, "spec");
        if (!rt || strcmp(rt, "oci") || !pip || !pip[0] || !strncmp(pip, "127.", 4) ||
            fatia_json_bool(spec, "hostNetwork", false))
            return -ENOENT; /* a process, or the host's network: the home's socket */
        port = json_object_get(
            json_array_get(
                json_object_get(json_array_get(json_object_get(spec, "containers"), 0), "ports"),
                0),
            "containerPort");
        v = json_is_integer(port) ? json_integer_value(port) : NB_PORT;
        if (v < 1 || v > 65535)
            v = NB_PORT;
        if ((size_t)snprintf(ip, ip_n, "%s", pip) >= ip_n)
            return -ENAMETOOLONG;
        *ret_port = (int)v;
        return 0;
    }
    return -ENOENT;
}
