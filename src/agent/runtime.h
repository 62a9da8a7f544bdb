/*
 * agent/runtime.h: the runtime boundary: how one pod's sandbox and containers are made, run,
 * signalled and entered. Two runtimes implement it:
 *
 *   process (runtime_process.c)  containers are host processes in the pod's process group, its
 *                                cgroup and its namespace's uid (docs/agent.md, "process");
 *   oci (oci.c)                  containers are OCI containers run by runc from bundles whose
 *                                config.json the agent writes (oci_spec.c), in a sandbox whose
 *                                network, IPC and UTS namespaces they share.
 *
 * Who calls what. The agent (agent.c, in fatiad) prepares the pod (directories, cgroup, the
 * containers' argv/env, and for oci the bundles' config templates) and writes spec.json; the
 * supervisor (fatia-shim, which outlives fatiad, as conmon does for runc) then calls
 * sandbox_start once, create + start for every container instance, kill, and sandbox_stop at the
 * end; it reaps instances by pid (it is a child subreaper, so a container's init that runc
 * detached is its child). exec is called from fatiad (kubectl exec; the proto area's server
 * code calls fatia_runtime_exec) and runs beside the shim, never through it.
 *
 * Invariants: a runtime never outlives the call that made it (no daemon: runc is run per
 * command); every descriptor it opens is close-on-exec, so an instance inherits only the stdio
 * it is given; an instance that create reports as started has a pid the shim can waitpid() for
 * and whose exit status is the container's (128 + signal when signalled).
 *
 * Rejected: one function per step of runc's lifecycle in the shim (create/start/delete lives
 * behind create and sandbox_stop, so the process runtime needs no no-op steps), and routing exec
 * through the shim (a second stream multiplexer in the supervisor; runc exec and a fork in the
 * process mode need only the pod's directory and its status file).
 */
#ifndef FATIA_AGENT_RUNTIME_H
#define FATIA_AGENT_RUNTIME_H

#include <sys/types.h>

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_RUNTIME_PROCESS "process"
#define FATIA_RUNTIME_OCI     "oci"
/* the default: oci where runc is installed and the agent is root, else process */
#define FATIA_RUNTIME_AUTO "auto"
/* The RuntimeClass a pod names to run as processes where the node runs containers (only in the
 * namespaces the admin allows: src/controller/tenancy.c). */
#define FATIA_RUNTIME_CLASS_PROCESS "fatia-process"

/* One pod's sandbox as both sides know it. */
struct fatia_rt_pod {
    const char *ns, *name, *uid;
    const char *dir;    /* DATA/agent/pods/<uid> (absolute) */
    const char *cgroup; /* the pod's cgroup directory, or NULL */
    bool switch_user;   /* process: run as uid/gid */
    uid_t uid_run;
    gid_t gid_run;
    const json_t *spec; /* the shim's spec.json (agent/shim.h) */
    int null_fd;        /* /dev/null, read-write */
    /* set by sandbox_start: the process that holds the sandbox (fatia-pause: the pod's process
     * group in the process mode, its namespaces in oci), never reaped before sandbox_stop */
    pid_t sandbox_pid;
    uint64_t sandbox_start;
    char ip[64]; /* set by sandbox_start when the pod has an address of its own (CNI) */
    /* oci: the sockets that hold the pod's host ports (hostPort) while the sandbox lives */
    int hostport_fds[32];
    size_t n_hostport_fds;
};

/* One container of the pod, one instance of it (instance = restartCount). */
struct fatia_rt_ctr {
    const char *name;
    char **argv, **envp; /* process: what is exec'd */
    const char *cwd;
    const json_t *spec; /* its entry in spec.json */
    unsigned instance;
};

/* The stdio an instance or an exec gets; tty: in is a terminal's slave, to be made the
 * controlling terminal (out and err may be the same descriptor). */
struct fatia_rt_stdio {
    int in, out, err;
    bool tty;
    /* create with tty: where a runtime that makes the terminal itself (oci: runc's console
     * socket) puts the container's pty master (in, out and err are then unused); NULL or left
     * at -1 by a runtime that uses the slave it was given (process) */
    int *ret_master;
};

struct fatia_runtime {
    const char *name;
    /* Starts the sandbox holder. 0, or -errno with why. */
    int (*sandbox_start)(struct fatia_rt_pod *pod, char *why, size_t why_n);
    /* Makes and starts an instance with that stdio; *ret_pid is the process to wait for. On a
     * failure nothing of it runs: why says what failed, in kubelet's words where it has them
     * ("exec: \"x\": executable file not found in $PATH"). */
    int (*create)(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c,
                  const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n);
    /* Signals one instance (c, with its pid), or with c NULL every process of the pod. */
    int (*kill)(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, pid_t pid, int sig);
    /* After the instance's pid was reaped: release what create made for it. */
    void (*cleanup)(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c);
    /* Kills what is left and releases the sandbox; reaps the holder. */
    void (*sandbox_stop)(struct fatia_rt_pod *pod);
    /* Runs argv in container c of the running pod (pod->sandbox_pid set from its status file)
     * with io; *ret_pid is a child of the caller whose exit status is argv's. */
    int (*exec)(struct fatia_rt_pod *pod, const struct fatia_rt_ctr *c, char *const *argv,
                const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n);
};

extern const struct fatia_runtime fatia_runtime_process;
extern const struct fatia_runtime fatia_runtime_oci;

/* The runtime of that name ("process", "oci"; NULL or "" is process), or NULL. */
const struct fatia_runtime *fatia_runtime_get(const char *name);

/* Whether the OCI runtime can run here: runc found (path set to it), or false with why. */
bool fatia_runtime_oci_available(const char *runc, char *ret_path, size_t n, char *why,
                                 size_t why_n);

/*
 * kubectl exec's entry: runs argv in container `container` of the pod whose agent directory is
 * pod_dir (DATA/agent/pods/<uid>), with io. Reads the pod's spec.json and status file, so it
 * works in whichever runtime the pod runs. *ret_pid is a child of the caller: waitpid() it and
 * map the status with fatia_runtime_exit_code(). -ENOENT (no such container, or the pod is not
 * running: why says which), -errno.
 */
int fatia_runtime_exec(const char *pod_dir, const char *container, char *const *argv,
                       const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n);

/* After a pod's shim died (its processes killed by the agent): what the OCI runtime left
 * outside them (runc's containers, the rootfs and memory emptyDir mounts, the CNI address, the
 * pod's cgroup), from POD_DIR/spec.json. Never waits for a child. 0, -ENOENT (no spec). */
int fatia_runtime_oci_release(const char *pod_dir);

/* A wait status as a container exit code: the code, or 128 + the signal. */
int fatia_runtime_exit_code(int status);

#endif
