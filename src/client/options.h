/* SPDX-License-Identifier: MIT */
/* options.h: how a run hashes and reads, checked once from fhash_hash_options, for every backend */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "protocol/priority.h"

typedef struct RunOptions {
        /* The options' algorithm(s): an input without its own is hashed with algos.algos[0]; with
         * n > 1, every input with each of them in one read, its hex their digests joined by ',' (and
         * no input may name its own). */
        HashAlgoSet algos;
        char algos_name[HASH_SET_NAMES_MAX];  /* "sha256,blake3": what results name with n > 1 */
        bool dontcache;                       /* cache-neutral (EngineJobOptions.dontcache) */
        EngineReadStrategy strategy;          /* ENGINE_READ_AUTO unless the caller forces one */
        JobPriority priority;                 /* fhash_hash_options.priority */
        const HashParams *params;             /* length, key, derive-key; NULL: none */
        uint64_t max_size;                    /* a file past this many bytes fails (-EFBIG); 0: no limit */
        bool unordered;                       /* results as they complete, not in input order */
        bool watch_progress;                  /* through fhashd: follow the jobs' BytesDone */
        bool resume;                          /* through fhashd: go on with the next when it goes */
        /* The inputs are an array the caller gave whole (fhash_run_paths(), _fds()): a cancelled run
         * still answers every one, as the API says; a caller's source is not called again. */
        bool inputs_given;
        /* Through fhashd: told once when fhashd has answered Busy for a second and more; NULL:
         * nothing is said. A library says nothing of its own. */
        void (*busy_notice)(const char *reason, int gives_up, void *userdata);
        void *busy_userdata;
} RunOptions;
