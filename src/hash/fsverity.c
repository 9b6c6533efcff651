/* SPDX-License-Identifier: MIT */
/* fsverity.c: the fs-verity file digest, streamed, from hashes of pieces, or from the kernel */
#include <errno.h>
#include <linux/fsverity.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "basic/macro.h"
#include "hash/fsverity.h"

/* The descriptor whose hash is the digest (struct fsverity_descriptor of the kernel's fs/verity/,
 * as libfsverity lays it out for `fsverity digest`): 256 bytes. */
#define DESC_SIZE 256
#define DESC_ALGO 1
#define DESC_LOG_BLOCK 2
#define DESC_SALT_SIZE 3
#define DESC_DATA_SIZE 8
#define DESC_ROOT 16

/* The padding of a short block: never written, read by every context at once. */
static uint8_t zeros[HASH_BLOCK_SIZE_MAX];

struct FsverityTree {
        MdCtx *md;
        HashAlgo md_algo;     /* the tree's hash: HASH_SHA256 or HASH_SHA512 */
        uint8_t number;       /* its number in the descriptor: 1 or 2 */
        uint32_t block_size;
        size_t ds;            /* bytes of one hash */
        size_t alloc;         /* bytes of each buffer below (the largest block size so far) */
        uint64_t size;        /* data bytes so far */
        uint8_t *data;        /* a data block being filled */
        size_t data_fill;
        /* Level L holds the hashes of level L - 1's blocks (level 0: of the data blocks), in a
         * block being filled; count[L] is how many it was given in all. */
        uint8_t *level[FSVERITY_LEVELS_MAX];
        size_t fill[FSVERITY_LEVELS_MAX];
        uint64_t count[FSVERITY_LEVELS_MAX];
};

HashAlgo fsverity_tree_hash(HashAlgo a)
{
        return a == HASH_FSVERITY ? HASH_SHA256 : a == HASH_FSVERITY_SHA512 ? HASH_SHA512 : _HASH_ALGO_INVALID;
}

uint32_t fsverity_block_size(const HashParams *p)
{
        return p && p->block_size ? p->block_size : HASH_BLOCK_SIZE_DEFAULT;
}

bool fsverity_block_size_valid(uint32_t block_size)
{
        return block_size >= HASH_BLOCK_SIZE_MIN && block_size <= HASH_BLOCK_SIZE_MAX &&
               (block_size & (block_size - 1)) == 0;
}

int fsverity_tree_new(FsverityTree **ret)
{
        FsverityTree *t = calloc(1, sizeof(*t));
        int r;

        if (!t)
                return -ENOMEM;
        r = md_new(&t->md);
        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

static void tree_free_buffers(FsverityTree *t)
{
        t->data = mfree(t->data);
        for (unsigned l = 0; l < FSVERITY_LEVELS_MAX; l++)
                t->level[l] = mfree(t->level[l]);
        t->alloc = 0;
}

FsverityTree *fsverity_tree_free(FsverityTree *t)
{
        if (!t)
                return NULL;
        tree_free_buffers(t);
        md_free(t->md);
        return mfree(t);
}

int fsverity_tree_init(FsverityTree *t, HashAlgo a, uint32_t block_size)
{
        HashAlgo md = fsverity_tree_hash(a);

        if (!t || md < 0 || !fsverity_block_size_valid(block_size))
                return -EINVAL;
        if (block_size > t->alloc) {
                tree_free_buffers(t);
                t->data = malloc(block_size);
                if (!t->data)
                        return -ENOMEM;
                t->alloc = block_size;
        }
        t->md_algo = md;
        t->number = md == HASH_SHA256 ? 1 : 2;
        t->block_size = block_size;
        t->ds = hash_algo_digest_size(md);
        t->size = 0;
        t->data_fill = 0;
        memset(t->fill, 0, sizeof(t->fill));
        memset(t->count, 0, sizeof(t->count));
        return 0;
}

/* One block's hash: n bytes of data, zero-padded to the block size. */
static int hash_block(MdCtx *m, HashAlgo md, uint32_t block_size, const uint8_t *data, size_t n, uint8_t *out)
{
        int r = md_init(m, md);

        if (r >= 0)
                r = md_update(m, data, n);
        if (r >= 0 && n < block_size)
                r = md_update(m, zeros, block_size - n);
        if (r >= 0)
                r = md_final(m, out);
        return r;
}

/* A hash into level l; a level whose block fills is hashed into the next. */
static int push(FsverityTree *t, unsigned l, const uint8_t *hash)
{
        uint8_t h[HASH_DIGEST_MAX];

        memcpy(h, hash, t->ds);
        for (;; l++) {
                int r;

                if (l >= FSVERITY_LEVELS_MAX)
                        return -EFBIG;
                if (!t->level[l]) {
                        t->level[l] = malloc(t->alloc);
                        if (!t->level[l])
                                return -ENOMEM;
                }
                memcpy(t->level[l] + t->fill[l], h, t->ds);
                t->fill[l] += t->ds;
                t->count[l]++;
                if (t->fill[l] + t->ds <= t->block_size)
                        return 0;
                /* Full (the block size is a multiple of the hash's size): on up. */
                r = hash_block(t->md, t->md_algo, t->block_size, t->level[l], t->fill[l], h);
                if (r < 0)
                        return r;
                t->fill[l] = 0;
        }
}

int fsverity_tree_update(FsverityTree *t, const void *data, size_t n)
{
        const uint8_t *p = data;
        uint8_t h[HASH_DIGEST_MAX];
        int r;

        if (!t || (!data && n > 0))
                return -EINVAL;
        if (n == 0)
                return 0;
        t->size += n;
        if (t->data_fill > 0) {
                size_t k = MIN(n, t->block_size - t->data_fill);

                memcpy(t->data + t->data_fill, p, k);
                t->data_fill += k;
                p += k;
                n -= k;
                if (t->data_fill < t->block_size)
                        return 0;
                r = hash_block(t->md, t->md_algo, t->block_size, t->data, t->block_size, h);
                if (r >= 0)
                        r = push(t, 0, h);
                if (r < 0)
                        return r;
                t->data_fill = 0;
        }
        /* Whole blocks straight from the caller's buffer. */
        for (; n >= t->block_size; p += t->block_size, n -= t->block_size) {
                r = hash_block(t->md, t->md_algo, t->block_size, p, t->block_size, h);
                if (r >= 0)
                        r = push(t, 0, h);
                if (r < 0)
                        return r;
        }
        memcpy(t->data, p, n);
        t->data_fill = n;
        return 0;
}

int fsverity_tree_add_hashes(FsverityTree *t, const uint8_t *hashes, uint64_t bytes)
{
        uint64_t n;

        if (!t || !hashes || t->data_fill > 0 || t->size % t->block_size != 0)
                return -EINVAL;
        n = (bytes + t->block_size - 1) / t->block_size;
        for (uint64_t i = 0; i < n; i++) {
                int r = push(t, 0, hashes + i * t->ds);
                if (r < 0)
                        return r;
        }
        t->size += bytes;
        return 0;
}

int fsverity_tree_final(FsverityTree *t, uint8_t *out)
{
        uint8_t desc[DESC_SIZE] = { 0 }, h[HASH_DIGEST_MAX];
        unsigned l;
        int r;

        if (!t || !out || t->block_size == 0)
                return -EINVAL;
        if (t->data_fill > 0) {
                r = hash_block(t->md, t->md_algo, t->block_size, t->data, t->data_fill, h);
                if (r >= 0)
                        r = push(t, 0, h);
                if (r < 0)
                        return r;
                t->data_fill = 0;
        }
        /* The root: the first level that got one hash in all, once every level below it has
         * given its last, partial block. An empty file's is zeros. */
        if (t->size > 0)
                for (l = 0;; l++) {
                        if (t->count[l] == 1) {
                                memcpy(desc + DESC_ROOT, t->level[l], t->ds);
                                break;
                        }
                        if (t->fill[l] > 0) {
                                r = hash_block(t->md, t->md_algo, t->block_size, t->level[l], t->fill[l], h);
                                if (r >= 0)
                                        r = push(t, l + 1, h);
                                if (r < 0)
                                        return r;
                                t->fill[l] = 0;
                        }
                }
        desc[0] = 1; /* version */
        desc[DESC_ALGO] = t->number;
        desc[DESC_LOG_BLOCK] = (uint8_t)__builtin_ctz(t->block_size);
        for (unsigned i = 0; i < 8; i++)
                desc[DESC_DATA_SIZE + i] = (uint8_t)(t->size >> (8 * i));
        r = md_init(t->md, t->md_algo);
        if (r >= 0)
                r = md_update(t->md, desc, sizeof(desc));
        if (r >= 0)
                r = md_final(t->md, out);
        t->block_size = 0;
        return r;
}

int fsverity_hash_blocks(MdCtx *m, HashAlgo md_algo, uint32_t block_size, const uint8_t *data, size_t len,
                         uint8_t *out)
{
        size_t ds = hash_algo_digest_size(md_algo);

        if (!m || !data || len == 0 || !out || ds == 0 || !fsverity_block_size_valid(block_size))
                return -EINVAL;
        for (size_t off = 0, i = 0; off < len; off += block_size, i++) {
                uint8_t h[HASH_DIGEST_MAX];
                int r = hash_block(m, md_algo, block_size, data + off, MIN((size_t)block_size, len - off), h);

                if (r < 0)
                        return r;
                /* Over block i's own bytes at the latest (ds <= block_size): hashed already. */
                memcpy(out + i * ds, h, ds);
        }
        return 0;
}

int fsverity_measure_fd(int fd, HashAlgo a, const HashParams *p, uint8_t *out, uint64_t *ret_size)
{
        HashAlgo md = fsverity_tree_hash(a);
        uint8_t desc[DESC_SIZE] = { 0 };
        struct fsverity_read_metadata_arg arg = {
                .metadata_type = FS_VERITY_METADATA_TYPE_DESCRIPTOR,
                .length = sizeof(desc),
                .buf_ptr = (uint64_t)(uintptr_t)desc,
        };
        struct {
                struct fsverity_digest d;
                uint8_t digest[HASH_DIGEST_MAX];
        } m = { .d.digest_size = HASH_DIGEST_MAX };
        uint32_t block_size = fsverity_block_size(p);
        uint64_t size = 0;
        int k;

        if (fd < 0 || md < 0 || !out || !fsverity_block_size_valid(block_size))
                return -EINVAL;
        /* The descriptor says which tree the kernel keeps (the measurement alone does not tell the
         * block size or a salt): a file enabled otherwise is read, to give the digest asked for. */
        k = ioctl(fd, FS_IOC_READ_VERITY_METADATA, &arg);
        if (k < 0)
                /* ENODATA: not a verity file; ENOTTY, EOPNOTSUPP: no fs-verity here (or a kernel
                 * before 5.12, without this ioctl). Either way: read it. */
                return errno == ENODATA || errno == ENOTTY || errno == EOPNOTSUPP || errno == EINVAL ? 0
                                                                                                       : -errno;
        if (k < DESC_SIZE - 144 || desc[0] != 1 || desc[DESC_ALGO] != (md == HASH_SHA256 ? 1 : 2) ||
            desc[DESC_LOG_BLOCK] != __builtin_ctz(block_size) || desc[DESC_SALT_SIZE] != 0)
                return 0;
        if (ioctl(fd, FS_IOC_MEASURE_VERITY, &m.d) < 0)
                return errno == ENODATA || errno == ENOTTY || errno == EOPNOTSUPP ? 0 : -errno;
        if (m.d.digest_algorithm != desc[DESC_ALGO] || m.d.digest_size != hash_algo_digest_size(md))
                return 0;
        for (unsigned i = 0; i < 8; i++)
                size |= (uint64_t)desc[DESC_DATA_SIZE + i] << (8 * i);
        memcpy(out, m.digest, m.d.digest_size);
        if (ret_size)
                *ret_size = size;
        return 1;
}
