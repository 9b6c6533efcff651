/* SPDX-License-Identifier: MIT */
/* pagecache.h: how much of a file is in the page cache (cachestat(2)), to pick how to read it */
#pragma once

#include <stdint.h>

typedef struct PageCacheState {
        uint64_t pages;      /* pages spanned by the range asked about */
        uint64_t cached;     /* of those, in the page cache */
        uint64_t dirty;      /* cached and not written back yet */
        uint64_t writeback;  /* being written back */
} PageCacheState;

/* Asks the kernel about [0, size) of fd. -ENOSYS on kernels before 6.5 (or a seccomp filter that
 * forbids cachestat), -EOPNOTSUPP for files without a page cache (e.g. some FUSE modes). */
int pagecache_probe(int fd, uint64_t size, PageCacheState *ret);
