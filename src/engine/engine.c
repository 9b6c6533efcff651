/* SPDX-License-Identifier: MIT */
/* engine.c: the engine's construction, teardown and getters */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/macro.h"
#include "basic/string-table.h"
#include "io/mapguard.h"

#define DEFAULT_BUFFER_SIZE (1u << 20)
#define DEFAULT_BUFFERS 16
#define DEFAULT_MAX_OPEN 64
/* Bytes per small slot (one per open file), for files that fit in one: see Engine.small. */
#define SMALL_SLOT_SIZE ((size_t)64 << 10)
/* At most this many (16 MiB of locked memory): beyond, small files use pool slots as before. */
#define SMALL_SLOTS_MAX 256u

static const char *const open_mode_table[_ENGINE_OPEN_MODE_MAX] = {
        [ENGINE_OPEN_AUTO] = "auto",
        [ENGINE_OPEN_LINKED] = "linked",
        [ENGINE_OPEN_CLASSIC] = "classic",
};

DEFINE_STRING_TABLE_LOOKUP(engine_open_mode, EngineOpenMode, open_mode_table, _ENGINE_OPEN_MODE_MAX,
                           _ENGINE_OPEN_MODE_INVALID)

static const char *const read_strategy_table[_ENGINE_READ_MAX] = {
        [ENGINE_READ_AUTO] = "auto",
        [ENGINE_READ_BUFFERED] = "read",
        [ENGINE_READ_MMAP] = "mmap",
        [ENGINE_READ_DIRECT] = "direct",
};

DEFINE_STRING_TABLE_LOOKUP(engine_read_strategy, EngineReadStrategy, read_strategy_table, _ENGINE_READ_MAX,
                           _ENGINE_READ_INVALID)

static unsigned online_cpus(int *cpus, unsigned max)
{
        cpu_set_t set;
        unsigned n = 0;

        if (sched_getaffinity(0, sizeof(set), &set) < 0) {
                long c = sysconf(_SC_NPROCESSORS_ONLN);
                for (long i = 0; i < c && n < max; i++)
                        cpus[n++] = (int)i;
        } else
                for (int i = 0; i < CPU_SETSIZE && n < max; i++)
                        if (CPU_ISSET(i, &set))
                                cpus[n++] = i;
        /* None found (sysconf() failed): one worker, not pinned, rather than pinned to garbage. */
        if (n == 0)
                cpus[n++] = -1;
        return n;
}

static unsigned div_up(unsigned a, unsigned b)
{
        return (a + b - 1) / b;
}

/* Shard i's share of the engine: its part of the pool, of the small slots and of the files open. */
static int shard_init(Engine *e, Shard *s, unsigned id, int cpu)
{
        int k;

        s->engine = e;
        s->id = id;
        s->cpu = cpu;
        s->config = e->config;
        s->n_shards = e->n_shards;
        s->wake_fd = -EBADF;
        s->buffer_size = e->buffer_size;
        s->n_buffers = div_up(e->n_buffers, e->n_shards);
        s->max_open = div_up(e->max_open, e->n_shards);
        s->open_cap = s->max_open;
        s->n_slots = 2 * s->max_open;
        s->stall_timeout = e->config.stall_timeout_usec ? e->config.stall_timeout_usec : ENGINE_STALL_TIMEOUT_DEFAULT;
        pthread_mutex_init(&s->control_lock, NULL);

        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->wake_fd < 0)
                return -errno;

        /* Small slots only where they are smaller than the pool's, and never past the kernel's
         * caps on what one process registers (16384 buffers). */
        if (s->buffer_size > SMALL_SLOT_SIZE && (size_t)s->n_buffers + SMALL_SLOTS_MAX <= ENGINE_MAX_BUFFERS) {
                s->small_size = SMALL_SLOT_SIZE;
                s->n_small = MIN(s->max_open, SMALL_SLOTS_MAX);
        }
        k = pool_init(&s->pool, s->buffer_size, s->n_buffers, s->small_size, s->n_small);
        if (k < 0)
                return k;
        s->bufs = calloc(s->n_buffers + s->n_small, sizeof(Buffer));
        s->slots = calloc(s->n_slots, sizeof(FileSlot));
        s->links = calloc(e->n_shards, sizeof(Worker));
        s->express_cap = s->n_small + 1;
        s->express = calloc(s->express_cap, sizeof(WorkItem));
        if (!s->bufs || !s->slots || !s->links || !s->express)
                return -ENOMEM;
        for (unsigned i = 0; i < s->n_buffers + s->n_small; i++)
                s->bufs[i] = (Buffer){ .data = pool_data(&s->pool, i), .slot = i, .index = (int)i, .span = 1,
                                       .small = pool_is_small(&s->pool, i) };
        k = md_new(&s->piece_md);
        if (k < 0)
                return k;
        /* Hash contexts for the first max_open slots now; the others' when first used. */
        for (unsigned i = s->n_slots; i-- > 0;) {
                if (i < s->max_open) {
                        k = hash_ctx_new(&s->slots[i].ctx);
                        if (k < 0)
                                return k;
                }
                s->slots[i].fd = -EBADF;
                slot_free(s, &s->slots[i]);
        }
        /* Links to every shard: each carries s's buffers and slot markers, so it never fills. */
        for (unsigned i = 0; i < e->n_shards; i++) {
                k = worker_init(&s->links[i], s, &e->shards[i], (size_t)s->n_buffers + s->n_small + s->n_slots + 1);
                if (k < 0)
                        return k;
        }
        return 0;
}

static void shard_deinit(Shard *s)
{
        if (!s->engine)
                return;
        for (size_t i = 0; i < s->n_close_fds; i++)
                safe_close(s->close_fds[i]);
        free(s->close_fds);
        free(s->new_jobs);
        ioring_free(s->ring);
        shard_personalities_free(s);
        sched_free_all(s);
        for (unsigned i = 0; s->slots && i < s->n_slots; i++) {
                hash_ctx_free(s->slots[i].ctx);
                for (unsigned k = 0; k < ELEMENTSOF(s->slots[i].ctx_more); k++)
                        hash_ctx_free(s->slots[i].ctx_more[k]);
        }
        free(s->slots);
        md_free(s->piece_md);
        free(s->bufs);
        free(s->express);
        for (unsigned i = 0; s->links && i < s->n_shards; i++)
                worker_deinit(&s->links[i]);
        free(s->links);
        pool_deinit(&s->pool);
        safe_close(s->wake_fd);
        pthread_mutex_destroy(&s->control_lock);
}

int engine_new(const EngineConfig *config, Engine **ret)
{
        EngineConfig cfg = config ? *config : (EngineConfig){};
        int cpus[1024];
        unsigned n_cpus;
        Engine *e;
        int k;

        if (cfg.io_mode < 0 || cfg.io_mode >= _IO_MODE_MAX || cfg.open_mode < 0 ||
            cfg.open_mode >= _ENGINE_OPEN_MODE_MAX)
                return -EINVAL;
        if (cfg.buffer_size > ENGINE_MAX_BUFFER_SIZE || cfg.workers > ENGINE_MAX_WORKERS ||
            cfg.buffers > ENGINE_MAX_BUFFERS || cfg.max_open > ENGINE_MAX_OPEN)
                return -EINVAL;

        k = hash_global_init();
        if (k < 0)
                return k;
        k = mapguard_install();
        if (k < 0)
                return k;

        /* A background engine opens the classic way: its drains (diskwatch.h) count opens and reads,
         * and a linked chain is both at once. */
        if (cfg.background)
                cfg.open_mode = ENGINE_OPEN_CLASSIC;
        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->config = cfg;
        e->event_fd = -EBADF;
        e->dontcache_ok = true;
        diskwatch_init(&e->diskwatch, cfg.background);
        pthread_mutex_init(&e->event_lock, NULL);
        pthread_mutex_init(&e->init_lock, NULL);
        pthread_cond_init(&e->init_cond, NULL);

        n_cpus = online_cpus(cpus, ELEMENTSOF(cpus));
        e->n_shards = cfg.workers ? cfg.workers : n_cpus;
        e->buffer_size = cfg.buffer_size ? ALIGN_TO(cfg.buffer_size, (size_t)4096) : DEFAULT_BUFFER_SIZE;
        e->n_buffers = cfg.buffers ? cfg.buffers : MAX((unsigned)DEFAULT_BUFFERS, 4 * e->n_shards);
        e->max_open = cfg.max_open ? cfg.max_open : DEFAULT_MAX_OPEN;

        e->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->event_fd < 0) {
                k = -errno;
                goto fail;
        }
        e->shards = calloc(e->n_shards, sizeof(Shard));
        if (!e->shards) {
                k = -ENOMEM;
                goto fail;
        }
        for (unsigned i = 0; i < e->n_shards; i++) {
                k = shard_init(e, &e->shards[i], i, cfg.no_pin ? -1 : cpus[i % n_cpus]);
                if (k < 0)
                        goto fail;
        }

        e->started = true;
        for (unsigned i = 0; i < e->n_shards; i++) {
                Shard *s = &e->shards[i];
                char name[32];

                k = -pthread_create(&s->thread, NULL, shard_main, s);
                if (k < 0) {
                        /* This one and those after never run; engine_free() ends the others. */
                        for (unsigned r = i; r < e->n_shards; r++)
                                shard_init_done(&e->shards[r], k);
                        break;
                }
                s->started = true;
                snprintf(name, sizeof(name), cfg.background ? "fhash-idle%u" : "fhash-shard%u", i);
                (void)pthread_setname_np(s->thread, name);
        }
        pthread_mutex_lock(&e->init_lock);
        for (unsigned i = 0; i < e->n_shards; i++)
                while (!e->shards[i].init_done)
                        pthread_cond_wait(&e->init_cond, &e->init_lock);
        pthread_mutex_unlock(&e->init_lock);
        for (unsigned i = 0; i < e->n_shards; i++)
                if (e->shards[i].init_result < 0) {
                        k = e->shards[i].init_result;
                        goto fail;
                }

        *ret = e;
        return 0;

fail:
        engine_free(e);
        return k;
}

Engine *engine_free(Engine *e)
{
        if (!e)
                return NULL;

        if (e->started && e->shards) {
                /* Shards that started wait in their loop for the others to be quiet: one that failed
                 * to set up counts as quiet from the start. */
                for (unsigned i = 0; i < e->n_shards; i++)
                        if (e->shards[i].init_result < 0)
                                atomic_fetch_add(&e->n_quiet, 1);
                atomic_store(&e->shutdown, true);
                for (unsigned i = 0; i < e->n_shards; i++) {
                        Shard *s = &e->shards[i];
                        if (s->init_result < 0)
                                continue;
                        atomic_store(&s->control_pending, true);
                        shard_wake(s);
                        (void)!write(s->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
                }
                for (unsigned i = 0; i < e->n_shards; i++)
                        if (e->shards[i].started)
                                (void)pthread_join(e->shards[i].thread, NULL);
        }
        /* From here on the fds jobs still hold can only be closed here. */
        e->io_gone = true;

        /* Jobs outlive the engine while anyone holds them: from here on they must not reach for it.
         * Done before the references below are dropped, since dropping one may free a job, and a
         * job freed without an engine no longer unlinks itself from this list. */
        for (EngineJob *j = e->live_jobs; j; j = j->live_next)
                j->engine = NULL;
        e->live_jobs = NULL;

        /* Jobs queued but never seen by a shard, and undelivered events, hold references: a job is
         * queued to its shards with one reference, dropped here where it is queued to its first. */
        for (unsigned s = 0; e->shards && s < e->n_shards; s++)
                for (size_t i = 0; i < e->shards[s].n_new_jobs; i++)
                        if (e->shards[s].new_jobs[i]->first_shard == s)
                                engine_job_unref(e->shards[s].new_jobs[i]);
        for (size_t i = 0; i < e->n_events; i++)
                if (e->events[i].type == EVENT_JOB) {
                        e->events[i].job->finished = true;
                        e->events[i].job->engine = NULL;
                        engine_job_unref(e->events[i].job);
                }
        for (size_t i = e->dispatch_pos; i < e->n_dispatching; i++)
                if (e->dispatching[i].type == EVENT_JOB) {
                        e->dispatching[i].job->finished = true;
                        e->dispatching[i].job->engine = NULL;
                        engine_job_unref(e->dispatching[i].job);
                }
        free(e->events);
        free(e->dispatching);
        for (unsigned i = 0; e->shards && i < e->n_shards; i++)
                shard_deinit(&e->shards[i]);
        free(e->shards);
        safe_close(e->event_fd);
        diskwatch_done(&e->diskwatch);
        pthread_mutex_destroy(&e->event_lock);
        pthread_mutex_destroy(&e->init_lock);
        pthread_cond_destroy(&e->init_cond);
        free(e);
        return NULL;
}

int engine_get_fd(Engine *e)
{
        return e->event_fd;
}

/* Every shard's ring was set up the same way; the first speaks for all. */
IoMode engine_get_io_mode(Engine *e)
{
        return e->shards[0].io_mode;
}

IoMode engine_get_shard_io_mode(Engine *e, unsigned shard)
{
        return shard < e->n_shards ? e->shards[shard].io_mode : -EINVAL;
}

unsigned engine_get_workers(Engine *e)
{
        return e->n_shards;
}

size_t engine_get_buffer_size(Engine *e)
{
        return e->buffer_size;
}

unsigned engine_get_buffers(Engine *e)
{
        return e->n_buffers;
}

unsigned engine_get_direct_span(Engine *e)
{
        return e->shards[0].max_span;
}

EngineOpenMode engine_get_open_mode(Engine *e)
{
        return e->shards[0].linked ? ENGINE_OPEN_LINKED : ENGINE_OPEN_CLASSIC;
}

uint64_t engine_get_files_linked(Engine *e)
{
        return atomic_load_explicit(&e->files_linked, memory_order_relaxed);
}

uint64_t engine_get_bytes_hashed(Engine *e)
{
        return atomic_load_explicit(&e->bytes_hashed, memory_order_relaxed);
}

uint64_t engine_get_disk_holds(Engine *e)
{
        return atomic_load_explicit(&e->diskwatch.holds, memory_order_relaxed);
}

bool engine_is_background(Engine *e)
{
        return e->config.background;
}

bool engine_is_busy(Engine *e, uint64_t now, uint64_t window_usec)
{
        /* Activity alone, not files queued: a job that just ended is often followed by the next
         * (a client's next call, a loop of runs), and a background engine that started again in
         * between would have its reads and buffers in the newcomer's way; a job stuck on a silent
         * pipe has files queued but no activity. */
        for (unsigned i = 0; i < e->n_shards; i++) {
                uint64_t a = atomic_load_explicit(&e->shards[i].active_usec, memory_order_relaxed);
                if (a + window_usec > now)
                        return true;
        }
        return false;
}

unsigned engine_get_files_queued(Engine *e)
{
        return atomic_load_explicit(&e->files_queued, memory_order_relaxed);
}

