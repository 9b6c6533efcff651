/* SPDX-License-Identifier: MIT */
/* pagecache.c: cachestat(2) without a libc wrapper (glibc 2.36 has none) */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/macro.h"
#include "io/pagecache.h"

#ifndef __NR_cachestat
#define __NR_cachestat 451 /* the same number on every architecture (generic table since 6.5) */
#endif

/* The kernel's uapi structs (linux/mman.h of 6.5+; Debian 12's headers predate them). */
struct fhash_cachestat_range {
        uint64_t off;
        uint64_t len;
};

struct fhash_cachestat {
        uint64_t nr_cache;
        uint64_t nr_dirty;
        uint64_t nr_writeback;
        uint64_t nr_evicted;
        uint64_t nr_recently_evicted;
};

static uint64_t page_size(void)
{
        long page = sysconf(_SC_PAGESIZE);

        return page > 0 ? (uint64_t)page : 4096;
}

int pagecache_probe_mincore(int fd, uint64_t size, PageCacheState *ret)
{
        uint64_t pages = DIV_ROUND_UP(size, page_size()), cached = 0;
        unsigned char *vec;
        void *map;
        int r = 0;

        *ret = (PageCacheState){};
        if (size == 0)
                return 0;
        if (size > SIZE_MAX)
                return -EFBIG;
        /* A mapping without MAP_POPULATE touches nothing: mincore() only looks at the page cache. */
        map = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
        if (map == MAP_FAILED)
                return -errno;
        vec = malloc((size_t)pages);
        if (!vec)
                r = -ENOMEM;
        else if (mincore(map, (size_t)size, vec) < 0)
                r = -errno;
        else
                for (uint64_t i = 0; i < pages; i++)
                        cached += vec[i] & 1;
        free(vec);
        (void)munmap(map, (size_t)size);
        if (r < 0)
                return r;
        *ret = (PageCacheState){ .pages = pages, .cached = cached };
        return 0;
}

int pagecache_probe(int fd, uint64_t size, PageCacheState *ret)
{
        static atomic_bool no_cachestat;
        struct fhash_cachestat_range range = { .off = 0, .len = size };
        struct fhash_cachestat cs = {};

        if (size == 0) {
                *ret = (PageCacheState){};
                return 0;
        }
        if (no_cachestat)
                return pagecache_probe_mincore(fd, size, ret);
        if (syscall(__NR_cachestat, fd, &range, &cs, 0) < 0) {
                if (errno != ENOSYS && errno != EPERM)
                        return -errno;
                no_cachestat = true; /* the same answer every time: ask mincore from now on */
                return pagecache_probe_mincore(fd, size, ret);
        }
        *ret = (PageCacheState){
                .pages = DIV_ROUND_UP(size, page_size()),
                .cached = cs.nr_cache,
                .dirty = cs.nr_dirty,
                .writeback = cs.nr_writeback,
        };
        return 0;
}
