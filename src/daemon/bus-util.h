/* SPDX-License-Identifier: MIT */
/* bus-util.h: caller credentials, the inputs and a{sv} options of the Hash calls, errno -> error names */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "engine/engine.h"
#include "hash/hash.h"

/* The sender's effective uid as the bus driver saw it when the sender connected (SO_PEERCRED),
 * never augmented from /proc: a PID can be reused, a connection cannot change hands. */
int bus_query_sender_uid(sd_bus_message *m, uid_t *ret);

typedef struct HashOptions {
        char **names;       /* "names": as, one label per input */
        char **expected;    /* "expected": as, one hex digest (or "") per input; lower-cased */
        uint64_t max_size;  /* "max-size": t, 0 = none */
        bool dontcache;     /* "dontcache": b */
        bool more;          /* "more": b, more inputs follow through the job's AddFds() */
        EngineReadStrategy strategy;  /* "strategy": s, auto|read|mmap|direct (engine.h) */
} HashOptions;

/* Which keys a call accepts. */
typedef enum HashOptionKey {
        HASH_OPTION_NAMES = 1u << 0,
        HASH_OPTION_EXPECTED = 1u << 1,
        HASH_OPTION_MAX_SIZE = 1u << 2,
        HASH_OPTION_DONTCACHE = 1u << 3,
        HASH_OPTION_MORE = 1u << 4,
        HASH_OPTION_STRATEGY = 1u << 5,
} HashOptionKey;

#define HASH_OPTIONS_HASH_PATHS                                                                            \
        (HASH_OPTION_NAMES | HASH_OPTION_EXPECTED | HASH_OPTION_MAX_SIZE | HASH_OPTION_DONTCACHE |           \
         HASH_OPTION_STRATEGY)
#define HASH_OPTIONS_HASH_FDS (HASH_OPTIONS_HASH_PATHS | HASH_OPTION_MORE)
/* The rest are the job's, set once by HashFds. */
#define HASH_OPTIONS_ADD_FDS (HASH_OPTION_NAMES | HASH_OPTION_EXPECTED | HASH_OPTION_MORE)

void hash_options_done(HashOptions *o);

/* Reads the a{sv}. A key that is unknown or not in allowed (HashOptionKey bits), or a wrong variant
 * type, is InvalidArgs naming the key. Then checks the arrays against n_inputs and the digests
 * against algo. */
int bus_read_hash_options(sd_bus_message *m, size_t n_inputs, HashAlgo algo, unsigned allowed,
                          HashOptions *ret, sd_bus_error *error);

/* One input of a Hash call, checked before it is added to a job. */
typedef struct HashInput {
        int fd;                  /* an fd input: our own dup; -EBADF otherwise or when refused */
        const char *path;        /* a path input: points into the message */
        const char *error_name;  /* set if the input fails up front */
        const char *error_message;
} HashInput;

void hash_inputs_free(HashInput *inputs, size_t n);

/* Reads the "ah" of HashFds/AddFds: 1 to FHASH_MAX_FDS_PER_CALL fds, else InvalidArgs naming "fds".
 * The fds stay the message's. */
int bus_read_fds(sd_bus_message *m, int ret_fds[], size_t *ret_n, sd_bus_error *error);

/* Checks each of fds[0..n) and dups it into a new HashInput array (hash_inputs_free() it, also on
 * failure: *ret is set whenever it was allocated). Access-mode mistakes are the caller's bug and
 * fail the call (InvalidArgs naming fds[i]); the kind of file is a per-file outcome
 * (in->error_name), so one directory does not sink a batch. Streams (pipes, devices) are read only if allow_streams (the job
 * has "max-size"). */
int bus_check_fds(const int fds[], size_t n, bool allow_streams, HashInput **ret, sd_bus_error *error);

/* Bytes of s to echo in an error message: at most max, cut at a UTF-8 character boundary (a cut
 * inside a character makes the whole message invalid UTF-8, which sd-bus refuses to send, and the
 * caller would get no reply at all). For "%.*s". */
int bus_echo_len(const char *s, size_t max);
