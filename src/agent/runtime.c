/*
 * agent/runtime.c: the runtime table and the exec entry that works from a pod's directory alone
 * (runtime.h).
 *
 * Model. Everything exec needs is on disk, written before the pod's first container ran:
 * spec.json (the runtime's name, the user, the cgroup, each container's argv/env/workingDir) and
 * the shim's status file (the sandbox holder's pid and start time, written before any container
 * starts). So exec works the same from a fatiad that started the pod and from one that adopted it
 * after a restart.
 *
 * Rejected: keeping the exec state in the agent's memory (lost on kill -9 of fatiad).
 */
#include "base/compat.h"

#include "agent/runtime.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <unistd.h>

#include "agent/shim.h"
#include "base/alloc.h"
#include "base/error.h"
#include "base/json.h"

const struct fatia_runtime *fatia_runtime_get(const char *name)
{
    if (!name || !name[0] || !strcmp(name, FATIA_RUNTIME_PROCESS))
        return &fatia_runtime_process;
    if (!strcmp(name, FATIA_RUNTIME_OCI))
        return &fatia_runtime_oci;
    return NULL;
}

int fatia_runtime_exit_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 255;
}

bool fatia_runtime_oci_available(const char *runc, char *ret_path, size_t n, char *why,
                                 size_t why_n)
{
    static const char *const dirs[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin",
                                       "/usr/bin",        "/sbin",          "/bin"};

    if (runc && runc[0]) {
        if (access(runc, X_OK) == 0) {
            snprintf(ret_path, n, "%s", runc);
            return true;
        }
        snprintf(why, why_n, "'%s' is not an executable: %s", runc, fatia_strerror(-errno));
        return false;
    }
    for (size_t i = 0; i < FATIA_ARRAY_SIZE(dirs); i++) {
        char p[512];
        snprintf(p, sizeof(p), "%s/runc", dirs[i]);
        if (access(p, X_OK) == 0) {
            snprintf(ret_path, n, "%s", p);
            return true;
        }
    }
    snprintf(why, why_n, "no runc on the default PATH (Debian: apt-get install runc)");
    return false;
}

static char **str_array(const json_t *a)
{
    size_t n = json_array_size(a);
    char **v;

    if (!json_is_array(a))
        return NULL;
    v = fatia_calloc(n + 1, sizeof(char *));
    if (!v)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *x = json_string_value(json_array_get(a, i));
        if (!x) {
            fatia_free(v);
            return NULL;
        }
        v[i] = (char *)x;
    }
    return v;
}

static const json_t *find_ctr(const json_t *spec, const char *name)
{
    static const char *const lists[] = {"containers", "initContainers"};

    for (size_t l = 0; l < FATIA_ARRAY_SIZE(lists); l++) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[l]), i, c)
        {
            const char *n = fatia_json_str(c, "name");
            if (n && !strcmp(n, name))
                return c;
        }
    }
    return NULL;
}

int fatia_runtime_exec(const char *pod_dir, const char *container, char *const *argv,
                       const struct fatia_rt_stdio *io, pid_t *ret_pid, char *why, size_t why_n)
{
    char path[4200];
    json_error_t je;
    json_t *spec = NULL, *st = NULL;
    const json_t *cj, *user;
    const struct fatia_runtime *rt;
    struct fatia_rt_pod pod = {0};
    struct fatia_rt_ctr c = {0};
    const char *sf;
    int64_t v;
    int r;

    if (!argv || !argv[0]) {
        snprintf(why, why_n, "no command given");
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "%s/spec.json", pod_dir);
    spec = json_load_file(path, 0, &je);
    if (!spec) {
        snprintf(why, why_n, "cannot read '%.300s': %s", path, je.text);
        r = -ENOENT;
        goto out;
    }
    rt = fatia_runtime_get(fatia_json_str(spec, "runtime"));
    cj = find_ctr(spec, container);
    sf = fatia_json_str(spec, "statusFile");
    if (!rt || !cj || !sf) {
        snprintf(why, why_n, "%s",
                 !rt   ? "unknown runtime in the pod's spec"
                 : !cj ? "no such container in the pod"
                       : "the pod's spec names no status file");
        r = -ENOENT;
        goto out;
    }
    st = json_load_file(sf, 0, &je);
    if (!st || fatia_json_bool(st, "done", false)) {
        snprintf(why, why_n, "container %s is not running", container);
        r = -ENOENT;
        goto out;
    }
    pod.ns = fatia_json_str(spec, "namespace");
    pod.name = fatia_json_str(spec, "name");
    pod.uid = fatia_json_str(spec, "uid");
    pod.dir = pod_dir;
    pod.cgroup = fatia_json_str(spec, "cgroup");
    pod.spec = spec;
    pod.null_fd = -1;
    user = json_object_get(spec, "user");
    if (user && fatia_json_int(user, "uid", &v)) {
        pod.switch_user = true;
        pod.uid_run = (uid_t)v;
        pod.gid_run = fatia_json_int(user, "gid", &v) ? (gid_t)v : pod.uid_run;
    }
    pod.sandbox_pid = fatia_json_int(st, "pgid", &v) ? (pid_t)v : 0;
    pod.sandbox_start = fatia_json_int(st, "pauseStart", &v) ? (uint64_t)v : 0;
    c.name = container;
    c.cwd = fatia_json_str(cj, "workingDir");
    c.spec = cj;
    c.envp = str_array(json_object_get(cj, "env"));
    if (!c.envp) {
        r = -ENOMEM;
        goto out;
    }
    r = rt->exec(&pod, &c, argv, io, ret_pid, why, why_n);
out:
    fatia_free(c.envp);
    json_decref(st);
    json_decref(spec);
    return r;
}
