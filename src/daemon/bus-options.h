/* SPDX-License-Identifier: MIT */
/* bus-options.h: the algorithm argument and the a{sv} options of HashFds, HashPaths and AddFds */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "protocol/priority.h"

typedef struct HashOptions {
        char **names;       /* "names": as, one label per input */
        char **expected;    /* "expected": as, one hex digest (or "") per input; lower-cased */
        uint64_t max_size;  /* "max-size": t, 0 = none */
        bool dontcache;     /* "dontcache": b */
        bool more;          /* "more": b, more inputs follow through the job's AddFds() */
        EngineReadStrategy strategy;  /* "strategy": s, auto|read|mmap|direct (engine.h) */
        JobPriority priority;         /* "priority": s, normal|interactive|background */
        bool packed;                  /* "packed-results": b, results as FilesDigested */
        /* "length": u, digest bits (b2sum -l, cksum -l; b3sum --length N is 8N); "key": ay, BLAKE3's
         * 32-byte key (b3sum --keyed); "derive-key": s, a BLAKE3 context (b3sum --derive-key). Never
         * logged; the key is wiped by hash_options_done(). */
        bool has_params;
        HashParams params;  /* params.context points to context */
        char *context;
} HashOptions;

/* Which keys a call accepts. */
typedef enum HashOptionKey {
        HASH_OPTION_NAMES = 1u << 0,
        HASH_OPTION_EXPECTED = 1u << 1,
        HASH_OPTION_MAX_SIZE = 1u << 2,
        HASH_OPTION_DONTCACHE = 1u << 3,
        HASH_OPTION_MORE = 1u << 4,
        HASH_OPTION_STRATEGY = 1u << 5,
        HASH_OPTION_LENGTH = 1u << 6,
        HASH_OPTION_KEY = 1u << 7,
        HASH_OPTION_DERIVE_KEY = 1u << 8,
        HASH_OPTION_BLOCK_SIZE = 1u << 9,
        HASH_OPTION_PRIORITY = 1u << 10,
        HASH_OPTION_PACKED = 1u << 11,
} HashOptionKey;

#define HASH_OPTIONS_HASH_PATHS                                                                            \
        (HASH_OPTION_NAMES | HASH_OPTION_EXPECTED | HASH_OPTION_MAX_SIZE | HASH_OPTION_DONTCACHE |           \
         HASH_OPTION_STRATEGY | HASH_OPTION_LENGTH | HASH_OPTION_KEY | HASH_OPTION_DERIVE_KEY |                \
         HASH_OPTION_BLOCK_SIZE | HASH_OPTION_PRIORITY | HASH_OPTION_PACKED)
#define HASH_OPTIONS_HASH_FDS (HASH_OPTIONS_HASH_PATHS | HASH_OPTION_MORE)
/* HashNames' and AddNames' are HashFds' and AddFds'. */
#define HASH_OPTIONS_HASH_NAMES HASH_OPTIONS_HASH_FDS
/* The rest are the job's, set once by HashFds. */
#define HASH_OPTIONS_ADD_FDS (HASH_OPTION_NAMES | HASH_OPTION_EXPECTED | HASH_OPTION_MORE)

void hash_options_done(HashOptions *o);

/* Reads the a{sv}. A key that is unknown or not in allowed (HashOptionKey bits), or a wrong variant
 * type, is InvalidArgs naming the key. Then checks the arrays against n_inputs, the parameters
 * against algo, and the digests against algo with the parameters (job_params, an existing job's,
 * when the call cannot set them). */
int bus_read_hash_options(sd_bus_message *m, size_t n_inputs, const HashAlgoSet *algos, const HashParams *job_params,
                          unsigned allowed, HashOptions *ret, sd_bus_error *error);
/* Reads the "s" algorithm, one name or several separated by ',' ("sha256,blake3": each file is read
 * once and hashed with each): InvalidArgs naming the known ones for an unknown one, and for too
 * many or a repeated one. */
int bus_read_algorithm(sd_bus_message *m, HashAlgoSet *ret, sd_bus_error *error);
/* The tail of HashFds and HashPaths: the algorithm, then the options for it. */
int bus_read_algorithm_and_options(sd_bus_message *m, size_t n_inputs, unsigned allowed, HashAlgoSet *ret_algos,
                                   HashOptions *ret, sd_bus_error *error);
