/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine.h"
#include "basic/macro.h"
#include "client/runner.h"

const char *run_result_reason(const RunResult *r)
{
        switch (r->status) {
        case RUN_OK:
                return "OK";
        case RUN_MISMATCH:
                return "checksum mismatch";
        case RUN_CHANGED:
                return "file changed while it was being hashed";
        case RUN_CANCELLED:
                return "cancelled";
        case RUN_SKIPPED:
                return "skipped";
        case RUN_ERROR:
        default:
                return strerror(r->error < 0 ? -r->error : EIO);
        }
}

int run_array_next(void *userdata, RunItem *ret)
{
        RunArray *a = userdata;

        if (a->next >= a->n)
                return 0;
        *ret = a->items[a->next++];
        return 1;
}

int run_order_init(RunOrder *o, const RunSource *source, RunResultFn fn, void *userdata)
{
        *o = (RunOrder){ .source = source, .fn = fn, .userdata = userdata, .alloc = 64 };
        o->slots = calloc(o->alloc, sizeof(*o->slots));
        if (!o->slots)
                return -ENOMEM;
        return 0;
}

static RunSlot *slot_of(const RunOrder *o, size_t index)
{
        if (index < o->next || index >= o->n_items)
                return NULL;
        return &o->slots[index & (o->alloc - 1)];
}

static void slot_clear(RunSlot *s)
{
        free(s->strings);
        free((char *)s->result.message);
        *s = (RunSlot){};
}

void run_order_deinit(RunOrder *o)
{
        for (size_t i = o->next; o->slots && i < o->n_items; i++)
                slot_clear(slot_of(o, i));
        free(o->slots);
        o->slots = NULL;
}

/* Makes room for one more item: the ring doubles, and each live item whose place depends on the new
 * bit of its index moves to the new upper half (which holds nothing live, so nothing is overwritten). */
static int grow(RunOrder *o)
{
        size_t oa = o->alloc, na = oa * 2;
        RunSlot *ns;

        if (run_order_pending(o) < oa)
                return 0;
        ns = reallocarray(o->slots, na, sizeof(*ns));
        if (!ns)
                return -ENOMEM;
        o->slots = ns;
        o->alloc = na;
        for (size_t i = o->next; i < o->n_items; i++)
                if (i & oa)
                        o->slots[i & (na - 1)] = o->slots[i & (oa - 1)];
        return 0;
}

/* One allocation for the item's strings, pointed into by the copy. */
static int item_copy(const RunItem *from, RunItem *to, char **ret_strings)
{
        size_t ln = strlen(from->name) + 1;
        bool same = from->path == from->name || streq(from->path, from->name);
        size_t lp = same ? 0 : strlen(from->path) + 1;
        size_t le = from->expected ? strlen(from->expected) + 1 : 0;
        char *s = malloc(ln + lp + le);

        if (!s)
                return -ENOMEM;
        *to = *from;
        to->name = memcpy(s, from->name, ln);
        to->path = same ? to->name : memcpy(s + ln, from->path, lp);
        to->expected = from->expected ? memcpy(s + ln + lp, from->expected, le) : NULL;
        *ret_strings = s;
        return 0;
}

int run_order_pull(RunOrder *o, size_t *ret_index)
{
        RunItem item;
        RunSlot *s;
        int r;

        if (o->source_done)
                return 0;
        r = grow(o);
        if (r < 0)
                return r;
        r = o->source->next(o->source->userdata, &item);
        if (r <= 0) {
                if (r == 0)
                        o->source_done = true;
                return r;
        }
        s = &o->slots[o->n_items & (o->alloc - 1)];
        *s = (RunSlot){};
        r = item_copy(&item, &s->item, &s->strings);
        if (r < 0)
                return r;
        *ret_index = o->n_items++;
        return 1;
}

const RunItem *run_order_item(const RunOrder *o, size_t index)
{
        RunSlot *s = slot_of(o, index);

        return s && !s->delivered ? &s->item : NULL;
}

bool *run_order_mark(RunOrder *o, size_t index)
{
        RunSlot *s = slot_of(o, index);

        return s ? &s->mark : NULL;
}

bool run_order_has(const RunOrder *o, size_t index)
{
        RunSlot *s = slot_of(o, index);

        return !s || s->have;
}

bool run_item_preset(const RunItem *item, size_t index, RunResult *ret)
{
        if (item->note)
                *ret = (RunResult){ .index = index, .status = RUN_SKIPPED };
        else if (item->error < 0)
                *ret = (RunResult){ .index = index, .status = RUN_ERROR, .error = item->error };
        else
                return false;
        return true;
}

void run_order_put(RunOrder *o, const RunResult *r)
{
        RunSlot *s = slot_of(o, r->index);

        if (!s || s->have)
                return;
        s->result = *r;
        s->result.message = NULL;
        if (r->message) {
                /* Without its text the result still says what went wrong. */
                s->result.message = strdup(r->message);
        }
        if (s->result.status == RUN_OK && s->item.expected && strcasecmp(s->result.hex, s->item.expected) != 0)
                s->result.status = RUN_MISMATCH;
        s->have = true;

        if (o->unordered) {
                /* At once; the slot stays (its item forgotten) until those before it are in. */
                o->fn(&s->item, &s->result, o->userdata);
                free(s->strings);
                free((char *)s->result.message);
                s->strings = NULL;
                s->result.message = NULL;
                s->delivered = true;
        }
        if (r->index != o->next)
                return;
        while (o->next < o->n_items && (s = slot_of(o, o->next))->have) {
                if (!s->delivered)
                        o->fn(&s->item, &s->result, o->userdata);
                /* Delivered: forgotten. */
                slot_clear(s);
                o->next++;
        }
}

/* Files queued in the engine (added, no result yet) before the source is pulled again: enough to keep
 * its 64 open files and its workers busy while the walk reads a directory, few enough that a walk of
 * a million files is not held in memory. Path inputs cost the engine no fd until it opens them. */
#define LOCAL_QUEUED_MAX ((size_t)4096)
/* Files per engine job: the first steps are small so that hashing starts at once, then they grow so
 * that a job's overhead is spread over many files. */
#define LOCAL_STEP_MIN ((size_t)16)
#define LOCAL_STEP_MAX ((size_t)512)


/* One engine job: up to a step's files of one algorithm; map[k] is the item of its k-th input. */
typedef struct LocalBatch {
        LocalRun *run;
        uint32_t out_len;         /* RunItem.out_len of its items */
        struct LocalBatch *next;  /* LocalRun.running */
        EngineJob *job;
        size_t *map;
        size_t n, alloc;
} LocalBatch;

struct LocalRun {
        RunOrder order;
        bool done;                            /* every item delivered */
        bool cancelled;                       /* run_local_cancel(): nothing more is hashed */
        const RunReadOptions *read;
        Engine *e;                            /* made when the first file needs it */
        LocalBatch *filling[_HASH_ALGO_MAX];  /* not started yet */
        LocalBatch *running;                  /* started, job_done not seen */
        size_t queued;                        /* files added to batches without a result */
        size_t step;
        ProgressState finished;               /* what the batches that are over did */
};

static LocalBatch *batch_free(LocalBatch *b)
{
        if (!b)
                return NULL;
        engine_job_unref(b->job);
        free(b->map);
        return mfree(b);
}

static void local_file_done(EngineJob *j, const EngineFileResult *fr, void *userdata)
{
        LocalBatch *b = userdata;
        RunResult r = {};

        if (fr->index >= b->n)
                return;
        b->run->queued--;
        r.index = b->map[fr->index];
        r.size = fr->size;
        switch (fr->status) {
        case ENGINE_FILE_OK:
                r.status = RUN_OK;
                if (b->run->read->algos && b->run->read->algos->n > 1)
                        hash_set_to_hex(b->run->read->algos, fr->digest, r.hex);
                else
                        hash_to_hex(fr->digest, fr->digest_size, r.hex);
                break;
        case ENGINE_FILE_CHANGED:
                r.status = RUN_CHANGED;
                break;
        case ENGINE_FILE_CANCELLED:
                r.status = RUN_CANCELLED;
                break;
        default:
                r.status = RUN_ERROR;
                r.error = fr->error < 0 ? fr->error : -EIO;
        }
        run_order_put(&b->run->order, &r);
}

static void local_job_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        LocalBatch *b = userdata;
        LocalRun *run = b->run;
        EngineJobProgress jp;

        engine_job_get_progress(j, &jp);
        run->finished.bytes_done += jp.bytes_done;
        run->finished.bytes_total += jp.bytes_total;
        run->finished.files_done += jp.files_done;
        run->finished.files_total += jp.files_total;
        for (LocalBatch **p = &run->running; *p; p = &(*p)->next)
                if (*p == b) {
                        *p = b->next;
                        break;
                }
        /* Allowed from job_done: the job's last callback. */
        batch_free(b);
}

void run_local_get_progress(LocalRun *run, ProgressState *ret)
{
        ProgressState s = run->finished;

        s.open_ended = !run->order.source_done;
        for (LocalBatch *b = run->running; b; b = b->next) {
                EngineJobProgress jp;

                engine_job_get_progress(b->job, &jp);
                s.bytes_done += jp.bytes_done;
                s.bytes_total += jp.bytes_total;
                s.files_done += jp.files_done;
                s.files_total += jp.files_total;
        }
        *ret = s;
}

static int local_start(LocalRun *run, LocalBatch *b);

/* Adds item i to the filling batch of its algorithm. */
static int local_add(LocalRun *run, const RunItem *it, size_t i)
{
        HashAlgo a = it->algo;
        LocalBatch *b;
        int k, r;

        if (a < 0 || a >= _HASH_ALGO_MAX)
                return -EINVAL;
        if (!run->e) {
                /* Through a local: the analyzer forgets all of *run when a field's address escapes. */
                Engine *e = NULL;

                r = engine_new(&(EngineConfig){}, &e);
                if (r < 0)
                        return r;
                run->e = e;
        }
        b = run->filling[a];
        if (b && b->out_len != it->out_len) {
                /* Another length of the algorithm: the batch so far goes, a new one starts. */
                run->filling[a] = NULL;
                r = local_start(run, b);
                if (r < 0)
                        return r;
                b = NULL;
        }
        if (!b) {
                HashParams len = { .out_len = it->out_len };

                b = calloc(1, sizeof(*b));
                if (!b)
                        return -ENOMEM;
                b->run = run;
                b->out_len = it->out_len;
                r = engine_job_new(run->e, a,
                                   &(EngineJobOptions){ .dontcache = run->read->dontcache,
                                                        .max_file_size = run->read->max_size,
                                                        .strategy = run->read->strategy,
                                                        .params = it->out_len ? &len : run->read->params,
                                                        .algos = run->read->algos },
                                   &b->job);
                if (r < 0) {
                        free(b);
                        return r;
                }
                run->filling[a] = b;
        }
        if (b->n == b->alloc) {
                size_t na = MAX(b->alloc * 2, (size_t)LOCAL_STEP_MIN);
                size_t *nm = reallocarray(b->map, na, sizeof(*nm));
                if (!nm)
                        return -ENOMEM;
                b->map = nm;
                b->alloc = na;
        }
        if (it->has_fd || streq(it->path, "-")) {
                /* The job closes what it is given; standard input and the caller's fds stay theirs. */
                _cleanup_close_ int fd = fcntl(it->has_fd ? it->fd : STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                if (fd < 0)
                        return negative_errno();
                k = engine_job_add_fd(b->job, fd);
                if (k >= 0)
                        TAKE_FD(fd);
        } else
                k = engine_job_add_path(b->job, it->path);
        if (k < 0)
                return k;
        b->map[k] = i;
        b->n = (size_t)k + 1;
        run->queued++;
        return 0;
}

static int local_start(LocalRun *run, LocalBatch *b)
{
        static const EngineJobCallbacks callbacks = {
                .file_done = local_file_done,
                .job_done = local_job_done,
        };

        /* On the list first: whatever happens, finish frees it from there. */
        b->next = run->running;
        run->running = b;
        return engine_job_start(b->job, &callbacks, b);
}

static int local_start_filling(LocalRun *run)
{
        for (size_t a = 0; a < ELEMENTSOF(run->filling); a++) {
                LocalBatch *b = TAKE_PTR(run->filling[a]);
                int r;

                if (!b)
                        continue;
                r = local_start(run, b);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool local_wants_more(const LocalRun *run)
{
        return !run->order.source_done && run->queued < LOCAL_QUEUED_MAX &&
               run_order_pending(&run->order) < RUN_MAX_PENDING;
}

/* One step of the source: up to run->step items, then every batch it filled starts. */
static int local_fill(LocalRun *run)
{
        size_t pulled = 0;
        int r;

        while (pulled < run->step && local_wants_more(run)) {
                const RunItem *it;
                RunResult pre;
                size_t i;

                r = run_order_pull(&run->order, &i);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                pulled++;
                it = run_order_item(&run->order, i);
                if (run_item_preset(it, i, &pre))
                        run_order_put(&run->order, &pre);
                else if (run->cancelled)
                        /* After a cancel the rest of the source is answered, not hashed. */
                        run_order_put(&run->order, &(RunResult){ .index = i, .status = RUN_CANCELLED,
                                                                 .error = -ECANCELED });
                else {
                        /* A copy: clang-tidy 14 loses the ring (and reports it leaked) when a
                         * pointer into it goes to a function it does not inline. */
                        RunItem copy = *it;

                        r = local_add(run, &copy, i);
                        if (r < 0)
                                return r;
                }
        }
        if (pulled == run->step)
                run->step = MIN(run->step * 2, LOCAL_STEP_MAX);
        return local_start_filling(run);
}

int run_local_new(const RunSource *source, const RunReadOptions *ro, RunResultFn fn, void *userdata,
                  LocalRun **ret)
{
        LocalRun *run = calloc(1, sizeof(*run));
        int r;

        if (!run)
                return -ENOMEM;
        *run = (LocalRun){ .read = ro, .step = LOCAL_STEP_MIN };
        r = run_order_init(&run->order, source, fn, userdata);
        if (r < 0) {
                free(run);
                return r;
        }
        run->order.unordered = ro->unordered;
        *ret = run;
        return 0;
}

int run_local_step(LocalRun *run, uint64_t timeout_usec)
{
        int r;

        if (run->done)
                return 0;
        for (;;) {
                r = local_fill(run);
                if (r < 0)
                        return r;
                if (run_order_finished(&run->order) && !run->running) {
                        run->done = true;
                        return 0;
                }
                /* Without an engine nothing is queued, so everything pulled was delivered at once
                 * and the source has more. */
                if (run->e)
                        break;
        }
        /* While the source has more and there is room, only collect what is ready. */
        r = engine_run_once(run->e, local_wants_more(run) ? 0 : timeout_usec);
        if (r < 0)
                return r;
        /* What was collected may have been the end: say so now, not after the caller's next wait. */
        if (run_order_finished(&run->order) && !run->running) {
                run->done = true;
                return 0;
        }
        return 1;
}

bool run_local_wants_input(LocalRun *run)
{
        return !run->done && local_wants_more(run);
}

void run_local_cancel(LocalRun *run)
{
        run->cancelled = true;
        for (LocalBatch *b = run->running; b; b = b->next)
                engine_job_cancel(b->job);
}

int run_local_get_fd(LocalRun *run)
{
        return run->e ? engine_get_fd(run->e) : -EAGAIN;
}

LocalRun *run_local_free(LocalRun *run)
{
        if (!run)
                return NULL;
        /* Jobs go before the engine that runs them. */
        for (size_t a = 0; a < ELEMENTSOF(run->filling); a++)
                run->filling[a] = batch_free(run->filling[a]);
        while (run->running) {
                LocalBatch *b = run->running;

                run->running = b->next;
                batch_free(b);
        }
        engine_free(run->e);
        run_order_deinit(&run->order);
        return mfree(run);
}

int run_local(const RunSource *source, const RunReadOptions *ro, RunResultFn fn, void *userdata)
{
        LocalRun *run;
        int r;

        r = run_local_new(source, ro, fn, userdata, &run);
        if (r < 0)
                return r;
        /* Freed explicitly: clang-tidy 14 does not see _cleanup_. */
        do
                r = run_local_step(run, 250000);
        while (r > 0);
        run_local_free(run);
        return r;
}
