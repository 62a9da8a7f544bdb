/*
 * agent/devfilter.h: the cgroup v2 device filter that lets a pod open only its own GPUs.
 *
 * cgroup v2 has no devices.allow file: device access is decided by a BPF program of type
 * BPF_PROG_TYPE_CGROUP_DEVICE attached to the cgroup (what runc and systemd build). fatia's
 * program allows every device except the NVIDIA GPU nodes (character devices of major 195) whose
 * minor is not one of the pod's GPUs; the control nodes nvidiactl (195:255) and nvidia-modeset
 * (195:254) stay allowed, as do nvidia-uvm and nvidia-caps (dynamic majors), which open no GPU by
 * themselves.
 */
#ifndef FATIA_AGENT_DEVFILTER_H
#define FATIA_AGENT_DEVFILTER_H

#include <stddef.h>

#define FATIA_DEVFILTER_MAX_MINORS 64
#define FATIA_NVIDIA_MAJOR         195

/* Whether this kernel loads the program (bpf(2) allowed, CONFIG_CGROUP_BPF). 0 or -errno, with
 * why. */
int fatia_devfilter_probe(char *why, size_t why_n);

/* Attaches a filter allowing GPU minors[0..n) (and nothing else of major 195) to the cgroup
 * directory. 0 or -errno, with why. */
int fatia_devfilter_attach(const char *cgroup, const int *minors, size_t n, char *why,
                           size_t why_n);

#endif
