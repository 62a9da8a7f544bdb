/*
 * agent/devfilter.c: the pod's device filter as a cgroup BPF program (see devfilter.h).
 *
 * The program, over struct bpf_cgroup_dev_ctx {access_type, major, minor}:
 *
 *     r2 = ctx->access_type & 0xffff          the device type
 *     r3 = ctx->major; r4 = ctx->minor
 *     if r2 != BPF_DEVCG_DEV_CHAR goto allow
 *     if r3 != 195 goto allow
 *     if r4 == 255 goto allow                 nvidiactl
 *     if r4 == 254 goto allow                 nvidia-modeset
 *     if r4 == minor[i] goto allow            for each GPU of the pod
 *     r0 = 0; exit                            deny: open() fails with EPERM
 *   allow:
 *     r0 = 1; exit
 *
 * The program is attached with BPF_F_ALLOW_MULTI, so a filter a parent cgroup has (systemd's)
 * still applies: access needs every program's yes. The attachment keeps the program alive; the
 * agent closes its descriptors at once, and the program goes with the cgroup.
 *
 * Rejected: libbpf (a dependency for eight instructions), and denying by default with an allow
 * list of every device a process may need (/dev/null, ptys, ...): that is a container runtime's
 * job in a mount namespace of its own, which fatia does not have; the filter's one purpose is the
 * GPUs.
 */
#include "base/compat.h"

#include "agent/devfilter.h"

#include <linux/bpf.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "base/error.h"

#define MAX_INSNS (8 + FATIA_DEVFILTER_MAX_MINORS + 4)

static struct bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
    struct bpf_insn i = {.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
    return i;
}

static int bpf(int cmd, union bpf_attr *attr)
{
    return (int)syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* Builds the program; returns its length. */
static size_t build(const int *minors, size_t n, struct bpf_insn *p)
{
    size_t k = 0, allow;
    size_t jumps[4 + FATIA_DEVFILTER_MAX_MINORS], nj = 0;

    p[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_2, BPF_REG_1, 0, 0); /* access_type */
    p[k++] = insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
    p[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_3, BPF_REG_1, 4, 0); /* major */
    p[k++] = insn(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_4, BPF_REG_1, 8, 0); /* minor */
    jumps[nj++] = k;
    p[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 0, BPF_DEVCG_DEV_CHAR);
    jumps[nj++] = k;
    p[k++] = insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 0, FATIA_NVIDIA_MAJOR);
    jumps[nj++] = k;
    p[k++] = insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, 0, 255);
    jumps[nj++] = k;
    p[k++] = insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, 0, 254);
    for (size_t i = 0; i < n; i++) {
        jumps[nj++] = k;
        p[k++] = insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_4, 0, 0, minors[i]);
    }
    p[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
    p[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    allow = k;
    p[k++] = insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
    p[k++] = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
    for (size_t j = 0; j < nj; j++)
        p[jumps[j]].off = (int16_t)(allow - jumps[j] - 1);
    return k;
}

static int load(const int *minors, size_t n, char *why, size_t why_n)
{
    struct bpf_insn prog[MAX_INSNS];
    static char log[16384];
    union bpf_attr attr;
    size_t len;
    int fd;

    if (n > FATIA_DEVFILTER_MAX_MINORS) {
        snprintf(why, why_n, "more than %d GPUs", FATIA_DEVFILTER_MAX_MINORS);
        return -E2BIG;
    }
    len = build(minors, n, prog);
    /* without a log first: a verifier log that does not fit its buffer is itself an error */
    for (int level = 0; level < 2; level++) {
        memset(&attr, 0, sizeof(attr));
        attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
        attr.insns = (uint64_t)(uintptr_t)prog;
        attr.insn_cnt = (uint32_t)len;
        attr.license = (uint64_t)(uintptr_t) "Apache-2.0";
        if (level) {
            log[0] = '\0';
            attr.log_buf = (uint64_t)(uintptr_t)log;
            attr.log_size = sizeof(log);
            attr.log_level = 1;
        }
        fd = bpf(BPF_PROG_LOAD, &attr);
        if (fd >= 0 && level == 0)
            return fd;
        if (fd >= 0)
            close(fd);
        if (level == 0 && errno != EINVAL && errno != EACCES)
            break;
    }
    {
        int e = -errno;
        snprintf(why, why_n, "the kernel refused the device filter program: %s%s%.200s",
                 fatia_strerror(e), log[0] ? ": " : "", log);
        return e;
    }
}

int fatia_devfilter_probe(char *why, size_t why_n)
{
    int fd = load(NULL, 0, why, why_n);

    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int fatia_devfilter_attach(const char *cgroup, const int *minors, size_t n, char *why, size_t why_n)
{
    union bpf_attr attr;
    int prog, cg, r = 0;

    prog = load(minors, n, why, why_n);
    if (prog < 0)
        return prog;
    cg = open(cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (cg < 0) {
        r = -errno;
        snprintf(why, why_n, "cannot open cgroup '%.300s': %s", cgroup, fatia_strerror(r));
        close(prog);
        return r;
    }
    memset(&attr, 0, sizeof(attr));
    attr.target_fd = (uint32_t)cg;
    attr.attach_bpf_fd = (uint32_t)prog;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = BPF_F_ALLOW_MULTI;
    if (bpf(BPF_PROG_ATTACH, &attr) < 0) {
        r = -errno;
        snprintf(why, why_n, "cannot attach the device filter to '%.300s': %s", cgroup,
                 fatia_strerror(r));
    }
    close(cg);
    close(prog);
    return r;
}
