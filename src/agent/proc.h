/*
 * agent/proc.h: what the node agent knows of a process it did not start in this life: its pid
 * plus its start time, and the few /proc facts needed to tell it from a process that reused the
 * pid.
 *
 * A pid alone never identifies a process across an agent restart: the kernel reuses pids. The
 * pair (pid, start time in clock ticks since boot, field 22 of /proc/PID/stat) does, on one boot.
 * Every signal the agent sends to a process it adopted goes through fatia_proc_signal, which opens
 * a pidfd first and then checks the start time, so that a process that exits and is replaced in
 * between is never signalled.
 */
#ifndef FATIA_AGENT_PROC_H
#define FATIA_AGENT_PROC_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

struct fatia_proc_stat {
    char state;     /* 'R', 'S', 'D', 'Z', 'T', ... */
    pid_t ppid;     /* parent */
    pid_t pgrp;     /* process group */
    pid_t session;  /* session */
    uint64_t start; /* clock ticks after boot */
};

/* Reads /proc/PID/stat. 0, -ESRCH (no such process), -EPROTO (unexpected format), -errno. */
int fatia_proc_stat(pid_t pid, struct fatia_proc_stat *ret);

/* The start time of pid (clock ticks after boot). 0 or fatia_proc_stat's error. */
int fatia_proc_start_time(pid_t pid, uint64_t *ret_start);

/* True when pid exists, is not a zombie and started at start (start 0: any start time). */
bool fatia_proc_alive(pid_t pid, uint64_t start);

/* Sends sig to pid only if it is still the process that started at start: a pidfd is opened, the
 * start time checked, and the signal sent through the pidfd (so a pid reused after the check is
 * never hit). 0, -ESRCH (gone, a zombie, or another process now), -errno. */
int fatia_proc_signal(pid_t pid, uint64_t start, int sig);

/* Whether a process other than a zombie is in process group pgrp of session sid, started at or
 * after min_start (clock ticks; 0: any). Scans /proc. */
bool fatia_proc_group_alive(pid_t pgrp, pid_t sid, uint64_t min_start);

/* Sends sig to every live process of process group pgrp in session sid started at or after
 * min_start, one by one through fatia_proc_signal (for groups whose leader the caller did not
 * start and cannot vouch for). Returns the number signalled. */
int fatia_proc_group_signal(pid_t pgrp, pid_t sid, uint64_t min_start, int sig);

/* The boot id (/proc/sys/kernel/random/boot_id), so start times from another boot are never
 * compared. 0 or -errno. */
int fatia_proc_boot_id(char *buf, size_t n);

#endif
