/* SPDX-License-Identifier: MIT */
/* diskwatch.h: a background engine's view of the disks it reads: whether anybody else is using them */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct Engine Engine;
typedef struct FileSlot FileSlot;

/*
 * The idle I/O class keeps a background read behind every waiting request of another class in the
 * block scheduler, but not behind the requests that come next: a process reading one 4 KiB block at a
 * time has nothing waiting between two of its reads, the scheduler hands the disk our reads then, and
 * its next read waits behind them in the device (fio's 4 KiB random reads at queue depth 1 had their
 * p99 latency multiplied by 6 beside a background job on mq-deadline). BFQ does not serve the idle
 * class until the disk has had no other request for a while; mq-deadline, kyber and none do not wait.
 * So a background engine watches the disks it reads itself, as BFQ would:
 *
 *   - Every DISKWATCH_SAMPLE_USEC its shards stop issuing reads and opens until none of theirs is in
 *     flight (a drain: about one request's time), and one of them then compares what the disks did
 *     (sysfs "stat" of each whole disk: sectors read, written and discarded) with what this process
 *     made them do (/proc/self/io read_bytes and write_bytes, counted by the kernel as each request is
 *     submitted: readahead, metadata and O_DIRECT alike, page-cache hits not at all). With nothing of
 *     ours in flight both counts are complete, so the difference since the last sample is exactly
 *     what other processes (and the kernel's writeback) did.
 *   - More than DISKWATCH_FOREIGN_BYTES of that per DISKWATCH_SAMPLE_USEC, and the engine issues no
 *     read or open for DISKWATCH_QUIET_USEC, sampling (for free: nothing of ours is in flight) every
 *     DISKWATCH_QUIET_SAMPLE_USEC, so that it starts again that long after the others stop.
 *   - When it starts (or starts again after having had nothing to do), it takes a first sample and
 *     waits DISKWATCH_QUIET_SAMPLE_USEC for a second before it issues anything.
 *   - Reads of a file that was wholly in the page cache when it opened (FileSlot.cached, one
 *     cachestat) need no disk: they are neither held nor drained for, so the watch costs a job over a
 *     hot set nothing (a first wait of 10 ms and twenty drains a second did). A page evicted in
 *     between is read from the disk uncounted, which at worst makes one sample see a little less or
 *     more than the others did.
 *   - Inputs that are fds the caller opened (all of fhashd's) are opened while the watch holds, as
 *     long as no job of the engine has a path among its inputs (Engine.path_jobs): an fd's fstat and
 *     cachestat read no disk, a path's lookup may. So a cached file passed as an fd is read during
 *     a hold too, where it used to wait for a slot that only a hold's end could open.
 *   - A shard the watch holds sleeps until the next sample or the end of the hold, and a drain's
 *     sample wakes the shards it held: a 5 ms poll left their reads waiting after every drain.
 *
 * The others in this process (fhashd's normal engine) count as ours here: the normal engine is yielded
 * to through EngineConfig.yield_to. Disks of several file systems are summed: a foreground on any of
 * them holds the engine back. Files on what is not a block device (tmpfs, network) add no disk.
 */
#define DISKWATCH_MAX 8u
#define DISKWATCH_SAMPLE_USEC (UINT64_C(50) * 1000)
#define DISKWATCH_QUIET_SAMPLE_USEC (UINT64_C(10) * 1000)
#define DISKWATCH_QUIET_USEC (UINT64_C(100) * 1000)
#define DISKWATCH_FOREIGN_BYTES (UINT64_C(256) << 10)

typedef struct DiskWatch {
        pthread_mutex_t lock;          /* adding a disk; sampling */
        _Atomic uint64_t devs[DISKWATCH_MAX];  /* makedev() + 1 of the devices seen; 0: free */
        int fds[DISKWATCH_MAX];        /* each one's disk's sysfs "stat", or -1 */
        int self_io;                   /* /proc/self/io, or -1: no watching at all */
        _Atomic bool draining;         /* a sample is due: issue nothing until ours are all back */
        _Atomic uint64_t next_sample;  /* CLOCK_MONOTONIC, µs */
        _Atomic uint64_t quiet_until;  /* no reads or opens before this */
        _Atomic uint64_t holds;        /* samples that found somebody else's requests */
        uint64_t last_foreign;         /* under lock: the disks' bytes minus ours, at the last sample */
        uint64_t last_sample_usec;
        bool sampled;
} DiskWatch;

/* watch: false for an engine that never holds back (a normal one): nothing is opened, and
 * diskwatch_add() and diskwatch_hold() do nothing. */
void diskwatch_init(DiskWatch *w, bool watch);
void diskwatch_done(DiskWatch *w);
/* Watches the disk of f from now on (from its statx), if it has one. Any shard thread. */
void diskwatch_add(DiskWatch *w, const FileSlot *f);
/* Whether e's shards should hold their reads and opens back now: a drain for a sample, or another
 * process using the disks. Samples when due and every shard's reads and opens are back. */
bool diskwatch_hold(Engine *e, uint64_t now);
/* How long a shard held by the disk watch may sleep (at most cap): until the next sample or the end
 * of the hold; cap during a drain, whose sample wakes every shard. */
uint64_t diskwatch_wait_usec(DiskWatch *w, uint64_t now, uint64_t cap);
