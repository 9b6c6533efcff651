/* SPDX-License-Identifier: MIT */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "macro.h"
#include "runner.h"

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
        case RUN_ERROR:
        default:
                return strerror(r->error < 0 ? -r->error : EIO);
        }
}

int run_order_init(RunOrder *o, const RunItem *items, size_t n, RunResultFn fn, void *userdata,
                   Progress *progress)
{
        *o = (RunOrder){ .items = items, .n_items = n, .fn = fn, .userdata = userdata, .progress = progress };
        o->results = calloc(MAX(n, (size_t)1), sizeof(*o->results));
        o->have = calloc(MAX(n, (size_t)1), sizeof(*o->have));
        if (!o->results || !o->have) {
                run_order_deinit(o);
                return -ENOMEM;
        }
        return 0;
}

void run_order_deinit(RunOrder *o)
{
        free(o->results);
        free(o->have);
        o->results = NULL;
        o->have = NULL;
}

void run_order_put(RunOrder *o, const RunResult *r)
{
        RunResult *slot;

        if (r->index >= o->n_items || o->have[r->index])
                return;
        slot = &o->results[r->index];
        *slot = *r;
        if (slot->status == RUN_OK && o->items[r->index].expected &&
            strcasecmp(slot->hex, o->items[r->index].expected) != 0)
                slot->status = RUN_MISMATCH;
        o->have[r->index] = true;

        if (r->index != o->next)
                return;
        progress_clear(o->progress);
        while (o->next < o->n_items && o->have[o->next]) {
                o->fn(&o->items[o->next], &o->results[o->next], o->userdata);
                o->next++;
        }
}

/* One engine job per algorithm; map[k] is the item index of the job's k-th input. */
typedef struct LocalJob {
        EngineJob *job;
        size_t *map;
        size_t n;
        bool done;
} LocalJob;

typedef struct LocalRun {
        RunOrder order;
        LocalJob jobs[_HASH_ALGO_MAX];
} LocalRun;

static void local_file_done(EngineJob *j, const EngineFileResult *fr, void *userdata)
{
        LocalRun *run = userdata;
        LocalJob *lj = NULL;
        RunResult r = {};

        for (size_t a = 0; a < ELEMENTSOF(run->jobs); a++)
                if (run->jobs[a].job == j)
                        lj = &run->jobs[a];
        if (!lj || fr->index >= lj->n)
                return;

        r.index = lj->map[fr->index];
        r.size = fr->size;
        switch (fr->status) {
        case ENGINE_FILE_OK:
                r.status = RUN_OK;
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
        run_order_put(&run->order, &r);
}

static void local_job_done(EngineJob *j, EngineJobResult result, void *userdata)
{
        LocalRun *run = userdata;

        for (size_t a = 0; a < ELEMENTSOF(run->jobs); a++)
                if (run->jobs[a].job == j)
                        run->jobs[a].done = true;
}

static void local_progress(LocalRun *run, Progress *p)
{
        ProgressState s = {};

        if (!p || !p->enabled)
                return;
        for (size_t a = 0; a < ELEMENTSOF(run->jobs); a++) {
                EngineJobProgress jp;

                if (!run->jobs[a].job)
                        continue;
                engine_job_get_progress(run->jobs[a].job, &jp);
                s.bytes_done += jp.bytes_done;
                s.bytes_total += jp.bytes_total;
                s.files_done += jp.files_done;
                s.files_total += jp.files_total;
        }
        progress_update(p, &s);
}

static void local_run_free(LocalRun *run)
{
        for (size_t a = 0; a < ELEMENTSOF(run->jobs); a++) {
                engine_job_unref(run->jobs[a].job);
                free(run->jobs[a].map);
        }
        run_order_deinit(&run->order);
}

int run_local(const RunItem *items, size_t n, const RunReadOptions *ro, RunResultFn fn, void *userdata,
              Progress *progress)
{
        static const EngineJobCallbacks callbacks = {
                .file_done = local_file_done,
                .job_done = local_job_done,
        };
        LocalRun run = {};
        Engine *e = NULL;
        int r;

        r = run_order_init(&run.order, items, n, fn, userdata, progress);
        if (r < 0)
                return r;
        /* From here every path leaves through finish, which frees run (explicitly: clang-tidy 14
         * does not see _cleanup_ and took the early returns for leaks). */
        if (n == 0)
                goto finish;

        r = engine_new(&(EngineConfig){}, &e);
        if (r < 0)
                goto finish;

        for (size_t i = 0; i < n; i++) {
                HashAlgo a = items[i].algo;
                LocalJob *lj;

                if (items[i].error < 0) {
                        run_order_put(&run.order, &(RunResult){ .index = i, .status = RUN_ERROR,
                                                                .error = items[i].error });
                        continue;
                }

                if (a < 0 || a >= _HASH_ALGO_MAX) {
                        r = -EINVAL;
                        goto finish;
                }
                lj = &run.jobs[a];
                if (!lj->job) {
                        r = engine_job_new(e, a, &(EngineJobOptions){ .dontcache = ro->dontcache, .strategy = ro->strategy }, &lj->job);
                        if (r < 0)
                                goto finish;
                        lj->map = calloc(n, sizeof(*lj->map));
                        if (!lj->map) {
                                r = -ENOMEM;
                                goto finish;
                        }
                }
                if (streq(items[i].path, "-")) {
                        /* The job closes what it is given; standard input stays ours. */
                        _cleanup_close_ int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
                        if (fd < 0) {
                                r = negative_errno();
                                goto finish;
                        }
                        r = engine_job_add_fd(lj->job, fd);
                        if (r >= 0)
                                TAKE_FD(fd);
                } else
                        r = engine_job_add_path(lj->job, items[i].path);
                if (r < 0)
                        goto finish;
                lj->map[lj->n++] = i;
        }

        for (size_t a = 0; a < ELEMENTSOF(run.jobs); a++) {
                if (!run.jobs[a].job)
                        continue;
                r = engine_job_start(run.jobs[a].job, &callbacks, &run);
                if (r < 0)
                        goto finish;
        }

        for (;;) {
                bool all = true;

                for (size_t a = 0; a < ELEMENTSOF(run.jobs); a++)
                        if (run.jobs[a].job && !run.jobs[a].done)
                                all = false;
                if (all)
                        break;
                r = engine_run_once(e, 250000);
                if (r < 0)
                        goto finish;
                local_progress(&run, progress);
        }
        progress_clear(progress);
        r = 0;

finish:
        /* Jobs go before the engine that runs them. */
        for (size_t a = 0; a < ELEMENTSOF(run.jobs); a++)
                run.jobs[a].job = engine_job_unref(run.jobs[a].job);
        engine_free(e);
        local_run_free(&run);
        return r;
}
