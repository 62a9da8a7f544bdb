/*
 * agent/cni.h: a pod's network namespace wired by the CNI plugins Kubernetes uses (Debian's
 * containernetworking-plugins: bridge, host-local, portmap), one network per Kubernetes
 * namespace, no route between two of them, and none to the host but the allowed ports (cni.c).
 */
#ifndef FATIA_AGENT_CNI_H
#define FATIA_AGENT_CNI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATIA_CNI_PLUGIN_DIR "/usr/lib/cni"
/* host-local's leases (its default dataDir): shared by every fatiad of the host */
#define FATIA_CNI_LEASE_DIR "/var/lib/cni/networks"
/* the sandboxes' network namespace pins (cni_reclaim.c), a tmpfs: a reboot empties it */
#define FATIA_CNI_PIN_DIR "/run/fatia-cni"
#define FATIA_CNI_ID_MAX  256

/* Network index k (the namespace's range index): bridge fbr<k>, subnet 10.<k/256>.<k%256>.0/24,
 * gateway .1 on the host. ADD for the netns (a path), container id id; ports (NULL or []: none)
 * the host ports to publish, CNI's portMappings ({hostPort, containerPort, protocol "tcp" or
 * "udp", hostIP}) for the portmap plugin after the bridge; the result (CNI JSON) is written to
 * result_file for DEL; the pod's IPv4 address in ret_ip. 0 or -errno with why. */
int fatia_cni_add(const char *plugin_dir, const char *state_dir, uint32_t k, const char *id,
                  const char *netns, const json_t *ports, const char *result_file, char *ret_ip,
                  size_t ip_n, char *why, size_t why_n);

/* DEL (idempotent: a missing result or netns is fine), portmap's with the same ports first; the
 * pin of id goes too. */
void fatia_cni_del(const char *plugin_dir, const char *state_dir, uint32_t k, const char *id,
                   const char *netns, const json_t *ports, const char *result_file);

/* The host's INPUT rule that lets network k's pods reach tcp port on their gateway (the API
 * proxy's, agent/apiproxy.c): on adds it once (-C first), off removes it. 0 or -errno. */
int fatia_cni_host_allow(uint32_t k, unsigned port, bool on);
/* One line of `iptables -S FATIA-HOSTISOLATE` that is such a rule: its bridge, gateway and port.
 * 0, or -FATIA_E_PARSE for any other line (pure). */
int fatia_cni_host_rule_parse(const char *line, char *ret_br, size_t br_n, char *ret_gw,
                              size_t gw_n, unsigned *ret_port);

/* DEL of network k for id and ifname with no namespace: host-local releases id's addresses. */
void fatia_cni_del_lease(const char *plugin_dir, uint32_t k, const char *id, const char *ifname);

/* ---- reclaim (cni_reclaim.c: the rule is in its design comment) ---- */

struct fatia_cni_ns {
    uint64_t dev, ino; /* stat(2) of /proc/PID/ns/net */
};

/* What the host shows at one moment: the pod uids of the running fatia-shims (and their pause
 * processes), and the network namespaces that a process is in or a nsfs mount holds. */
struct fatia_cni_host {
    char **shim_ids;
    size_t n_shim_ids, cap_shim_ids;
    struct fatia_cni_ns *netns;
    size_t n_netns, cap_netns;
};

/* The rule (pure): the sandbox of CNI container id is live (pin: its namespace, or NULL). */
bool fatia_cni_sandbox_live(const struct fatia_cni_host *h, const char *id,
                            const struct fatia_cni_ns *pin);
int fatia_cni_host_scan(struct fatia_cni_host *h, const char *proc);
void fatia_cni_host_free(struct fatia_cni_host *h);

/* An id usable as a file name (a pod uid: no '/', no leading '.'). */
bool fatia_cni_id_ok(const char *id);
/* PIN_DIR/<id> = the namespace of netns (a path), written before ADD. 0 or -errno. */
int fatia_cni_pin_write(const char *pin_dir, const char *id, const char *netns);
int fatia_cni_pin_read(const char *pin_dir, const char *id, struct fatia_cni_ns *ret);
void fatia_cni_pin_remove(const char *pin_dir, const char *id);

/* Gives back the leases of network k (k < 0: of every fatia-<k> network, and prunes the pins)
 * whose sandbox is gone, one info line each. The number reclaimed, or -errno. */
int fatia_cni_reclaim(const char *plugin_dir, const char *lease_dir, const char *pin_dir,
                      int64_t k);

#endif
