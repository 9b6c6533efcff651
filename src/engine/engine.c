/* SPDX-License-Identifier: MIT */
/* engine.c: the engine's construction, teardown and getters */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
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

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->config = cfg;
        e->wake_fd = e->event_fd = -EBADF;
        e->dontcache_ok = true;
        pthread_mutex_init(&e->control_lock, NULL);
        pthread_mutex_init(&e->event_lock, NULL);
        pthread_mutex_init(&e->init_lock, NULL);
        pthread_cond_init(&e->init_cond, NULL);

        n_cpus = online_cpus(cpus, ELEMENTSOF(cpus));
        e->n_workers = cfg.workers ? cfg.workers : n_cpus;
        e->buffer_size = cfg.buffer_size ? ALIGN_TO(cfg.buffer_size, (size_t)4096) : DEFAULT_BUFFER_SIZE;
        e->n_buffers = cfg.buffers ? cfg.buffers : MAX((unsigned)DEFAULT_BUFFERS, 4 * e->n_workers);
        e->max_open = cfg.max_open ? cfg.max_open : DEFAULT_MAX_OPEN;
        e->open_cap = e->max_open;
        e->n_slots = 2 * e->max_open;
        e->stall_timeout = cfg.stall_timeout_usec ? cfg.stall_timeout_usec : ENGINE_STALL_TIMEOUT_DEFAULT;

        e->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        e->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->wake_fd < 0 || e->event_fd < 0) {
                k = -errno;
                goto fail;
        }

        /* Small slots only where they are smaller than the pool's, and never past the kernel's
         * caps on what one process registers (16384 buffers). */
        if (e->buffer_size > SMALL_SLOT_SIZE && (size_t)e->n_buffers + SMALL_SLOTS_MAX <= ENGINE_MAX_BUFFERS) {
                e->small_size = SMALL_SLOT_SIZE;
                e->n_small = MIN(e->max_open, SMALL_SLOTS_MAX);
        }
        k = pool_init(&e->pool, e->buffer_size, e->n_buffers, e->small_size, e->n_small);
        if (k < 0)
                goto fail;
        e->bufs = calloc(e->n_buffers + e->n_small, sizeof(Buffer));
        e->slots = calloc(e->n_slots, sizeof(FileSlot));
        e->workers = calloc(e->n_workers, sizeof(Worker));
        if (!e->bufs || !e->slots || !e->workers) {
                k = -ENOMEM;
                goto fail;
        }
        for (unsigned i = 0; i < e->n_buffers + e->n_small; i++)
                e->bufs[i] = (Buffer){ .data = pool_data(&e->pool, i), .slot = i, .index = (int)i, .span = 1,
                                       .small = pool_is_small(&e->pool, i) };
        /* Hash contexts for the first max_open slots now; the others' when first used. */
        for (unsigned i = e->n_slots; i-- > 0;) {
                if (i < e->max_open) {
                        k = hash_ctx_new(&e->slots[i].ctx);
                        if (k < 0)
                                goto fail;
                }
                e->slots[i].fd = -EBADF;
                slot_free(e, &e->slots[i]);
        }

        for (unsigned i = 0; i < e->n_workers; i++) {
                k = worker_start(&e->workers[i], e, i, cfg.no_pin ? -1 : cpus[i % n_cpus],
                                 (size_t)e->n_buffers + e->n_small + e->n_slots + 1);
                if (k < 0)
                        goto fail;
        }

        k = -pthread_create(&e->io_thread, NULL, io_main, e);
        if (k < 0)
                goto fail;
        (void)pthread_setname_np(e->io_thread, "fhash-io");
        pthread_mutex_lock(&e->init_lock);
        while (!e->init_done)
                pthread_cond_wait(&e->init_cond, &e->init_lock);
        pthread_mutex_unlock(&e->init_lock);
        e->io_started = true;
        if (e->init_result < 0) {
                k = e->init_result;
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

        if (e->io_started) {
                if (e->init_result >= 0) {
                        atomic_store(&e->shutdown, true);
                        atomic_store(&e->control_pending, true);
                        io_wake(e);
                        (void)!write(e->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
                }
                (void)pthread_join(e->io_thread, NULL);
        }
        for (unsigned i = 0; e->workers && i < e->n_workers; i++)
                worker_stop(&e->workers[i]);
        /* From here on the fds jobs still hold can only be closed here. */
        e->io_gone = true;
        for (size_t i = 0; i < e->n_close_fds; i++)
                safe_close(e->close_fds[i]);
        free(e->close_fds);

        /* Jobs outlive the engine while anyone holds them: from here on they must not reach for it.
         * Done before the references below are dropped, since dropping one may free a job, and a
         * job freed without an engine no longer unlinks itself from this list. */
        for (EngineJob *j = e->live_jobs; j; j = j->live_next)
                j->engine = NULL;
        e->live_jobs = NULL;

        /* Jobs queued but never seen by the I/O thread, and undelivered events, hold references. */
        for (size_t i = 0; i < e->n_new_jobs; i++)
                engine_job_unref(e->new_jobs[i]);
        free(e->new_jobs);
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
        ioring_free(e->ring);
        sched_free_all(e);
        for (unsigned i = 0; e->slots && i < e->n_slots; i++) {
                hash_ctx_free(e->slots[i].ctx);
                for (unsigned k = 0; k < ELEMENTSOF(e->slots[i].ctx_more); k++)
                        hash_ctx_free(e->slots[i].ctx_more[k]);
        }
        free(e->slots);
        free(e->bufs);
        free(e->workers);
        pool_deinit(&e->pool);
        safe_close(e->wake_fd);
        safe_close(e->event_fd);
        pthread_mutex_destroy(&e->control_lock);
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

IoMode engine_get_io_mode(Engine *e)
{
        return e->io_mode;
}

unsigned engine_get_workers(Engine *e)
{
        return e->n_workers;
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
        return e->max_span;
}

EngineOpenMode engine_get_open_mode(Engine *e)
{
        return e->linked ? ENGINE_OPEN_LINKED : ENGINE_OPEN_CLASSIC;
}

uint64_t engine_get_files_linked(Engine *e)
{
        return atomic_load_explicit(&e->files_linked, memory_order_relaxed);
}

uint64_t engine_get_bytes_hashed(Engine *e)
{
        return atomic_load_explicit(&e->bytes_hashed, memory_order_relaxed);
}

unsigned engine_get_files_queued(Engine *e)
{
        return atomic_load_explicit(&e->files_queued, memory_order_relaxed);
}

