/* SPDX-License-Identifier: MIT */
/* job.c: the job API: inputs, start, cancel, references, progress */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "basic/time-util.h"

int engine_job_new(Engine *e, HashAlgo algo, const EngineJobOptions *options, EngineJob **ret)
{
        EngineJob *j;

        if (!e || algo < 0 || algo >= _HASH_ALGO_MAX)
                return -EINVAL;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->shards = calloc(e->n_shards, sizeof(JobShard));
        if (!j->shards) {
                free(j);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < e->n_shards; i++)
                j->shards[i].job = j;
        atomic_init(&j->n_ref, 1);
        j->engine = e;
        j->algo = algo;
        j->algos = HASH_ALGO_SET_ONE(algo);
        if (options)
                j->options = *options;
        /* A background scan leaves the page cache as it found it (engine.h, "Priorities"). */
        if (e->config.background)
                j->options.dontcache = true;
        j->options.params = NULL;
        j->options.algos = &j->algos;
        if (options && options->creds) {
                if (options->creds->n_groups == 0 || options->creds->n_groups > ENGINE_CREDS_GROUPS_MAX) {
                        free(j->shards);
                        free(j);
                        return -EINVAL;
                }
                j->creds = *options->creds;
                j->options.creds = &j->creds;
        }
        if (options && options->algos && options->algos->n > 1) {
                const HashAlgoSet *set = options->algos;

                if (set->n > HASH_SET_MAX || set->algos[0] != algo || options->params ||
                    hash_algo_set_digest_size(set) == 0) {
                        free(j->shards);
                        free(j);
                        return -EINVAL;
                }
                j->algos = *set;
        }
        if (options && options->params) {
                int r = hash_params_check(algo, options->params);

                if (r >= 0 && options->params->context) {
                        j->context = strdup(options->params->context);
                        if (!j->context)
                                r = -ENOMEM;
                }
                if (r >= 0) {
                        j->params = *options->params;
                        j->params.context = j->context;
                        j->options.params = &j->params;
                        if (algo == HASH_BLAKE3)
                                r = blake3_mode_init(&j->b3mode, &j->params);
                }
                if (r < 0) {
                        hash_params_wipe(&j->params);
                        blake3_mode_wipe(&j->b3mode);
                        free(j->context);
                        free(j->shards);
                        free(j);
                        return r;
                }
        } else if (algo == HASH_BLAKE3)
                (void)blake3_mode_init(&j->b3mode, NULL); /* the plain hash's mode cannot fail */
        LIST_PREPEND_BY(live_next, live_prev, e->live_jobs, j);
        *ret = j;
        return 0;
}

EngineJob *engine_job_ref(EngineJob *j)
{
        if (j)
                atomic_fetch_add(&j->n_ref, 1);
        return j;
}

void engine_close_later(Engine *e, int fd)
{
        Shard *s = &e->shards[0];
        int *p;

        pthread_mutex_lock(&s->control_lock);
        if (s->n_close_fds == s->n_close_fds_alloc) {
                size_t n = s->n_close_fds_alloc ? s->n_close_fds_alloc * 2 : 16;
                p = realloc(s->close_fds, n * sizeof(int));
                if (!p) {
                        pthread_mutex_unlock(&s->control_lock);
                        (void)close(fd); /* no memory to queue it: the only way left */
                        return;
                }
                s->close_fds = p;
                s->n_close_fds_alloc = n;
        }
        s->close_fds[s->n_close_fds++] = fd;
        pthread_mutex_unlock(&s->control_lock);
        atomic_store_explicit(&s->control_pending, true, memory_order_release);
        shard_wake(s);
}

/* The fds of inputs never opened (a job never started) go to shard 0 to be closed through
 * the ring; once the engine is gone there is nobody to hand them to. */
static void job_free(EngineJob *j)
{
        Engine *e = j->engine;

        for (size_t i = 0; i < j->n_inputs; i++) {
                free(j->inputs[i].path);
                free(j->inputs[i].info);
                engine_dir_unref(j->inputs[i].dir);
                if (j->inputs[i].fd < 0)
                        continue;
                if (e && !e->io_gone)
                        engine_close_later(e, j->inputs[i].fd);
                else
                        (void)close(j->inputs[i].fd);
        }
        if (j->reorder)
                for (size_t i = j->next_deliver; i < j->n_inputs; i++)
                        free(j->reorder[i]);
        free(j->reorder);
        if (e && j->started && j->has_paths)
                atomic_fetch_sub_explicit(&e->path_jobs, 1, memory_order_relaxed);
        if (e)
                LIST_REMOVE_BY(live_next, live_prev, e->live_jobs, j);
        free(j->inputs);
        hash_params_wipe(&j->params);
        blake3_mode_wipe(&j->b3mode);
        free(j->context);
        free(j->shards);
        free(j);
}

EngineJob *engine_job_unref(EngineJob *j)
{
        if (!j)
                return NULL;
        unsigned left = atomic_fetch_sub(&j->n_ref, 1) - 1;
        if (left == 0)
                job_free(j);
        else if (left == 1 && j->started && !j->finished && !j->orphaned) {
                /* Only the engine's own reference is left: nobody wants the results. */
                j->orphaned = true;
                engine_job_cancel(j);
        }
        return NULL;
}

static int job_add_input(EngineJob *j, const JobInput *in)
{
        if (j->started)
                return -EBUSY;
        if (j->n_inputs == j->n_inputs_alloc) {
                size_t n = j->n_inputs_alloc ? j->n_inputs_alloc * 2 : 16;
                JobInput *p = realloc(j->inputs, n * sizeof(*p));
                if (!p)
                        return -ENOMEM;
                j->inputs = p;
                j->n_inputs_alloc = n;
        }
        if (j->n_inputs >= INT32_MAX)
                return -E2BIG;
        j->inputs[j->n_inputs] = *in;
        j->has_paths |= in->path != NULL;
        return (int)j->n_inputs++;
}

int engine_job_add_input(EngineJob *j, const EngineInput *in)
{
        EngineFdInfo *info = NULL;
        char *p = NULL;
        int k;

        if (!in)
                return -EINVAL;
        if (in->path) {
                if (!*in->path)
                        return -EINVAL;
                p = strdup(in->path);
                if (!p)
                        return -ENOMEM;
        } else if (in->fd < 0)
                return -EBADF;
        else if (in->info) {
                info = malloc(sizeof(*info));
                if (!info)
                        return -ENOMEM;
                *info = *in->info;
        }
        k = job_add_input(j, &(JobInput){ .path = p, .fd = p ? -EBADF : in->fd, .cookie = in->cookie,
                                          .flags = in->flags, .info = info, .dir = p ? in->dir : NULL });
        if (k < 0) {
                free(p);
                free(info);
        } else if (p)
                (void)engine_dir_ref(in->dir);
        return k;
}

int engine_job_add_path(EngineJob *j, const char *path)
{
        if (!path)
                return -EINVAL;
        return engine_job_add_input(j, &(EngineInput){ .path = path, .cookie = j->n_inputs });
}

int engine_job_add_fd(EngineJob *j, int fd)
{
        return engine_job_add_fd_flags(j, fd, 0);
}

int engine_job_add_fd_flags(EngineJob *j, int fd, unsigned flags)
{
        return engine_job_add_input(j, &(EngineInput){ .fd = fd, .cookie = j->n_inputs, .flags = flags });
}

static int shard_queue_job(Shard *s, EngineJob *j)
{
        if (s->n_new_jobs == s->n_new_jobs_alloc) {
                size_t n = s->n_new_jobs_alloc ? s->n_new_jobs_alloc * 2 : 8;
                EngineJob **p = realloc(s->new_jobs, n * sizeof(EngineJob *));
                if (!p)
                        return -ENOMEM;
                s->new_jobs = p;
                s->n_new_jobs_alloc = n;
        }
        s->new_jobs[s->n_new_jobs++] = j;
        return 0;
}

/* The shards a job goes to: all of them, or for a job with fewer inputs than shards as many as it
 * has inputs, an idle one first (its parker says it sleeps), else the next in turn. Each holds the
 * job until it is on none of its lists, and the job's end waits for every one of them: a shard
 * busy elsewhere (or waiting for a core) held the end of a one-file job up by a turn of its own
 * (a root 4 KiB job under LOAD: 7-9 ms at p90 between its file's result and its end). */
static void job_pick_targets(Engine *e, EngineJob *j)
{
        unsigned n = (unsigned)MIN((size_t)e->n_shards, MAX(j->n_inputs, (size_t)1));
        unsigned first = 0;

        if (n < e->n_shards) {
                first = atomic_fetch_add_explicit(&e->next_target, 1, memory_order_relaxed) % e->n_shards;
                for (unsigned k = 0; k < e->n_shards; k++) {
                        unsigned i = (first + k) % e->n_shards;
                        if (atomic_load_explicit(&e->shards[i].io_parker.state, memory_order_relaxed) == 1) {
                                first = i;
                                break;
                        }
                }
        }
        j->first_shard = first;
        j->n_targets = n;
}

/* The k-th of j's shards (k < n_targets): first_shard and the ones after it, round the end. */
static Shard *job_target(Engine *e, const EngineJob *j, unsigned k)
{
        unsigned i = j->first_shard + k;

        return &e->shards[i >= e->n_shards ? i - e->n_shards : i];
}

/* Whether shard i is one of j's. */
static bool job_has_target(const Engine *e, const EngineJob *j, unsigned i)
{
        return (i >= j->first_shard ? i - j->first_shard : i + e->n_shards - j->first_shard) < j->n_targets;
}

/* The job goes to its shards (job_pick_targets()), their control locks held (taken in index order,
 * the others left alone): a shard takes its inputs as soon as it has a slot free, and each holds it
 * (results_pending) until it is on none of its lists. */
int engine_job_start(EngineJob *j, const EngineJobCallbacks *callbacks, void *userdata)
{
        Engine *e = j->engine;
        unsigned i;
        int k = 0;

        if (j->started)
                return -EBUSY;
        if (!e)
                return -ESHUTDOWN;
        if (callbacks)
                j->callbacks = *callbacks;
        j->userdata = userdata;

        job_pick_targets(e, j);
        for (i = 0; i < e->n_shards; i++)
                if (job_has_target(e, j, i))
                        pthread_mutex_lock(&e->shards[i].control_lock);
        for (i = 0; i < j->n_targets && k >= 0; i++)
                k = shard_queue_job(job_target(e, j, i), j);
        if (k < 0)
                for (unsigned r = 0; r + 1 < i; r++)
                        job_target(e, j, r)->n_new_jobs--; /* appended last: taken back */
        else {
                j->started = true;
                atomic_store(&j->results_pending, j->n_inputs + j->n_targets);
                atomic_store(&j->start_usec, now_usec());
                atomic_fetch_add(&e->files_queued, (unsigned)j->n_inputs);
                if (j->has_paths)
                        atomic_fetch_add_explicit(&e->path_jobs, 1, memory_order_relaxed);
                (void)engine_job_ref(j); /* the engine's, one for all shards */
        }
        for (i = e->n_shards; i-- > 0;)
                if (job_has_target(e, j, i))
                        pthread_mutex_unlock(&e->shards[i].control_lock);
        if (k < 0)
                return k;

        for (i = 0; i < j->n_targets; i++) {
                Shard *s = job_target(e, j, i);
                atomic_store_explicit(&s->control_pending, true, memory_order_release);
                shard_wake(s);
        }
        return 0;
}

void engine_job_cancel(EngineJob *j)
{
        Engine *e = j->engine;

        if (!j->started || j->finished || !e)
                return;
        if (atomic_exchange(&j->cancel_requested, true))
                return;
        for (unsigned i = 0; i < e->n_shards; i++) {
                atomic_store(&e->shards[i].cancel_pending, true);
                atomic_store_explicit(&e->shards[i].control_pending, true, memory_order_release);
                shard_wake(&e->shards[i]);
        }
}

void engine_job_get_progress(EngineJob *j, EngineJobProgress *ret)
{
        *ret = (EngineJobProgress){
                .bytes_done = atomic_load_explicit(&j->bytes_done, memory_order_relaxed),
                .bytes_total = atomic_load_explicit(&j->bytes_total, memory_order_relaxed),
                .files_done = atomic_load_explicit(&j->files_done, memory_order_relaxed),
                .files_total = j->n_inputs,
                .files_failed = atomic_load_explicit(&j->files_failed, memory_order_relaxed),
                .start_usec = atomic_load_explicit(&j->start_usec, memory_order_relaxed),
                .running = atomic_load_explicit(&j->running, memory_order_relaxed),
        };
}

size_t engine_job_get_n_inputs(EngineJob *j)
{
        return j->n_inputs;
}

HashAlgo engine_job_get_algo(EngineJob *j)
{
        return j->algo;
}

const HashAlgoSet *engine_job_get_algos(EngineJob *j)
{
        return &j->algos;
}

bool engine_job_is_finished(EngineJob *j)
{
        return j->finished;
}
