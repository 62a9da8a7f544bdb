/*
 * agent/cdi.h: the node's GPU slices as a Container Device Interface spec (CDI SPEC v1.1.0, the
 * JSON `nvidia-ctk cdi generate` writes), so that a container runtime (fatia's, or
 * `podman run --device fatia.dev/gpu=<slice>`) gives a container exactly a slice's devices.
 *
 * The spec: cdiVersion, kind "fatia.dev/gpu", one device per slice named by its slice id, whose
 * containerEdits hold its /dev/nvidia<minor> node and CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES
 * (its UUID, or its MIG UUID), plus for a capped slice (timeslice or fraction with a memory
 * capacity) the interposer's read-only mounts (docs/agent.md, "Capped slices in a container") from
 * a directory of the slice's own; and top-level containerEdits with what every GPU container
 * needs from the host: the control nodes (nvidiactl, nvidia-uvm, nvidia-uvm-tools,
 * nvidia-modeset), the driver's user-space libraries (every lib*.so.<driver version> of the
 * NVIDIA family found in the library directories) and programs (nvidia-smi, the MPS ones), each
 * mounted read-only at its own path. A MIG device's containerEdits also hold the
 * /dev/nvidia-caps/nvidia-cap<M> nodes of its GPU instance and compute instance, as nvidia-ctk
 * emits them. docs/agent.md has the file's place.
 * A simulated node's spec (fatia_cdi_host.simulated) has the same devices without any device node
 * or driver file, so that a simulated GPU pod runs in a container as a real one does.
 */
#ifndef FATIA_AGENT_CDI_H
#define FATIA_AGENT_CDI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define FATIA_CDI_KIND "fatia.dev/gpu"
/* the lowest CDI version with every field the spec uses (mount type: 0.4.0; a device node's
 * hostPath: 0.5.0), as nvidia-ctk picks it: podman 4.3's CDI library (Debian 12) refuses a 0.6.0
 * spec whole ("invalid version"), so a higher one would lose the consumers the spec is for */
#define FATIA_CDI_VERSION "0.5.0"
#define FATIA_CDI_MAX     128

/* What the host offers every GPU container (found by fatia_agent_cdi_discover). */
struct fatia_cdi_host {
    char nodes[8][64]; /* control nodes' paths, e.g. /dev/nvidiactl */
    unsigned node_major[8], node_minor[8];
    size_t n_nodes;
    unsigned gpu_major;  /* the major of /dev/nvidia<N> (195 unless the host says otherwise) */
    unsigned caps_major; /* /proc/devices' "nvidia-caps" (MIG access nodes), 0 when none */
    char files[FATIA_CDI_MAX][512]; /* libraries and programs, host paths */
    size_t n_files;
    /* the node's GPUs are simulated (not of the NVML inventory): no driver, so no top-level
     * edits, and each slice's device has its env and a capped slice's mounts, no device node */
    bool simulated;
};

/* Looks under root ("" for the host itself; a directory in the tests) for the control nodes in
 * /dev, the driver's libraries in the usual library directories and its programs in the usual
 * bin directories, and for nvidia-caps' major in /proc/devices. Never fails: what is missing is
 * left out. */
void fatia_agent_cdi_discover(const char *root, struct fatia_cdi_host *h);

/* The char major named name in the text of /proc/devices ("Character devices:" section), or
 * -ENOENT. Pure. */
int fatia_agent_cdi_proc_major(const char *text, const char *name);

/* M of the "DeviceFileMinor: M" line of a MIG capability's access file
 * (/proc/driver/nvidia/capabilities/gpu<i>/mig/gi<g>[/ci<c>]/access), or -EINVAL. Pure. */
int fatia_agent_cdi_cap_minor(const char *text);

/* The spec for the devices of a ResourceSlice's spec.devices (gpu.nvidia.com's, as the device
 * controller publishes them). files_dir/<slice>/ holds a capped slice's vgpu.conf, ld.so.preload
 * and slice.acct (written by fatia_agent_cdi_write); lib is the interposer. root ("" for the
 * host) is where the host's files are: the hostPath of its device nodes and mounts is root's
 * path, the container's the host's own. 0 or -ENOMEM. */
int fatia_agent_cdi_spec(const struct fatia_cdi_host *h, const char *root, const json_t *devices,
                         const char *files_dir, const char *lib, json_t **ret);

/* Writes the spec of devices into dir/fatia.dev-gpu.json (atomically, 0644) and each capped
 * slice's files into dir/slices/<slice>/. 0 or -errno. */
int fatia_agent_cdi_write(const char *dir, const struct fatia_cdi_host *h, const char *root,
                          const json_t *devices, const char *lib);

#endif
