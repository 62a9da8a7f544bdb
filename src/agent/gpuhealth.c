/*
 * agent/gpuhealth.c: the GPU health policy (gpuhealth.h), after NVIDIA's device plugin
 * (internal/rm/health.go; reference fleet-etcd.md §7).
 *
 * Model: an NVML event either takes its GPU out of service or is ignored:
 *   - XidCriticalError: critical unless the XID is on the ignore list. The list starts as the
 *     device plugin's, 13 (graphics engine exception), 31 (GPU memory page fault), 43 (GPU
 *     stopped processing), 45 (preemptive cleanup), 68 (video processor exception) and 109 (context
 *     switch timeout): the XIDs a faulty application causes itself, so that one tenant's bad
 *     kernel cannot take a GPU from everybody. Every other XID is critical (79 fallen off the bus,
 *     48 double-bit ECC, 94/95 contained/uncontained ECC, 63/64 row remapping, 74 NVLink, 119/120
 *     GSP, ...);
 *   - DoubleBitEccError: critical. The device plugin registers it but acts only on XIDs; the
 *     issue asks for double-bit ECC explicitly, and an uncorrectable memory error is one;
 *   - SingleBitEccError: ignored (corrected by the hardware), counted by the caller.
 * A failed wait (not a timeout) makes every GPU unhealthy, as the device plugin does.
 *
 * Recovery: the device plugin never brings a GPU back without a restart (its FIXME). Here a GPU
 * comes back once NVML answers for it again and no critical event came for a quiet window, so a
 * GPU that fails again and again stays out, and one reset by the administrator (or a transient
 * XID) returns by itself.
 *
 * Rejected: judging XIDs by a table of known meanings (NVIDIA adds XIDs with drivers; an unknown
 * one is safer treated as critical, which is also the device plugin's rule).
 */
#include "base/compat.h"

#include "agent/gpuhealth.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const unsigned default_ignored[] = {13, 31, 43, 45, 68, 109};

static void set_bit(struct fatia_gpuhealth_policy *p, unsigned x, bool on)
{
    if (on)
        p->ignored[x / 8] |= (uint8_t)(1u << (x % 8));
    else
        p->ignored[x / 8] &= (uint8_t) ~(1u << (x % 8));
}

void fatia_gpuhealth_policy_init(struct fatia_gpuhealth_policy *p)
{
    memset(p, 0, sizeof(*p));
    for (size_t i = 0; i < sizeof(default_ignored) / sizeof(default_ignored[0]); i++)
        set_bit(p, default_ignored[i], true);
}

static int each_xid(struct fatia_gpuhealth_policy *p, const char *opt, const char *list, bool on,
                    char *why, size_t why_n)
{
    const char *s = list;

    while (s && *s) {
        char *end;
        unsigned long x;
        size_t len = strcspn(s, ",");
        errno = 0;
        x = strtoul(s, &end, 10);
        if (len == 0 || end != s + len || errno || x == 0 || x >= FATIA_GPUHEALTH_XID_MAX ||
            *s == '-' || *s == '+' || *s == ' ') {
            snprintf(why, why_n, "%s: '%.*s' is not an XID (1 to %d)", opt, (int)len, s,
                     FATIA_GPUHEALTH_XID_MAX - 1);
            return -EINVAL;
        }
        set_bit(p, (unsigned)x, on);
        s += len;
        if (*s == ',')
            s++;
    }
    return 0;
}

int fatia_gpuhealth_policy_disable(struct fatia_gpuhealth_policy *p, const char *list, char *why,
                                   size_t why_n)
{
    struct fatia_gpuhealth_policy t = *p;
    int r;

    if (!strcmp(list, "all")) {
        p->off = true;
        return 0;
    }
    if (!strcmp(list, "xids")) {
        p->xids_off = true;
        return 0;
    }
    if ((r = each_xid(&t, "gpu-health-ignore-xids", list, true, why, why_n)) < 0)
        return r; /* a rejected option changes nothing */
    *p = t;
    return 0;
}

int fatia_gpuhealth_policy_enable(struct fatia_gpuhealth_policy *p, const char *list, char *why,
                                  size_t why_n)
{
    struct fatia_gpuhealth_policy t = *p;
    int r;

    if ((r = each_xid(&t, "gpu-health-enable-xids", list, false, why, why_n)) < 0)
        return r;
    *p = t;
    return 0;
}

bool fatia_gpuhealth_xid_ignored(const struct fatia_gpuhealth_policy *p, uint64_t xid)
{
    return xid < FATIA_GPUHEALTH_XID_MAX && (p->ignored[xid / 8] >> (xid % 8)) & 1u;
}

static const char *xid_meaning(uint64_t xid)
{
    switch (xid) {
    case 48:
        return "double-bit ECC error";
    case 63:
        return "ECC page retirement or row remapping recorded";
    case 64:
        return "ECC page retirement or row remapping failed";
    case 74:
        return "NVLink error";
    case 79:
        return "GPU has fallen off the bus";
    case 92:
        return "high single-bit ECC error rate";
    case 94:
        return "contained ECC error";
    case 95:
        return "uncontained ECC error";
    case 119:
    case 120:
        return "GSP error";
    default:
        return "critical error";
    }
}

enum fatia_gpuhealth_verdict fatia_gpuhealth_judge(const struct fatia_gpuhealth_policy *p,
                                                   uint64_t type, uint64_t data, char *ret_reason,
                                                   size_t reason_n, char *ret_msg, size_t msg_n)
{
    if (type == FATIA_GPUHEALTH_EV_XID) {
        bool ignored = p->off || p->xids_off || fatia_gpuhealth_xid_ignored(p, data);
        snprintf(ret_reason, reason_n, "%s", ignored ? "GPUXidIgnored" : "GPUXidCritical");
        snprintf(ret_msg, msg_n, "XID %" PRIu64 " (%s)%s", data,
                 ignored ? "an application error" : xid_meaning(data),
                 p->off || p->xids_off ? ": health checks are off"
                 : ignored             ? ": ignored, as the device plugin does"
                                       : "");
        return ignored ? FATIA_GPUHEALTH_IGNORE : FATIA_GPUHEALTH_UNHEALTHY;
    }
    if (type == FATIA_GPUHEALTH_EV_DBE) {
        snprintf(ret_reason, reason_n, "GPUDoubleBitEcc");
        snprintf(ret_msg, msg_n, "double-bit (uncorrectable) ECC error%s",
                 p->off ? ": health checks are off" : "");
        return p->off ? FATIA_GPUHEALTH_IGNORE : FATIA_GPUHEALTH_UNHEALTHY;
    }
    if (type == FATIA_GPUHEALTH_EV_SBE) {
        snprintf(ret_reason, reason_n, "GPUSingleBitEcc");
        snprintf(ret_msg, msg_n, "single-bit ECC error, corrected by the hardware");
        return FATIA_GPUHEALTH_IGNORE;
    }
    snprintf(ret_reason, reason_n, "GPUEventIgnored");
    snprintf(ret_msg, msg_n, "NVML event type 0x%" PRIx64 " is not a health event", type);
    return FATIA_GPUHEALTH_IGNORE;
}

bool fatia_gpuhealth_may_recover(int64_t last_event_usec, int64_t now_usec, int64_t quiet_usec,
                                 bool probe_ok)
{
    return probe_ok && now_usec - last_event_usec >= quiet_usec;
}

void fatia_gpuhealth_wait_failed(int nvml_ret, char *ret_reason, size_t reason_n, char *ret_msg,
                                 size_t msg_n)
{
    snprintf(ret_reason, reason_n, "GPUHealthWaitFailed");
    snprintf(ret_msg, msg_n,
             "NVML's event wait failed (return code %d): every GPU of the node is taken out of "
             "service, as the device plugin does",
             nvml_ret);
}
