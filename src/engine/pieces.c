/* SPDX-License-Identifier: MIT */
/* pieces.c: one BLAKE3 or fs-verity file on every worker: buffer-sized pieces hashed anywhere (to
 * subtree CVs, or to the hashes of their blocks), merged here in file order */
#include <stdlib.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "hash/fsverity.h"

/* Files longer than one buffer are cut into buffer-sized pieces hashed on all workers at once:
 *  - BLAKE3: a power of two of 1 KiB chunks, at multiples of their size: subtrees of BLAKE3's tree;
 *  - fs-verity: whole blocks of the tree's bottom level, each piece's block hashes written over its
 *    own buffer; the file's shard feeds them to its context in file order, which hashes the levels
 *    above (a 128th of the data's hashing with 4 KiB blocks of SHA-256). */
void file_choose_parallel(Shard *s, FileSlot *f)
{
        const HashParams *params = f->job->options.params;
        uint64_t p = f->chunk;

        if (f->job->algos.n > 1 || s->n_shards < 2 || f->size <= p || (p & (p - 1)) != 0)
                return;
        if (fsverity_tree_hash(f->algo) >= 0) {
                /* The context is the file's shard's: no worker touches it while the file is in pieces. */
                if (p % fsverity_block_size(params) != 0 || hash_ctx_init_params(f->ctx, f->algo, params) < 0)
                        return;
                f->parallel = true;
                return;
        }
        if (f->algo != HASH_BLAKE3 || p % BLAKE3_CHUNK_LEN != 0)
                return;
        f->merge = malloc(sizeof(Blake3Merge));
        if (!f->merge)
                return; /* hashed on one worker instead */
        blake3_merge_init_mode(f->merge, &f->job->b3mode);
        f->parallel = true;
}

/* A piece goes to whichever shard has the least queued: one file on every core. */
void send_piece(Shard *s, FileSlot *f, Buffer *b)
{
        b->owner = BUF_WORKER;
        b->piece = true;
        b->piece_ok = b->fault = false;
        f->pieces_out++;
        link_push(pick_worker(s), &(WorkItem){ .file = f, .buf = b, .len = b->got, .flags = WORK_PIECE });
}

/* A piece came back hashed: merge, in file order, every CV whose turn has come. */
void piece_returned(Shard *s, Buffer *b)
{
        FileSlot *f = b->file;

        f->pieces_out--;
        b->piece = false;
        if (f->state != FILE_READING || !b->piece_ok) {
                bool fault = b->fault;
                buffer_put(s, b);
                if (f->state == FILE_READING)
                        /* Skipped because the job was cancelled, or the mapping faulted. */
                        file_abort(s, f, fault ? ENGINE_FILE_CHANGED : ENGINE_FILE_CANCELLED, 0);
                file_finish_io(s, f);
                return;
        }

        /* Workers finish pieces in any order; hold the early ones (sorted by offset). */
        Buffer **p = &f->cv_wait;
        while (*p && (*p)->offset < b->offset)
                p = &(*p)->next;
        b->next = *p;
        *p = b;

        while (f->cv_wait && f->cv_wait->offset == f->merge_off) {
                Buffer *c = f->cv_wait;
                f->cv_wait = c->next;
                f->merge_off += c->got;
                f->hashed += c->got;
                if (!f->merge) {
                        /* fs-verity: the piece's block hashes are in its buffer. */
                        if (hash_ctx_add_block_hashes(f->ctx, c->data, c->got) < 0)
                                file_abort(s, f, ENGINE_FILE_ERROR, -EIO);
                        else if (f->merge_off >= f->size && hash_ctx_final(f->ctx, f->digest) >= 0)
                                f->digest_size = hash_ctx_digest_size(f->ctx);
                } else if (f->merge_off < f->size)
                        blake3_merge_push(f->merge, c->cv, c->got / BLAKE3_CHUNK_LEN);
                else {
                        f->digest_size = hash_params_digest_size(HASH_BLAKE3, f->job->options.params);
                        blake3_merge_finish_xof(f->merge, c->cv, c->got, f->digest, f->digest_size);
                }
                buffer_put(s, c);
        }
        file_dispatch_ready(s, f);
}
