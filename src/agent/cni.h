/*
 * agent/cni.h: a pod's network namespace wired by the CNI plugins Kubernetes uses (Debian's
 * containernetworking-plugins: bridge, host-local), one network per Kubernetes namespace, and
 * no route between two of them (cni.c).
 */
#ifndef FATIA_AGENT_CNI_H
#define FATIA_AGENT_CNI_H

#include <stddef.h>
#include <stdint.h>

#define FATIA_CNI_PLUGIN_DIR "/usr/lib/cni"

/* Network index k (the namespace's range index): bridge fbr<k>, subnet 10.<k/256>.<k%256>.0/24,
 * gateway .1 on the host. ADD for the netns (a path), container id id; the result (CNI JSON) is
 * written to result_file for DEL; the pod's IPv4 address in ret_ip. 0 or -errno with why. */
int fatia_cni_add(const char *plugin_dir, const char *state_dir, uint32_t k, const char *id,
                  const char *netns, const char *result_file, char *ret_ip, size_t ip_n, char *why,
                  size_t why_n);

/* DEL (idempotent: a missing result or netns is fine). */
void fatia_cni_del(const char *plugin_dir, const char *state_dir, uint32_t k, const char *id,
                   const char *netns, const char *result_file);

#endif
