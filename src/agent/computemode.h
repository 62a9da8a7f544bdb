/*
 * agent/computemode.h: a GPU's compute mode held at EXCLUSIVE_PROCESS while the agent's MPS
 * daemon serves it (--agent gpu-compute-mode=manage), and given back afterwards.
 *
 * With the GPU in EXCLUSIVE_PROCESS only one process holds a context on it: the MPS server. A
 * tenant that drops CUDA_MPS_PIPE_DIRECTORY then cannot open a context of its own beside the
 * daemon (it would escape MPS's pinned memory limit and thread percentage). Setting the mode
 * needs root; it lasts until reboot. The mode the GPU had is kept in a state file, so that an
 * agent restarted while its daemon runs gives back the right one. Without `manage` nothing is
 * changed and the GPU memory watchdog is the backstop (docs/agent.md).
 */
#ifndef FATIA_AGENT_COMPUTEMODE_H
#define FATIA_AGENT_COMPUTEMODE_H

#include <stddef.h>

#define FATIA_COMPUTE_MODE_DEFAULT           0
#define FATIA_COMPUTE_MODE_PROHIBITED        2
#define FATIA_COMPUTE_MODE_EXCLUSIVE_PROCESS 3

/* Puts the GPU of that UUID in EXCLUSIVE_PROCESS, first writing its present mode to state_file
 * (kept as it is when the file exists already: the mode was taken by an earlier agent). nvml:
 * the library (NULL: libnvidia-ml.so.1). 0, or -FATIA_E_NODRIVER / -FATIA_E_DRIVER / -errno with
 * why (nothing changed then). */
int fatia_agent_compute_mode_hold(const char *nvml, const char *uuid, const char *state_file,
                                  char *why, size_t why_n);

/* Sets the mode state_file remembers and removes the file; no file: nothing to give back. 0 or
 * an error as above (the file is kept, so that a later call can retry). */
int fatia_agent_compute_mode_release(const char *nvml, const char *uuid, const char *state_file,
                                     char *why, size_t why_n);

#endif
