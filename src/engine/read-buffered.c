/* SPDX-License-Identifier: MIT */
/* read-buffered.c: copies through the page cache into pool buffers; every file can be read so */
#include <fcntl.h>

#include "engine/engine-internal.h"

/* Readahead advice only pays off for files longer than one buffer. */
static bool buffered_setup(Shard *s, FileSlot *f)
{
        if (f->size > s->buffer_size) {
                ioring_fadvise(s->ring, f->fd, 0, f->size, POSIX_FADV_SEQUENTIAL, TAG(f, OP_FADVISE));
                f->ops++;
        }
        return true;
}

static Buffer *buffered_start(Shard *s, FileSlot *f)
{
        Buffer *b = buffer_get_for(s, f, f->stream ? UINT64_MAX : f->size);

        if (!b)
                return NULL;
        file_queue_buffer(s, f, b);
        f->reads_in_flight++;
        file_issue_read(s, f, b);
        return b;
}

const ReadStrategyOps read_buffered_ops = READ_STRATEGY_OPS(ENGINE_READ_BUFFERED, buffered);
