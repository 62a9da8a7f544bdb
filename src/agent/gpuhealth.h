/*
 * agent/gpuhealth.h: which NVML health events take a GPU out of service, and when it comes back
 * (pure: no I/O, no clock; the NVML wait is gpuhealth_agent.c's).
 */
#ifndef FATIA_AGENT_GPUHEALTH_H
#define FATIA_AGENT_GPUHEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NVML's event type bits (nvml.h nvmlEventType*). */
#define FATIA_GPUHEALTH_EV_SBE 0x1ULL /* nvmlEventTypeSingleBitEccError */
#define FATIA_GPUHEALTH_EV_DBE 0x2ULL /* nvmlEventTypeDoubleBitEccError */
#define FATIA_GPUHEALTH_EV_XID 0x8ULL /* nvmlEventTypeXidCriticalError */
#define FATIA_GPUHEALTH_EV_ALL \
    (FATIA_GPUHEALTH_EV_SBE | FATIA_GPUHEALTH_EV_DBE | FATIA_GPUHEALTH_EV_XID)

#define FATIA_GPUHEALTH_XID_MAX 1024 /* XIDs above are judged critical and cannot be listed */

struct fatia_gpuhealth_policy {
    bool off;                                     /* all checks off */
    bool xids_off;                                /* XID events ignored (ECC still acts) */
    uint8_t ignored[FATIA_GPUHEALTH_XID_MAX / 8]; /* bit per XID */
};

enum fatia_gpuhealth_verdict {
    FATIA_GPUHEALTH_IGNORE,    /* nothing to do (an application XID, a single-bit ECC error) */
    FATIA_GPUHEALTH_UNHEALTHY, /* the GPU leaves service */
};

/* The device plugin's defaults: XIDs 13, 31, 43, 45, 68 and 109 ignored. */
void fatia_gpuhealth_policy_init(struct fatia_gpuhealth_policy *p);

/* Applies one option to p, in the device plugin's terms: disable = "all" or "xids" (checks off),
 * or a comma list of more XIDs to ignore; enable = a comma list of XIDs to act on again, the
 * defaults included. 0, or -EINVAL with why naming the option and the bad item. */
int fatia_gpuhealth_policy_disable(struct fatia_gpuhealth_policy *p, const char *list, char *why,
                                   size_t why_n);
int fatia_gpuhealth_policy_enable(struct fatia_gpuhealth_policy *p, const char *list, char *why,
                                  size_t why_n);

bool fatia_gpuhealth_xid_ignored(const struct fatia_gpuhealth_policy *p, uint64_t xid);

/* The verdict on one event (type: one FATIA_GPUHEALTH_EV_* bit; data: the XID for an XID
 * event). ret_reason (at least 32 bytes) gets the Event reason and ret_msg the why, for both
 * verdicts. */
enum fatia_gpuhealth_verdict fatia_gpuhealth_judge(const struct fatia_gpuhealth_policy *p,
                                                   uint64_t type, uint64_t data, char *ret_reason,
                                                   size_t reason_n, char *ret_msg, size_t msg_n);

/* May an unhealthy GPU come back? Only when NVML answers for it again (probe_ok) and no critical
 * event came for quiet_usec (a GPU that keeps failing stays out). */
bool fatia_gpuhealth_may_recover(int64_t last_event_usec, int64_t now_usec, int64_t quiet_usec,
                                 bool probe_ok);

/* NVML's wait failed (not a timeout): the device plugin marks every GPU unhealthy. */
void fatia_gpuhealth_wait_failed(int nvml_ret, char *ret_reason, size_t reason_n, char *ret_msg,
                                 size_t msg_n);

#endif
