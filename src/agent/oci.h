/*
 * agent/oci.h: the OCI runtime's pieces: the runc container id, the config.json builder
 * (oci_spec.c, pure), and the agent's preparation of a pod's bundles (oci_pod.c).
 */
#ifndef FATIA_AGENT_OCI_H
#define FATIA_AGENT_OCI_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/imguser.h"

/* The runc container id of a pod's container: "<pod uid>-<name>". */
void fatia_oci_ctr_id(const char *pod_uid, const char *name, char *buf, size_t n);

/* kubectl exec -it in a runc container (oci_console.c): `PREFIX... --detach --tty
 * --console-socket S --pid-file F ID CMD...` (PREFIX: runc, its global options, "exec") run by a
 * relay that holds the container's pty master and copies it to and from tty (the caller's pty
 * slave, made the relay's controlling terminal: a TIOCSWINSZ on its master reaches the
 * container's pty). *ret_pid: the relay, a child of the caller, whose exit status is CMD's (runc's
 * own when it could not start CMD: it writes why on tty). 0, or -errno with why. */
int fatia_oci_console_exec(const char *const *prefix, const char *id, char *const *cmd, int tty,
                           pid_t *ret_pid, char *why, size_t why_n);

/* runc create --console-socket (a container whose config.json says terminal: true): listen
 * on a fresh root-only directory's socket, then take the pty master that runc create sent. */
struct fatia_oci_console {
    char dir[32], sock[64];
    int ls;
};

int fatia_oci_console_listen(struct fatia_oci_console *cs);
/* After runc create exited 0: the master (close-on-exec), or -errno. */
int fatia_oci_console_take(struct fatia_oci_console *cs);
void fatia_oci_console_close(struct fatia_oci_console *cs);

/* Stands for the pod's address in a container's args and env (a fieldRef to status.podIP: the
 * address comes from CNI when the sandbox starts, after the spec is written); write_config in
 * oci.c replaces it with the sandbox's address (127.0.0.1 with hostNetwork). */
#define FATIA_OCI_POD_IP_MARK "{{fatia.dev/podIP}}"

/* Ids inside a container's user namespace: 0..FATIA_OCI_IDS-1 map onto host_base... */
#define FATIA_OCI_IDS 65536u

/* The container runtime's default capability set (containerd's and CRI-O's). */
extern const char *const fatia_oci_default_caps[];

/* What a container's config.json is made of. Borrowed. */
struct fatia_oci_in {
    const json_t *pod;              /* the Pod */
    const json_t *ctr;              /* its containers[] (or initContainers[]) entry */
    const json_t *image_config;     /* the image config's "config" object, or NULL */
    const json_t *argv;             /* the command line (fatia_oci_argv) */
    const json_t *env;              /* ["K=V"...]: the final environment */
    uint32_t host_base;             /* the namespace's host id range: container id 0 is this */
    const char *run_dir;            /* DATA/agent/run/<pod uid>: volumes, etc/ files */
    const char *cgroups_path;       /* runc's cgroupsPath, or NULL */
    const json_t *devices;          /* CDI containerEdits merged (cdi_apply.c), or NULL */
    struct fatia_imguser_files etc; /* the image's /etc/passwd and /etc/group, or NULLs */
    bool host_network;
};

/* The container's uid, gid and supplementary groups: securityContext (container, then pod)
 * runAsUser (replacing the image's User) and runAsGroup (its group), else the image's User, a
 * name or a number, "user[:group]", resolved against the image's own files as runc does
 * (imguser.h), else 0. With why: -FATIA_E_INVALID for the pod's own fields (runAsUser or
 * runAsGroup out of the container's range, runAsNonRoot with uid 0: CreateContainerConfigError);
 * imguser's -EINVAL or -ERANGE for what the image's User or files give (CreateContainerError). */
int fatia_oci_user(const json_t *pod, const json_t *ctr, const json_t *image_config,
                   const struct fatia_imguser_files *files, struct fatia_imguser *ret, char *why,
                   size_t why_n);

/* Kubernetes' rule for the command line from command/args and the image's Entrypoint/Cmd:
 * neither: Entrypoint + Cmd; command only: command; args only: Entrypoint + args; both: both.
 * Returns a copy of ctr with command and args set (new reference), or NULL. */
json_t *fatia_oci_merge_command(const json_t *ctr, const json_t *image_config);

/* The config.json template of one container (the sandbox's namespaces marked
 * "fatiaSandbox": true, filled by the shim). 0, -FATIA_E_INVALID with why (the field path),
 * -ENOMEM. */
int fatia_oci_spec_build(const struct fatia_oci_in *in, json_t **ret, char *why, size_t why_n);

#endif
