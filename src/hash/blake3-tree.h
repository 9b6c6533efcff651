/* SPDX-License-Identifier: MIT */
/* blake3-tree.h: BLAKE3 subtree chaining values and their merge, to hash one file on several cores */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <blake3.h>

#include "hash/algo.h"

/* BLAKE3 hashes 1 KiB chunks and combines their chaining values (CVs) in a left-balanced binary tree.
 * A file cut into pieces can therefore be hashed piece by piece, on any thread, and the piece CVs
 * merged in file order into the same digest the plain blake3_hasher gives. Rules for the pieces:
 *  - every piece but the last has a power-of-two number of chunks and starts at a multiple of its
 *    own size (chunk_counter % n_chunks == 0);
 *  - the last piece (any length > 0) starts at a multiple of a power of two at least as large as
 *    its chunk count. Both hold when all pieces but the last have the same power-of-two size P
 *    (a multiple of 1 KiB) and the last is at most P bytes;
 *  - there are at least two pieces: a file that is one piece is hashed with the plain hasher,
 *    because its root node needs the ROOT flag that a subtree CV never has.
 * Every mode works piece-wise: hash, keyed hash and derive-key, each with any output length (BLAKE3
 * is an XOF: the root node's output blocks, counter 0, 1, ...). The mode (Blake3Mode) is worked out
 * once per file or job from its HashParams and read by every piece. Apart from blake3_mode_init(),
 * the functions are void: misuse of the rules above is a programming error, caught by assert() in
 * debug builds. */

/* Key words and mode flags, what every node's compression takes besides its input. Secret in keyed
 * mode (the words are the key): wipe with blake3_mode_wipe(). */
typedef struct Blake3Mode {
        uint32_t key[8];   /* the IV (hash), the key (keyed), the context key (derive-key) */
        uint8_t flags;     /* 0, KEYED_HASH or DERIVE_KEY_MATERIAL */
} Blake3Mode;

typedef struct Blake3Merge {
        Blake3Mode mode;
        uint8_t cv_stack_len;
        uint64_t chunks;   /* chunks covered by the CVs pushed so far */
        /* One CV per 1-bit of chunks, plus one not yet merged (lazy merging, as blake3_hasher). */
        uint8_t cv_stack[(BLAKE3_MAX_DEPTH + 1) * BLAKE3_OUT_LEN];
} Blake3Merge;

/* The mode that p asks for (NULL: plain hash), as blake3_hasher_init(), _init_keyed(p->key) or
 * _init_derive_key(p->context) would set it up; p->out_len is not part of the mode (it is the
 * finish's). Errors as hash_params_check(HASH_BLAKE3, p); *ret is set only on success. It hashes
 * (derive-key hashes the context): call hash_global_init() before threads do it at once. */
int blake3_mode_init(Blake3Mode *ret, const HashParams *p);
/* Forgets the key words, in a way the compiler cannot drop. */
void blake3_mode_wipe(Blake3Mode *m);

/* The non-root CV of the subtree made of input[0..len) (len > 0), which starts at chunk number
 * chunk_counter of the whole input, in the given mode. Any length works: the chunks go through the
 * SIMD hash_many in bounded batches of 256 KiB, so the stack use is fixed (about 16 KiB) and
 * nothing is allocated. */
void blake3_subtree_cv_mode(const Blake3Mode *mode, const uint8_t *input, size_t len,
                            uint64_t chunk_counter, uint8_t out_cv[BLAKE3_OUT_LEN]);
/* The same in the plain hash mode. */
void blake3_subtree_cv(const uint8_t *input, size_t len, uint64_t chunk_counter,
                       uint8_t out_cv[BLAKE3_OUT_LEN]);

/* Starts a merge in the given mode (copied: the caller may wipe its own right away). */
void blake3_merge_init_mode(Blake3Merge *m, const Blake3Mode *mode);
/* Starts a merge in the plain hash mode. */
void blake3_merge_init(Blake3Merge *m);
/* Pushes the CV of a complete, non-last piece of n_chunks chunks (a power of two), in file order. */
void blake3_merge_push(Blake3Merge *m, const uint8_t cv[BLAKE3_OUT_LEN], uint64_t n_chunks);
/* Finishes with the last piece's CV (of last_len > 0 bytes) and writes out_len bytes of output (any
 * length: the first out_len bytes of the XOF stream, what b3sum --length out_len prints). At least
 * one piece must have been pushed before. Wipes m (its key words and CVs): a merge finishes once. */
void blake3_merge_finish_xof(Blake3Merge *m, const uint8_t last_cv[BLAKE3_OUT_LEN], uint64_t last_len,
                             uint8_t *out, size_t out_len);
/* The same for the default 32-byte digest. */
void blake3_merge_finish(Blake3Merge *m, const uint8_t last_cv[BLAKE3_OUT_LEN], uint64_t last_len,
                         uint8_t out[BLAKE3_OUT_LEN]);

/* Hashes in[0..len) as pieces of `piece` bytes (a power-of-two multiple of 1 KiB) with the
 * subtree CVs and the merge, on the calling thread; the plain hasher when len <= piece. Writes
 * hash_params_digest_size(HASH_BLAKE3, p) bytes (p NULL: the defaults); errors as
 * hash_params_check(). For tests and benchmarks of the functions above: the digest equals
 * blake3_hasher's (hash_oneshot_params()). */
int blake3_tree_hash_params(const HashParams *p, const uint8_t *in, size_t len, size_t piece, uint8_t *out);
/* The same in the plain hash mode, 32 bytes. */
void blake3_tree_hash(const uint8_t *in, size_t len, size_t piece, uint8_t out[BLAKE3_OUT_LEN]);
