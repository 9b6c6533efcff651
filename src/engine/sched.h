/* SPDX-License-Identifier: MIT */
/* sched.h: share groups, and which input opens next */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct Engine Engine;
typedef struct Shard Shard;
typedef struct EngineJob EngineJob;
typedef struct JobShard JobShard;
typedef struct FileSlot FileSlot;

/*
 * One share group (EngineJobOptions.share_group: fhashd's uid) in one shard: each shard shares its
 * own slots and buffers out. What it holds there is counted here, on the shard's thread only, so
 * that a share is a comparison, never a scan: files open (slots), buffers out of the pool, and its
 * jobs with inputs left to open, which take turns. It lives while it has a job, a file or a buffer.
 */
typedef struct ShareGroup {
        uint64_t id;
        unsigned n_open;               /* files of the group on the open list */
        unsigned n_borrowed;           /* of those, opened beyond open_cap (see sched_pick()) */
        unsigned n_active_jobs;        /* jobs with inputs left to open or files open */
        unsigned n_bufs;               /* pool buffers charged to it */
        unsigned n_small_bufs;         /* small slots charged to it */
        unsigned n_wait_jobs;          /* its jobs with inputs left to open, on the list below */
        unsigned n_wait_interactive;   /* of those, interactive ones (EngineJobOptions.interactive) */
        JobShard *jobs_head, *jobs_tail;   /* that list, in turn */
        bool waiting;                  /* on the engine's ring of groups with inputs to open */
        struct ShareGroup *wait_next;
        struct ShareGroup *next, *prev;    /* every group */
} ShareGroup;

/* Charges a file to its group and job when it takes a slot, and lets go when it leaves the open
 * list (or is detached after a stall). */
void sched_charge_file(Shard *s, FileSlot *f);
void sched_uncharge_file(Shard *s, FileSlot *f);
/* A buffer out of the pool for f, and back. */
void sched_charge_buffer(Shard *s, ShareGroup *g, bool small);
void sched_uncharge_buffer(Shard *s, ShareGroup *g, bool small);
/* True when g holds at least its share of the buffers while other groups have files open. */
bool sched_over_buffer_share(const Shard *s, const ShareGroup *g);
/* Frees every group of s (engine_free(), after the shards ended). */
void sched_free_all(Shard *s);
