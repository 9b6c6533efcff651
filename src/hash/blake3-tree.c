/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include "hash/blake3-tree.h"
#include "basic/macro.h"

/* BLAKE3's internal interface (compression functions, hash_many, IV, flags), from the directory
 * src/blake3/meson.build finds; its include path is a system one, so its unused static helpers do
 * not warn here. */
#include <blake3_impl.h>

/* Chunks per hash_many batch: a power of two (so every batch but the last is a complete subtree)
 * and a multiple of the widest SIMD degree (16, AVX-512). 256 keeps the stack arrays below at about
 * 14 KiB, small enough for any worker thread, while each batch still feeds hash_many 16 groups. */
#define BATCH_CHUNKS 256
#define BATCH_BYTES ((size_t)BATCH_CHUNKS * BLAKE3_CHUNK_LEN)

static void chunk_cv(const uint8_t *in, size_t len, const uint32_t key[8], uint8_t flags,
                     uint64_t counter, uint8_t out[BLAKE3_OUT_LEN])
{
        uint8_t block[BLAKE3_BLOCK_LEN] = { 0 };
        uint8_t start = CHUNK_START;
        uint32_t cv[8];

        assert(len > 0 && len <= BLAKE3_CHUNK_LEN);
        memcpy(cv, key, sizeof(cv));
        for (; len > BLAKE3_BLOCK_LEN; in += BLAKE3_BLOCK_LEN, len -= BLAKE3_BLOCK_LEN) {
                blake3_compress_in_place(cv, in, BLAKE3_BLOCK_LEN, counter, flags | start);
                start = 0;
        }
        /* The last block is zero-padded: compress reads all 64 bytes whatever block_len says. */
        memcpy(block, in, len);
        blake3_compress_in_place(cv, block, (uint8_t)len, counter, flags | start | CHUNK_END);
        store_cv_words(out, cv);
}

/* At most BATCH_BYTES of input to one CV: the chunk CVs all at once through hash_many, then the
 * parent levels, each also through hash_many. Pairing neighbours level by level and carrying an odd
 * last CV up unchanged builds exactly BLAKE3's left-balanced tree. */
static void batch_cv(const uint8_t *in, size_t len, const uint32_t key[8], uint8_t flags,
                     uint64_t counter, uint8_t out[BLAKE3_OUT_LEN])
{
        const uint8_t *inputs[BATCH_CHUNKS];
        uint8_t buf_a[BATCH_CHUNKS * BLAKE3_OUT_LEN], buf_b[BATCH_CHUNKS / 2 * BLAKE3_OUT_LEN];
        uint8_t *cvs = buf_a, *next = buf_b;
        size_t full = len / BLAKE3_CHUNK_LEN, rest = len % BLAKE3_CHUNK_LEN, n = full;

        assert(len > 0 && len <= BATCH_BYTES);
        for (size_t i = 0; i < full; i++)
                inputs[i] = in + i * BLAKE3_CHUNK_LEN;
        if (full > 0)
                blake3_hash_many(inputs, full, BLAKE3_CHUNK_LEN / BLAKE3_BLOCK_LEN, key, counter, true,
                                 flags, CHUNK_START, CHUNK_END, cvs);
        if (rest > 0)
                chunk_cv(in + full * BLAKE3_CHUNK_LEN, rest, key, flags, counter + full,
                         cvs + n++ * BLAKE3_OUT_LEN);

        /* Parent levels ping-pong between the two arrays: hash_many's output must not overlap its
         * input. After the first level at most BATCH_CHUNKS / 2 CVs remain. */
        while (n > 1) {
                size_t pairs = n / 2;
                uint8_t *t;

                for (size_t i = 0; i < pairs; i++)
                        inputs[i] = cvs + i * BLAKE3_BLOCK_LEN;
                blake3_hash_many(inputs, pairs, 1, key, 0, false, flags | PARENT, 0, 0, next);
                if (n % 2)
                        memcpy(next + pairs * BLAKE3_OUT_LEN, cvs + pairs * BLAKE3_BLOCK_LEN,
                               BLAKE3_OUT_LEN);
                n = pairs + n % 2;
                t = cvs;
                cvs = next;
                next = t;
        }
        memcpy(out, cvs, BLAKE3_OUT_LEN);
}

/* p has been checked. */
static void hasher_init_params(blake3_hasher *h, const HashParams *p)
{
        if (p && p->keyed)
                blake3_hasher_init_keyed(h, p->key);
        else if (p && p->context)
                blake3_hasher_init_derive_key(h, p->context);
        else
                blake3_hasher_init(h);
}

int blake3_mode_init(Blake3Mode *ret, const HashParams *p)
{
        blake3_hasher h;
        int r;

        r = hash_params_check(HASH_BLAKE3, p);
        if (r < 0)
                return r;
        /* The library's own inits work the mode out (derive-key hashes the context into its key),
         * and leave it in the hasher's public fields: take it from there, then wipe the hasher. */
        hasher_init_params(&h, p);
        memcpy(ret->key, h.key, sizeof(ret->key));
        ret->flags = h.chunk.flags;
        explicit_bzero(&h, sizeof(h));
        return 0;
}

void blake3_mode_wipe(Blake3Mode *m)
{
        explicit_bzero(m, sizeof(*m));
}

static void parent_cv(const Blake3Merge *m, const uint8_t block[BLAKE3_BLOCK_LEN],
                      uint8_t out[BLAKE3_OUT_LEN])
{
        uint32_t cv[8];

        memcpy(cv, m->mode.key, sizeof(cv));
        blake3_compress_in_place(cv, block, BLAKE3_BLOCK_LEN, 0, m->mode.flags | PARENT);
        store_cv_words(out, cv);
}

/* As the reference's hasher_merge_cv_stack(): one CV per 1-bit of the chunk count stays. */
static void merge_stack(Blake3Merge *m, uint64_t chunks)
{
        size_t keep = (size_t)__builtin_popcountll(chunks);

        while (m->cv_stack_len > keep) {
                uint8_t *parent = m->cv_stack + (size_t)(m->cv_stack_len - 2) * BLAKE3_OUT_LEN;

                parent_cv(m, parent, parent);
                m->cv_stack_len--;
        }
}

void blake3_merge_init_mode(Blake3Merge *m, const Blake3Mode *mode)
{
        *m = (Blake3Merge) { .mode = *mode };
}

void blake3_merge_init(Blake3Merge *m)
{
        *m = (Blake3Merge) { .mode.flags = 0 };
        memcpy(m->mode.key, IV, sizeof(m->mode.key));
}

void blake3_merge_push(Blake3Merge *m, const uint8_t cv[BLAKE3_OUT_LEN], uint64_t n_chunks)
{
        /* A power of two, aligned to its own size: otherwise it is no subtree of the file's tree. */
        assert(n_chunks > 0 && (n_chunks & (n_chunks - 1)) == 0 && (m->chunks & (n_chunks - 1)) == 0);
        /* Lazy: merge what precedes this CV, never this CV itself, which might end up in the root. */
        merge_stack(m, m->chunks);
        assert(m->cv_stack_len <= BLAKE3_MAX_DEPTH);
        memcpy(m->cv_stack + (size_t)m->cv_stack_len * BLAKE3_OUT_LEN, cv, BLAKE3_OUT_LEN);
        m->cv_stack_len++;
        m->chunks += n_chunks;
}

/* Rolls the stack up with the last CV: as the reference's finalize, the subtrees on the stack
 * are the left children of the tree's right edge, from the bottom up. The topmost parent is the
 * root when root is true (out_len bytes of its output), else (the last batch of a subtree) one
 * more non-root CV (out_len is BLAKE3_OUT_LEN). */
static void merge_rollup(Blake3Merge *m, const uint8_t last_cv[BLAKE3_OUT_LEN], bool root,
                         uint8_t *out, size_t out_len)
{
        uint8_t block[BLAKE3_BLOCK_LEN];

        merge_stack(m, m->chunks);
        assert(m->cv_stack_len > 0);
        memcpy(block + BLAKE3_OUT_LEN, last_cv, BLAKE3_OUT_LEN);
        for (size_t i = m->cv_stack_len - 1; i > 0; i--) {
                memcpy(block, m->cv_stack + i * BLAKE3_OUT_LEN, BLAKE3_OUT_LEN);
                parent_cv(m, block, block + BLAKE3_OUT_LEN);
        }
        memcpy(block, m->cv_stack, BLAKE3_OUT_LEN);
        if (!root) {
                assert(out_len == BLAKE3_OUT_LEN);
                parent_cv(m, block, out);
        } else {
                uint8_t wide[2 * BLAKE3_OUT_LEN];

                /* As output_root_bytes(): the root node compressed again for every 64 bytes of
                 * output, the output block counter going 0, 1, ... */
                for (uint64_t counter = 0; out_len > 0; counter++) {
                        size_t k = MIN(out_len, sizeof(wide));

                        blake3_compress_xof(m->mode.key, block, BLAKE3_BLOCK_LEN, counter,
                                            m->mode.flags | PARENT | ROOT, wide);
                        memcpy(out, wide, k);
                        out += k;
                        out_len -= k;
                }
                explicit_bzero(wide, sizeof(wide));
        }
        explicit_bzero(block, sizeof(block));
        m->cv_stack_len = 0;
}

void blake3_merge_finish_xof(Blake3Merge *m, const uint8_t last_cv[BLAKE3_OUT_LEN], uint64_t last_len,
                             uint8_t *out, size_t out_len)
{
        uint64_t last_chunks = DIV_ROUND_UP(last_len, BLAKE3_CHUNK_LEN);

        /* The last piece must be one node of the tree: it fits below the lowest 1-bit of what
         * precedes it. */
        assert(m->chunks > 0 && last_len > 0 && last_chunks <= (m->chunks & -m->chunks));
        (void)last_chunks;
        merge_rollup(m, last_cv, true, out, out_len);
        /* The key words, in keyed mode the key itself, and the CVs: nothing of them stays. */
        explicit_bzero(m, sizeof(*m));
}

void blake3_merge_finish(Blake3Merge *m, const uint8_t last_cv[BLAKE3_OUT_LEN], uint64_t last_len,
                         uint8_t out[BLAKE3_OUT_LEN])
{
        blake3_merge_finish_xof(m, last_cv, last_len, out, BLAKE3_OUT_LEN);
}

void blake3_subtree_cv_mode(const Blake3Mode *mode, const uint8_t *in, size_t len, uint64_t counter,
                            uint8_t out[BLAKE3_OUT_LEN])
{
        Blake3Merge m;
        uint8_t cv[BLAKE3_OUT_LEN];

        assert(len > 0);
        if (len <= BATCH_BYTES) {
                batch_cv(in, len, mode->key, mode->flags, counter, out);
                return;
        }
        /* Larger: complete batches are subtrees of this subtree, merged like a file's pieces. */
        blake3_merge_init_mode(&m, mode);
        for (; len > BATCH_BYTES; in += BATCH_BYTES, len -= BATCH_BYTES, counter += BATCH_CHUNKS) {
                batch_cv(in, BATCH_BYTES, mode->key, mode->flags, counter, cv);
                blake3_merge_push(&m, cv, BATCH_CHUNKS);
        }
        batch_cv(in, len, mode->key, mode->flags, counter, cv);
        merge_rollup(&m, cv, false, out, BLAKE3_OUT_LEN);
        if (mode->flags != 0)
                explicit_bzero(&m.mode, sizeof(m.mode));
}

void blake3_subtree_cv(const uint8_t *input, size_t len, uint64_t chunk_counter,
                       uint8_t out_cv[BLAKE3_OUT_LEN])
{
        Blake3Mode mode = { .flags = 0 };

        memcpy(mode.key, IV, sizeof(mode.key));
        blake3_subtree_cv_mode(&mode, input, len, chunk_counter, out_cv);
}

int blake3_tree_hash_params(const HashParams *p, const uint8_t *in, size_t len, size_t piece, uint8_t *out)
{
        size_t out_len = hash_params_digest_size(HASH_BLAKE3, p);
        Blake3Mode mode;
        Blake3Merge m;
        uint8_t cv[BLAKE3_OUT_LEN];
        size_t off = 0;
        int r;

        assert(piece >= BLAKE3_CHUNK_LEN && piece % BLAKE3_CHUNK_LEN == 0 && (piece & (piece - 1)) == 0);
        r = blake3_mode_init(&mode, p);
        if (r < 0)
                return r;
        if (len <= piece) {
                blake3_hasher h;

                hasher_init_params(&h, p);
                blake3_hasher_update(&h, in, len);
                blake3_hasher_finalize(&h, out, out_len);
                explicit_bzero(&h, sizeof(h));
        } else {
                blake3_merge_init_mode(&m, &mode);
                for (; len - off > piece; off += piece) {
                        blake3_subtree_cv_mode(&mode, in + off, piece, off / BLAKE3_CHUNK_LEN, cv);
                        blake3_merge_push(&m, cv, piece / BLAKE3_CHUNK_LEN);
                }
                blake3_subtree_cv_mode(&mode, in + off, len - off, off / BLAKE3_CHUNK_LEN, cv);
                blake3_merge_finish_xof(&m, cv, len - off, out, out_len);
        }
        blake3_mode_wipe(&mode);
        return 0;
}

void blake3_tree_hash(const uint8_t *in, size_t len, size_t piece, uint8_t out[BLAKE3_OUT_LEN])
{
        int r = blake3_tree_hash_params(NULL, in, len, piece, out);

        assert(r == 0);
        (void)r;
}
