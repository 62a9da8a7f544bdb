/*
 * agent/vgpu_files.c: the files a capped container mounts (see vgpu_files.h).
 *
 * Model: the container's view is fixed (the paths in vgpu_files.h), the host's paths are the
 * agent's; the edits file joins the two in CDI's containerEdits format (mounts with hostPath,
 * containerPath, options; env), which is what the runtime already applies for a CDI device, so
 * the container runtime needs no second format.
 *
 * Invariants: every file is written whole and renamed into place (a runtime never reads half a
 * file), root's and read-only; the configuration names the accounting file by its path in the
 * container, never the host's.
 *
 * Rejected: mounting the pod's whole run directory for the accounting file (the pod's scratch
 * space would then be writable at a second path); the environment (any process can drop it).
 */
#include "base/compat.h"

#include "agent/vgpu_files.h"

#include <sys/stat.h>

#include <errno.h>
#include <jansson.h>

static json_t *mount(const char *host, const char *ctr, bool rw)
{
    return json_pack("{s:s,s:s,s:s,s:[s,s,s,s]}", "hostPath", host, "containerPath", ctr, "type",
                     "bind", "options", rw ? "rw" : "ro", "nosuid", "nodev", "rbind");
}

int fatia_agent_vgpu_files_write(const struct fatia_vgpu_slice *s, const char *dir,
                                 const char *name, char *why, size_t why_n)
{
    char conf[2048], text[4096], path[FATIA_VGPU_PATH_MAX], preload[FATIA_VGPU_PATH_MAX];
    json_t *edits = NULL;
    char *dump = NULL;
    int r;

    if (!name[0] || strchr(name, '/') || strlen(dir) > 400) {
        snprintf(why, why_n, "vgpu files: bad container name or directory");
        return -EINVAL;
    }
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        r = -errno;
        snprintf(why, why_n, "cannot create '%.300s'", dir);
        return r;
    }
    r = fatia_agent_vgpu_slice_conf(s, FATIA_VGPU_CONTAINER_ACCT, text, sizeof(text));
    if (r < 0) {
        snprintf(why, why_n, "container '%.100s': cannot write its interposer configuration", name);
        return r;
    }
    snprintf(conf, sizeof(conf), "%s/%s.conf", dir, name);
    snprintf(preload, sizeof(preload), "%s/ld.so.preload", dir);
    if ((r = fatia_agent_vgpu_write_ro(conf, text)) < 0 ||
        (r = fatia_agent_vgpu_write_ro(preload, FATIA_VGPU_CONTAINER_LIB "\n")) < 0) {
        snprintf(why, why_n, "cannot write the interposer's files in '%.300s'", dir);
        return r;
    }
    edits = json_pack("{s:[o,o,o,o],s:[]}", "mounts", mount(conf, FATIA_VGPU_CONF_PATH, false),
                      mount(preload, "/etc/ld.so.preload", false),
                      mount(s->library, FATIA_VGPU_CONTAINER_LIB, false),
                      mount(s->accounting_file, FATIA_VGPU_CONTAINER_ACCT, true), "env");
    if (edits) {
        char list[FATIA_VGPU_MAX_DEVICES * FATIA_VGPU_UUID_MAX] = "", v[sizeof(list) + 32];
        size_t len = 0;

        for (unsigned i = 0; i < s->n_devices; i++)
            len +=
                (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", i ? "," : "", s->uuids[i]);
        snprintf(v, sizeof(v), "CUDA_VISIBLE_DEVICES=%s", list);
        json_array_append_new(json_object_get(edits, "env"), json_string(v));
        dump = json_dumps(edits, JSON_INDENT(1));
    }
    json_decref(edits);
    if (!dump)
        return -ENOMEM;
    snprintf(path, sizeof(path), "%s/%s.edits.json", dir, name);
    r = fatia_agent_vgpu_write_ro(path, dump);
    free(dump);
    if (r < 0)
        snprintf(why, why_n, "cannot write '%.300s'", path);
    return r;
}
