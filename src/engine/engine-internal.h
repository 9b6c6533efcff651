/* SPDX-License-Identifier: MIT */
/* engine-internal.h: state shared by the shards (shard.c, worker.c) and the consumer */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include "engine/diskwatch.h"
#include "engine/engine.h"
#include "engine/file.h"
#include "engine/sched.h"
#include "hash/md.h"
#include "io/ioring.h"
#include "io/pool.h"
#include "io/queue.h"

enum {
        WORK_FIRST = 1u << 0,  /* start a new digest before this item */
        WORK_LAST = 1u << 1,   /* finish the digest after this item */
        WORK_ABORT = 1u << 2,  /* drop the file: no digest */
        WORK_PIECE = 1u << 3,  /* a piece: a BLAKE3 CV into buf->cv, or fs-verity's block hashes into
                                * buf->data; no per-file state touched */
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

/*
 * A hand-off from one shard to the shard that hashes: `from` queues a file's buffers (or a BLAKE3
 * piece) in `in`, `to` hashes them on its own thread and sends the buffers and finished slots back
 * in `out`. Every shard has one link to every shard, itself included: its own files are hashed by
 * itself, at a fixed point of its loop; pieces of a BLAKE3 file go to whichever shard has the least
 * queued. Each queue has one producer thread and one consumer thread.
 */
struct Worker {
        Shard *from;                   /* owns the files and buffers that go through */
        Shard *to;                     /* hashes them */
        SpscQueue in;                  /* from -> to */
        SpscQueue out;                 /* to -> from: buffers and slots */
        bool wake_pending;             /* from only: items pushed since the last wake of `to` */
};

/* A job as one shard sees it: on the shard's list of jobs with inputs to open, its files open there,
 * its share of the shard's slots (sched.c). Only the shard's thread touches its entry. */
typedef struct JobShard {
        EngineJob *job;
        bool in_active;      /* on its group's list of jobs with inputs left to open */
        bool cancel_seen;
        bool released;       /* the shard let go of the job (job_shard_release()) */
        bool sched_active;   /* counted in group->n_active_jobs */
        unsigned n_open;     /* its files on the shard's open list */
        ShareGroup *group;
        struct JobShard *active_next;
} JobShard;

typedef struct JobInput {
        char *path;   /* NULL for fd inputs */
        int fd;
        uint64_t cookie;
        unsigned flags;  /* ENGINE_INPUT_* */
        EngineFdInfo *info; /* what the caller knew of the fd, or NULL */
        EngineDir *dir;     /* a path beneath a caller's directory: a reference, or NULL */
} JobInput;

struct EngineJob {
        _Atomic unsigned n_ref;
        Engine *engine;
        HashAlgo algo;
        HashAlgoSet algos;         /* algo first; options.algos points here */
        EngineJobOptions options;  /* .params points to params below, or is NULL */
        HashParams params;         /* a copy of the caller's; the key is wiped when the job is freed */
        char *context;             /* params.context's copy */
        Blake3Mode b3mode;         /* BLAKE3 with params: the mode every piece of a file is hashed in */
        EngineCreds creds;         /* options.creds points here, or is NULL */
        JobInput *inputs;
        size_t n_inputs, n_inputs_alloc;
        EngineJobCallbacks callbacks;
        void *userdata;

        /* Consumer side. */
        bool started;
        bool finished;       /* job_done delivered (or would have been) */
        bool has_paths;      /* an input is a path (counted in Engine.path_jobs once started) */
        bool orphaned;       /* the caller let go: deliver nothing more */
        EngineJob *live_next, *live_prev;  /* the engine's jobs, so engine_free() can let go of them */
        /* EngineJobOptions.ordered: results that came early, by input (allocated on the first). */
        EngineFileResult **reorder;
        size_t next_deliver;

        /* Shard side: the next input to claim (every shard takes inputs from the same counter, so
         * the first shard with a free slot opens the next file), and each shard's view. */
        _Atomic size_t next_input;
        JobShard *shards;
        /* The shards it is queued to, from engine_job_start(): first_shard and the ones after it,
         * n_targets in all (every shard, unless it has fewer inputs than there are shards). */
        unsigned first_shard, n_targets;

        /* Any thread. */
        _Atomic bool cancel_requested;
        /* Inputs without a published result, plus the shards that still hold the job on a list:
         * whoever takes it to 0 posts the job's end (event.c). */
        _Atomic size_t results_pending;
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

/*
 * A shard: one thread, pinned to one core, with its own io_uring ring, its share of the registered
 * pool and of the small-file slots, its own file slots and share groups. It opens, reads and hashes
 * the files it takes, start to end, so a buffer is hashed on the core that read it, and no thread
 * feeds another; BLAKE3 pieces alone go to other shards. Everything here is the shard thread's
 * unless marked.
 */
struct Shard {
        Engine *engine;
        unsigned id;
        MdCtx *piece_md;              /* the hashing side's: fs-verity pieces' block hashes */
        int cpu;                      /* -1: not pinned */
        EngineConfig config;          /* the engine's */
        size_t buffer_size;
        unsigned n_buffers;
        unsigned max_open;
        unsigned n_shards;

        /* Buffers: the pool proper (n_buffers slots) and one small slot per open file (up to a cap)
         * for files that fit in one, so that every small file open can have its read in flight,
         * where 16 pool slots of 1 MiB allowed 16. bufs[i] describes the pool's slot i. */
        Pool pool;
        Buffer *bufs;
        size_t small_size;
        unsigned n_small;
        unsigned max_span;            /* slots one read may span: 1 unless the pool allows more */
        /* EngineConfig.pool_on_demand: the small slots are registered at start and the pool proper
         * when a read first needs it (shard_buf_index()). */
        enum { POOL_REG_WHOLE, POOL_REG_LATER, POOL_REG_FAILED } pool_reg;

        /* File slots: max_open for files in turn, as many again for groups under their share when
         * the first max_open are held (see "Fair share and stalls" in engine.h). */
        FileSlot *slots;
        unsigned n_slots;
        FileSlot *free_slots;
        FileSlot *open_head, *open_tail;  /* slots in flight */
        FileSlot *read_cursor;        /* round-robin position for issuing reads */
        unsigned n_open;              /* slots on the open list */
        unsigned open_cap;            /* lowered when the process runs out of fds */
        unsigned n_zombies;           /* slots of stalled files whose result is out, waiting for the kernel */
        _Atomic unsigned n_fds;       /* fds the open slots hold or are opening; written by the
                                       * shard only, read by any that runs out (engine_fds()) */
        FileSlot *deferred;           /* opens waiting for an fd to be freed */
        uint64_t fds_closed_seen;     /* engine->fds_closed when the deferred opens last went */
        _Atomic bool has_deferred;    /* any thread: deferred is not empty */

        Worker *links;                /* n_shards: links[k] hands work to shard k */
        /* Whole files in one small slot, hashed before anything in the links' queues: a 4 KiB file
         * must not wait behind megabytes of other files' buffers (under 32 users' load, a root
         * client's 4 KiB file spent most of its time there). This thread's only; at most one item
         * per small slot, so it never fills. */
        WorkItem *express;
        unsigned express_head, n_express, express_cap;
        _Alignas(CACHELINE) _Atomic unsigned backlog;  /* any thread: items queued to this shard, for
                                                        * the least-loaded choice of pieces */
        /* CLOCK_MONOTONIC of the last turn that did something, at most a millisecond old while it
         * works (the shard writes it once a millisecond, not once a turn: a background engine's
         * shards read it, engine_is_busy()); active_stored is the shard's own copy. */
        _Alignas(CACHELINE) _Atomic uint64_t active_usec;
        uint64_t active_stored;
        bool yielding;                /* background: the engine yielded to is busy (this turn) */
        bool disk_held;               /* background: the disk watch holds disk reads and opens (this turn) */
        /* Background: its reads and opens in flight, for the drains of diskwatch.h (written by the
         * shard, read by whichever shard samples). */
        _Atomic unsigned disk_ops;

        pthread_t thread;
        bool started;
        IoRing *ring;
        IoMode io_mode;
        int wake_fd;                  /* eventfd: wakes the shard out of its ring */
        Parker io_parker;
        bool linked;                  /* path inputs may use the linked chain (EngineOpenMode) */
        /* The personalities its ring has for jobs' EngineCreds (creds.c), least recently used first
         * to go once all are taken. */
        struct ShardPersonality {
                EngineCreds creds;
                int id;
                uint64_t used;
        } *personalities;
        unsigned n_personalities;
        uint64_t personality_clock;
        bool quiet;                   /* shutting down: counted in engine->n_quiet */
        ShareGroup *groups;           /* every share group */
        ShareGroup *wait_head, *wait_tail;  /* groups with jobs with inputs left to open, in turn */
        unsigned n_wait_groups;
        unsigned n_groups_open;       /* groups with files open */
        unsigned n_active_groups;     /* groups with inputs left to open or files open */
        uint64_t stall_timeout;
        uint64_t now;                 /* CLOCK_MONOTONIC, once per turn of the loop */
        uint64_t next_stall_check;
        int init_result;              /* under engine->init_lock */
        bool init_done;

        /* Consumer -> shard control, under control_lock. */
        pthread_mutex_t control_lock;
        EngineJob **new_jobs;
        size_t n_new_jobs, n_new_jobs_alloc;
        int *close_fds;               /* fds of unstarted jobs, closed through the ring */
        size_t n_close_fds, n_close_fds_alloc;
        _Atomic bool control_pending;
        _Atomic bool cancel_pending;  /* also: a job's last input was claimed elsewhere (sweep) */
};

struct Engine {
        EngineConfig config;
        unsigned n_shards;
        Shard *shards;
        size_t buffer_size;
        unsigned n_buffers;           /* over all shards */
        unsigned max_open;            /* over all shards */

        pthread_mutex_t init_lock;
        pthread_cond_t init_cond;
        bool started;                 /* shard threads were started */
        _Atomic bool shutdown;
        _Atomic unsigned n_quiet;     /* shards with nothing left to do after shutdown */
        _Atomic bool dontcache_ok;    /* cleared when a read refuses RWF_DONTCACHE: plain reads from then on */
        _Atomic uint64_t fds_closed;  /* closes of the shards' fds while one of them had deferred
                                       * opens: those retry on each */

        /* Shards -> consumer. */
        pthread_mutex_t event_lock;
        Event *events;
        size_t n_events, n_events_alloc;
        Event *dispatching;           /* consumer only: being delivered, from dispatch_pos on */
        size_t n_dispatching, dispatch_pos;
        size_t n_dispatching_alloc;
        int event_fd;

        EngineJob *live_jobs;         /* consumer only */
        bool io_gone;                 /* consumer only: the shards ended, close fds directly */

        DiskWatch diskwatch;          /* background engines: is anybody else using our disks? */
        /* Started jobs with a path among their inputs, until freed. While none is, every input is
         * an fd the caller opened: opening one needs no disk, so the disk watch does not hold it. */
        _Atomic unsigned path_jobs;
        _Atomic unsigned next_target;  /* where a job with fewer inputs than shards goes next */

        _Atomic uint64_t bytes_hashed;
        _Atomic uint64_t files_linked;
        _Atomic unsigned files_queued;
};

static inline JobShard *job_shard(const Shard *s, EngineJob *j)
{
        return &j->shards[s->id];
}

/* worker.c: hashing, on the shard the work was handed to. */
int worker_init(Worker *w, Shard *from, Shard *to, size_t queue_capacity);
void worker_deinit(Worker *w);
/* Hashes what every shard queued to s; true if there was anything. */
bool shard_hash_work(Shard *s);
bool shard_work_pending(Shard *s);

/* dispatch.c: work to the hashing shard. */
void send_work(Shard *s, FileSlot *f, Buffer *b, uint32_t len, uint32_t flags);
Worker *pick_worker(Shard *s);
void link_push(Worker *w, const WorkItem *it);
void flush_wakes(Shard *s);

/* event.c: results to the consumer. */
void event_push(Engine *e, const Event *ev);
void post_result(Engine *e, EngineJob *j, const EngineFileResult *r);
void post_simple(Engine *e, EngineJob *j, size_t input, EngineFileStatus st, int error);
/* Called by whichever side lets go of a file last (the hashing shard through `from`, or the owning
 * shard s with from NULL): publishes its result and recycles the slot. */
void engine_file_release(Shard *s, FileSlot *f, Worker *from);
/* Shard s lets go of job j: it is on none of its lists any more. May post the job's end: j must not
 * be touched after. */
void job_shard_release(Shard *s, EngineJob *j);

/* sched.c: which inputs open next. */
bool open_more(Shard *s);
void handle_control(Shard *s);

/* job.c */
/* Closes fd through the ring (the consumer must not: a FUSE flush may block forever). */
void engine_close_later(Engine *e, int fd);

/* shard.c */
void *shard_main(void *arg);
/* Tells engine_new() that s is ready (result 0) or cannot run. */
void shard_init_done(Shard *s, int result);
void shard_wake(Shard *s);
/* The registered buffer a read into b names, or -1 to read into it unregistered. */
int shard_buf_index(Shard *s, const Buffer *b);
