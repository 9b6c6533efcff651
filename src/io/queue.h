/* SPDX-License-Identifier: MIT */
/* queue.h: bounded single-producer/single-consumer lock-free ring, and a futex-based sleep/wake pair */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

/*
 * Exactly one thread pushes and exactly one thread pops. The producer publishes an element with a
 * release store of `tail`; the consumer acquires it, so the element's contents (and everything the
 * producer wrote before the push, such as a buffer's data) are visible to the consumer. Each side
 * keeps a cached copy of the other side's index to avoid touching the shared cache line per item.
 * The element size is fixed at creation; capacity is a power of two.
 */
typedef struct SpscQueue {
        _Alignas(CACHELINE) _Atomic size_t head;  /* next to pop; written by the consumer */
        size_t tail_cache;                        /* consumer's view of tail */
        _Alignas(CACHELINE) _Atomic size_t tail;  /* next to fill; written by the producer */
        size_t head_cache;                        /* producer's view of head */
        _Alignas(CACHELINE) size_t mask;
        size_t elem_size;
        uint8_t *slots;
} SpscQueue;

int spsc_queue_init(SpscQueue *q, size_t capacity, size_t elem_size);
void spsc_queue_deinit(SpscQueue *q);

/* Producer side. Returns false when full (back-pressure, not an error). */
static inline bool spsc_queue_push(SpscQueue *q, const void *elem)
{
        size_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);

        if (tail - q->head_cache > q->mask) {
                q->head_cache = atomic_load_explicit(&q->head, memory_order_acquire);
                if (tail - q->head_cache > q->mask)
                        return false;
        }
        memcpy(q->slots + (tail & q->mask) * q->elem_size, elem, q->elem_size);
        atomic_store_explicit(&q->tail, tail + 1, memory_order_release);
        return true;
}

/* Consumer side. Returns false when empty. */
static inline bool spsc_queue_pop(SpscQueue *q, void *ret_elem)
{
        size_t head = atomic_load_explicit(&q->head, memory_order_relaxed);

        if (head == q->tail_cache) {
                q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
                if (head == q->tail_cache)
                        return false;
        }
        memcpy(ret_elem, q->slots + (head & q->mask) * q->elem_size, q->elem_size);
        atomic_store_explicit(&q->head, head + 1, memory_order_release);
        return true;
}

/* Either side; a hint only. */
static inline bool spsc_queue_empty(SpscQueue *q)
{
        return atomic_load_explicit(&q->head, memory_order_acquire) ==
               atomic_load_explicit(&q->tail, memory_order_acquire);
}

/*
 * A one-waiter parking spot. The waiter announces itself (parker_prepare), re-checks its condition,
 * then parks; a waker that changed the condition calls parker_wake() afterwards. The sequentially
 * consistent exchange on `state` orders "condition changed" against "waiter announced", so a wake is
 * never lost, and wakers pay no syscall while the waiter is busy.
 */
typedef struct Parker {
        _Alignas(CACHELINE) _Atomic uint32_t state;  /* 0 running, 1 about to sleep / sleeping */
} Parker;

static inline void parker_prepare(Parker *p)
{
        atomic_store_explicit(&p->state, 1, memory_order_seq_cst);
}

static inline void parker_cancel(Parker *p)
{
        atomic_store_explicit(&p->state, 0, memory_order_relaxed);
}

/* For wakers that signal by other means (an eventfd): true if this caller must signal. The fence
 * orders the waker's earlier stores (the condition) before its load of `state` (Dekker). */
static inline bool parker_claim_wake(Parker *p)
{
        atomic_thread_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&p->state, memory_order_relaxed) == 0)
                return false;
        return atomic_exchange_explicit(&p->state, 0, memory_order_seq_cst) == 1;
}

/* Sleeps on a futex until woken (or a spurious wake-up). */
void parker_park(Parker *p);
/* Wakes a parker_park() waiter if it announced itself; one fence and a load otherwise. */
void parker_wake(Parker *p);
