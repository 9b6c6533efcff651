/* SPDX-License-Identifier: MIT */
/* pool.c: the buffer pool's mapping and free lists */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "basic/macro.h"
#include "io/pool.h"

int pool_init(Pool *p, size_t slot_size, unsigned n_slots, size_t small_size, unsigned n_small)
{
        *p = (Pool){ .slot_size = slot_size, .n_slots = n_slots, .small_size = n_small ? small_size : 0,
                     .n_small = n_small };
        p->mem_size = slot_size * n_slots + p->small_size * n_small;
        if (p->mem_size == 0)
                return -EINVAL;
        /* cppcheck-suppress invalidFunctionArg ; -1 is the fd MAP_ANONYMOUS requires */
        p->mem = mmap(NULL, p->mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p->mem == MAP_FAILED) {
                p->mem = NULL;
                return -ENOMEM;
        }
        /* Huge pages where the kernel has them (THP "madvise" is Debian's default): an O_DIRECT read
         * into 4 KiB pages is one segment per page, and a virtio disk takes 254 segments per request,
         * so each 1 MiB read went to the device as two requests (1016 + 8 KiB; measured: 490 KiB per
         * request on average). In 2 MiB pages a read is a few segments and reaches the device whole.
         * Best effort: without THP the pool is as before. */
        (void)madvise(p->mem, p->mem_size, MADV_HUGEPAGE);

        p->free_map = calloc(MAX(DIV_ROUND_UP(n_slots, 64u), 1u), sizeof(uint64_t));
        p->small_free = calloc(MAX(n_small, 1u), sizeof(unsigned));
        if (!p->free_map || !p->small_free) {
                pool_deinit(p);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < n_slots; i++)
                pool_put(p, i);
        /* Pushed in reverse, so that the first taken is the first in memory. */
        for (unsigned i = n_small; i-- > 0;)
                pool_put(p, n_slots + i);
        return 0;
}

void pool_deinit(Pool *p)
{
        if (p->mem)
                (void)munmap(p->mem, p->mem_size);
        free(p->free_map);
        free(p->small_free);
        *p = (Pool){};
}

void pool_take(Pool *p, unsigned i)
{
        p->free_map[i / 64] &= ~(UINT64_C(1) << (i % 64));
        p->n_free--;
}

int pool_get(Pool *p)
{
        if (p->n_free == 0)
                return -ENOBUFS;
        for (unsigned w = 0;; w++)
                if (p->free_map[w]) {
                        unsigned i = w * 64 + (unsigned)__builtin_ctzll(p->free_map[w]);
                        pool_take(p, i);
                        return (int)i;
                }
}

int pool_get_small(Pool *p)
{
        if (p->n_small_free == 0)
                return -ENOBUFS;
        return (int)p->small_free[--p->n_small_free];
}

void pool_put(Pool *p, unsigned i)
{
        if (pool_is_small(p, i)) {
                p->small_free[p->n_small_free++] = i;
                return;
        }
        p->free_map[i / 64] |= UINT64_C(1) << (i % 64);
        p->n_free++;
}

bool pool_slot_is_free(const Pool *p, unsigned i)
{
        return p->free_map[i / 64] & (UINT64_C(1) << (i % 64));
}

unsigned pool_find_run(const Pool *p, unsigned want, unsigned *ret_first)
{
        unsigned best = 0, best_first = 0, run = 0;

        for (unsigned i = 0; i < p->n_slots; i++) {
                if (run == 0 && (i % 64) == 0 && p->free_map[i / 64] == 0) {
                        i += 63; /* a whole word taken */
                        continue;
                }
                if (!pool_slot_is_free(p, i)) {
                        run = 0;
                        continue;
                }
                run++;
                if (run > best) {
                        best = run;
                        best_first = i + 1 - run;
                        if (best >= want)
                                break;
                }
        }
        *ret_first = best_first;
        return MIN(best, want);
}

int pool_iovecs(const Pool *p, struct iovec **ret, unsigned *ret_n)
{
        bool one = p->mem_size <= POOL_REGISTER_MAX_BYTES;
        unsigned n = one ? 1 : p->n_slots + p->n_small;
        struct iovec *iov = calloc(n, sizeof(*iov));

        if (!iov)
                return -ENOMEM;
        if (one)
                iov[0] = (struct iovec){ .iov_base = p->mem, .iov_len = p->mem_size };
        else
                for (unsigned i = 0; i < n; i++)
                        iov[i] = (struct iovec){ .iov_base = pool_data(p, i),
                                                 .iov_len = pool_is_small(p, i) ? p->small_size : p->slot_size };
        *ret = iov;
        *ret_n = n;
        return one;
}
