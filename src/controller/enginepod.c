/*
 * controller/enginepod.c: the model server's container (enginepod.h), one spec for both runtimes.
 *
 * Model. The container names the image fatia.dev/engine-sim:1 (/usr/bin/fatia and the libraries
 * it links, scripts/images/engine-sim) and the command `fatia engine-sim`, found through the
 * container's PATH: <fatiad's directory>:/usr/local/bin:/usr/bin:/bin. In the process runtime
 * (no image, the host's filesystem) that is fatiad's own fatia; in a container, where fatiad's
 * directory does not exist, the image's /usr/bin/fatia. The server listens on $(POD_IP), an
 * env var from the downward API (fieldRef status.podIP): 127.0.0.1 for processes, which share
 * the host's network (so a replica is never reachable from beyond the host), the pod's address
 * on its namespace's bridge in a container (agent/oci.c fills it in once CNI has run), where the
 * gateway, on the host, reaches it. --reuse-port lets the replicas of one workload share the
 * port in the process mode; in containers each pod has its network namespace and the flag is
 * inert.
 *
 * Rejected: 0.0.0.0 (a process-mode replica would listen on every host interface, reachable by
 * other tenants' containers through their bridge's gateway address); the host path of fatia as
 * command[0] (absent from the image); two templates chosen by the node's runtime (the template
 * is written before any node is picked, and a fleet's nodes may differ).
 */
#include "base/compat.h"

#include "controller/enginepod.h"

json_t *fatia_ctlr_engine_container(const char *bin, const char *name, int port,
                                    const json_t *flags)
{
    char listen[64], path[4200];
    const char *slash = strrchr(bin, '/');
    json_t *cmd = json_array(), *v;
    size_t i;

    if (!cmd)
        return NULL;
    if (slash)
        snprintf(path, sizeof(path), "%.*s:/usr/local/bin:/usr/bin:/bin", (int)(slash - bin), bin);
    else
        snprintf(path, sizeof(path), "/usr/local/bin:/usr/bin:/bin");
    snprintf(listen, sizeof(listen), "$(POD_IP):%d", port);
    json_array_append_new(cmd, json_string("fatia"));
    json_array_append_new(cmd, json_string("engine-sim"));
    json_array_append_new(cmd, json_string("--listen"));
    json_array_append_new(cmd, json_string(listen));
    json_array_append_new(cmd, json_string("--reuse-port"));
    json_array_foreach(flags, i, v) if (json_is_string(v)) json_array_append(cmd, v);
    return json_pack("{s:s,s:s,s:o,s:[{s:s,s:s},{s:s,s:{s:{s:s}}}],s:[{s:s,s:i,s:s}],"
                     "s:{s:{s:s,s:i},s:i}}",
                     "name", name, "image", FATIA_CTLR_ENGINE_IMAGE, "command", cmd, "env", "name",
                     "PATH", "value", path, "name", "POD_IP", "valueFrom", "fieldRef", "fieldPath",
                     "status.podIP", "ports", "name", "http", "containerPort", port, "protocol",
                     "TCP", "readinessProbe", "httpGet", "path", "/health", "port", port,
                     "periodSeconds", 1);
}
