/*
 * agent/nbhome.c: a workbench's persistent home in process mode (docs/selfservice.md, "The
 * persistent home").
 *
 * Model: POD_DIR/homes/<namespace>/<notebook> is the HOME and default working directory of the
 * pods of Notebook <notebook> (annotation fatia.dev/notebook-home), kept across the pod's lives
 * (a stop deletes the pod, not its home); POD_DIR/homes is 0711 root's, the namespace's directory
 * and the home are 0700 and owned by the namespace's uid, so no other namespace's pods can read
 * or enter it. Jupyter listens on a unix socket in the home (FATIA_AGENT_NB_SOCKET), which is how
 * fatiad's notebook proxy reaches it without a TCP port on the host.
 *
 * Trust: the annotation is the pod's (a tenant may write it on its own pod), so it selects a home
 * only inside the pod's own namespace, whose uid owns every home there anyway: a forged one gains
 * nothing. Names are DNS labels (no "/", no ".."). Deleting the Notebook keeps the home (as
 * Kubeflow keeps a workbench's PVC); the admin removes it. Rejected: a home under the pod's run
 * directory (deleted with the pod, so a stop would lose the user's files).
 */
#include "base/compat.h"

#include "agent/nbhome.h"

#include <sys/stat.h>

#include <errno.h>
#include <unistd.h>

#include "base/error.h"
#include "base/json.h"
#include "model/labels.h"

static int mkdir_owned(const char *path, mode_t mode, bool chown_it, uid_t uid, gid_t gid)
{
    struct stat st;

    if (mkdir(path, mode) < 0 && errno != EEXIST)
        return -errno;
    if (lstat(path, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    /* the mode whatever fatiad's umask (a 077 one would shut the pods out of homes/) */
    if ((st.st_mode & 07777) != mode && chmod(path, mode) < 0)
        return -errno;
    if (chown_it && (st.st_uid != uid || st.st_gid != gid) && lchown(path, uid, gid) < 0)
        return -errno;
    return 0;
}

int fatia_agent_nb_upstream(const char *pod_dir, const char *ns, const char *name, char *buf,
                            size_t n, uid_t *ret_uid)
{
    char dir[4300];
    struct stat st;

    if (!ns || !name || !fatia_is_dns1123_label(ns, NULL, 0) ||
        !fatia_is_dns1123_label(name, NULL, 0))
        return -EINVAL;
    /* homes/ is root's: the namespace's directory in it cannot be swapped by a tenant */
    snprintf(dir, sizeof(dir), "%s/homes/%s", pod_dir, ns);
    if (lstat(dir, &st) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    *ret_uid = st.st_uid;
    if ((size_t)snprintf(buf, n, "%s/%s/%s", dir, name, FATIA_AGENT_NB_SOCKET) >= n)
        return -ENAMETOOLONG;
    return 0;
}

int fatia_agent_nb_home(const char *pod_dir, const json_t *pod, bool chown_it, uid_t uid, gid_t gid,
                        char *buf, size_t n, char *why, size_t why_n)
{
    const json_t *meta = json_object_get(pod, "metadata");
    const char *name =
        fatia_json_str(json_object_get(meta, "annotations"), FATIA_AGENT_NB_HOME_ANN);
    const char *ns = fatia_json_str(meta, "namespace");
    char path[4300];
    int r;

    if (!name)
        return 0;
    if (!ns || !fatia_is_dns1123_label(name, NULL, 0) || !fatia_is_dns1123_label(ns, NULL, 0)) {
        snprintf(why, why_n, "annotation %s: \"%.100s\" is not a DNS label",
                 FATIA_AGENT_NB_HOME_ANN, name);
        return -EINVAL;
    }
    snprintf(path, sizeof(path), "%s/homes", pod_dir);
    r = mkdir_owned(path, 0711, false, 0, 0);
    if (r == 0) {
        snprintf(path, sizeof(path), "%s/homes/%s", pod_dir, ns);
        r = mkdir_owned(path, 0700, chown_it, uid, gid);
    }
    if (r == 0) {
        snprintf(path, sizeof(path), "%s/homes/%s/%s", pod_dir, ns, name);
        r = mkdir_owned(path, 0700, chown_it, uid, gid);
    }
    if (r < 0) {
        snprintf(why, why_n, "cannot make the workbench home '%.300s': %s", path,
                 fatia_strerror(r));
        return r;
    }
    if ((size_t)snprintf(buf, n, "%s", path) >= n)
        return -ENAMETOOLONG;
    return 1;
}
