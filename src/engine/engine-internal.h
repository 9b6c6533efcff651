/* SPDX-License-Identifier: MIT */
/* engine-internal.h: state shared by the I/O thread (engine.c), the workers (worker.c) and the consumer */
#pragma once

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

#include "hash/blake3-tree.h"
#include "engine/engine.h"
#include "hash/hash.h"
#include "io/ioring.h"
#include "io/queue.h"

/*
 * Ownership of a buffer slot: exactly one of POOL (on the I/O thread's free list), RING (a read is
 * in flight into it, or it waits in its file's FIFO for its turn), WORKER (queued to or being hashed
 * by a worker). Only the current owner writes the Buffer; the SPSC queues carry it across threads
 * with release/acquire ordering, which also publishes the data the kernel wrote into it.
 */
typedef enum BufOwner {
        BUF_POOL,
        BUF_RING,
        BUF_WORKER,
} BufOwner;

typedef struct FileSlot FileSlot;

typedef struct Buffer {
        uint8_t *data;          /* the pool slot */
        const uint8_t *view;    /* what the worker hashes: data, or a window of the file's mapping */
        bool mapped;            /* view is in a file mapping: no read, hashed under mapguard */
        bool piece;             /* a BLAKE3 piece: the worker writes its subtree CV to cv */
        bool piece_ok;          /* ... and did (not skipped for a cancel, no SIGBUS) */
        bool fault;             /* SIGBUS while hashing the mapped view */
        uint8_t cv[BLAKE3_OUT_LEN];
        int index;              /* registration index, for READ_FIXED (0 when the pool is one buffer) */
        unsigned slot;          /* position in the pool: data == buf_mem + slot * buffer_size */
        /* A read spanning this slot and the next span - 1 (adjacent in memory, in the file's FIFO
         * right behind it): this "leader" carries the whole request in want/got while it is in
         * flight, its followers wait with in_flight set. 1 for ordinary reads. */
        unsigned span;
        BufOwner owner;
        FileSlot *file;
        uint64_t offset;        /* file offset of data[0]; unused for unseekable streams */
        uint32_t want;          /* bytes asked for */
        uint32_t got;           /* bytes filled so far (short reads are resumed) */
        bool small;             /* one of the small slots (Engine.small), not of the pool proper */
        bool in_flight;         /* a read SQE is outstanding */
        bool direct_read;       /* ... issued while the fd was O_DIRECT */
        bool done;              /* full, or ended by EOF */
        struct Buffer *next;    /* free list, or the file's FIFO in issue order */
} Buffer;

typedef enum FileState {
        FILE_FREE,
        FILE_OPENING,   /* openat and/or statx in flight */
        FILE_READING,
        FILE_DRAINING,  /* failed or cancelled: waiting for its operations to come back */
        FILE_CLOSING,   /* statx-after and close in flight */
        FILE_IO_DONE,   /* the I/O thread is finished with it; the worker may not be */
} FileState;

/*
 * One file in flight. Slots are preallocated (max_open of them), each with its own HashCtx made
 * once, so no allocation happens per file or per buffer. The I/O thread owns the slot's I/O fields;
 * the worker the file is assigned to owns ctx/digest/hashed. `parts` counts who still holds it: the
 * I/O thread always, plus the worker once the first work item went out. Whoever drops the last part
 * publishes the result (acq_rel makes the other side's fields visible) and gives the slot back.
 */
struct FileSlot {
        EngineJob *job;
        size_t input;               /* index in the job */
        HashAlgo algo;
        FileState state;
        int fd;
        bool fd_input;              /* fd came from the caller; never opened by path */
        unsigned ops;               /* operations in flight for this file */
        struct statx stx, stx_after;
        bool stat_ok, stat_after_ok;
        bool stream;                /* read until EOF, one read at a time */
        bool seekable;              /* explicit offsets (regular files, block devices) */
        bool check_change;
        EngineReadStrategy strategy; /* BUFFERED, MMAP or DIRECT, chosen when the file opened */
        uint8_t *map;               /* MMAP: the whole file; unmapped when the slot is released */
        size_t map_len;
        uint64_t chunk;             /* bytes per buffer (read) or window (mapped) of this file */
        unsigned span;              /* DIRECT: pool slots per read request (see file_choose_span()) */
        /* BLAKE3 on several workers: every buffer is a piece any worker hashes to a subtree CV; the
         * I/O thread merges the CVs in file order. */
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
        unsigned worker;
        bool worker_started;        /* FIRST sent */
        bool worker_closed;         /* LAST or ABORT sent */
        EngineFileStatus status;    /* set by the I/O thread; OK unless something went wrong */
        int error;
        _Atomic int parts;

        /* Worker side. */
        bool map_fault;             /* SIGBUS in the mapping: the file shrank while being hashed */
        HashCtx *ctx;
        uint64_t hashed;
        size_t digest_size;
        uint8_t digest[HASH_DIGEST_MAX];

        /* Linked open/read/close chain (engine.c, linked_start()): the file is in direct slot
         * `slot index` of the ring's file table, never an fd; stx is statx(path) from before the
         * chain, stx_after the one after it. */
        bool linked;
        bool fixed_open;            /* the chain's open put a file in the slot ... */
        bool fixed_closed;          /* ... and a close emptied it again */
        bool redo;                  /* the chain cannot vouch for the result: open classically */

        bool reopen;                /* openat hit EMFILE/ENFILE: retry when one of ours closes */
        FileSlot *deferred_next;

        FileSlot *next;             /* free list, or the open list */
        FileSlot *prev;
};

enum {
        WORK_FIRST = 1u << 0,  /* start a new digest before this item */
        WORK_LAST = 1u << 1,   /* finish the digest after this item */
        WORK_ABORT = 1u << 2,  /* drop the file: no digest */
        WORK_PIECE = 1u << 3,  /* a BLAKE3 piece: CV into buf->cv, no per-file state touched */
};

typedef struct WorkItem {
        FileSlot *file;
        Buffer *buf;     /* NULL for pure markers */
        uint32_t len;
        uint32_t flags;
} WorkItem;

typedef struct ReturnItem {
        Buffer *buf;     /* a hashed buffer going back to the pool ... */
        FileSlot *slot;  /* ... or a finished file slot */
} ReturnItem;

typedef struct Worker {
        Engine *engine;
        unsigned id;
        int cpu;                       /* -1: not pinned */
        pthread_t thread;
        bool started;
        SpscQueue in;                  /* I/O thread -> worker */
        SpscQueue out;                 /* worker -> I/O thread: buffers and slots */
        Parker parker;
        _Atomic bool stop;
        bool wake_pending;             /* I/O thread only: items pushed since the last wake */
        _Alignas(CACHELINE) _Atomic unsigned backlog;  /* items queued, for least-loaded choice */
} Worker;

typedef struct JobInput {
        char *path;   /* NULL for fd inputs */
        int fd;
} JobInput;

struct EngineJob {
        _Atomic unsigned n_ref;
        Engine *engine;
        HashAlgo algo;
        EngineJobOptions options;
        JobInput *inputs;
        size_t n_inputs, n_inputs_alloc;
        EngineJobCallbacks callbacks;
        void *userdata;

        /* Consumer side. */
        bool started;
        bool finished;       /* job_done delivered (or would have been) */
        bool orphaned;       /* the caller let go: deliver nothing more */

        /* I/O thread side. */
        size_t next_input;   /* inputs before this one have a slot or a result */
        bool in_active;      /* on the engine's list of jobs with inputs left to open */
        bool cancel_seen;
        EngineJob *active_next;

        /* Any thread. */
        _Atomic bool cancel_requested;
        _Atomic size_t results_pending;  /* inputs without a published result */
        _Atomic uint64_t bytes_done, bytes_total;
        _Atomic size_t files_done, files_failed;
        _Atomic uint64_t start_usec;
        _Atomic bool running;
};

typedef enum EventType {
        EVENT_FILE,
        EVENT_JOB,
} EventType;

typedef struct Event {
        EventType type;
        EngineJob *job;
        EngineJobResult job_result;
        EngineFileResult file;
} Event;

struct Engine {
        EngineConfig config;
        unsigned n_workers;
        size_t buffer_size;
        unsigned n_buffers;
        unsigned max_open;

        /* Buffers: one mapping, n_buffers slots. */
        uint8_t *buf_mem;
        size_t buf_mem_size;
        Buffer *buffers;
        uint64_t *free_map;           /* I/O thread only: bit i set = slot i is in the pool */
        unsigned n_free_buffers;
        unsigned max_span;            /* slots one read may span: 1 unless the pool allows more */
        /* Small slots, after the pool proper in the same mapping (and registration): one per open
         * file, so that every small file open can have its read in flight, where 16 pool slots of
         * 1 MiB allowed 16. Owned like pool slots; a free list instead of the bitmap (no spans). */
        Buffer *small;
        unsigned n_small, n_free_small;
        size_t small_size;
        Buffer *free_small;           /* I/O thread only */

        FileSlot *slots;
        FileSlot *free_slots;         /* I/O thread only */
        FileSlot *open_head, *open_tail;  /* slots in flight, I/O thread only */
        FileSlot *read_cursor;        /* round-robin position for issuing reads */
        unsigned n_open;              /* slots on the open list */
        unsigned open_cap;            /* lowered when the process runs out of fds */
        unsigned n_fds;               /* fds the open slots hold */
        FileSlot *deferred;           /* opens waiting for an fd to be freed */

        Worker *workers;

        /* I/O thread. */
        pthread_t io_thread;
        bool io_started;
        IoRing *ring;
        IoMode io_mode;
        int wake_fd;                  /* eventfd: wakes the I/O thread */
        Parker io_parker;
        bool dontcache_ok;
        bool linked;                  /* path inputs may use the linked chain (EngineOpenMode) */
        EngineJob *active_head, *active_tail;  /* jobs with inputs left to open */
        int init_result;
        pthread_mutex_t init_lock;
        pthread_cond_t init_cond;
        bool init_done;

        /* Consumer -> I/O thread control. */
        pthread_mutex_t control_lock;
        EngineJob **new_jobs;
        size_t n_new_jobs, n_new_jobs_alloc;
        _Atomic bool control_pending;
        _Atomic bool cancel_pending;
        _Atomic bool shutdown;

        /* Workers / I/O thread -> consumer. */
        pthread_mutex_t event_lock;
        Event *events;
        size_t n_events, n_events_alloc;
        Event *dispatching;           /* consumer only: being delivered, from dispatch_pos on */
        size_t n_dispatching, dispatch_pos;
        size_t n_dispatching_alloc;
        int event_fd;

        /* Live jobs the consumer created, so engine_free() can let go of them. */
        _Atomic uint64_t bytes_hashed;
        _Atomic uint64_t files_linked;   /* written by the I/O thread only */
        _Atomic unsigned files_queued;
};

/* worker.c */
int worker_start(Worker *w, Engine *e, unsigned id, int cpu, size_t queue_capacity);
void worker_stop(Worker *w);
/* engine.c, called by workers (and the I/O thread) when a file's last part lets go. */
void engine_file_release(Engine *e, FileSlot *f, Worker *from);
