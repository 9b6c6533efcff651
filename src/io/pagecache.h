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

/* Asks the kernel about [0, size) of fd: cachestat(2), or where that is missing (before 6.5) or
 * forbidden (a seccomp allow-list written before it existed, such as systemd 252's @system-service)
 * mincore(2) over a mapping of the file, which cannot tell dirty pages. Returns 0 or -errno. */
int pagecache_probe(int fd, uint64_t size, PageCacheState *ret);
/* The mincore(2) way alone, for tests. */
int pagecache_probe_mincore(int fd, uint64_t size, PageCacheState *ret);
