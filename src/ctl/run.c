/* SPDX-License-Identifier: MIT */
/* run.c: a run of inputs through libfhash (fhashd, or in-process), as the options say: the verbs'
 * inputs go to the library as it asks for them, and each result comes back once, in order, as
 * libfhash hands it over */
#include <errno.h>
#include <linux/ioprio.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ctl/args.h"
#include "ctl/bus-verbs.h"
#include "ctl/exit-status.h"
#include "ctl/macro.h"
#include "ctl/progress.h"
#include "ctl/run.h"

typedef struct CtlRun {
        fhash_result_fn fn;
        void *userdata;
        Progress *progress;
} CtlRun;

static void say_busy(const char *reason, int gives_up, void *userdata)
{
        ctl_err("fhashd is busy (%s); waiting%s", reason, gives_up ? " (FHASHCTL_BUSY_TIMEOUT)" : "");
}

/* The calling thread to the idle I/O class for a background run (README.md, "Priorities"), not to
 * SCHED_IDLE: it walks, opens and sends the files the shards hash, so an idle thread behind any busy
 * process starved fhashd's shards of work (a background run alone beside other load: 0.80 x a normal
 * one with it SCHED_IDLE, 1.00 without), while what it costs a foreground is next to nothing (0.01 s
 * of CPU per GiB hashed). Best effort. glibc has no ioprio_set(); IOPRIO_WHO_PROCESS with who 0 is
 * the calling thread. */
static void make_thread_io_idle(void)
{
        (void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_IDLE, 0));
}

/* A result, in order: the progress line goes before the verb prints anything. */
static void on_result(const fhash_result *r, void *userdata)
{
        CtlRun *run = userdata;

        progress_clear(run->progress);
        run->fn(r, run->userdata);
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

/* Until every input has its result: the library's fd and timeout polled, progress drawn between. */
static int run_loop(CtlRun *run, fhash_client *c, fhash_run *fr, fhash_error *e)
{
        bool daemon = fhash_client_uses_daemon(c);
        int r;

        while ((r = fhash_run_process(fr, e)) > 0) {
                struct pollfd p = { .fd = fhash_run_get_fd(fr), .events = (short)fhash_run_get_events(fr) };
                uint64_t t = fhash_run_get_timeout(fr), now = ctl_now_usec();

                /* fhashd went and none came back: libfhash goes on in-process, as at the start. */
                if (daemon && !fhash_client_uses_daemon(c)) {
                        progress_clear(run->progress);
                        ctl_err("%s; hashing the rest in-process", fhash_client_get_fallback_reason(c));
                        daemon = false;
                }
                draw_progress(run, fr);
                (void)poll(&p, 1, t <= now ? 0 : (int)MIN((t - now + 999) / 1000, (uint64_t)250));
        }
        progress_clear(run->progress);
        return r;
}

int ctl_run_exit(int r, bool failed)
{
        if (r == CTL_RUN_ABORTED)
                return CTL_EXIT_ABORTED;
        return r < 0 || failed ? CTL_EXIT_FAILED : CTL_EXIT_OK;
}

int ctl_run(const Args *a, fhash_source_fn next, void *source_userdata, fhash_result_fn fn, void *userdata)
{
        fhash_client_options co = {
                .bus = a->bus,
                .address = a->bus == FHASH_BUS_ADDRESS ? a->address : NULL,
                .flags = (a->local ? FHASH_CLIENT_LOCAL : 0) | (a->daemon ? FHASH_CLIENT_NO_FALLBACK : 0) |
                         (a->no_direct ? FHASH_CLIENT_NO_DIRECT : 0),
                .busy_notice = say_busy,
        };
        char names[ALGO_SET_NAMES_MAX];
        Progress progress;
        CtlRun run = { .fn = fn, .userdata = userdata, .progress = &progress };
        fhash_hash_options ho = {
                .algorithm = algo_set_format(&a->algos, names, sizeof(names)),
                .flags = (a->no_cache ? FHASH_HASH_DONTCACHE : 0) | FHASH_HASH_RESUME,
                .strategy = a->io,
                .priority = a->priority,
                .length_bits = a->has_params ? a->params.out_len * 8 : 0,
                .key = a->has_params && a->params.keyed ? a->params.key : NULL,
                .derive_key = a->has_params ? a->params.context : NULL,
                .block_size = a->has_params ? a->params.block_size : 0,
        };
        fhash_client *c = NULL;
        fhash_run *fr = NULL;
        fhash_error e = {};
        int r;

        /* A background run's own thread (the walk, the opens, the output) reads the disk at the idle
         * class, as its hashing does. */
        if (a->priority == FHASH_PRIORITY_BACKGROUND)
                make_thread_io_idle();
        progress_init(&progress, a->status ? PROGRESS_OFF : a->progress, STDERR_FILENO);
        if (progress.enabled)
                ho.flags |= FHASH_HASH_PROGRESS;
        r = fhash_client_new(&co, &c, &e);
        if (r == -ENOTCONN)
                ctl_err_unreachable(&e);
        else if (r < 0)
                ctl_err("cannot reach fhashd: %s", e.message);
        if (r < 0)
                return r;
        if (fhash_client_get_fallback_reason(c))
                ctl_err("%s; hashing in-process", fhash_client_get_fallback_reason(c));
        r = fhash_run_source(c, next, source_userdata, &ho, on_result, &run, &fr, &e);
        if (r >= 0) {
                r = run_loop(&run, c, fr, &e);
                if (r < 0) {
                        ctl_err("%s", e.message);
                        r = CTL_RUN_ABORTED;
                }
        } else
                ctl_err("%s", e.message);
        fhash_run_free(fr);
        fhash_client_free(c);
        return r;
}
