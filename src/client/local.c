/* SPDX-License-Identifier: MIT */
/* local.c: the backend that hashes in this process, with the engine */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "client/backend.h"
#include "engine/engine.h"
#include "hash/fsverity.h"

/*
 * Inputs go to engine jobs of a few hundred files (one algorithm and length each, several running
 * at once), started as soon as they are pulled, and the feed is pulled again while there are fewer
 * than a few thousand files queued. Paths go to the engine as paths: its shards open them through
 * their rings, many at once, which is what makes small files fast; the caller's fds and standard
 * input are opened (duplicated) by the feed, like every file fhashd gets.
 */

/* Files queued in the engine (added, no result yet) before the feed is pulled again: enough to keep
 * its 64 open files and its workers busy while a walk reads a directory, few enough that a walk of
 * a million files is not held in memory. Path inputs cost the engine no fd until it opens them. */
#define LOCAL_QUEUED_MAX ((size_t)4096)
/* Files per engine job: the first steps are small so that hashing starts at once, then they grow so
 * that a job's overhead is spread over many files. */
#define LOCAL_STEP_MIN ((size_t)16)
#define LOCAL_STEP_MAX ((size_t)512)

/*
 * A few small files are all the work there is in most runs of one process per file (find -exec,
 * make rules, hooks): starting the engine (rings, pinned threads, registered buffers) and stopping it
 * costs ~2-4 ms, hashing a cached 4 KiB file ~10 µs. So, until the engine is needed, a run's first
 * files are hashed here in the calling thread (src/hash/oneshot.h's way): up to LOCAL_QUICK_FILES
 * regular files of up to LOCAL_QUICK_FILE_MAX bytes, LOCAL_QUICK_BYTES in all, read with
 * RWF_NOWAIT so that only what is in the page cache is read here: a file that would wait for the
 * disk, a pipe, a device, a leased file (O_NONBLOCK open), several algorithms at once or a forced
 * strategy start the engine, which hashes that file and everything after it. The caller's thread is
 * never held by the disk, and at most ~0.6 ms by hashing (1 MiB of SHA-256).
 */
#define LOCAL_QUICK_FILES ((size_t)16)
#define LOCAL_QUICK_FILE_MAX ((uint64_t)256 * 1024)
#define LOCAL_QUICK_BYTES ((uint64_t)1024 * 1024)
#define LOCAL_QUICK_BUF ((size_t)64 * 1024)

typedef struct Local Local;

/* One engine job: up to a step's files of one algorithm and length; map[k] is the input of its k-th
 * file. */
typedef struct Batch {
        Local *local;
        uint32_t out_len;      /* Input.out_len of its inputs */
        struct Batch *next;    /* Local.running */
        EngineJob *job;
        size_t *map;
        size_t n, alloc;
} Batch;

struct Local {
        Feed *feed;
        const RunOptions *options;
        Engine *e;                       /* made when the first file needs it */
        Batch *filling[_HASH_ALGO_MAX];  /* not started yet */
        Batch *running;                  /* started, job_done not seen */
        size_t from;                     /* where the next input is looked for in the feed */
        size_t queued;                   /* files added to batches without a result */
        size_t step;
        bool cancelled;
        bool done;
        uint64_t bytes_done, bytes_total;  /* of the batches that are over, and of quick files */
        size_t quick_files;              /* hashed in the calling thread (local_quick()) */
        uint64_t quick_bytes;
        HashCtx *quick_ctx;
        void *quick_buf;
};

static Batch *batch_free(Batch *b)
{
        if (!b)
                return NULL;
        engine_job_unref(b->job);
        free(b->map);
        return mfree(b);
}

static void on_file_done(EngineJob *j, const EngineFileResult *fr, void *userdata)
{
        Batch *b = userdata;
        const RunOptions *o = b->local->options;
        char hex[HASH_SET_HEX_MAX];
        Outcome out = { .size = fr->size };

        if (fr->index >= b->n)
                return;
        b->local->queued--;
        switch (fr->status) {
        case ENGINE_FILE_OK:
                out.status = FHASH_OK;
                if (o->algos.n > 1)
                        hash_set_to_hex(&o->algos, fr->digest, hex);
                else
                        hash_to_hex(fr->digest, fr->digest_size, hex);
                out.hex = hex;
                break;
        case ENGINE_FILE_CHANGED:
                out.status = FHASH_CHANGED;
                break;
        case ENGINE_FILE_CANCELLED:
                out.status = FHASH_CANCELLED;
                break;
        default:
                out.status = FHASH_ERROR;
                out.error = fr->error < 0 ? fr->error : -EIO;
        }
        feed_answer(b->local->feed, b->map[fr->index], &out);
}

static void on_job_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        Batch *b = userdata;
        Local *l = b->local;
        EngineJobProgress jp;

        engine_job_get_progress(j, &jp);
        l->bytes_done += jp.bytes_done;
        l->bytes_total += jp.bytes_total;
        for (Batch **p = &l->running; *p; p = &(*p)->next)
                if (*p == b) {
                        *p = b->next;
                        break;
                }
        /* Allowed from job_done: the job's last callback. */
        batch_free(b);
}

static int batch_start(Local *l, Batch *b)
{
        static const EngineJobCallbacks callbacks = {
                .file_done = on_file_done,
                .job_done = on_job_done,
        };

        /* On the list first: whatever happens, free finds it there. */
        b->next = l->running;
        l->running = b;
        return engine_job_start(b->job, &callbacks, b);
}

static int batch_new(Local *l, const Input *in, Batch **ret)
{
        HashParams len = { .out_len = in->out_len };
        Batch *b = calloc(1, sizeof(*b));
        int r;

        if (!b)
                return -ENOMEM;
        *b = (Batch){ .local = l, .out_len = in->out_len };
        r = engine_job_new(l->e, in->algo,
                           &(EngineJobOptions){ .dontcache = l->options->dontcache,
                                                .max_file_size = l->options->max_size,
                                                .strategy = l->options->strategy,
                                                .interactive = l->options->priority == JOB_PRIORITY_INTERACTIVE,
                                                .params = in->out_len ? &len : l->options->params,
                                                .algos = l->options->algos.n > 1 ? &l->options->algos : NULL },
                           &b->job);
        if (r < 0) {
                free(b);
                return r;
        }
        *ret = b;
        return 0;
}


/* The same test as the engine's (file.c: file_check_change()) over fstat(2)'s fields. */
static bool quick_changed(const struct stat *a, const struct stat *b, uint64_t got)
{
        bool relinked = a->st_nlink != b->st_nlink;

        return a->st_size != b->st_size || a->st_ino != b->st_ino || a->st_mtim.tv_sec != b->st_mtim.tv_sec ||
               a->st_mtim.tv_nsec != b->st_mtim.tv_nsec ||
               ((a->st_ctim.tv_sec != b->st_ctim.tv_sec || a->st_ctim.tv_nsec != b->st_ctim.tv_nsec) && !relinked) ||
               (a->st_size != 0 && got != (uint64_t)a->st_size);
}

/* Reads fd from its start into the hash, only from the page cache. 0 and the bytes in *ret_got;
 * -EAGAIN where the engine must do it (not cached, no RWF_NOWAIT here, past the size limit); or
 * -errno of the read. */
static int quick_read(Local *l, int fd, uint64_t size, uint64_t *ret_got)
{
        uint64_t got = 0;

        for (;;) {
                struct iovec iov = { .iov_base = l->quick_buf, .iov_len = LOCAL_QUICK_BUF };
                ssize_t n = preadv2(fd, &iov, 1, (off_t)got, RWF_NOWAIT);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN || errno == EOPNOTSUPP)
                                return -EAGAIN;
                        return -errno;
                }
                if (n == 0)
                        break;
                got += (uint64_t)n;
                /* A file that grows while it is read (or a pseudo file of size 0 that is long): the
                 * engine's. */
                if (got > MAX(size, LOCAL_QUICK_FILE_MAX))
                        return -EAGAIN;
                (void)hash_ctx_update(l->quick_ctx, l->quick_buf, (size_t)n);
        }
        *ret_got = got;
        return 0;
}

/* Input i hashed in the calling thread if it is a small file in the page cache (see
 * LOCAL_QUICK_FILES): 1 once answered, 0 if the engine is to hash it (nothing was answered), or
 * -ENOMEM. */
static int local_quick(Local *l, size_t i)
{
        const Input *in = feed_input(l->feed, i);
        const RunOptions *o = l->options;
        HashParams len = { .out_len = in->out_len };
        _cleanup_close_ int fd = -EBADF;
        struct stat before, after;
        uint8_t digest[HASH_SET_DIGEST_MAX];
        char hex[HASH_SET_HEX_MAX];
        uint64_t got = 0;
        int r;

        /* A background run hashes nothing in the caller's thread: only its idle shards do. */
        if (l->e || l->quick_files >= LOCAL_QUICK_FILES || o->algos.n > 1 || o->dontcache ||
            o->strategy != ENGINE_READ_AUTO || o->priority == JOB_PRIORITY_BACKGROUND ||
            (in->path && streq(in->path, "-")))
                return 0;
        /* Not a FIFO, not opened: opening it here, even without waiting, would let a writer that
         * waits for a reader go on, and closing it again would leave that writer with EPIPE before
         * the engine's open came. What is not a regular file is the engine's. */
        if (in->path && stat(in->path, &before) >= 0 && !S_ISREG(before.st_mode) && !S_ISDIR(before.st_mode))
                return 0;
        /* O_NONBLOCK: a file with a lease does not wait for it to be broken (that is the engine's,
         * off this thread); reads ignore it. */
        if (in->path)
                fd = open(in->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        else
                fd = fcntl(in->fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0 && errno == EWOULDBLOCK)
                return 0;
        if (fd < 0 || fstat(fd, &before) < 0) {
                /* What the engine would say of it (a missing file, no permission), without starting
                 * it for that. */
                feed_answer(l->feed, i, &(Outcome){ .status = FHASH_ERROR, .error = negative_errno() });
                return 1;
        }
        if (S_ISDIR(before.st_mode)) {
                feed_answer(l->feed, i, &(Outcome){ .status = FHASH_ERROR, .error = -EISDIR });
                return 1;
        }
        if (!S_ISREG(before.st_mode) || (uint64_t)before.st_size > LOCAL_QUICK_FILE_MAX ||
            l->quick_bytes + (uint64_t)before.st_size > LOCAL_QUICK_BYTES ||
            (o->max_size && (uint64_t)before.st_size > o->max_size))
                return 0;
        if (!l->quick_ctx) {
                r = hash_ctx_new(&l->quick_ctx);
                if (r < 0)
                        return r;
        }
        if (!l->quick_buf) {
                l->quick_buf = malloc(LOCAL_QUICK_BUF);
                if (!l->quick_buf)
                        return -ENOMEM;
        }
        r = hash_ctx_init_params(l->quick_ctx, in->algo, in->out_len ? &len : o->params);
        if (r < 0 || hash_ctx_digest_size(l->quick_ctx) > sizeof(digest))
                return 0;
        /* A verity file's fs-verity digest: the kernel's, not a byte read (as in the engine). */
        if (fsverity_tree_hash(in->algo) >= 0 &&
            fsverity_measure_fd(fd, in->algo, o->params, digest, &got) > 0) {
                l->quick_files++;
                l->bytes_done += got;
                l->bytes_total += got;
                hash_to_hex(digest, hash_algo_digest_size(in->algo), hex);
                feed_answer(l->feed, i, &(Outcome){ .status = FHASH_OK, .size = got, .hex = hex });
                return 1;
        }
        r = quick_read(l, fd, (uint64_t)before.st_size, &got);
        if (r == -EAGAIN)
                return 0;
        l->quick_files++;
        l->quick_bytes += got;
        l->bytes_done += got;
        l->bytes_total += got;
        if (r < 0) {
                feed_answer(l->feed, i, &(Outcome){ .status = FHASH_ERROR, .error = r, .size = got });
                return 1;
        }
        if (fstat(fd, &after) < 0 || quick_changed(&before, &after, got)) {
                feed_answer(l->feed, i, &(Outcome){ .status = FHASH_CHANGED, .size = got });
                return 1;
        }
        (void)hash_ctx_final(l->quick_ctx, digest);
        hash_to_hex(digest, hash_ctx_digest_size(l->quick_ctx), hex);
        feed_answer(l->feed, i, &(Outcome){ .status = FHASH_OK, .size = got, .hex = hex });
        return 1;
}

/* Adds input i to the filling batch of its algorithm (or hashes it here: local_quick()). */
static int local_add(Local *l, size_t i)
{
        const Input *in = feed_input(l->feed, i);
        Batch *b;
        int k, r;

        if (in->algo < 0 || in->algo >= _HASH_ALGO_MAX)
                return -EINVAL;
        r = local_quick(l, i);
        if (r != 0)
                return MIN(r, 0);
        if (!l->e) {
                /* Through a local: the analyzer forgets all of *l when a field's address escapes. */
                Engine *e = NULL;

                r = engine_new(&(EngineConfig){ .background = l->options->priority == JOB_PRIORITY_BACKGROUND,
                                                .pool_on_demand = true },
                               &e);
                if (r < 0)
                        return r;
                l->e = e;
        }
        b = l->filling[in->algo];
        if (b && b->out_len != in->out_len) {
                /* Another length of the algorithm: the batch so far goes, a new one starts. */
                l->filling[in->algo] = NULL;
                r = batch_start(l, b);
                if (r < 0)
                        return r;
                b = NULL;
        }
        if (!b) {
                r = batch_new(l, in, &b);
                if (r < 0)
                        return r;
                l->filling[in->algo] = b;
        }
        if (b->n == b->alloc) {
                size_t na = MAX(b->alloc * 2, LOCAL_STEP_MIN);
                size_t *nm = reallocarray(b->map, na, sizeof(*nm));

                if (!nm)
                        return -ENOMEM;
                b->map = nm;
                b->alloc = na;
        }
        if (in->path && !streq(in->path, "-") && !feed_has_kept_fd(l->feed, i))
                k = engine_job_add_path(b->job, in->path);
        else {
                /* The job closes what it is given: the feed's duplicate, not the caller's fd; or the
                 * fd a run that lost fhashd kept (a FIFO it had open, read by the engine's thread). */
                uint64_t size;
                int fd = -EBADF;

                r = feed_open(l->feed, i, &fd, &size);
                if (r == FEED_OPEN_FIFO) {
                        r = feed_fd_blocking(fd);
                        if (r < 0)
                                safe_close(fd);
                }
                if (r < 0) {
                        feed_answer(l->feed, i, &(Outcome){ .status = FHASH_ERROR, .error = r });
                        return 0;
                }
                k = engine_job_add_fd(b->job, fd);
                if (k < 0)
                        safe_close(fd);
        }
        if (k < 0)
                return k;
        b->map[k] = i;
        b->n = (size_t)k + 1;
        l->queued++;
        return 0;
}

static int start_filling(Local *l)
{
        for (size_t a = 0; a < ELEMENTSOF(l->filling); a++) {
                Batch *b = TAKE_PTR(l->filling[a]);
                int r;

                if (!b)
                        continue;
                r = batch_start(l, b);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Whether the feed is to be pulled while n more files fit in the engine. */
static bool wants(const Local *l, size_t n)
{
        return !feed_source_done(l->feed) && l->queued + n <= LOCAL_QUEUED_MAX && feed_pending(l->feed) < FEED_MAX_PENDING;
}

/* Inputs pulled before this backend started and not answered (a run with FHASH_HASH_RESUME that lost
 * fhashd went on here: the source may be done already), or more from the source. */
static bool has(const Local *l, size_t n)
{
        return (l->from < feed_pulled(l->feed) && l->queued + n <= LOCAL_QUEUED_MAX) || wants(l, n);
}

/*
 * What a step waits for room for: a whole step once the engine runs. Topped up as results came in,
 * a few at a time, the engine ran 3,381 jobs of ~6 files for 20,000 files, each a start that wakes
 * every shard, a job_done and a walk of the running list; a step at a time it runs ~50 (and the
 * engine still has thousands of files queued when a step goes in).
 */
static size_t step_room(const Local *l)
{
        return l->e ? l->step : 1;
}

static bool wants_more(const Local *l)
{
        return wants(l, step_room(l));
}

/* One step of the feed: up to l->step inputs, then every batch they filled starts. */
static int fill(Local *l)
{
        size_t pulled = 0;
        int r;

        if (!has(l, step_room(l)))
                return 0;
        while (pulled < l->step && has(l, 1)) {
                size_t i;

                r = feed_next(l->feed, l->from, &i);
                if (r <= 0) {
                        if (r < 0)
                                return r;
                        break;
                }
                l->from = i + 1;
                pulled++;
                if (l->cancelled) {
                        /* After a cancel the rest of the inputs are answered, not hashed. */
                        feed_answer(l->feed, i, &(Outcome){ .status = FHASH_CANCELLED });
                        continue;
                }
                r = local_add(l, i);
                if (r < 0)
                        return r;
        }
        if (pulled == l->step)
                l->step = MIN(l->step * 2, LOCAL_STEP_MAX);
        return start_filling(l);
}

static bool over(Local *l)
{
        if (feed_finished(l->feed) && !l->running)
                l->done = true;
        return l->done;
}

static int local_step(void *p, uint64_t timeout_usec)
{
        Local *l = p;
        int r;

        if (l->done)
                return 0;
        for (;;) {
                r = fill(l);
                if (r < 0)
                        return r;
                if (over(l))
                        return 0;
                /* Without an engine nothing is queued: everything pulled was answered at once, and
                 * the feed has more (or holds too many behind a slow result, which cannot be here). */
                if (l->e)
                        break;
        }
        /* While the feed has more and there is room, only collect what is ready; and without a wait
         * (fhash_run_process(): the caller polled the engine's fd already), no poll(2) of our own:
         * on small files a step per result or two made that second poll a syscall per file. */
        if (wants_more(l) || timeout_usec == 0)
                r = engine_dispatch(l->e);
        else
                r = engine_run_once(l->e, timeout_usec);
        if (r < 0)
                return r;
        /* What was collected may have been the end: say so now, not after the caller's next wait. */
        return over(l) ? 0 : 1;
}

static int local_start(const BackendArgs *args, void **ret)
{
        Local *l = calloc(1, sizeof(*l));

        if (!l)
                return -ENOMEM;
        *l = (Local){ .feed = args->feed, .options = args->options, .step = LOCAL_STEP_MIN };
        *ret = l;
        return 0;
}

static int local_get_fd(void *p)
{
        Local *l = p;

        return l->e ? engine_get_fd(l->e) : -EAGAIN;
}

static int local_get_events(void *p)
{
        return POLLIN;
}

static uint64_t local_get_timeout(void *p)
{
        Local *l = p;

        /* More to give the engine, or none yet: no waiting. Else only the engine's fd: it is readable
         * whenever a result or a job's end waits (test-local-wake holds it to that). */
        if (!l->done && (!l->e || wants_more(l)))
                return now_usec();
        return UINT64_MAX;
}

static void local_progress(void *p, uint64_t *ret_bytes_done, uint64_t *ret_bytes_total)
{
        Local *l = p;
        uint64_t done = l->bytes_done, total = l->bytes_total;

        for (Batch *b = l->running; b; b = b->next) {
                EngineJobProgress jp;

                engine_job_get_progress(b->job, &jp);
                done += jp.bytes_done;
                total += jp.bytes_total;
        }
        *ret_bytes_done = done;
        *ret_bytes_total = total;
}

static void local_cancel(void *p)
{
        Local *l = p;

        l->cancelled = true;
        feed_cancel(l->feed);
        for (Batch *b = l->running; b; b = b->next)
                engine_job_cancel(b->job);
}

static void local_free(void *p)
{
        Local *l = p;

        if (!l)
                return;
        /* Jobs go before the engine that runs them. */
        for (size_t a = 0; a < ELEMENTSOF(l->filling); a++)
                l->filling[a] = batch_free(l->filling[a]);
        while (l->running) {
                Batch *b = l->running;

                l->running = b->next;
                batch_free(b);
        }
        engine_free(l->e);
        hash_ctx_free(l->quick_ctx);
        free(l->quick_buf);
        free(l);
}

const BackendOps backend_local = {
        .name = "local",
        .start = local_start,
        .step = local_step,
        .get_fd = local_get_fd,
        .get_events = local_get_events,
        .get_timeout = local_get_timeout,
        .progress = local_progress,
        .cancel = local_cancel,
        .free = local_free,
};
