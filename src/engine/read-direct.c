/* SPDX-License-Identifier: MIT */
/* read-direct.c: a cold file is read with O_DIRECT into the pool (a caller's fd through a reopened
 * description of our own), in requests that span several adjacent slots */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"

/*
 * A caller's fd, as a description of our own: O_DIRECT on the caller's would change theirs (their
 * reads would start failing on unaligned buffers). A readable one (O_RDONLY or O_RDWR: never more
 * than the caller could read; a write-only fd is not turned into a readable one) is reopened
 * read-only through /proc/self/fd, whose magic link reaches the open file itself, not a path, and is
 * kept only if it is the same regular file the first statx saw. -errno when it cannot be.
 *
 * The open must never wait, in a shard that serves everyone (engine.h): O_NONBLOCK makes an open
 * that would break a lease fail EWOULDBLOCK at once (N2: a caller's write lease on its own file held
 * the shard lease-break-time, 45 s, per file), and a file on an untrusted file system (whose open
 * asks its server) is not reopened at all. Either way the file is read buffered.
 */
static int fd_reopen_own(const FileSlot *f)
{
        char p[64];
        struct stat st;
        int fl, fd;

        if (f->untrusted || !S_ISREG(f->stx.stx_mode))
                return -EOPNOTSUPP;
        fl = fcntl(f->fd, F_GETFL);
        if (fl < 0)
                return -errno;
        if ((fl & O_ACCMODE) != O_RDONLY && (fl & O_ACCMODE) != O_RDWR)
                return -EBADF;
        (void)snprintf(p, sizeof(p), "/proc/self/fd/%d", f->fd);
        fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != f->stx.stx_ino ||
            major(st.st_dev) != f->stx.stx_dev_major || minor(st.st_dev) != f->stx.stx_dev_minor) {
                (void)close(fd); /* a local regular file: nothing to flush */
                return -ESTALE;
        }
        return fd;
}

/* O_DIRECT on our own fd (a caller's is reopened first), if the filesystem takes it with the
 * alignment our reads have: offsets and lengths in whole 4 KiB units, buffers page-aligned
 * (STATX_DIOALIGN says what the file needs). */
static bool file_set_direct(Shard *s, FileSlot *f)
{
        struct statx stx;
        uint32_t mem_align, off_align;
        int fl, fd = f->fd;

        if (f->fd_input && (fd = fd_reopen_own(f)) < 0)
                return false;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) < 0 || !(stx.stx_mask & STATX_DIOALIGN))
                goto refused;
        /* sys/stat.h takes struct statx from linux/stat.h, which has the 6.1 fields. */
        mem_align = stx.stx_dio_mem_align;
        off_align = stx.stx_dio_offset_align;
        if (mem_align == 0 || off_align == 0 || mem_align > 4096 || off_align > 4096 ||
            4096 % mem_align != 0 || 4096 % off_align != 0)
                goto refused;
        /* Our reopened description was opened O_NONBLOCK only so that the open could not wait: its
         * reads must not come back -EAGAIN from io_uring for data not in memory. */
        fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, (fd != f->fd ? fl & ~O_NONBLOCK : fl) | O_DIRECT) < 0)
                goto refused;
        if (fd != f->fd) {
                /* The caller's fd goes the way every fd of ours goes: through the ring. The file
                 * still holds one fd, so n_fds stays. */
                close_anon(s, f->fd);
                f->fd = fd;
                f->fd_input = false;
        }
        return true;

refused:
        if (fd != f->fd)
                (void)close(fd);
        return false;
}

/*
 * How much one read of a file asks for. Cold O_DIRECT reads on this kind of device (a virtio disk,
 * NVMe) get faster with the size of each request, up to a few MiB, and not with more requests of the
 * same size: 1 MiB x 16 in flight read 1.2-1.5 GB/s, 4 MiB x 16 up to 2.4, fio --direct=1 2.0-2.6
 * (bench/ANALYSIS.md, C1/C2). So an O_DIRECT file reads in requests of EngineConfig.direct_request
 * (4 MiB), each filling that many adjacent pool slots, which are then hashed slot by slot as before:
 *  - O_DIRECT at all only where file_set_direct() found STATX_DIOALIGN alignments that divide 4 KiB:
 *    a span starts at a slot and is as aligned as one;
 *  - at most a quarter of the pool per request, so that several requests are in flight and the
 *    workers have slots to hash while the device fills the next ones (s->max_span);
 *  - never more than the rest of the file (direct_start()), so a 1.5 MiB file is one 2-slot read;
 *  - one slot per read when the pool is registered slot by slot (larger than 1 GiB).
 * Buffered and mapped files keep one slot per read: the page cache's readahead sizes their I/O.
 */
static bool direct_setup(Shard *s, FileSlot *f)
{
        if (!file_set_direct(s, f))
                return false;
        f->span = f->chunk == s->buffer_size ? s->max_span : 1;
        return true;
}

static Buffer *direct_start(Shard *s, FileSlot *f)
{
        unsigned n = 1, first = 0;
        Buffer *b;

        if (f->span > 1) {
                unsigned want = (unsigned)MIN((uint64_t)f->span, DIV_ROUND_UP(f->size - f->issue_off, f->chunk));
                n = pool_find_run(&s->pool, want, &first);
                /* Fewer adjacent slots than wanted only when the device would otherwise have nothing
                 * of this file to read; with a read in flight, wait until the slots the workers hand
                 * back form a whole run (they come back in file order, so they do). */
                if (n == 0 || (n < want && f->reads_in_flight > 0))
                        return NULL;
                b = buffer_take(s, f, first);
        } else if (!(b = buffer_get(s, f)))
                return NULL;

        file_queue_buffer(s, f, b);
        if (n > 1) {
                /* One read fills slots first..first+n-1, adjacent in memory: the leader b asks for all
                 * of it; the followers wait in the FIFO, marked in flight, until span_split(). */
                for (unsigned i = 1; i < n; i++) {
                        Buffer *x = buffer_take(s, f, first + i);
                        file_queue_buffer(s, f, x);
                        x->in_flight = true;
                }
                b->want = (uint32_t)(f->issue_off - b->offset);
                b->span = n;
        }
        /* O_DIRECT lengths are whole blocks: the last read asks past the end and gets the rest of the
         * file (slots are multiples of 4 KiB, so this fits). */
        b->want = (uint32_t)ALIGN_TO((uint64_t)b->want, (uint64_t)4096);
        f->reads_in_flight++;
        file_issue_read(s, f, b);
        return b;
}

/* O_DIRECT refused this read after all (an alignment the statx did not announce, a short read that
 * left an unaligned offset): finish the file through the page cache. Other reads issued O_DIRECT
 * before the switch come back the same way and are simply issued again. */
bool read_direct_einval(Shard *s, FileSlot *f, Buffer *b)
{
        if (f->caller_direct)
                return false; /* the caller's open file description: never changed, so an error */
        if (f->strategy == ENGINE_READ_DIRECT) {
                int fl = fcntl(f->fd, F_GETFL);
                if (fl >= 0 && fcntl(f->fd, F_SETFL, fl & ~O_DIRECT) >= 0) {
                        f->strategy = ENGINE_READ_BUFFERED;
                        f->span = 1;
                }
        }
        if (f->strategy != ENGINE_READ_BUFFERED)
                return false;
        b->want = (uint32_t)MIN((uint64_t)b->want, f->size - b->offset);
        file_issue_read(s, f, b);
        return true;
}

const ReadStrategyOps read_direct_ops = READ_STRATEGY_OPS(ENGINE_READ_DIRECT, direct);
