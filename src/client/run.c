/* SPDX-License-Identifier: MIT */
/* run.c: a run of libfhash: options and inputs checked, a backend stepped, on the caller's loop or
 * an sd-event loop */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "client/backend.h"
#include "client/client.h"
#include "client/error.h"
#include "client/run.h"
#include "fhash/fhash-dbus.h"

/* The inputs of fhash_run_paths() and fhash_run_fds(), copied: a source over them. */
typedef struct Array {
        fhash_input *inputs;
        char *strings;
        size_t n, next;
} Array;

struct fhash_run {
        fhash_client *client;
        RunOptions options;
        HashParams params;       /* length, key, derive-key: the key wiped when the run goes */
        char *context;           /* params.context's copy */
        Array array;
        Feed *feed;
        const BackendOps *ops;   /* backend_bus through fhashd, backend_local in this process */
        void *backend;
        sd_bus_error bus_error;
        uint64_t bytes_before;   /* bytes done by a backend before the one now (fhashd before in-process) */
        size_t n_given;          /* inputs given; SIZE_MAX for a source */
        bool done;
        sd_event_source *io_source, *time_source;  /* fhash_run_attach_event() */
        int io_fd;
        fhash_done_fn done_fn;
        void *done_userdata;
        fhash_error event_error;
};

_public_ fhash_run *fhash_run_free(fhash_run *r)
{
        if (!r)
                return NULL;
        r->io_source = sd_event_source_disable_unref(r->io_source);
        r->time_source = sd_event_source_disable_unref(r->time_source);
        if (r->backend)
                r->ops->free(r->backend);
        feed_free(r->feed);
        sd_bus_error_free(&r->bus_error);
        hash_params_wipe(&r->params);
        free(r->context);
        free(r->array.inputs);
        free(r->array.strings);
        return mfree(r);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(fhash_run *, fhash_run_free);

static int array_next(void *userdata, fhash_input *ret)
{
        Array *a = userdata;

        if (a->next >= a->n)
                return 0;
        *ret = a->inputs[a->next++];
        return 1;
}

/* The strategy and the parameters (length, key, derive-key) of o, checked against the algorithm. */
static int check_read_options(fhash_run *r, const fhash_hash_options *o, fhash_error *error)
{
        HashAlgo a = r->options.algos.algos[0];
        int k;

        r->options.strategy = o->strategy ? engine_read_strategy_from_string(o->strategy) : ENGINE_READ_AUTO;
        if (r->options.strategy < 0)
                return fhash_set_error(error, -EINVAL, NULL, "strategy \"%s\" is not one of auto, read, mmap, direct",
                                       o->strategy);
        if (!o->length_bits && !o->key && !o->derive_key && !o->block_size)
                return 0;
        if (r->options.algos.n > 1)
                return fhash_set_error(error, -EINVAL, NULL,
                                       "a length, key, derive-key or block size takes one algorithm");
        r->params.block_size = o->block_size;
        if (o->length_bits % 8 != 0)
                return fhash_set_error(error, -EINVAL, NULL, "length_bits must be a multiple of 8, not %u",
                                       o->length_bits);
        r->params.out_len = o->length_bits / 8;
        if (o->key) {
                r->params.keyed = true;
                memcpy(r->params.key, o->key, HASH_KEY_SIZE);
        }
        if (o->derive_key) {
                r->context = strdup(o->derive_key);
                if (!r->context)
                        return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
                r->params.context = r->context;
        }
        k = hash_params_check(a, &r->params);
        if (k == -EOPNOTSUPP)
                return fhash_set_error(error, -EINVAL, NULL, "%s takes no %s", hash_algo_to_string(a),
                                       r->params.out_len && !(hash_algo_params(a) & HASH_PARAM_LENGTH) ? "length"
                                       : r->params.keyed && !(hash_algo_params(a) & HASH_PARAM_KEY)    ? "key"
                                       : r->params.block_size && !(hash_algo_params(a) & HASH_PARAM_BLOCK_SIZE)
                                               ? "block size"
                                               : "derive-key");
        if (r->params.block_size && (k == -ERANGE || k == -EINVAL))
                return fhash_set_error(error, -EINVAL, NULL, "block_size must be a power of two from %u to %u, not %u",
                                       HASH_BLOCK_SIZE_MIN, HASH_BLOCK_SIZE_MAX, r->params.block_size);
        if (k == -ERANGE)
                return fhash_set_error(error, -EINVAL, NULL, "%s digests are at most %zu bits",
                                       hash_algo_to_string(a), hash_algo_digest_max(a) * 8);
        if (k < 0)
                return fhash_set_error(error, -EINVAL, NULL, "a key and a derive-key context exclude each other");
        r->options.params = &r->params;
        return 0;
}

/* The public values are the wire's (protocol/priority.h), and the priority took the place of a
 * reserved field without moving anything. */
_Static_assert((int)FHASH_PRIORITY_NORMAL == (int)JOB_PRIORITY_NORMAL &&
                       (int)FHASH_PRIORITY_INTERACTIVE == (int)JOB_PRIORITY_INTERACTIVE &&
                       (int)FHASH_PRIORITY_BACKGROUND == (int)JOB_PRIORITY_BACKGROUND,
               "fhash_priority and JobPriority differ");
_Static_assert(offsetof(fhash_hash_options, priority) - offsetof(fhash_hash_options, block_size) == sizeof(uint32_t) &&
                       offsetof(fhash_hash_options, reserved) - offsetof(fhash_hash_options, block_size) == sizeof(uint64_t),
               "block_size and priority must fill what was reserved[0]");

/* A run with its options checked, not started yet. */
static int run_new(fhash_client *c, const fhash_hash_options *o, fhash_run **ret, fhash_error *error)
{
        _cleanup_(fhash_run_freep) fhash_run *r = NULL;
        int k;

        if (!c)
                return fhash_set_error(error, -EINVAL, NULL, "fhash: invalid arguments");
        for (size_t i = 0; i < ELEMENTSOF(o->reserved); i++)
                if (o->reserved[i] != 0)
                        return fhash_set_error(error, -EINVAL, NULL,
                                               "fhash_hash_options: reserved fields must be zero (a newer header?)");
        if (!job_priority_to_string((JobPriority)o->priority))
                return fhash_set_error(error, -EINVAL, NULL, "fhash_hash_options: priority %d is not one of %d..%d",
                                       (int)o->priority, FHASH_PRIORITY_NORMAL, FHASH_PRIORITY_BACKGROUND);
        r = calloc(1, sizeof(*r));
        if (!r)
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        if (hash_algo_set_parse(o->algorithm ? o->algorithm : "sha256", &r->options.algos) < 0)
                return fhash_set_error(error, -EINVAL, NULL,
                                       "unknown algorithm \"%s\" (known: %s; at most %d joined by ',')", o->algorithm,
                                       hash_algo_list(), HASH_SET_MAX);
        (void)hash_algo_set_format(&r->options.algos, r->options.algos_name, sizeof(r->options.algos_name));
        r->client = c;
        r->options.dontcache = o->flags & FHASH_HASH_DONTCACHE;
        r->options.watch_progress = o->flags & FHASH_HASH_PROGRESS;
        r->options.unordered = o->flags & FHASH_HASH_UNORDERED;
        r->options.resume = o->flags & FHASH_HASH_RESUME;
        r->options.max_size = o->max_size;
        r->options.priority = (JobPriority)o->priority;
        r->options.busy_notice = c->busy_notice;
        r->options.busy_userdata = c->notice_userdata;
        k = check_read_options(r, o, error);
        if (k < 0)
                return k;
        r->io_fd = -1;
        *ret = TAKE_PTR(r);
        return 0;
}

/* Starts r over the source next gives, through fhashd or in-process; frees r on failure. */
static int run_begin(fhash_run *r, fhash_source_fn next, void *next_userdata, fhash_result_fn fn, void *userdata,
                     fhash_run **ret, fhash_error *error)
{
        fhash_client *c = r->client;
        int k;

        r->ops = c->bus ? &backend_bus : &backend_local;
        k = feed_new(next, next_userdata, &r->options, fn, userdata, &r->feed);
        if (k >= 0)
                k = r->ops->start(&(BackendArgs){ .feed = r->feed, .options = &r->options, .bus = c->bus,
                                                  .error = &r->bus_error, .target = &c->target,
                                                  .client_bus = &c->bus },
                                  &r->backend);
        if (k < 0) {
                k = c->bus ? fhash_set_bus_error(error, k, &r->bus_error, "cannot start hashing through fhashd")
                           : fhash_set_error(error, k, NULL, "cannot start hashing in-process: %s", strerror(-k));
                fhash_run_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

/* The expected digests, checked before anything is allocated. */
static int check_expected(size_t n, const fhash_hash_options *o, const HashAlgoSet *algos, fhash_error *error)
{
        for (size_t i = 0; o->expected && i < n; i++) {
                const char *e = o->expected[i];

                if (e && e[0] &&
                    (algos->n > 1 ? !hash_set_hex_valid(algos, e)
                                  : strlen(e) != 2 * hash_algo_digest_size(algos->algos[0])))
                        return fhash_set_error(error, -EINVAL, NULL, "expected[%zu] is not a %s digest", i,
                                               o->algorithm ? o->algorithm : "sha256");
        }
        return 0;
}

/* Copies s into the array's string space at *pos. */
static const char *put_string(Array *a, size_t *pos, const char *s)
{
        size_t l = strlen(s) + 1;
        char *p = memcpy(a->strings + *pos, s, l);

        *pos += l;
        return p;
}

int run_start_arrays(fhash_client *c, const char *const *paths, const int *fds, const char *const *names, size_t n,
                     const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                     fhash_error *error)
{
        fhash_hash_options o = options ? *options : (fhash_hash_options){};
        size_t bytes = 0, pos = 0;
        fhash_run *r = NULL;
        Array *a;
        int k;

        if ((!paths && !fds && n > 0) || !fn || !ret)
                return fhash_set_error(error, -EINVAL, NULL, "fhash: invalid arguments");
        for (size_t i = 0; i < n; i++)
                if (fds ? fds[i] < 0 : !paths[i])
                        return fhash_set_error(error, -EINVAL, NULL, fds ? "fds[%zu] is not an fd" : "paths[%zu] is NULL",
                                               i);
        k = run_new(c, &o, &r, error);
        /* !r never happens; said for clang-tidy 14, which loses *ret through TAKE_PTR(). */
        if (k < 0 || !r)
                return k < 0 ? k : -EIO;
        k = check_expected(n, &o, &r->options.algos, error);
        if (k < 0) {
                fhash_run_free(r);
                return k;
        }
        a = &r->array;
        for (size_t i = 0; i < n; i++)
                bytes += strlen(fds ? (names && names[i] ? names[i] : "") : paths[i]) + 1 +
                         (o.expected && o.expected[i] ? strlen(o.expected[i]) + 1 : 0);
        a->inputs = calloc(MAX(n, (size_t)1), sizeof(*a->inputs));
        a->strings = malloc(MAX(bytes, (size_t)1));
        if (!a->inputs || !a->strings) {
                fhash_run_free(r);
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                const char *e = o.expected ? o.expected[i] : NULL;
                const char *name = put_string(a, &pos, fds ? (names && names[i] ? names[i] : "") : paths[i]);

                a->inputs[i] = (fhash_input){ .path = fds ? NULL : name, .fd = fds ? fds[i] : -1, .name = name,
                                              .expected = e && e[0] ? put_string(a, &pos, e) : NULL };
        }
        a->n = n;
        r->n_given = n;
        r->options.inputs_given = true;
        return run_begin(r, array_next, a, fn, userdata, ret, error);
}

_public_ int fhash_run_source(fhash_client *c, fhash_source_fn next, void *source_userdata,
                              const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                              fhash_error *error)
{
        fhash_hash_options o = options ? *options : (fhash_hash_options){};
        fhash_run *r = NULL;
        int k;

        if (!next)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_run_source: no source");
        if (!fn || !ret)
                return fhash_set_error(error, -EINVAL, NULL, "fhash: invalid arguments");
        if (o.expected)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_run_source: expected digests come with the inputs");
        k = run_new(c, &o, &r, error);
        if (k < 0 || !r)
                return k < 0 ? k : -EIO;
        r->n_given = SIZE_MAX;
        return run_begin(r, next, source_userdata, fn, userdata, ret, error);
}

/* Resuming, fhashd went and none could be reached again, and the client may hash in-process: the
 * inputs without a result go on here (the feed has them all), and so do the client's later runs,
 * with the reason fhash_client_get_fallback_reason() gives. 0, or -errno. */
static int run_fall_back(fhash_run *r)
{
        fhash_client *c = r->client;
        uint64_t done = 0, total = 0;
        char *why;
        int k;

        why = strdup(r->bus_error.message ?: "fhashd went away while hashing");
        if (!why)
                return -ENOMEM;
        r->ops->progress(r->backend, &done, &total);
        r->bytes_before += done;
        r->ops->free(r->backend);
        r->backend = NULL;
        sd_bus_error_free(&r->bus_error);
        r->ops = &backend_local;
        /* The connection is dead; a run of the client's that still uses it finds out for itself. */
        c->bus = sd_bus_unref(c->bus);
        free(c->fallback_reason);
        c->fallback_reason = why;
        k = r->ops->start(&(BackendArgs){ .feed = r->feed, .options = &r->options, .error = &r->bus_error },
                          &r->backend);
        if (k < 0)
                r->backend = NULL;
        return k;
}

int run_step(fhash_run *r, uint64_t timeout_usec, fhash_error *error)
{
        bool bus;
        int k;

        if (r->done)
                return 0;
        k = r->ops->step(r->backend, timeout_usec);
        if (k == -ENOTCONN && r->ops == &backend_bus && r->options.resume &&
            !(r->client->flags & FHASH_CLIENT_NO_FALLBACK)) {
                k = run_fall_back(r);
                if (k >= 0)
                        return 1;
                r->done = true;
                return fhash_set_error(error, k, FHASH_ERROR_GONE,
                                       "fhashd went away while hashing, and hashing in-process failed: %s", strerror(-k));
        }
        bus = r->ops == &backend_bus;
        if (k <= 0)
                r->done = true;
        if (k < 0)
                return bus ? fhash_set_bus_error(error, k, &r->bus_error, "hashing through fhashd failed")
                           : fhash_set_error(error, k, NULL, "hashing in-process failed: %s", strerror(-k));
        return k;
}

_public_ int fhash_run_paths(fhash_client *c, const char *const *paths, size_t n, const fhash_hash_options *options,
                             fhash_result_fn fn, void *userdata, fhash_run **ret, fhash_error *error)
{
        return run_start_arrays(c, paths, NULL, NULL, n, options, fn, userdata, ret, error);
}

_public_ int fhash_run_fds(fhash_client *c, const int *fds, const char *const *names, size_t n,
                           const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                           fhash_error *error)
{
        return run_start_arrays(c, NULL, fds ? fds : (const int[]){ -1 }, names, n, options, fn, userdata, ret, error);
}

_public_ int fhash_run_get_fd(fhash_run *r)
{
        if (!r || !r->backend)
                return -EINVAL;
        return r->ops->get_fd(r->backend);
}

_public_ int fhash_run_get_events(fhash_run *r)
{
        if (!r || !r->backend)
                return -EINVAL;
        return r->ops->get_events(r->backend);
}

_public_ uint64_t fhash_run_get_timeout(fhash_run *r)
{
        if (!r || r->done || !r->backend)
                return now_usec();
        return r->ops->get_timeout(r->backend);
}

_public_ int fhash_run_get_progress(fhash_run *r, fhash_progress *ret)
{
        uint64_t done = 0, total = 0;

        if (!r || !ret)
                return -EINVAL;
        if (r->backend)
                r->ops->progress(r->backend, &done, &total);
        done += r->bytes_before;
        total += r->bytes_before;
        *ret = (fhash_progress){ .files_done = feed_done(r->feed), .complete = feed_source_done(r->feed),
                                 .files_total = r->n_given == SIZE_MAX ? feed_pulled(r->feed) : r->n_given,
                                 .bytes_done = done, .bytes_total = MAX(total, done) };
        return 0;
}

_public_ int fhash_run_cancel(fhash_run *r)
{
        if (!r)
                return -EINVAL;
        if (r->backend)
                r->ops->cancel(r->backend);
        return 0;
}

_public_ int fhash_run_process(fhash_run *r, fhash_error *error)
{
        if (!r)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_run_process: no run");
        return run_step(r, 0, error);
}

static int on_event_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_event_time(sd_event_source *s, uint64_t usec, void *userdata);

/* After a step on the loop: the io source follows the run's fd and events, the timer its timeout;
 * once the run is over both go and done is told. */
static int event_rearm(fhash_run *r, int k)
{
        sd_event *e = sd_event_source_get_event(r->time_source);
        uint64_t t;
        int fd;

        if (k <= 0) {
                fhash_done_fn done = r->done_fn;

                r->io_source = sd_event_source_disable_unref(r->io_source);
                r->time_source = sd_event_source_disable_unref(r->time_source);
                if (done)
                        done(r, k, k < 0 ? &r->event_error : NULL, r->done_userdata);
                return 0;
        }
        fd = fhash_run_get_fd(r);
        if (fd != r->io_fd) {
                r->io_source = sd_event_source_disable_unref(r->io_source);
                r->io_fd = fd;
                if (fd >= 0 &&
                    sd_event_add_io(e, &r->io_source, fd, (uint32_t)fhash_run_get_events(r), on_event_io, r) < 0)
                        r->io_fd = -1; /* the timer goes on alone */
        } else if (r->io_source)
                (void)sd_event_source_set_io_events(r->io_source, (uint32_t)fhash_run_get_events(r));
        t = fhash_run_get_timeout(r);
        /* UINT64_MAX: only the fd says when (an idle run); the timer sleeps. */
        if (t == UINT64_MAX)
                return sd_event_source_set_enabled(r->time_source, SD_EVENT_OFF);
        (void)sd_event_source_set_time(r->time_source, t);
        return sd_event_source_set_enabled(r->time_source, SD_EVENT_ONESHOT);
}

static int on_event_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        fhash_run *r = userdata;

        return event_rearm(r, run_step(r, 0, &r->event_error));
}

static int on_event_time(sd_event_source *s, uint64_t usec, void *userdata)
{
        fhash_run *r = userdata;

        return event_rearm(r, run_step(r, 0, &r->event_error));
}

_public_ int fhash_run_attach_event(fhash_run *r, sd_event *event, fhash_done_fn done, void *userdata)
{
        int k;

        if (!r || !event || r->time_source)
                return -EINVAL;
        r->done_fn = done;
        r->done_userdata = userdata;
        r->io_fd = -1;
        k = sd_event_add_time(event, &r->time_source, CLOCK_MONOTONIC, 0, 0, on_event_time, r);
        if (k < 0)
                return k;
        /* The first step comes from the timer, at once: the run may be over without any fd. */
        return sd_event_source_set_enabled(r->time_source, SD_EVENT_ONESHOT);
}
