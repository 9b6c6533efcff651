/* SPDX-License-Identifier: MIT */
/* run.c: a run of items through libfhash (fhashd, or in-process), as the options say: the verbs'
 * items go to the library as they are pulled, and each result comes back once, in order */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "ctl/args.h"
#include "ctl/bus-verbs.h"
#include "ctl/run.h"
#include "fhash/fhash.h"

/* An item the library has and has not answered yet: the verb gets it back with its result. */
typedef struct Pending {
        RunItem item;   /* strings point into strings; note is the source's own (pointers compared) */
        char *strings;
} Pending;

typedef struct CtlRun {
        const RunSource *source;
        RunResultFn fn;
        void *userdata;
        HashAlgo algo;          /* the options' (first) algorithm: an item of another says its own */
        Pending *ring;          /* items given, not answered: ring[(first + k) & (alloc - 1)] */
        size_t alloc, first, n;
        Progress *progress;
} CtlRun;

static void say_busy(const char *reason, int gives_up, void *userdata)
{
        ctl_err("fhashd is busy (%s); waiting%s", reason, gives_up ? " (FHASHCTL_BUSY_TIMEOUT)" : "");
}

static int ring_push(CtlRun *run, const RunItem *it, Pending **ret)
{
        size_t ln = strlen(it->name) + 1, lp = strlen(it->path) + 1, le = it->expected ? strlen(it->expected) + 1 : 0;
        Pending *p;

        if (run->n == run->alloc) {
                size_t na = MAX(run->alloc * 2, (size_t)64);
                Pending *nr = calloc(na, sizeof(*nr));

                if (!nr)
                        return -ENOMEM;
                for (size_t k = 0; k < run->n; k++)
                        nr[k] = run->ring[(run->first + k) & (run->alloc - 1)];
                free(run->ring);
                run->ring = nr;
                run->alloc = na;
                run->first = 0;
        }
        p = &run->ring[(run->first + run->n) & (run->alloc - 1)];
        p->strings = malloc(ln + lp + le);
        if (!p->strings)
                return -ENOMEM;
        p->item = *it;
        p->item.name = memcpy(p->strings, it->name, ln);
        p->item.path = memcpy(p->strings + ln, it->path, lp);
        p->item.expected = it->expected ? memcpy(p->strings + ln + lp, it->expected, le) : NULL;
        run->n++;
        *ret = p;
        return 0;
}

/* The library asks for the next input: the verb's next item, remembered until its result. */
static int next_input(void *userdata, fhash_input *ret)
{
        CtlRun *run = userdata;
        RunItem it;
        Pending *p;
        int r;

        r = run->source->next(run->source->userdata, &it);
        if (r <= 0)
                return r;
        r = ring_push(run, &it, &p);
        if (r < 0)
                return r;
        *ret = (fhash_input){
                .path = p->item.has_fd ? NULL : p->item.path,
                .fd = p->item.has_fd ? p->item.fd : -1,
                .name = p->item.name,
                .expected = p->item.expected,
                .algorithm = p->item.algo != run->algo ? hash_algo_to_string(p->item.algo) : NULL,
                .length_bits = p->item.out_len * 8,
                .error = p->item.error,
                .skip = p->item.note,
        };
        return 1;
}

static RunStatus result_status(const fhash_result *r)
{
        if (r->skip)
                return RUN_SKIPPED;
        switch (r->error) {
        case 0:
                return RUN_OK;
        case -EBADMSG:
                return RUN_MISMATCH;
        case -ESTALE:
                return RUN_CHANGED;
        case -ECANCELED:
                return RUN_CANCELLED;
        default:
                return RUN_ERROR;
        }
}

/* A result, in order: the verb gets it with its item. */
static void on_result(const fhash_result *r, void *userdata)
{
        CtlRun *run = userdata;
        Pending *p;
        RunResult res = { .index = r->index, .status = result_status(r), .size = r->size };

        if (run->n == 0)
                return;
        p = &run->ring[run->first];
        /* The library's message for every failure (strerror, or fhashd's words), as the verbs print it. */
        if (res.status != RUN_OK && res.status != RUN_SKIPPED)
                res.message = r->message;
        if (res.status == RUN_ERROR)
                res.error = r->error;
        if (r->digest)
                (void)snprintf(res.hex, sizeof(res.hex), "%s", r->digest);
        progress_clear(run->progress);
        run->fn(&p->item, &res, run->userdata);
        free(p->strings);
        run->first = (run->first + 1) & (run->alloc - 1);
        run->n--;
}

static void draw_progress(CtlRun *run, fhash_run *fr)
{
        fhash_progress fp;

        if (!run->progress->enabled || fhash_run_get_progress(fr, &fp) < 0)
                return;
        progress_update(run->progress, &(ProgressState){ .bytes_done = fp.bytes_done, .bytes_total = fp.bytes_total,
                                                         .files_done = fp.files_done, .files_total = fp.files_total,
                                                         .open_ended = !fp.complete });
}

/* Until every item has its result: the library's fd and timeout polled, progress drawn between. */
static int run_loop(CtlRun *run, fhash_run *fr, fhash_error *e)
{
        int r;

        while ((r = fhash_run_process(fr, e)) > 0) {
                struct pollfd p = { .fd = fhash_run_get_fd(fr), .events = (short)fhash_run_get_events(fr) };
                uint64_t t = fhash_run_get_timeout(fr), now = now_usec();

                draw_progress(run, fr);
                (void)poll(&p, 1, t <= now ? 0 : (int)MIN((t - now + 999) / 1000, (uint64_t)250));
        }
        progress_clear(run->progress);
        return r;
}

int ctl_run_items(const Args *a, const RunSource *source, RunResultFn fn, void *userdata)
{
        static const fhash_bus buses[] = { [BUS_KIND_SYSTEM] = FHASH_BUS_SYSTEM, [BUS_KIND_USER] = FHASH_BUS_USER,
                                           [BUS_KIND_ADDRESS] = FHASH_BUS_ADDRESS };
        fhash_client_options co = {
                .bus = buses[a->bus_kind],
                .address = a->bus_kind == BUS_KIND_ADDRESS ? a->address : NULL,
                .flags = (a->local ? FHASH_CLIENT_LOCAL : 0) | (a->daemon ? FHASH_CLIENT_NO_FALLBACK : 0) |
                         (a->no_direct ? FHASH_CLIENT_NO_DIRECT : 0),
                .busy_notice = say_busy,
        };
        char names[HASH_SET_NAMES_MAX];
        Progress progress;
        CtlRun run = { .source = source, .fn = fn, .userdata = userdata, .algo = a->algos.algos[0],
                       .progress = &progress };
        fhash_hash_options ho = {
                .algorithm = hash_algo_set_format(&a->algos, names, sizeof(names)),
                .flags = (a->no_cache ? FHASH_HASH_DONTCACHE : 0),
                .strategy = a->io,
                .length_bits = a->has_params ? a->params.out_len * 8 : 0,
                .key = a->has_params && a->params.keyed ? a->params.key : NULL,
                .derive_key = a->has_params ? a->params.context : NULL,
        };
        fhash_client *c = NULL;
        fhash_run *fr = NULL;
        fhash_error e = {};
        int r;

        progress_init(&progress, a->status ? PROGRESS_OFF : a->progress, STDERR_FILENO);
        if (progress.enabled)
                ho.flags |= FHASH_HASH_PROGRESS;
        r = fhash_client_new(&co, &c, &e);
        if (r == -ENOTCONN)
                ctl_err_unreachable(e.name, e.message);
        else if (r < 0)
                ctl_err("cannot reach fhashd: %s", e.message);
        if (r < 0)
                return r;
        if (fhash_client_get_fallback_reason(c))
                ctl_err("%s; hashing in-process", fhash_client_get_fallback_reason(c));
        r = fhash_run_source(c, next_input, &run, &ho, on_result, &run, &fr, &e);
        if (r >= 0)
                r = run_loop(&run, fr, &e);
        if (r < 0)
                ctl_err("%s", e.message);
        fhash_run_free(fr);
        fhash_client_free(c);
        /* Items the library never answered (it failed): their strings go. */
        for (; run.n > 0; run.n--, run.first = (run.first + 1) & (run.alloc - 1))
                free(run.ring[run.first].strings);
        free(run.ring);
        return r;
}
