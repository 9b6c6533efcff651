/* SPDX-License-Identifier: MIT */
/* diskwatch.c: a background engine's view of the disks it reads: whether anybody else is using them */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/macro.h"
#include "engine/diskwatch.h"
#include "engine/engine-internal.h"

void diskwatch_init(DiskWatch *w, bool watch)
{
        *w = (DiskWatch){ .self_io = -1 };
        pthread_mutex_init(&w->lock, NULL);
        for (unsigned i = 0; i < DISKWATCH_MAX; i++)
                w->fds[i] = -1;
        /* Opened now: under fhashd's ProtectProc=invisible our own /proc entries stay visible. */
        if (watch)
                w->self_io = open("/proc/self/io", O_RDONLY | O_CLOEXEC);
}

void diskwatch_done(DiskWatch *w)
{
        for (unsigned i = 0; i < DISKWATCH_MAX; i++)
                safe_close(w->fds[i]);
        safe_close(w->self_io);
        pthread_mutex_destroy(&w->lock);
}

/* The sysfs "stat" of the whole disk a block device is on (a partition's requests are its disk's). */
static int disk_open(unsigned major, unsigned minor)
{
        char path[64];
        int fd, dfd;

        (void)snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major, minor);
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        fd = openat(dfd, faccessat(dfd, "partition", F_OK, 0) == 0 ? "../stat" : "stat", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                fd = -errno;
        close(dfd);
        return fd;
}

void diskwatch_add(DiskWatch *w, const FileSlot *f)
{
        uint64_t dev = (uint64_t)makedev(f->stx.stx_dev_major, f->stx.stx_dev_minor) + 1;

        if (w->self_io < 0 || !f->stat_ok || f->stx.stx_dev_major == 0)
                return; /* tmpfs, overlay and the like: no disk of their own */
        for (unsigned i = 0; i < DISKWATCH_MAX; i++)
                if (atomic_load_explicit(&w->devs[i], memory_order_acquire) == dev)
                        return;
        pthread_mutex_lock(&w->lock);
        for (unsigned i = 0; i < DISKWATCH_MAX; i++) {
                uint64_t cur = atomic_load_explicit(&w->devs[i], memory_order_relaxed);
                if (cur == dev)
                        break;
                if (cur != 0)
                        continue;
                w->fds[i] = disk_open(f->stx.stx_dev_major, f->stx.stx_dev_minor);
                atomic_store_explicit(&w->devs[i], dev, memory_order_release);
                /* Its past is nobody's business: a first sample now, and nothing issued until a
                 * second says whether somebody else is using it. */
                w->sampled = false;
                atomic_store_explicit(&w->next_sample, 0, memory_order_relaxed);
                break;
        }
        pthread_mutex_unlock(&w->lock);
}

/* A number after key in /proc/self/io ("read_bytes: 123"). */
static bool io_field(const char *buf, const char *key, uint64_t *ret)
{
        const char *p = strstr(buf, key);
        char *end;
        unsigned long long v;

        if (!p || p[strlen(key)] != ':')
                return false;
        p += strlen(key) + 1;
        errno = 0;
        v = strtoull(p, &end, 10);
        if (end == p || errno != 0)
                return false;
        *ret = v;
        return true;
}

/* Bytes the disks moved (sectors read, written, discarded) minus those this process asked for; under
 * w->lock. */
static bool foreign_bytes(DiskWatch *w, uint64_t *ret)
{
        char buf[512];
        uint64_t disks = 0, rd = 0, wr = 0, cw = 0;
        ssize_t n;

        for (unsigned i = 0; i < DISKWATCH_MAX; i++) {
                uint64_t v[17] = {};
                if (w->fds[i] < 0)
                        continue;
                n = pread(w->fds[i], buf, sizeof(buf) - 1, 0);
                if (n <= 0)
                        continue;
                buf[n] = '\0';
                /* Documentation/block/stat.rst: reads, merges, sectors, ms; writes ...; in flight,
                 * ...; discards, merges, sectors, ms; flushes, ms. */
                const char *p = buf;
                unsigned k;

                for (k = 0; k < 14; k++) {
                        char *end;
                        unsigned long long x;

                        errno = 0;
                        x = strtoull(p, &end, 10);
                        if (end == p || errno != 0)
                                break;
                        v[k] = x;
                        p = end;
                }
                if (k < 7)
                        continue;
                disks += (v[2] + v[6] + v[13]) * 512;
        }
        n = pread(w->self_io, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return false;
        buf[n] = '\0';
        if (!io_field(buf, "\nread_bytes", &rd) || !io_field(buf, "\nwrite_bytes", &wr))
                return false;
        /* Writes cancelled before writeback (a truncated dirty file) were counted but never moved. */
        (void)io_field(buf, "cancelled_write_bytes", &cw);
        *ret = disks - rd - (wr > cw ? wr - cw : 0);
        return true;
}

static bool ours_in_flight(Engine *e)
{
        for (unsigned i = 0; i < e->n_shards; i++)
                if (atomic_load_explicit(&e->shards[i].disk_ops, memory_order_acquire) > 0)
                        return true;
        return false;
}

bool diskwatch_hold(Engine *e, uint64_t now)
{
        DiskWatch *w = &e->diskwatch;
        bool quiet = now < atomic_load_explicit(&w->quiet_until, memory_order_relaxed);
        uint64_t f;

        /* No disk yet (nothing read, or only files on tmpfs and the like): nothing to drain for. */
        if (w->self_io < 0 || atomic_load_explicit(&w->devs[0], memory_order_relaxed) == 0)
                return false;
        if (now >= atomic_load_explicit(&w->next_sample, memory_order_relaxed))
                atomic_store_explicit(&w->draining, true, memory_order_relaxed);
        if (!atomic_load_explicit(&w->draining, memory_order_relaxed))
                return quiet;
        if (ours_in_flight(e) || pthread_mutex_trylock(&w->lock) != 0)
                return true;
        /* After a long gap (the engine had nothing to do) the disks' past is not compared: it is no
         * busier now for what others did a minute ago. */
        if (now - w->last_sample_usec > 2 * DISKWATCH_SAMPLE_USEC)
                w->sampled = false;
        if (atomic_load_explicit(&w->draining, memory_order_relaxed) && foreign_bytes(w, &f)) {
                uint64_t since = f - w->last_foreign, period = MAX(now - w->last_sample_usec, (uint64_t)1);
                /* The threshold is a rate: per DISKWATCH_SAMPLE_USEC, whatever the period was. */
                uint64_t limit = MAX(DISKWATCH_FOREIGN_BYTES * period / DISKWATCH_SAMPLE_USEC, (uint64_t)16 << 10);

                if (w->sampled && (int64_t)since > (int64_t)limit) {
                        atomic_store_explicit(&w->quiet_until, now + DISKWATCH_QUIET_USEC, memory_order_relaxed);
                        atomic_fetch_add_explicit(&w->holds, 1, memory_order_relaxed);
                        quiet = true;
                } else if (!w->sampled) {
                        /* A first sample (the engine starts, or starts again after a gap): nothing
                         * is issued until a second one, DISKWATCH_QUIET_SAMPLE_USEC later, says
                         * whether the disks are somebody else's now; a foreground would otherwise
                         * have a whole sample period of ours in its way every time. */
                        atomic_store_explicit(&w->quiet_until, now + DISKWATCH_QUIET_SAMPLE_USEC, memory_order_relaxed);
                        quiet = true;
                }
                w->last_foreign = f;
                w->sampled = true;
                w->last_sample_usec = now;
        }
        atomic_store_explicit(&w->next_sample, now + (quiet ? DISKWATCH_QUIET_SAMPLE_USEC : DISKWATCH_SAMPLE_USEC),
                              memory_order_relaxed);
        atomic_store_explicit(&w->draining, false, memory_order_relaxed);
        pthread_mutex_unlock(&w->lock);
        /* The shards the drain held sleep until woken (diskwatch_wait_usec()): a shard that slept
         * out a poll instead left its part of the disk idle for that long, every sample. */
        if (!quiet)
                for (unsigned i = 0; i < e->n_shards; i++)
                        shard_wake(&e->shards[i]);
        return quiet;
}

uint64_t diskwatch_wait_usec(DiskWatch *w, uint64_t now, uint64_t cap)
{
        uint64_t next = atomic_load_explicit(&w->next_sample, memory_order_relaxed);
        uint64_t until = atomic_load_explicit(&w->quiet_until, memory_order_relaxed);

        if (until > now)
                next = MIN(next, until);
        /* A drain under way: its sample wakes us. */
        if (atomic_load_explicit(&w->draining, memory_order_relaxed) || next <= now)
                return cap;
        return MIN(next - now, cap);
}
