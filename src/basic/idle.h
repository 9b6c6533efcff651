/* SPDX-License-Identifier: MIT */
/* idle.h: a thread that takes only what nobody else wants: SCHED_IDLE CPU time, the idle I/O class */
#pragma once

#include <linux/ioprio.h>
#include <stdbool.h>

/* The I/O priority of a background request (io_uring's per-request sqe->ioprio, ioprio_set(2)): the
 * block scheduler (mq-deadline, BFQ) serves it only when no request of a higher class waits. */
#define IO_PRIO_IDLE ((unsigned)IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0))

/* Moves the calling thread (not the process) to SCHED_IDLE and to the idle I/O class. Unprivileged,
 * and for good: a thread needs RLIMIT_NICE or CAP_SYS_NICE to leave SCHED_IDLE again. 0 or -errno
 * (-EPERM under a seccomp filter without @resources). */
int thread_make_idle(void);
/* Whether the calling thread runs SCHED_IDLE at the idle I/O class. */
bool thread_is_idle(void);
