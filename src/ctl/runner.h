/* SPDX-License-Identifier: MIT */
/* runner.h: hash a list of inputs in-process or through fhashd and hand back results in input order */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "hash.h"
#include "progress.h"

typedef struct RunItem {
        const char *name;      /* what the user sees */
        const char *path;      /* what is opened; "-" is standard input */
        HashAlgo algo;
        const char *expected;  /* lower-case hex to compare with, or NULL */
        int error;             /* -errno known before hashing (from the walk): delivered in order, not hashed */
} RunItem;

typedef enum RunStatus {
        RUN_OK,        /* hex and size valid (and equal to expected, if given) */
        RUN_MISMATCH,  /* hashed, but not equal to expected */
        RUN_ERROR,     /* error holds -errno; could not be opened or read */
        RUN_CHANGED,   /* the file changed while it was read */
        RUN_CANCELLED,
} RunStatus;

typedef struct RunResult {
        size_t index;
        RunStatus status;
        int error;              /* -errno for RUN_ERROR */
        const char *message;    /* daemon's error text, or NULL */
        uint64_t size;
        char hex[HASH_HEX_MAX]; /* "" unless hashed */
} RunResult;

/* Called once per item, strictly in input order (results that finish early wait in a buffer). */
typedef void (*RunResultFn)(const RunItem *item, const RunResult *r, void *userdata);

/* The text for a failed result as sha256sum would print it after "NAME: " ("No such file or directory",
 * "file changed while it was being hashed", ...). */
const char *run_result_reason(const RunResult *r);

/* In-order delivery shared by the local and the daemon runners. */
typedef struct RunOrder {
        const RunItem *items;
        size_t n_items;
        RunResult *results;  /* one slot per item */
        bool *have;
        size_t next;         /* first item not delivered yet */
        RunResultFn fn;
        void *userdata;
        Progress *progress;  /* cleared before each delivery so lines do not mix; may be NULL */
} RunOrder;

int run_order_init(RunOrder *o, const RunItem *items, size_t n, RunResultFn fn, void *userdata,
                   Progress *progress);
void run_order_deinit(RunOrder *o);
/* Stores a result and delivers every result that is now in order. Sets MISMATCH from expected. */
void run_order_put(RunOrder *o, const RunResult *r);

/* How the files are read, for both ways of hashing: --no-cache and --io. */
typedef struct RunReadOptions {
        bool dontcache;               /* cache-neutral (EngineJobOptions.dontcache) */
        EngineReadStrategy strategy;  /* ENGINE_READ_AUTO unless --io forces one */
} RunReadOptions;

/* Hashes in this process with the engine (one engine job per algorithm, all running at once), read
 * as ro says. Returns 0 once every item was delivered, or -errno if the engine could not start. */
int run_local(const RunItem *items, size_t n, const RunReadOptions *ro, RunResultFn fn, void *userdata,
              Progress *progress);
