/*
 * controller/nodeinfo.c: Node.status.nodeInfo from the host, as the kubelet reports it.
 *
 * Model: core/v1 NodeSystemInfo has no omitempty on its ten string fields, so kube-apiserver
 * always sends all ten and clients rely on it (python3-kubernetes' V1NodeSystemInfo refuses a
 * Node whose nodeInfo lacks one: `list_node()` fails). Every field is therefore present, and ""
 * when the host does not say, never absent. The sources are the kubelet's (via cAdvisor):
 *
 *   machineID       /etc/machine-id (else /var/lib/dbus/machine-id)
 *   systemUUID      /sys/class/dmi/id/product_uuid (root only; else "")
 *   bootID          /proc/sys/kernel/random/boot_id
 *   kernelVersion   uname(2) release
 *   osImage         PRETTY_NAME of /etc/os-release (else /usr/lib/os-release), unquoted
 *   operatingSystem "linux";  architecture: GOARCH spelling of uname's machine (amd64, arm64)
 *   kubeletVersion  the version /version reports, "-fatia";  containerRuntimeVersion fatia://process
 *   kubeProxyVersion "" (deprecated, KEP-4004: the kubelet no longer sets it from 1.31)
 *
 * Invariant: the result depends on the host only (no clock), so the device controller's
 * comparison of the published nodeInfo with the wanted one settles after one write.
 * Rejected: caching the answer for the process's life (bootID cannot change under a running
 * process, but a test that plants files would be fooled; the reads cost a few syscalls per
 * re-plan only).
 */
#include "base/compat.h"

#include "controller/nodeinfo.h"

#include <sys/utsname.h>

#include <ctype.h>
#include <stdio.h>
#include <string.h>

/* First line of path, trimmed, into buf ("" when unreadable). */
static void read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "re");
    size_t len;

    buf[0] = '\0';
    if (!f)
        return;
    if (!fgets(buf, (int)n, f))
        buf[0] = '\0';
    fclose(f);
    len = strlen(buf);
    while (len && isspace((unsigned char)buf[len - 1]))
        buf[--len] = '\0';
}

/* PRETTY_NAME of an os-release file, its quotes and backslash escapes undone. */
static void os_image(char *buf, size_t n)
{
    static const char *const paths[] = {"/etc/os-release", "/usr/lib/os-release"};
    char line[512];

    buf[0] = '\0';
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        FILE *f = fopen(paths[p], "re");
        if (!f)
            continue;
        while (fgets(line, sizeof(line), f)) {
            const char *v;
            size_t o = 0;
            char q = 0;
            if (strncmp(line, "PRETTY_NAME=", 12))
                continue;
            v = line + 12;
            if (*v == '"' || *v == '\'')
                q = *v++;
            for (; *v && *v != '\n' && o + 1 < n; v++) {
                if (q && *v == q)
                    break;
                if (q == '"' && *v == '\\' && v[1])
                    v++;
                buf[o++] = *v;
            }
            buf[o] = '\0';
            break;
        }
        fclose(f);
        if (buf[0])
            return;
    }
    if (!buf[0])
        snprintf(buf, n, "Linux");
}

static const char *goarch(const char *m)
{
    static const struct {
        const char *uname, *go;
    } map[] = {
        {"x86_64", "amd64"}, {"aarch64", "arm64"},   {"armv7l", "arm"},  {"i686", "386"},
        {"i386", "386"},     {"ppc64le", "ppc64le"}, {"s390x", "s390x"}, {"riscv64", "riscv64"},
    };

    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (!strcmp(m, map[i].uname))
            return map[i].go;
    return m;
}

json_t *fatia_ctlr_nodeinfo_json(void)
{
    char machine_id[128], uuid[128], boot_id[128], image[256];
    struct utsname u;

    read_line("/etc/machine-id", machine_id, sizeof(machine_id));
    if (!machine_id[0])
        read_line("/var/lib/dbus/machine-id", machine_id, sizeof(machine_id));
    read_line("/sys/class/dmi/id/product_uuid", uuid, sizeof(uuid));
    read_line("/proc/sys/kernel/random/boot_id", boot_id, sizeof(boot_id));
    os_image(image, sizeof(image));
    if (uname(&u) < 0)
        memset(&u, 0, sizeof(u));
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "machineID", machine_id,
                     "systemUUID", uuid, "bootID", boot_id, "kernelVersion", u.release, "osImage",
                     image, "containerRuntimeVersion", "fatia://process", "kubeletVersion",
                     "v1.33.0-fatia", "kubeProxyVersion", "", "operatingSystem", "linux",
                     "architecture", u.machine[0] ? goarch(u.machine) : "amd64");
}
