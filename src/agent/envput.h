/*
 * agent/envput.h: how the agent's modules hand environment variables to whoever starts a process.
 *
 * MPS control (mps.h) and the memory-cap interposer (vgpu_slice.h) each know which variables a
 * process of theirs needs; the executor owns the environment. They meet through this callback,
 * so that neither module imposes an environment type on the executor.
 */
#ifndef FATIA_AGENT_ENVPUT_H
#define FATIA_AGENT_ENVPUT_H

/* Sets name=value in the environment being built (replacing an earlier value). 0 or -errno; a
 * negative return stops the caller, which returns it. */
typedef int (*fatia_env_put_fn)(void *ctx, const char *name, const char *value);

#endif
