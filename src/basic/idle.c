/* SPDX-License-Identifier: MIT */
/* idle.c: a thread that takes only what nobody else wants: SCHED_IDLE CPU time, the idle I/O class */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/idle.h"

/* glibc has no wrapper for either call. IOPRIO_WHO_PROCESS with who 0 is the calling thread: the
 * kernel keeps an I/O priority per task, as it keeps the scheduling policy. */
static int ioprio_set_self(unsigned prio)
{
        return syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, (int)prio) < 0 ? -errno : 0;
}

static int ioprio_get_self(void)
{
        long r = syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);

        return r < 0 ? -errno : (int)r;
}

int thread_make_idle(void)
{
        int k;

        /* SCHED_IDLE rather than nice 19: a nice-19 thread still takes 1.5% of a busy core per
         * runnable thread of nice 0 (weights 15 and 1024) and preempts them on wake-up; an idle one
         * runs only when nothing else on its core wants to, and anything that wakes preempts it. */
        k = -pthread_setschedparam(pthread_self(), SCHED_IDLE, &(struct sched_param){ .sched_priority = 0 });
        if (k < 0)
                return k;
        /* The thread's own reads (the pread fallback, statx, opens) and the io-wq workers its ring
         * creates from now on inherit it; io_uring's reads carry it per request as well. */
        return ioprio_set_self(IO_PRIO_IDLE);
}

bool thread_is_idle(void)
{
        struct sched_param p;
        int policy;

        if (pthread_getschedparam(pthread_self(), &policy, &p) != 0 || policy != SCHED_IDLE)
                return false;
        return ioprio_get_self() == (int)IO_PRIO_IDLE;
}
