/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/queue.h"

int spsc_queue_init(SpscQueue *q, size_t capacity, size_t elem_size)
{
        size_t cap = 1;

        if (capacity == 0 || elem_size == 0)
                return -EINVAL;
        while (cap < capacity)
                cap <<= 1;

        *q = (SpscQueue){ .mask = cap - 1, .elem_size = elem_size };
        q->slots = calloc(cap, elem_size);
        if (!q->slots)
                return -ENOMEM;
        return 0;
}

void spsc_queue_deinit(SpscQueue *q)
{
        free(q->slots);
        q->slots = NULL;
}

void parker_park(Parker *p)
{
        /* FUTEX_WAIT returns at once if state is no longer 1 (a wake raced us): no lost wake-up. */
        while (atomic_load_explicit(&p->state, memory_order_acquire) == 1)
                (void)syscall(SYS_futex, &p->state, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
}

void parker_wake(Parker *p)
{
        if (parker_claim_wake(p))
                (void)syscall(SYS_futex, &p->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
