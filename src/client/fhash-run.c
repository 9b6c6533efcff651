/* SPDX-License-Identifier: MIT */
/* fhash-run.c: a run of libfhash: inputs and options checked, the pipeline or the in-process runner
 * stepped, on the caller's loop or an sd-event loop */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "build-config.h"
#include "client/bus-client.h"
#include "client/runner.h"
#include "client/fhash-internal.h"
#include "fhash/fhash.h"
#include "hash/hash.h"
#include "protocol/bus.h"

typedef struct Delivery {
        fhash_result_fn fn;
        void *userdata;
} Delivery;

static int run_error(const RunResult *r)
{
        switch (r->status) {
        case RUN_OK:
        case RUN_SKIPPED:
                return 0;
        case RUN_MISMATCH:
                return -EBADMSG;
        case RUN_CHANGED:
                return -ESTALE;
        case RUN_CANCELLED:
                return -ECANCELED;
        default:
                return r->error < 0 ? r->error : -EIO;
        }
}

static void deliver(const RunItem *item, const RunResult *r, void *userdata)
{
        Delivery *d = userdata;
        int e = run_error(r);
        fhash_result res = {
                .index = r->index,
                .name = item->name,
                .size = r->size,
                .digest = r->hex[0] ? r->hex : NULL,
                .error = e,
                .message = e == 0 ? NULL : r->message ? r->message : run_result_reason(r),
                .skip = r->status == RUN_SKIPPED ? item->note : NULL,
        };

        d->fn(&res, d->userdata);
}

/* The expected digests fhash_hash_paths() and fhash_hash_fds() check before anything is allocated. */
static int check_expected(size_t n, const fhash_hash_options *o, const HashAlgoSet *algos, fhash_error *error)
{
        for (size_t i = 0; o->expected && i < n; i++) {
                const char *e = o->expected[i];

                if (e && e[0] && (algos->n > 1 ? !hash_set_hex_valid(algos, e)
                                               : strlen(e) != 2 * hash_algo_digest_size(algos->algos[0])))
                        return fhash_set_error(error, -EINVAL, NULL, "expected[%zu] is not a %s digest", i,
                                         o->algorithm ? o->algorithm : "sha256");
        }
        return 0;
}

struct fhash_run {
        fhash_client *client;
        RunItem *items;
        char *strings;           /* the items' names and expected digests, copied */
        RunArray array;
        RunSource source;
        RunReadOptions ro;
        HashAlgoSet algos;
        Delivery delivery;
        sd_bus_error bus_error;
        BusClient *bus;          /* through fhashd ... */
        LocalRun *local;         /* ... or in this process */
        HashParams params;       /* length, key, derive-key: the key wiped when the run goes */
        char *context;           /* params.context's copy */
        char **notes;            /* skip reasons given by a source, kept for the run (few distinct) */
        size_t n_notes;
        sd_event_source *io_source, *time_source;  /* fhash_run_attach_event() */
        int io_fd;
        fhash_done_fn done_fn;
        void *done_userdata;
        fhash_error event_error;
        fhash_source_fn user_next;  /* fhash_run_source(): the caller's inputs */
        void *user_data;
        size_t n_given;          /* inputs given; SIZE_MAX for a source */
        bool done;
};

_public_ fhash_run *fhash_run_free(fhash_run *r)
{
        if (r) {
                r->io_source = sd_event_source_disable_unref(r->io_source);
                r->time_source = sd_event_source_disable_unref(r->time_source);
                bus_client_free(r->bus);
                run_local_free(r->local);
                sd_bus_error_free(&r->bus_error);
                hash_params_wipe(&r->params);
                free(r->context);
                for (size_t i = 0; i < r->n_notes; i++)
                        free(r->notes[i]);
                free(r->notes);
                free(r->items);
                free(r->strings);
                free(r);
        }
        return NULL;
}

/* Copies s into the run's string space at *pos. */
static const char *put_string(fhash_run *r, size_t *pos, const char *s)
{
        char *p = memcpy(r->strings + *pos, s, strlen(s) + 1);

        *pos += strlen(s) + 1;
        return p;
}

/* A run with its options checked, not started yet. */
static void busy_notice(const char *reason, bool gives_up, void *userdata)
{
        fhash_client *c = userdata;

        c->busy_notice(reason, gives_up, c->notice_userdata);
}

/* The strategy and the parameters (length, key, derive-key) of o, checked against the algorithm. */
static int run_read_options(fhash_run *r, const fhash_hash_options *o, fhash_error *error)
{
        HashAlgo a = r->algos.algos[0];
        int k;

        r->ro.strategy = o->strategy ? engine_read_strategy_from_string(o->strategy) : ENGINE_READ_AUTO;
        if (r->ro.strategy < 0)
                return fhash_set_error(error, -EINVAL, NULL, "strategy \"%s\" is not one of auto, read, mmap, direct",
                                 o->strategy);
        if (!o->length_bits && !o->key && !o->derive_key)
                return 0;
        if (r->algos.n > 1)
                return fhash_set_error(error, -EINVAL, NULL, "a length, key or derive-key takes one algorithm");
        if (o->length_bits % 8 != 0)
                return fhash_set_error(error, -EINVAL, NULL, "length_bits must be a multiple of 8, not %u", o->length_bits);
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
                                 : r->params.keyed && !(hash_algo_params(a) & HASH_PARAM_KEY) ? "key"
                                                                                              : "derive-key");
        if (k == -ERANGE)
                return fhash_set_error(error, -EINVAL, NULL, "%s digests are at most %zu bits", hash_algo_to_string(a),
                                 hash_algo_digest_max(a) * 8);
        if (k < 0)
                return fhash_set_error(error, -EINVAL, NULL, "a key and a derive-key context exclude each other");
        r->ro.params = &r->params;
        return 0;
}

static int run_new(fhash_client *c, const fhash_hash_options *o, fhash_result_fn fn, void *userdata, fhash_run **ret,
                   fhash_error *error)
{
        fhash_run *r;
        int k;

        if (!c || !fn || !ret)
                return fhash_set_error(error, -EINVAL, NULL, "fhash: invalid arguments");
        r = calloc(1, sizeof(*r));
        if (!r)
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        if (hash_algo_set_parse(o->algorithm ? o->algorithm : "sha256", &r->algos) < 0) {
                fhash_run_free(r);
                return fhash_set_error(error, -EINVAL, NULL, "unknown algorithm \"%s\" (known: %s; at most %d joined by ',')",
                                 o->algorithm, hash_algo_list(), HASH_SET_MAX);
        }
        r->client = c;
        r->ro = (RunReadOptions){ .dontcache = o->flags & FHASH_HASH_DONTCACHE,
                                  .algos = r->algos.n > 1 ? &r->algos : NULL,
                                  .watch_progress = o->flags & FHASH_HASH_PROGRESS,
                                  .max_size = o->max_size,
                                  .unordered = o->flags & FHASH_HASH_UNORDERED,
                                  .busy_notice = c->busy_notice ? busy_notice : NULL, .busy_userdata = c };
        k = run_read_options(r, o, error);
        if (k < 0) {
                fhash_run_free(r);
                return k;
        }
        r->delivery = (Delivery){ .fn = fn, .userdata = userdata };
        *ret = r;
        return 0;
}

/* Starts r over r->source, through fhashd or in-process; frees r on failure. */
static int run_begin(fhash_run *r, fhash_run **ret, fhash_error *error)
{
        fhash_client *c = r->client;
        int k;

        if (c->bus)
                k = bus_client_start(c->bus, &r->source, &r->ro, deliver, &r->delivery, &r->bus_error, &r->bus);
        else
                k = run_local_new(&r->source, &r->ro, deliver, &r->delivery, &r->local);
        if (k < 0) {
                k = c->bus ? fhash_set_bus_error(error, k, &r->bus_error, "cannot start hashing through fhashd")
                           : fhash_set_error(error, k, NULL, "cannot start the hashing engine: %s", strerror(-k));
                fhash_run_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

/* Checks the inputs (paths[i] or fds[i]) and starts a run over them: the arrays and strings are
 * copied, nothing waits. */
int fhash_run_start(fhash_client *c, const char *const *paths, const int *fds, const char *const *names, size_t n,
                     const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                     fhash_error *error)
{
        fhash_hash_options o = options ? *options : (fhash_hash_options){};
        size_t bytes = 0, pos = 0;
        fhash_run *r = NULL;
        int k;

        if (!paths && !fds && n > 0)
                return fhash_set_error(error, -EINVAL, NULL, "fhash: invalid arguments");
        k = run_new(c, &o, fn, userdata, &r, error);
        if (k < 0 || !r)
                return k < 0 ? k : -EIO;
        for (size_t i = 0; i < n; i++)
                if (fds ? fds[i] < 0 : !paths[i]) {
                        fhash_run_free(r);
                        return fhash_set_error(error, -EINVAL, NULL, fds ? "fds[%zu] is not an fd" : "paths[%zu] is NULL", i);
                }
        k = check_expected(n, &o, &r->algos, error);
        if (k < 0) {
                fhash_run_free(r);
                return k;
        }
        for (size_t i = 0; i < n; i++)
                bytes += strlen(fds ? (names && names[i] ? names[i] : "") : paths[i]) + 1 +
                         (o.expected && o.expected[i] ? strlen(o.expected[i]) + 1 : 0);
        r->items = calloc(MAX(n, (size_t)1), sizeof(*r->items));
        r->strings = malloc(MAX(bytes, (size_t)1));
        if (!r->items || !r->strings) {
                fhash_run_free(r);
                return fhash_set_error(error, -ENOMEM, NULL, "out of memory");
        }
        for (size_t i = 0; i < n; i++) {
                const char *e = o.expected ? o.expected[i] : NULL;
                const char *name = put_string(r, &pos, fds ? (names && names[i] ? names[i] : "") : paths[i]);

                r->items[i] = (RunItem){ .name = name, .path = name, .has_fd = fds, .fd = fds ? fds[i] : -1,
                                         .algo = r->algos.algos[0],
                                         .expected = e && e[0] ? put_string(r, &pos, e) : NULL };
        }
        r->array = (RunArray){ .items = r->items, .n = n };
        r->source = (RunSource){ .next = run_array_next, .userdata = &r->array };
        r->n_given = n;
        return run_begin(r, ret, error);
}

/* A source's skip reason, kept for the run: items only point at theirs. */
static const char *intern_note(fhash_run *r, const char *s)
{
        char **nn;

        for (size_t i = 0; i < r->n_notes; i++)
                if (streq(r->notes[i], s))
                        return r->notes[i];
        nn = reallocarray(r->notes, r->n_notes + 1, sizeof(char *));
        if (!nn)
                return NULL;
        r->notes = nn;
        r->notes[r->n_notes] = strdup(s);
        return r->notes[r->n_notes] ? r->notes[r->n_notes++] : NULL;
}

/* RunSource over the caller's fhash_source_fn: an input it gives that cannot be hashed as given (an
 * expected digest of the wrong form, neither path nor fd) becomes a result with -EINVAL in its place. */
static int source_next(void *userdata, RunItem *ret)
{
        fhash_run *r = userdata;
        fhash_input in = { .fd = -1 };
        int k = r->user_next(r->user_data, &in);

        if (k <= 0)
                return k;
        *ret = (RunItem){ .name = in.name ? in.name : in.path ? in.path : "", .has_fd = !in.path && in.fd >= 0,
                          .fd = in.fd, .algo = r->algos.algos[0], .expected = in.expected && in.expected[0] ? in.expected : NULL,
                          .error = in.error < 0 ? in.error : 0 };
        ret->path = in.path ? in.path : ret->name;
        if (in.algorithm) {
                /* Its own algorithm (a manifest line's): one name, not with the options' set. Skips
                 * and errors keep theirs too: an item between two of one algorithm does not split
                 * their job. */
                ret->algo = r->algos.n > 1 ? _HASH_ALGO_INVALID : hash_algo_from_string(in.algorithm);
                if (ret->algo < 0) {
                        ret->algo = r->algos.algos[0];
                        ret->error = -EINVAL;
                }
        }
        if (in.skip) {
                ret->note = intern_note(r, in.skip);
                if (!ret->note)
                        return -ENOMEM;
                return 1;
        }
        if (ret->error < 0)
                return 1;
        ret->out_len = in.length_bits / 8;
        if (in.length_bits % 8 != 0 ||
            (ret->out_len && hash_params_digest_size(ret->algo, &(HashParams){ .out_len = ret->out_len }) != ret->out_len))
                ret->error = -EINVAL;
        if ((!in.path && in.fd < 0) ||
            (ret->expected && (r->algos.n > 1 ? !hash_set_hex_valid(&r->algos, ret->expected)
                                              : strlen(ret->expected) != 2 * (ret->out_len ? ret->out_len
                                                                                           : hash_algo_digest_size(ret->algo)))))
                ret->error = -EINVAL;
        if (ret->error < 0)
                ret->expected = NULL;
        return 1;
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
        if (o.expected)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_run_source: expected digests come with the inputs");
        k = run_new(c, &o, fn, userdata, &r, error);
        if (k < 0 || !r)
                return k < 0 ? k : -EIO;
        r->user_next = next;
        r->user_data = source_userdata;
        r->source = (RunSource){ .next = source_next, .userdata = r };
        r->n_given = SIZE_MAX;
        return run_begin(r, ret, error);
}

/* One step, waiting up to timeout_usec: 1 while the run goes on, 0 when it is over, -errno. */
int fhash_run_step(fhash_run *r, uint64_t timeout_usec, fhash_error *error)
{
        int k;

        if (r->done)
                return 0;
        k = r->bus ? bus_client_step(r->bus, timeout_usec) : run_local_step(r->local, timeout_usec);
        if (k <= 0)
                r->done = true;
        if (k < 0)
                return r->bus ? fhash_set_bus_error(error, k, &r->bus_error, "hashing through fhashd failed")
                              : fhash_set_error(error, k, NULL, "hashing in-process failed: %s", strerror(-k));
        return k;
}

_public_ int fhash_run_paths(fhash_client *c, const char *const *paths, size_t n, const fhash_hash_options *options,
                             fhash_result_fn fn, void *userdata, fhash_run **ret, fhash_error *error)
{
        return fhash_run_start(c, paths, NULL, NULL, n, options, fn, userdata, ret, error);
}

_public_ int fhash_run_fds(fhash_client *c, const int *fds, const char *const *names, size_t n,
                           const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                           fhash_error *error)
{
        return fhash_run_start(c, NULL, fds ? fds : (const int[]){ -1 }, names, n, options, fn, userdata, ret, error);
}

_public_ int fhash_run_get_fd(fhash_run *r)
{
        if (!r)
                return -EINVAL;
        return r->bus ? sd_bus_get_fd(bus_client_get_bus(r->bus)) : run_local_get_fd(r->local);
}

_public_ int fhash_run_get_events(fhash_run *r)
{
        if (!r)
                return -EINVAL;
        return r->bus ? sd_bus_get_events(bus_client_get_bus(r->bus)) : POLLIN;
}

_public_ uint64_t fhash_run_get_timeout(fhash_run *r)
{
        uint64_t t = UINT64_MAX, now = now_usec();

        if (!r || r->done)
                return now;
        /* Busy retries and the in-process engine's start are the library's own clocks: look in
         * again within 100 ms whatever the fd says. */
        if (r->bus)
                (void)sd_bus_get_timeout(bus_client_get_bus(r->bus), &t);
        else if (run_local_get_fd(r->local) < 0 || run_local_wants_input(r->local))
                return now;  /* more to give the engine: no waiting */
        return MIN(t, now + 100000);
}

_public_ int fhash_run_get_progress(fhash_run *r, fhash_progress *ret)
{
        ProgressState s = {};

        if (!r || !ret)
                return -EINVAL;
        if (r->bus)
                bus_client_get_progress(r->bus, &s);
        else
                run_local_get_progress(r->local, &s);
        *ret = (fhash_progress){ .files_done = s.files_done, .complete = !s.open_ended,
                                 .files_total = r->n_given == SIZE_MAX ? s.files_total : r->n_given,
                                 .bytes_done = s.bytes_done, .bytes_total = MAX(s.bytes_total, s.bytes_done) };
        return 0;
}

_public_ int fhash_run_cancel(fhash_run *r)
{
        if (!r)
                return -EINVAL;
        if (r->bus)
                bus_client_cancel_run(r->bus);
        else
                run_local_cancel(r->local);
        return 0;
}

static int on_event_io(sd_event_source *s, int fd, uint32_t revents, void *userdata);
static int on_event_time(sd_event_source *s, uint64_t usec, void *userdata);

/* After a step on the loop: the io source follows the run's fd and events, the timer its timeout;
 * once the run is over both go and done is told. */
static int event_rearm(fhash_run *r, int k)
{
        sd_event *e = sd_event_source_get_event(r->time_source);
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
                if (fd >= 0 && sd_event_add_io(e, &r->io_source, fd, (uint32_t)fhash_run_get_events(r), on_event_io, r) < 0)
                        r->io_fd = -1;  /* the timer goes on alone */
        } else if (r->io_source)
                (void)sd_event_source_set_io_events(r->io_source, (uint32_t)fhash_run_get_events(r));
        (void)sd_event_source_set_time(r->time_source, fhash_run_get_timeout(r));
        return sd_event_source_set_enabled(r->time_source, SD_EVENT_ONESHOT);
}

static int on_event_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        fhash_run *r = userdata;

        return event_rearm(r, fhash_run_step(r, 0, &r->event_error));
}

static int on_event_time(sd_event_source *s, uint64_t usec, void *userdata)
{
        fhash_run *r = userdata;

        return event_rearm(r, fhash_run_step(r, 0, &r->event_error));
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

_public_ int fhash_run_process(fhash_run *r, fhash_error *error)
{
        if (!r)
                return fhash_set_error(error, -EINVAL, NULL, "fhash_run_process: no run");
        return fhash_run_step(r, 0, error);
}

