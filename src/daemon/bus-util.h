/* SPDX-License-Identifier: MIT */
/* bus-util.h: caller credentials, the a{sv} options of the Hash calls and errno -> error names */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "hash.h"

/* The sender's effective uid as the bus driver saw it when the sender connected (SO_PEERCRED),
 * never augmented from /proc: a PID can be reused, a connection cannot change hands. */
int bus_query_sender_uid(sd_bus_message *m, uid_t *ret);

typedef struct HashOptions {
        char **names;       /* "names": as, one label per input */
        char **expected;    /* "expected": as, one hex digest (or "") per input; lower-cased */
        uint64_t max_size;  /* "max-size": t, 0 = none */
        bool dontcache;     /* "dontcache": b */
} HashOptions;

void hash_options_done(HashOptions *o);

/* Reads the a{sv}. An unknown key or a wrong variant type is InvalidArgs naming the key. Then
 * checks the arrays against n_inputs and the digests against algo. */
int bus_read_hash_options(sd_bus_message *m, size_t n_inputs, HashAlgo algo, HashOptions *ret,
                          sd_bus_error *error);

/* The FHASH_ERROR_* name for a per-file errno (positive or negative). */
const char *fhash_error_from_errno(int error);

/* Bytes of s to echo in an error message: at most max, cut at a UTF-8 character boundary (a cut
 * inside a character makes the whole message invalid UTF-8, which sd-bus refuses to send, and the
 * caller would get no reply at all). For "%.*s". */
int bus_echo_len(const char *s, size_t max);

/* The project's error names with their errno, for sd_bus_error_add_map(). */
extern const sd_bus_error_map fhash_error_map[];

/* Free a NULL-terminated string array. */
char **strv_free(char **l);
size_t strv_length(char *const *l);
