/* SPDX-License-Identifier: MIT */
/* blake3-tree.h: BLAKE3 subtree chaining values and their merge, to hash one file on several cores */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <blake3.h>

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
 * Only the unkeyed hash mode is exposed; Blake3Merge keeps the key words and mode flags so that a
 * keyed init can be added without changing the rest. All functions are void: misuse of the rules
 * above is a programming error, caught by assert() in debug builds. */

typedef struct Blake3Merge {
        uint32_t key[8];   /* the IV in hash mode */
        uint8_t flags;     /* mode flags: 0 in hash mode */
        uint8_t cv_stack_len;
        uint64_t chunks;   /* chunks covered by the CVs pushed so far */
        /* One CV per 1-bit of chunks, plus one not yet merged (lazy merging, as blake3_hasher). */
        uint8_t cv_stack[(BLAKE3_MAX_DEPTH + 1) * BLAKE3_OUT_LEN];
} Blake3Merge;

/* The non-root CV of the subtree made of input[0..len) (len > 0), which starts at chunk number
 * chunk_counter of the whole input. Any length works: the chunks go through the SIMD hash_many in
 * bounded batches of 256 KiB, so the stack use is fixed (about 16 KiB) and nothing is allocated. */
void blake3_subtree_cv(const uint8_t *input, size_t len, uint64_t chunk_counter,
                       uint8_t out_cv[BLAKE3_OUT_LEN]);

/* Starts a merge in the unkeyed hash mode. */
void blake3_merge_init(Blake3Merge *m);
/* Pushes the CV of a complete, non-last piece of n_chunks chunks (a power of two), in file order. */
void blake3_merge_push(Blake3Merge *m, const uint8_t cv[BLAKE3_OUT_LEN], uint64_t n_chunks);
/* Finishes with the last piece's CV (of last_len > 0 bytes) and writes the 32-byte digest. At least
 * one piece must have been pushed before. */
void blake3_merge_finish(Blake3Merge *m, const uint8_t last_cv[BLAKE3_OUT_LEN], uint64_t last_len,
                         uint8_t out[BLAKE3_OUT_LEN]);

/* Hashes in[0..len) as pieces of `piece` bytes (a power-of-two multiple of 1 KiB) with
 * blake3_subtree_cv() and the merge, on the calling thread; the plain hasher when len <= piece.
 * For tests and benchmarks of the two above: the digest equals blake3_hasher's. */
void blake3_tree_hash(const uint8_t *in, size_t len, size_t piece, uint8_t out[BLAKE3_OUT_LEN]);
