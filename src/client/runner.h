/* SPDX-License-Identifier: MIT */
/* runner.h: hash a stream of inputs in-process or through fhashd and hand back results in input order */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "client/progress.h"

typedef struct RunItem {
        const char *name;      /* what the user sees */
        const char *path;      /* what is opened; "-" is standard input */
        bool has_fd;           /* read fd (the caller's: duplicated, never closed here) instead of path */
        int fd;
        HashAlgo algo;
        uint32_t out_len;      /* digest bytes where not the default (a BLAKE2b-256 line), else 0: hashed
                                * with this length instead of RunReadOptions.params, in jobs of its own */
        const char *expected;  /* lower-case hex to compare with, or NULL */
        int error;             /* -errno known before hashing (from the walk): delivered in order, not hashed */
        const char *note;      /* non-NULL: skipped on purpose (from the walk), a static reason: delivered
                                * in order as RUN_SKIPPED, not hashed */
} RunItem;

typedef enum RunStatus {
        RUN_OK,        /* hex and size valid (and equal to expected, if given) */
        RUN_MISMATCH,  /* hashed, but not equal to expected */
        RUN_ERROR,     /* error holds -errno; could not be opened or read */
        RUN_CHANGED,   /* the file changed while it was read */
        RUN_CANCELLED,
        RUN_SKIPPED,   /* the item's note says why */
} RunStatus;

typedef struct RunResult {
        size_t index;
        RunStatus status;
        int error;              /* -errno for RUN_ERROR */
        const char *message;    /* daemon's error text, or NULL */
        uint64_t size;
        char hex[HASH_SET_HEX_MAX]; /* "" unless hashed; with RunReadOptions.algos, joined by ',' */
} RunResult;

/* Called once per item, strictly in input order (results that finish early wait in a buffer). */
typedef void (*RunResultFn)(const RunItem *item, const RunResult *r, void *userdata);

/* The text for a failed result as sha256sum would print it after "NAME: " ("No such file or directory",
 * "file changed while it was being hashed", ...). */
const char *run_result_reason(const RunResult *r);

/* Where a run's items come from, one at a time, as the runner has room for them (a directory walk
 * that goes on while the first files are hashed, or an array). next() fills *ret, whose strings need
 * to stay valid only until the next call, and returns 1; 0 at the end; or -errno, which ends the run
 * with that error. */
typedef struct RunSource {
        int (*next)(void *userdata, RunItem *ret);
        void *userdata;
} RunSource;

/* A RunSource over a fixed array: RunSource s = { run_array_next, &(RunArray){ items, n } }. */
typedef struct RunArray {
        const RunItem *items;
        size_t n, next;
} RunArray;
int run_array_next(void *userdata, RunItem *ret);

/*
 * In-order delivery shared by the local and the daemon runners, over a list that grows while it is
 * delivered. Items are numbered from 0 as they are pulled from the source; the order keeps a copy of
 * each (its strings included) and its result from the moment it is pulled until it is delivered, and
 * forgets it then: the memory is that of the items not delivered yet, not of the run.
 */
typedef struct RunSlot {
        RunItem item;      /* strings point into strings */
        char *strings;
        RunResult result;  /* result.message is owned */
        bool have;
        bool mark;         /* the runner's own flag (the daemon runner: sent, no result yet) */
        bool delivered;    /* unordered: handed over already, its item gone */
} RunSlot;

typedef struct RunOrder {
        const RunSource *source;
        bool source_done;
        RunSlot *slots;      /* ring: item i is slots[i & (alloc - 1)], for next <= i < n_items */
        size_t alloc;        /* a power of two */
        size_t next;         /* first item not delivered yet */
        size_t n_items;      /* items pulled so far */
        RunResultFn fn;
        void *userdata;
        bool unordered;      /* deliver each result as it comes (RunReadOptions.unordered) */
} RunOrder;

int run_order_init(RunOrder *o, const RunSource *source, RunResultFn fn, void *userdata);
void run_order_deinit(RunOrder *o);
/* Pulls the next item from the source: 1 and its index, 0 at the end of the source, or -errno. */
int run_order_pull(RunOrder *o, size_t *ret_index);
/* The item, or NULL if it was delivered already or not pulled yet. */
const RunItem *run_order_item(const RunOrder *o, size_t index);
/* The runner's flag of an item not delivered yet, else NULL. */
bool *run_order_mark(RunOrder *o, size_t index);
/* Whether the item's result is in (delivered or waiting for its turn), or it does not exist. */
bool run_order_has(const RunOrder *o, size_t index);
/* Items pulled and not delivered yet. */
static inline size_t run_order_pending(const RunOrder *o)
{
        return o->n_items - o->next;
}
/* Every item of the source was pulled and delivered. */
static inline bool run_order_finished(const RunOrder *o)
{
        return o->source_done && o->next == o->n_items;
}
/* Stores a result (a copy of its message) and delivers every result that is now in order. Sets
 * MISMATCH from expected. Results for items delivered already or never pulled are ignored. */
void run_order_put(RunOrder *o, const RunResult *r);
/* For an item that is answered without hashing (a walk error or a note): fills *ret and returns true. */
bool run_item_preset(const RunItem *item, size_t index, RunResult *ret);

/* How far a runner pulls ahead of delivery: results waiting behind one slow file (and the items
 * being hashed) stay in memory, so this bounds it (a few hundred bytes per item), also when the
 * file at the head is huge and everything after it is small. */
#define RUN_MAX_PENDING ((size_t)65536)

/* How the files are read, for both ways of hashing: --no-cache and --io. */
typedef struct RunReadOptions {
        bool dontcache;               /* cache-neutral (EngineJobOptions.dontcache) */
        EngineReadStrategy strategy;  /* ENGINE_READ_AUTO unless --io forces one */
        const HashParams *params;     /* --length, --keyed, --derive-key; NULL: none */
        /* -a sha256,blake3: every item is hashed with each of these in one read, and its hex is
         * their digests joined by ','; every item's algo is the set's first. NULL: the item's
         * algo alone. */
        const HashAlgoSet *algos;
        /* Through fhashd: told once when fhashd has answered Busy for a second and more (fhashctl
         * says so on stderr); NULL: nothing is said. A library says nothing of its own. */
        void (*busy_notice)(const char *reason, bool gives_up_later, void *userdata);
        void *busy_userdata;
        bool watch_progress;          /* through fhashd: follow the jobs' BytesDone for progress */
        uint64_t max_size;            /* a file past this many bytes fails (-EFBIG); 0: no limit */
        bool unordered;               /* results as they complete, not in input order */
} RunReadOptions;

/* Hashes in this process with the engine, read as ro says, while pulling items from source: they go
 * to engine jobs of a few hundred files (one algorithm each, several running at once), started as
 * soon as they are pulled, and the source is pulled again while there are fewer than a few thousand
 * files queued. Returns 0 once every item was delivered, or -errno if the engine could not start or
 * the source failed. */
int run_local(const RunSource *source, const RunReadOptions *ro, RunResultFn fn, void *userdata);

/* run_local() in steps, for a caller's own loop: step does what is ready, waiting up to
 * timeout_usec for the engine (0: not at all), and returns 1 while the run goes on, 0 once every
 * item was delivered, or -errno. get_fd is the engine's fd to poll for POLLIN between steps, or
 * -EAGAIN before the first file has made the engine (step then never waits). The source and the
 * options must outlive the run. */
typedef struct LocalRun LocalRun;
int run_local_new(const RunSource *source, const RunReadOptions *ro, RunResultFn fn, void *userdata,
                  LocalRun **ret);
int run_local_step(LocalRun *run, uint64_t timeout_usec);
int run_local_get_fd(LocalRun *run);
/* Stops hashing: files being hashed end cancelled, and the rest of the source is answered cancelled
 * as it is pulled; step goes on until every item is delivered. */
void run_local_cancel(LocalRun *run);
/* Whether the source should be pulled again now (it has more and the engine has room): then the
 * caller should not wait for the fd before the next step. */
bool run_local_wants_input(LocalRun *run);
void run_local_get_progress(LocalRun *run, ProgressState *ret);
LocalRun *run_local_free(LocalRun *run);
