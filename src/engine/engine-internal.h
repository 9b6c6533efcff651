/* SPDX-License-Identifier: MIT */
/* engine-internal.h: state shared by the I/O thread, the workers (worker.c) and the consumer */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include "engine/engine.h"
#include "engine/file.h"
#include "engine/sched.h"
#include "io/ioring.h"
#include "io/pool.h"
#include "io/queue.h"

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

struct Worker {
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
};

typedef struct JobInput {
        char *path;   /* NULL for fd inputs */
        int fd;
        uint64_t cookie;
        unsigned flags;  /* ENGINE_INPUT_* */
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
        JobInput *inputs;
        size_t n_inputs, n_inputs_alloc;
        EngineJobCallbacks callbacks;
        void *userdata;

        /* Consumer side. */
        bool started;
        bool finished;       /* job_done delivered (or would have been) */
        bool orphaned;       /* the caller let go: deliver nothing more */
        EngineJob *live_next, *live_prev;  /* the engine's jobs, so engine_free() can let go of them */
        /* EngineJobOptions.ordered: results that came early, by input (allocated on the first). */
        EngineFileResult **reorder;
        size_t next_deliver;

        /* I/O thread side. */
        size_t next_input;   /* inputs before this one have a slot or a result */
        bool in_active;      /* on its group's list of jobs with inputs left to open */
        bool cancel_seen;
        EngineJob *active_next;
        ShareGroup *group;
        unsigned n_open;     /* its files on the open list */
        bool sched_active;   /* counted in group->n_active_jobs */

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

        /* Buffers: the pool proper (n_buffers slots) and one small slot per open file (up to a cap)
         * for files that fit in one, so that every small file open can have its read in flight,
         * where 16 pool slots of 1 MiB allowed 16. bufs[i] describes the pool's slot i. I/O thread
         * only, like the pool's free lists. */
        Pool pool;
        Buffer *bufs;
        size_t small_size;
        unsigned n_small;
        unsigned max_span;            /* slots one read may span: 1 unless the pool allows more */

        /* File slots: max_open for files in turn, as many again for groups under their share when
         * the first max_open are held (see "Fair share and stalls" in engine.h). */
        FileSlot *slots;
        unsigned n_slots;
        FileSlot *free_slots;         /* I/O thread only */
        FileSlot *open_head, *open_tail;  /* slots in flight, I/O thread only */
        FileSlot *read_cursor;        /* round-robin position for issuing reads */
        unsigned n_open;              /* slots on the open list */
        unsigned open_cap;            /* lowered when the process runs out of fds */
        unsigned n_zombies;           /* slots of stalled files whose result is out, waiting for the kernel */
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
        ShareGroup *groups;           /* every share group */
        ShareGroup *wait_head, *wait_tail;  /* groups with jobs with inputs left to open, in turn */
        unsigned n_wait_groups;
        unsigned n_groups_open;       /* groups with files open */
        unsigned n_active_groups;     /* groups with inputs left to open or files open */
        uint64_t stall_timeout;
        uint64_t now;                 /* CLOCK_MONOTONIC, once per turn of the loop */
        uint64_t next_stall_check;
        int init_result;
        pthread_mutex_t init_lock;
        pthread_cond_t init_cond;
        bool init_done;

        /* Consumer -> I/O thread control. */
        pthread_mutex_t control_lock;
        EngineJob **new_jobs;
        size_t n_new_jobs, n_new_jobs_alloc;
        int *close_fds;               /* fds of unstarted jobs, closed through the ring */
        size_t n_close_fds, n_close_fds_alloc;
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

        EngineJob *live_jobs;         /* consumer only */
        bool io_gone;                 /* consumer only: the I/O thread ended, close fds directly */

        _Atomic uint64_t bytes_hashed;
        _Atomic uint64_t files_linked;   /* written by the I/O thread only */
        _Atomic unsigned files_queued;
};

/* worker.c */
int worker_start(Worker *w, Engine *e, unsigned id, int cpu, size_t queue_capacity);
void worker_stop(Worker *w);

/* dispatch.c: work to the hashing workers. */
void send_work(Engine *e, FileSlot *f, Buffer *b, uint32_t len, uint32_t flags);
Worker *pick_worker(Engine *e);
void flush_wakes(Engine *e);

/* event.c: results to the consumer. */
void event_push(Engine *e, const Event *ev);
void post_result(Engine *e, EngineJob *j, const EngineFileResult *r);
void post_simple(Engine *e, EngineJob *j, size_t input, EngineFileStatus st, int error);
/* Called by whichever side lets go of a file last (a worker, or the I/O thread with from NULL):
 * publishes its result and recycles the slot. */
void engine_file_release(Engine *e, FileSlot *f, Worker *from);

/* sched.c: which inputs open next. */
bool open_more(Engine *e);
void handle_control(Engine *e);

/* job.c */
/* Closes fd through the ring (the consumer must not: a FUSE flush may block forever). */
void engine_close_later(Engine *e, int fd);

/* io-thread.c */
void *io_main(void *arg);
void io_wake(Engine *e);
