/* SPDX-License-Identifier: MIT */
/* strategy.c: how a regular file is read, decided once when it opens (see EngineReadStrategy) */
#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "io/pagecache.h"

const ReadStrategyOps *read_strategy_ops(EngineReadStrategy s)
{
        switch (s) {
        case ENGINE_READ_MMAP:
                return &read_mmap_ops;
        case ENGINE_READ_DIRECT:
                return &read_direct_ops;
        default:
                return &read_buffered_ops;
        }
}

/* Picks how a regular file is read (see EngineReadStrategy): one cachestat per file above
 * ENGINE_PROBE_MIN, then the chosen strategy's setup; BUFFERED when that refuses.
 *
 * A wholly cached file of ENGINE_MAP_MIN or more is mapped whatever the algorithm: its shard both
 * reads and hashes it, so a copy out of the page cache is time the hashing waits for (512 MiB hot,
 * one shard: XXH3 11.5 GB/s read, 17.0 mapped; BLAKE3 8.8 and 15.1; SHA-256 1.86 and 2.00). With
 * one I/O thread copying for the workers, reads had beaten the mapping for the fastest hashes.
 *
 * A background engine probes every file, small ones too: one whose pages are all cached is read
 * past its disk watch (FileSlot.cached, diskwatch.h), which is what lets a background job over a hot
 * set run as fast as a normal one. */
void file_choose_strategy(Shard *s, FileSlot *f)
{
        EngineReadStrategy want = f->job->options.strategy;
        bool dontcache = f->job->options.dontcache;
        bool plain = want == ENGINE_READ_BUFFERED || (want == ENGINE_READ_AUTO && f->size < ENGINE_PROBE_MIN);
        PageCacheState pc;
        bool known, all_cached, cold;

        f->strategy = ENGINE_READ_BUFFERED;
        f->cached = false;
        /* A file system that may hang is read only by the ring: no probe (mincore maps the file), no
         * mapping (its faults would call the server from a worker), no O_DIRECT switch. */
        if (f->untrusted || (plain && !s->config.background))
                goto buffered;

        known = pagecache_probe(f->fd, f->size, &pc) >= 0;
        all_cached = known && pc.cached >= pc.pages;
        /* O_DIRECT reads (the caller's fd, or a DIRECT strategy) go to the disk whatever is cached. */
        f->cached = all_cached && !f->caller_direct;
        if (plain)
                goto buffered;
        /* Cold: (almost) nothing cached, and nothing dirty that O_DIRECT would first have to flush. */
        cold = known && pc.cached <= pc.pages / 16 && pc.dirty == 0 && pc.writeback == 0;

        /* A mapping of a partly cached file would fault the rest in: not cache-neutral. */
        if ((want == ENGINE_READ_MMAP && (!dontcache || all_cached)) ||
            (want == ENGINE_READ_AUTO && all_cached && f->size >= ENGINE_MAP_MIN)) {
                if (read_mmap_ops.setup(s, f)) {
                        f->strategy = ENGINE_READ_MMAP;
                        return;
                }
        }
        if (want == ENGINE_READ_DIRECT || (want == ENGINE_READ_AUTO && cold)) {
                if (read_direct_ops.setup(s, f)) {
                        f->strategy = ENGINE_READ_DIRECT;
                        f->cached = false;
                        return;
                }
        }
buffered:
        if (f->caller_direct) {
                /* The caller opened it O_DIRECT: whole aligned blocks into the pool, as DIRECT reads
                 * (read_direct_setup() without the switch, which is already made). */
                f->strategy = ENGINE_READ_DIRECT;
                f->span = f->chunk == s->buffer_size ? s->max_span : 1;
                return;
        }
        (void)read_buffered_ops.setup(s, f);
}
