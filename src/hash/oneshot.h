/* SPDX-License-Identifier: MIT */
/* oneshot.h: one input hashed in the calling thread with plain read(2)s */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "hash/hash.h"

/*
 * No ring, no thread, no registered buffer, no bus: for a few small files this is all the work
 * there is, and starting the engine would cost more than the hashing (one 4 KiB file: the engine's
 * start and stop are ~2 ms, this is ~10 µs). fhashctl's tool personalities (sha256sum, b3sum,
 * xxhsum, ...) hash every input this way, as those tools do; a libfhash backend may call it for a
 * run of a few small files.
 */

/* Called with each piece read; a negative return ends the read with that error. */
typedef int (*OneshotFeedFn)(const void *data, size_t n, void *userdata);

/* Reads fd from where it is to its end into buf (size bytes, reused for each piece), handing each
 * piece to fn. Returns 0 and the bytes read in *ret_size (may be NULL), or -errno from read(2) (a
 * directory gives -EISDIR, as the tools report it) or from fn. */
int oneshot_read_fd(int fd, void *buf, size_t size, OneshotFeedFn fn, void *userdata, uint64_t *ret_size);

/* Opens path for reading ("-": a duplicate of standard input, left open), for oneshot_read_fd():
 * the fd (close it), or -errno from open(2). Regular files are advised sequential, as coreutils
 * does. */
int oneshot_open(const char *path);

/* Feeds fd to c, which the caller has initialised (hash_ctx_init_params()); the caller finishes it
 * with hash_ctx_final() or hash_ctx_xof(). 0, or -errno as oneshot_read_fd(). */
int oneshot_hash_fd(HashCtx *c, int fd, void *buf, size_t size, uint64_t *ret_size);
