/*
 * agent/shim.h: fatia-shim, the supervisor of one pod's processes, which outlives fatiad.
 *
 * The node agent (agent.c) writes a pod's spec file and starts `fatia-shim POD_DIR` in a new
 * session. From then on the shim alone owns the pod's processes: it starts each container as a
 * process, writes their stdout and stderr to CRI log files, applies the pod's restartPolicy (with
 * kubelet's back-off) and activeDeadlineSeconds, records every state change durably in the pod's
 * status file (write, fsync, rename, fsync the directory), and exits once every process of the
 * pod is gone. fatiad can be killed at any moment (kill -9 included): the shim goes on, and the
 * next fatiad reads the status file, so a container that exited meanwhile has its true exit code.
 *
 * Files (agent.c makes the directories; docs/agent.md lists them):
 *
 *   POD_DIR/spec.json    written by the agent before the shim starts; never changed after
 *   POD_DIR/lock         flock()ed by the shim for its whole life: whoever can take the lock
 *                        knows no shim runs for this pod (no pid involved, so no pid reuse)
 *   POD_DIR/stop.json    written by the agent before it sends SIGTERM to the shim: the grace
 *                        period and the reason of a deletion, an eviction or a deadline
 *   STATUS_FILE          written by the shim only (spec "statusFile"), one JSON document
 *   LOG_DIR/<container>/<restartCount>.log[.1]    the CRI logs of each container instance
 *
 * Processes of one pod:
 *
 *   fatia-shim           session leader (setsid by its spawner); never in the pod's group
 *     ├─ fatia-pause     leads the pod's process group P and holds it: the shim never reaps
 *     │                  it before the end, so P can not be reused while the pod lives and
 *     │                  kill(-P, sig) reaches exactly the pod's processes
 *     ├─ container 1     setpgid(0, P), the pod's cgroup, its uid, no_new_privs, exec
 *     └─ container 2 ... (each container's own children stay in P unless they leave it)
 *
 * spec.json:
 *   {"version": 1, "namespace", "name", "uid",
 *    "user": {"uid": N, "gid": N}            (absent: run as the shim's user),
 *    "cgroup": "/sys/fs/cgroup/.../pod-UID"  (absent: none),
 *    "restartPolicy": "Always" | "OnFailure" | "Never",
 *    "terminationGracePeriodSeconds": N, "activeDeadlineSeconds": N (optional),
 *    "startTime": "RFC 3339", "backoffInitialMs": N, "backoffMaxMs": N,
 *    "logDir": DIR, "logMaxBytes": N, "statusFile": PATH,
 *    "initContainers": [C...], "containers": [C...]}
 *   C = {"name", "argv": [..], "env": ["K=V", ..], "workingDir": DIR}
 *
 * status file (container states are those of the Kubernetes API):
 *   {"version": 1, "uid", "seq": N (one more at each write),
 *    "shim": {"pid", "start"}, "bootId", "pgid", "pauseStart",
 *    "phase": "Pending" | "Running" | "Succeeded" | "Failed", "reason", "message",
 *    "terminating": bool, "done": bool (every process is gone; the shim exits),
 *    "initContainers": [S...], "containers": [S...]}
 *   S = {"name", "restartCount", "started", "ready", "pid", "pidStart",
 *        "state": {"waiting": {...}} | {"running": {...}} | {"terminated": {...}},
 *        "lastState": {...}}
 */
#ifndef FATIA_AGENT_SHIM_H
#define FATIA_AGENT_SHIM_H

#define FATIA_SHIM_SPEC_VERSION 1

/* The program: `fatia-shim POD_DIR`. Returns the exit status (0 when the pod ran to its end). */
int fatia_shim_main(int argc, char **argv);

#endif
