/* SPDX-License-Identifier: MIT */
/* pagecache.c: cachestat(2) without a libc wrapper (glibc 2.36 has none) */
#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "macro.h"
#include "pagecache.h"

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

int pagecache_probe(int fd, uint64_t size, PageCacheState *ret)
{
        struct fhash_cachestat_range range = { .off = 0, .len = size };
        struct fhash_cachestat cs = {};
        long page = sysconf(_SC_PAGESIZE);

        if (size == 0) {
                *ret = (PageCacheState){};
                return 0;
        }
        if (syscall(__NR_cachestat, fd, &range, &cs, 0) < 0)
                return -errno;
        *ret = (PageCacheState){
                .pages = DIV_ROUND_UP(size, (uint64_t)(page > 0 ? page : 4096)),
                .cached = cs.nr_cache,
                .dirty = cs.nr_dirty,
                .writeback = cs.nr_writeback,
        };
        return 0;
}
