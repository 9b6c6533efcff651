/* SPDX-License-Identifier: MIT */
/* mapguard.c: a SIGBUS handler that jumps out of guarded reads of mapped files */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "io/mapguard.h"

static struct sigaction old_action;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;

/* The guard of the current thread: set only inside mapguard_run(). Static TLS of the executable,
 * so reading it from the signal handler is safe. */
static _Thread_local sigjmp_buf *guard_jmp;
static _Thread_local const uint8_t *guard_lo, *guard_hi;

static void on_sigbus(int sig, siginfo_t *si, void *ucontext)
{
        const uint8_t *a = si->si_addr;

        if (guard_jmp && a >= guard_lo && a < guard_hi)
                siglongjmp(*guard_jmp, 1);

        /* Not ours: hand the fault to the previous disposition. Returning re-runs the access. */
        if (old_action.sa_flags & SA_SIGINFO) {
                if (old_action.sa_sigaction) {
                        old_action.sa_sigaction(sig, si, ucontext);
                        return;
                }
        } else if (old_action.sa_handler != SIG_DFL && old_action.sa_handler != SIG_IGN) {
                old_action.sa_handler(sig);
                return;
        }
        (void)sigaction(SIGBUS, &(struct sigaction){ .sa_handler = SIG_DFL }, NULL);
}

int mapguard_install(void)
{
        struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_NODEFER }, cur;
        int r = 0;

        sigemptyset(&sa.sa_mask);
        pthread_mutex_lock(&install_lock);
        /* Someone may have replaced the handler since (a test framework does, around each test):
         * install again over whatever is there now, and chain to that. */
        if (sigaction(SIGBUS, NULL, &cur) < 0 ||
            (!((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus) && sigaction(SIGBUS, &sa, &old_action) < 0))
                r = -errno;
        pthread_mutex_unlock(&install_lock);
        return r;
}

int mapguard_run(const void *p, size_t len, void (*fn)(void *userdata), void *userdata)
{
        sigjmp_buf jmp;

        if (sigsetjmp(jmp, 1) != 0) {
                guard_jmp = NULL;
                return -EFAULT;
        }
        guard_lo = p;
        guard_hi = (const uint8_t *)p + len;
        guard_jmp = &jmp;
        fn(userdata);
        guard_jmp = NULL;
        return 0;
}
