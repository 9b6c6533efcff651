/* SPDX-License-Identifier: MIT */
/* pool.h: the buffer pool: one mapping cut into equal slots and small slots, free lists by index */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * One anonymous mapping (in transparent huge pages where the kernel has them) holding n_slots slots
 * of slot_size bytes, then n_small slots of small_size bytes. Slots are named by index: 0..n_slots-1
 * are the pool proper, n_slots.. the small ones. The pool only hands indices out and takes them
 * back; what a slot is used for, and who owns it meanwhile, is its caller's business. Not thread-safe:
 * one owner.
 */
typedef struct Pool {
        uint8_t *mem;
        size_t mem_size;
        size_t slot_size;
        unsigned n_slots;
        size_t small_size;
        unsigned n_small;

        uint64_t *free_map;     /* bit i set: slot i is free */
        unsigned n_free;
        unsigned *small_free;   /* stack of free small slots (indices from n_slots) */
        unsigned n_small_free;
} Pool;

/* The kernel's cap on one registered buffer (io_buffer_validate()). */
#define POOL_REGISTER_MAX_BYTES ((size_t)1 << 30)

int pool_init(Pool *p, size_t slot_size, unsigned n_slots, size_t small_size, unsigned n_small);
void pool_deinit(Pool *p);

static inline uint8_t *pool_data(const Pool *p, unsigned i)
{
        return i < p->n_slots ? p->mem + (size_t)i * p->slot_size
                              : p->mem + (size_t)p->n_slots * p->slot_size + (size_t)(i - p->n_slots) * p->small_size;
}

static inline bool pool_is_small(const Pool *p, unsigned i)
{
        return i >= p->n_slots;
}

/* The free slot with the lowest index (slots that went back a moment ago are reused first, and
 * stay warm in the cache), or -ENOBUFS. */
int pool_get(Pool *p);
/* Takes slot i, which must be free. */
void pool_take(Pool *p, unsigned i);
/* A free small slot, or -ENOBUFS. */
int pool_get_small(Pool *p);
/* Gives slot i (either kind) back. */
void pool_put(Pool *p, unsigned i);
bool pool_slot_is_free(const Pool *p, unsigned i);
/* The first run of `want` adjacent free slots, or else the longest shorter one: its first slot in
 * *ret_first, its length returned (0: none free). Linear in the pool. */
unsigned pool_find_run(const Pool *p, unsigned want, unsigned *ret_first);

/* What to register with the ring: one iovec for the whole mapping when the kernel takes it as one
 * buffer (then a READ_FIXED may address any range, across slots), else one per slot. The caller
 * frees *ret. Returns whether it is one buffer, or -ENOMEM. */
int pool_iovecs(const Pool *p, struct iovec **ret, unsigned *ret_n);
