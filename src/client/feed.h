/* SPDX-License-Identifier: MIT */
/* feed.h: a run's inputs from the caller's source to a backend, and their results back to the caller,
 * once each, in order */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/options.h"
#include "fhash/fhash.h"

/*
 * Both backends (local.c, the engine in this process; bus-run.c, fhashd) take their inputs from a
 * Feed and give their results back to it: checking what the caller gave, opening files, keeping each
 * input until its result and delivering results in input order are done here once, whatever hashes.
 *
 * Inputs are numbered from 0 as they are pulled from the source. The feed keeps a copy of each (its
 * strings in the slot when they are short) from the moment it is pulled until its result is
 * delivered, and forgets it then: the memory is that of the inputs not delivered yet, not of the
 * run. A result that arrives in its turn goes to the caller at once, without being copied.
 */

/* One input, as a backend sees it: valid until it is answered. */
typedef struct Input {
        const char *name;      /* the result's label */
        const char *path;      /* what is opened ("-": standard input); NULL for the caller's fd */
        const char *expected;  /* lower-case hex to compare with, or NULL */
        void *userdata;        /* fhash_input.userdata, given back in its result */
        int fd;                /* the caller's fd (duplicated when opened, never closed), or -EBADF */
        HashAlgo algo;         /* the options' first algorithm unless the input named its own */
        uint32_t out_len;      /* a digest length of its own in bytes, else 0 (the options' params) */
} Input;

/* What a backend says of an input. */
typedef struct Outcome {
        fhash_status status;
        int error;             /* -errno with FHASH_ERROR (any errno: the feed classes it) */
        uint64_t size;         /* bytes hashed */
        const char *hex;       /* the digest(s), with FHASH_OK and FHASH_MISMATCH; else NULL */
        const char *message;   /* what went wrong, in fhashd's words; NULL: the feed's own */
} Outcome;

/* How far a backend pulls ahead of delivery: results waiting behind one slow file (and the inputs
 * being hashed) stay in memory, so this bounds it (a few hundred bytes per input), also when the
 * file at the head is huge and everything after it is small. */
#define FEED_MAX_PENDING ((size_t)65536)

typedef struct Feed Feed;

/* A feed over the caller's source; o must outlive it. The results go to fn. */
int feed_new(fhash_source_fn next, void *source_userdata, const RunOptions *o, fhash_result_fn fn, void *userdata,
             Feed **ret);
Feed *feed_free(Feed *f);

/* The first input to hash with an index of from or more, pulling from the source as needed: 1 and
 * its index, 0 once the source has ended before one, or -errno (the source's, or -ENOMEM; the run
 * is over then). Inputs answered without hashing (given with a skip reason or an error, rejected by
 * the options, or pulled after feed_cancel()) are delivered in their turn here: a backend never sees
 * them. */
int feed_next(Feed *f, size_t from, size_t *ret_index);
/* Input index, pulled and not answered yet; NULL otherwise. */
const Input *feed_input(const Feed *f, size_t index);
/* Input index opened as the backends need it, in this one place: the caller's fd or standard input
 * duplicated (O_CLOEXEC, never below 3), a path opened read-only without waiting (O_NONBLOCK: a
 * FIFO without a writer, a device that waits for a carrier, a file under a lease never hold the
 * caller's thread); a directory fails with -EISDIR, as sha256sum says. *ret_size: a regular file's
 * size, UINT64_MAX for anything else (a pipe, a device). 0: *ret_fd reads as a blocking fd would;
 * FEED_OPEN_FIFO: a FIFO opened by path, still O_NONBLOCK: read it only once poll(2) says POLLIN or
 * POLLHUP (before its writer came a read would say end of file), after feed_fd_blocking();
 * -EWOULDBLOCK: a lease is being broken, try again in a while; or -errno (the caller answers the
 * input with it). */
#define FEED_OPEN_FIFO 1
int feed_open(Feed *f, size_t index, int *ret_fd, uint64_t *ret_size);
/* Takes fd, one feed_open() gave for input index and the backend did not use up: the next
 * feed_open() of the input gives it instead of opening the input again (a FIFO parked in a run that
 * lost fhashd goes on in-process: closed and opened again, a writer between the two would get EPIPE,
 * and data in the pipe would be lost). Closed with the input. */
void feed_keep_fd(Feed *f, size_t index, int fd);
bool feed_has_kept_fd(const Feed *f, size_t index);
/* Clears O_NONBLOCK on fd (one feed_open() gave with FEED_OPEN_FIFO): 0, or -errno. */
int feed_fd_blocking(int fd);
/* Answers input index (once: later answers, and indexes not pulled, are ignored) and delivers every
 * result that is in order now. FHASH_OK with an expected digest that differs becomes FHASH_MISMATCH;
 * an FHASH_ERROR's errno is classed as fhashd's error names class it, so both backends say the same. */
void feed_answer(Feed *f, size_t index, const Outcome *o);
/* Whether input index has its result (or is not pulled, or gone). */
bool feed_answered(const Feed *f, size_t index);
/* A backend's own flags (bits of its own meaning) for an input not answered yet; else NULL. Zero
 * when the input is pulled. */
uint8_t *feed_flags(Feed *f, size_t index);

/* Each input not hashed yet is answered cancelled as a backend finds it. A caller's source is not
 * called again: the inputs pulled so far are the run's (a cancelled run hands out results for those,
 * not for the rest of a walk of millions); inputs given as an array (RunOptions.inputs_given) are
 * all answered. */
void feed_cancel(Feed *f);
bool feed_is_cancelled(const Feed *f);

size_t feed_pulled(const Feed *f);      /* inputs pulled so far */
size_t feed_head(const Feed *f);        /* the first input not delivered yet */
size_t feed_pending(const Feed *f);     /* pulled and not delivered */
size_t feed_done(const Feed *f);        /* with their result in (delivered, or waiting for its turn) */
bool feed_source_done(const Feed *f);
/* The source has ended and every input was delivered. */
bool feed_finished(const Feed *f);
const RunOptions *feed_options(const Feed *f);
