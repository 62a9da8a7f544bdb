/*
 * agent/mps_files.c: an MPS client container's edits (see mps_files.h).
 *
 * Invariants: the file is written whole and renamed into place, root's and read-only, as the
 * capped slice's edits are (vgpu_files.c); the pipe directory is never writable from the
 * container (the daemon runs as root and its pipes must not be replaced by a tenant's).
 */
#include "base/compat.h"

#include "agent/mps_files.h"

#include <sys/stat.h>

#include <errno.h>
#include <jansson.h>

#include "agent/vgpu_slice.h"

int fatia_agent_mps_files_write(const char *dir, const char *name, const char *pipe_dir,
                                const char *shm_dir, char *why, size_t why_n)
{
    char path[FATIA_VGPU_PATH_MAX];
    json_t *edits, *mounts;
    char *dump;
    int r;

    if (!name[0] || strchr(name, '/') || strlen(dir) > 400 || !pipe_dir) {
        snprintf(why, why_n, "MPS files: bad container name or directory");
        return -EINVAL;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(why, why_n, "cannot create '%.300s'", dir);
        return r;
    }
    edits = json_pack("{s:[{s:s,s:s,s:s,s:[s,s,s,s,s]}],s:[s]}", "mounts", "hostPath", pipe_dir,
                      "containerPath", FATIA_MPS_CONTAINER_PIPE, "type", "bind", "options", "ro",
                      "nosuid", "nodev", "noexec", "rbind", "env",
                      "CUDA_MPS_PIPE_DIRECTORY=" FATIA_MPS_CONTAINER_PIPE);
    mounts = json_object_get(edits, "mounts");
    if (edits && shm_dir)
        json_array_append_new(mounts,
                              json_pack("{s:s,s:s,s:s,s:[s,s,s,s,s]}", "hostPath", shm_dir,
                                        "containerPath", "/dev/shm", "type", "bind", "options",
                                        "rw", "nosuid", "nodev", "noexec", "rbind"));
    dump = edits ? json_dumps(edits, JSON_INDENT(1)) : NULL;
    json_decref(edits);
    if (!dump)
        return -ENOMEM;
    snprintf(path, sizeof(path), "%s/%s.mps.json", dir, name);
    r = fatia_agent_vgpu_write_ro(path, dump);
    free(dump);
    if (r < 0)
        snprintf(why, why_n, "cannot write '%.300s'", path);
    return r;
}
