/* SPDX-License-Identifier: MIT */
/* fsverity.h: the fs-verity file digest (a Merkle tree over the file's blocks), streamed or in pieces */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/algo.h"
#include "hash/md.h"

/*
 * What `fsverity digest` prints and the kernel measures (FS_IOC_MEASURE_VERITY) for a file with
 * fs-verity enabled (Documentation/filesystems/fsverity.rst):
 *  - the file is cut into blocks of block_size bytes (the last zero-padded), each hashed with the
 *    tree's hash (SHA-256 or SHA-512); those hashes, packed into blocks of block_size bytes (the last
 *    zero-padded), are hashed again, level by level, until one block is left: its hash is the root
 *    hash. A file of one block has the hash of that block as root hash, an empty file zeros;
 *  - the digest is the hash of the 256-byte fsverity_descriptor: version 1, the hash algorithm's
 *    number (1 SHA-256, 2 SHA-512), log2(block_size), the salt's size (0: fhash takes no salt), the
 *    file's size (le64) and the root hash.
 * fs-verity is not libfsverity's here (Debian's libfsverity0 has it): libfsverity reads a file
 * through one callback on one thread, where the engine hashes a big file's blocks on every core
 * (FsverityTree takes the hashes of the data blocks from anywhere, in file order) and takes a
 * verity file's digest from the kernel without reading it.
 */

#define FSVERITY_LEVELS_MAX 16      /* 1 KiB blocks of SHA-512 hashes reach 2^64 bytes in 14 */

/* The tree's hash of an fs-verity algorithm: HASH_SHA256 for fsverity, HASH_SHA512 for
 * fsverity-sha512; _HASH_ALGO_INVALID for the others. */
HashAlgo fsverity_tree_hash(HashAlgo a);
/* The block size p asks for (0 in p or p NULL: 4 KiB, `fsverity digest`'s default). */
uint32_t fsverity_block_size(const HashParams *p);
/* Whether block_size is one a kernel can enable (HASH_BLOCK_SIZE_MIN ... _MAX, a power of two). */
bool fsverity_block_size_valid(uint32_t block_size);

/* The streaming state: data blocks hashed as they fill, the levels above as theirs fill. Allocated
 * once and reused for every file (a level's block is allocated the first time a file reaches it). */
typedef struct FsverityTree FsverityTree;

int fsverity_tree_new(FsverityTree **ret);
FsverityTree *fsverity_tree_free(FsverityTree *t);
/* Starts a file: a (fsverity or fsverity-sha512), block_size as fsverity_block_size_valid(). */
int fsverity_tree_init(FsverityTree *t, HashAlgo a, uint32_t block_size);
/* The file's next n bytes. */
int fsverity_tree_update(FsverityTree *t, const void *data, size_t n);
/* The hashes of the file's next data blocks, computed elsewhere (fsverity_hash_blocks()), for
 * `bytes` bytes of data: whole blocks, but for the file's last piece. Only between whole blocks
 * (nothing given to fsverity_tree_update() waits for its block to fill). */
int fsverity_tree_add_hashes(FsverityTree *t, const uint8_t *hashes, uint64_t bytes);
/* Writes the digest, hash_algo_digest_size(a) bytes; the tree is ready for the next init. */
int fsverity_tree_final(FsverityTree *t, uint8_t *out);

/* The hashes of the blocks of data[0..len) (len > 0; the last block zero-padded), one after the
 * other into out (ceil(len / block_size) hashes of hash_algo_digest_size(md_algo) bytes), with m
 * as scratch: what a worker does with one piece of a big file. out may be data itself: each hash
 * lands over bytes already hashed. */
int fsverity_hash_blocks(MdCtx *m, HashAlgo md_algo, uint32_t block_size, const uint8_t *data, size_t len,
                         uint8_t *out);

/* The kernel's own digest of an open file with fs-verity enabled, when it was enabled with the
 * tree hash and block size a and p ask for (and no salt): 1 and out (hash_algo_digest_size(a)
 * bytes) and the file's size in *ret_size; 0 when fs-verity is not enabled on it or with other
 * parameters (read it then); -errno when the kernel failed to answer otherwise. No data is read. */
int fsverity_measure_fd(int fd, HashAlgo a, const HashParams *p, uint8_t *out, uint64_t *ret_size);
