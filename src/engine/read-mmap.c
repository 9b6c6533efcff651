/* SPDX-License-Identifier: MIT */
/* read-mmap.c: a wholly cached file is mapped and hashed in place, window by window, no copy */
#include <stdint.h>
#include <sys/mman.h>

#include "engine/engine-internal.h"

static bool mmap_setup(Shard *s, FileSlot *f)
{
        void *p;

        if (f->size > SIZE_MAX)
                return false;
        p = mmap(NULL, (size_t)f->size, PROT_READ, MAP_SHARED, f->fd, 0);
        if (p == MAP_FAILED)
                return false;
        f->map = p;
        f->map_len = (size_t)f->size;
        /* No copy, so a window costs only its hand-off: larger windows for larger files (up to
         * 8 buffers: 8 MiB by default), keeping at least 32 of them so that both workers share a
         * BLAKE3 file evenly to the end and progress moves. Powers of two, as BLAKE3 pieces must be. */
        while (f->chunk < 8 * (uint64_t)s->buffer_size && f->size / (f->chunk * 2) >= 32)
                f->chunk *= 2;
        return true;
}

/* No read: the buffer stands for a window of the mapping, ready at once. The pool still bounds how
 * much of the file is queued at the workers. */
static Buffer *mmap_start(Shard *s, FileSlot *f)
{
        Buffer *b = buffer_get(s, f);

        if (!b)
                return NULL;
        file_queue_buffer(s, f, b);
        b->view = f->map + b->offset;
        b->mapped = true;
        b->got = b->want;
        b->done = true;
        return b;
}

const ReadStrategyOps read_mmap_ops = READ_STRATEGY_OPS(ENGINE_READ_MMAP, mmap);
