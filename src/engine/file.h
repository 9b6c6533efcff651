/* SPDX-License-Identifier: MIT */
/* file.h: one file in flight (FileSlot), the buffers its reads fill, and the stages that move it */
#pragma once

#include <stdatomic.h>
#include <sys/stat.h>

#include "engine/engine.h"
#include "hash/blake3-tree.h"
#include "hash/hash.h"

typedef struct Engine Engine;
typedef struct Shard Shard;
typedef struct Worker Worker;
typedef struct FileSlot FileSlot;
typedef struct ShareGroup ShareGroup;

/*
 * Ownership of a buffer slot: exactly one of POOL (on its shard's free list), RING (a read is in
 * flight into it, or it waits in its file's FIFO for its turn), WORKER (queued for hashing, on its
 * own shard or, a BLAKE3 piece, on another). Only the current owner writes the Buffer; the SPSC
 * queues carry it between the I/O side and the hashing side (across threads for pieces) with
 * release/acquire ordering, which also publishes the data the kernel wrote into it.
 */
typedef enum BufOwner {
        BUF_POOL,
        BUF_RING,
        BUF_WORKER,
} BufOwner;

typedef struct Buffer {
        /* 16-aligned, like FileSlot: completion tags keep the operation in the low 4 bits. */
        _Alignas(16) uint8_t *data;  /* the pool slot */
        const uint8_t *view;    /* what the worker hashes: data, or a window of the file's mapping */
        bool mapped;            /* view is in a file mapping: no read, hashed under mapguard */
        bool piece;             /* a BLAKE3 piece: the worker writes its subtree CV to cv */
        bool piece_ok;          /* ... and did (not skipped for a cancel, no SIGBUS) */
        bool fault;             /* SIGBUS while hashing the mapped view */
        uint8_t cv[BLAKE3_OUT_LEN];
        int index;              /* registration index, for READ_FIXED (0 when the pool is one buffer) */
        unsigned slot;          /* the pool's index of the slot */
        /* A read spanning this slot and the next span - 1 (adjacent in memory, in the file's FIFO
         * right behind it): this "leader" carries the whole request in want/got while it is in
         * flight, its followers wait with in_flight set. 1 for ordinary reads. */
        unsigned span;
        BufOwner owner;
        FileSlot *file;
        uint64_t offset;        /* file offset of data[0]; unused for unseekable streams */
        uint32_t want;          /* bytes asked for */
        uint32_t got;           /* bytes filled so far (short reads are resumed) */
        bool small;             /* one of the pool's small slots */
        bool in_flight;         /* a read SQE is outstanding */
        bool direct_read;       /* ... issued while the fd was O_DIRECT */
        bool dontcache_read;    /* ... with RWF_DONTCACHE */
        bool disk_read;         /* ... counted in the shard's disk_ops (a background read that may
                                 * reach the disk, diskwatch.h) */
        bool done;              /* full, or ended by EOF */
        struct Buffer *next;    /* the file's FIFO in issue order, or a list of hashed pieces */
        ShareGroup *group;      /* charged for this buffer while it is out of the pool, or NULL */
} Buffer;

typedef enum FileState {
        FILE_FREE,
        FILE_OPENING,   /* openat and/or statx in flight */
        FILE_READING,
        FILE_DRAINING,  /* failed or cancelled: waiting for its operations to come back */
        FILE_CLOSING,   /* statx-after and close in flight */
        FILE_IO_DONE,   /* the I/O side is finished with it; the hashing side may not be */
} FileState;

/*
 * One file in flight. Slots are preallocated (max_open of them), each with its own HashCtx made
 * once, so no allocation happens per file or per buffer. Its shard's I/O side owns the slot's I/O
 * fields, its hashing side (the same thread, at another point of the loop) ctx/digest/hashed.
 * `parts` counts who still holds it: the I/O side always, plus the hashing side once the first work
 * item went out. Whoever drops the last part publishes the result and gives the slot back.
 */
struct FileSlot {
        _Alignas(16) EngineJob *job;  /* NULL once the result is posted early (a stalled file) */
        size_t input;               /* index in the job */
        HashAlgo algo;
        FileState state;
        int fd;
        bool fd_input;              /* fd came from the caller (until read-direct.c reopens it as ours) */
        unsigned ops;               /* operations in flight for this file */
        struct statx stx, stx_after;
        struct open_how how;        /* an open beneath a directory: read by the kernel at submit */
        bool stat_ok, stat_after_ok;
        bool stream;                /* read until EOF, one read at a time */
        bool seekable;              /* explicit offsets (regular files, block devices) */
        bool check_change;
        EngineReadStrategy strategy; /* BUFFERED, MMAP or DIRECT, chosen when the file opened */
        uint8_t *map;               /* MMAP: the whole file; unmapped when the slot is released */
        size_t map_len;
        uint64_t chunk;             /* bytes per buffer (read) or window (mapped) of this file */
        unsigned span;              /* DIRECT: pool slots per read request (see read_direct_setup()) */
        /* BLAKE3 on several workers: every buffer is a piece any worker hashes to a subtree CV; the
         * file's shard merges the CVs in file order. */
        bool parallel;
        Blake3Merge *merge;         /* allocated for the file, freed when the slot is released */
        Buffer *cv_wait;            /* hashed pieces that came back before their turn, by offset */
        uint64_t merge_off;         /* offset of the next piece to merge */
        unsigned pieces_out;        /* pieces at the workers */
        uint64_t size;              /* st_size at start (regular files with size > 0) */
        uint64_t issue_off;         /* next offset to read */
        uint64_t read_bytes;        /* bytes handed to the worker */
        bool eof;                   /* no more reads will be issued */
        Buffer *fifo_head, *fifo_tail;
        unsigned reads_in_flight;
        unsigned shard;             /* the shard whose slot this is */
        bool disk_known;            /* background: its disk is watched (diskwatch.h), once it is open */
        bool cached;                /* wholly in the page cache when it opened (cachestat): its reads
                                     * need no disk, so a background engine's disk watch neither
                                     * holds nor drains them (diskwatch.h) */
        bool worker_started;        /* FIRST sent */
        bool worker_closed;         /* LAST or ABORT sent */
        EngineFileStatus status;    /* set by the I/O side; OK unless something went wrong */
        int error;
        _Atomic int parts;

        /* Worker side. */
        bool map_fault;             /* SIGBUS in the mapping: the file shrank while being hashed */
        HashCtx *ctx;
        HashCtx *ctx_more[HASH_SET_MAX - 1];  /* a set's other algorithms: made when first needed */
        uint64_t hashed;
        size_t digest_size;
        uint8_t digest[HASH_SET_DIGEST_MAX];

        /* Linked open/read/close chain (linked.c): the file is in direct slot `slot index` of the
         * ring's file table, never an fd; stx is statx(path) from before the chain, stx_after the one
         * after it. */
        bool linked;
        bool fixed_open;            /* the chain's open put a file in the slot ... */
        bool fixed_closed;          /* ... and a close emptied it again */
        bool redo;                  /* the chain cannot vouch for the result: open classically */

        bool reopen;                /* openat hit EMFILE/ENFILE: retry when one of ours closes */
        FileSlot *deferred_next;

        /* Fair share and stalls (sched.c). */
        ShareGroup *group;
        bool charged;               /* counted in its group's and job's open files */
        bool borrowed;              /* ... opened beyond open_cap, under its share */
        uint64_t progress_usec;     /* when an operation of the file last completed (or it started) */
        bool stalled;               /* no progress for the stall timeout: cancelled, ends -ETIMEDOUT */
        bool posted;                /* result posted already; the slot waits for the kernel */
        bool zombie;                /* ... and is off the open list, charged to nobody */

        bool untrusted;             /* ENGINE_INPUT_UNTRUSTED_FS: statx through the ring, no mmap/O_DIRECT */
        bool pollable;              /* a pipe, socket or character device: poll before each read */
        bool polling;               /* ... a poll is in flight */
        bool poll_ready;            /* ... it fired: the next read may take a buffer */
        bool caller_direct;         /* an fd the caller opened O_DIRECT: aligned reads, never cleared */
        bool nonblock;              /* our open's O_NONBLOCK is still set (cleared on the first -EAGAIN) */
        int fd_flags;               /* an fd input's F_GETFL as its caller gave it (EngineFdInfo), or -1 */
        bool pseudo;                /* sysfs, procfs & co.: st_size says nothing, EOF ends the file */

        FileSlot *next;             /* free list, or the open list */
        FileSlot *prev;
};

/* Completion tags: a pointer with the operation in its low 4 bits (slots and buffers are 16-aligned,
 * the Engine comes from calloc(): 16-aligned too). */
enum {
        OP_OPEN = 1,
        OP_READ = 2,
        OP_FADVISE = 3,
        OP_CLOSE = 4,
        OP_CANCEL = 5,
        OP_LINK_OPEN = 6,   /* the open of a linked chain (its read is OP_READ on the buffer) */
        OP_LINK_CLOSE = 7,  /* the close of a linked chain, or of its slot afterwards */
        OP_STATX = 8,       /* statx through the ring, for files on untrusted file systems */
        OP_POLL = 9,        /* a stream waits for data before it takes a buffer */
        OP_CLOSE_ANON = 10, /* a close that no file waits for (the pointer is the Engine) */
};
#define TAG(p, op) ((uint64_t)(uintptr_t)(p) | (op))
#define TAG_OP(t) ((unsigned)((t)&15))
#define TAG_PTR(t) ((void *)(uintptr_t)((t) & ~UINT64_C(15)))

/* What statx is asked for, before and after reading: the change check compares all of it. */
#define FILE_STATX_MASK ENGINE_FD_STATX_MASK

static inline int64_t stx_mtime_nsec(const struct statx *s)
{
        return (int64_t)s->stx_mtime.tv_sec * 1000000000 + s->stx_mtime.tv_nsec;
}

/* file.c: a file's life after it opened, on its shard's I/O side. */
void file_set_error(FileSlot *f, EngineFileStatus st, int error);
void file_abort(Shard *s, FileSlot *f, EngineFileStatus st, int error);
void file_finish_io(Shard *s, FileSlot *f);
void file_dispatch_ready(Shard *s, FileSlot *f);
void file_drop_idle_buffers(Shard *s, FileSlot *f);
void file_close(Shard *s, FileSlot *f);
void file_check_change(FileSlot *f);
void file_stall(Shard *s, FileSlot *f);
void file_try_detach(Shard *s, FileSlot *f);
void file_result(const FileSlot *f, EngineFileResult *ret);
void slot_free(Shard *s, FileSlot *f);

/* open.c: the open stage. */
int job_open_flags(const EngineJob *j);
/* creds.c: the id of s's personality for c (registered on first use), or -errno. */
int shard_personality(Shard *s, const EngineCreds *c);
void shard_personalities_free(Shard *s);
void file_start(Shard *s, FileSlot *f);
void file_opened(Shard *s, FileSlot *f);
int file_stat(int fd, struct statx *stx);
void open_done(Shard *s, FileSlot *f, int res);
void statx_done(Shard *s, FileSlot *f, int res);
void poll_done(Shard *s, FileSlot *f, int res);
void stream_arm(Shard *s, FileSlot *f);
void close_anon(Shard *s, int fd);
void close_done(Shard *s);
void fds_add(Shard *s);
void file_open_path(Shard *s, FileSlot *f);
unsigned engine_fds(Engine *e);
void deferred_retry(Shard *s);
void file_op_done(Shard *s, FileSlot *f);
void open_list_add(Shard *s, FileSlot *f);
void open_list_remove(Shard *s, FileSlot *f);
void deferred_remove(Shard *s, FileSlot *f);

/* read.c: read requests into pool buffers. */
void buffer_put(Shard *s, Buffer *b);
Buffer *buffer_take(Shard *s, FileSlot *f, unsigned slot);
Buffer *buffer_get(Shard *s, FileSlot *f);
Buffer *buffer_get_for(Shard *s, FileSlot *f, uint64_t fits);
void file_queue_buffer(Shard *s, FileSlot *f, Buffer *b);
void file_issue_read(Shard *s, FileSlot *f, Buffer *b);
void span_split(Shard *s, Buffer *b);
/* cached_only: only files wholly in the page cache (a background shard the disk watch holds). */
bool issue_reads(Shard *s, bool cached_only);
void read_completion(Shard *s, Buffer *b, int res);

/*
 * How a file's bytes reach the pool, decided once per file when it opens (strategy.c), one file per
 * strategy: read-buffered.c, read-mmap.c, read-direct.c. setup() prepares the file (false: it cannot
 * be read this way; BUFFERED is the fallback and never refuses); start() takes the buffer(s) for the
 * file's next read and starts it, or returns NULL when the file gets nothing now.
 */
typedef struct ReadStrategyOps {
        EngineReadStrategy strategy;
        bool (*setup)(Shard *s, FileSlot *f);
        Buffer *(*start)(Shard *s, FileSlot *f);
} ReadStrategyOps;

/* A strategy's ops from its two functions, named prefix_setup and prefix_start. */
#define READ_STRATEGY_OPS(s, prefix) { .strategy = (s), .setup = prefix##_setup, .start = prefix##_start }

extern const ReadStrategyOps read_buffered_ops;
extern const ReadStrategyOps read_mmap_ops;
extern const ReadStrategyOps read_direct_ops;

const ReadStrategyOps *read_strategy_ops(EngineReadStrategy s);
void file_choose_strategy(Shard *s, FileSlot *f);
/* read-direct.c: O_DIRECT refused a read after all; true if the buffer was issued again. */
bool read_direct_einval(Shard *s, FileSlot *f, Buffer *b);

/* pieces.c: BLAKE3 files hashed in pieces on every worker. */
void file_choose_parallel(Shard *s, FileSlot *f);
void send_piece(Shard *s, FileSlot *f, Buffer *b);
void piece_returned(Shard *s, Buffer *b);

/* linked.c: small files as one open/read/close chain. */
int path_stat(const char *path, struct statx *stx);
bool linked_eligible(Shard *s, const EngineJob *j, const struct statx *stx);
Buffer *linked_start(Shard *s, FileSlot *f);
void linked_read_done(Shard *s, Buffer *b, int res);
void linked_opened(FileSlot *f, int res);
void linked_closed(FileSlot *f, int res);
void linked_settle(Shard *s, FileSlot *f);
void linked_abort(Shard *s, FileSlot *f);
