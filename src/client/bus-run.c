/* SPDX-License-Identifier: MIT */
/* bus-run.c: the backend that hashes through fhashd: the run's window of files in flight */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "client/backend.h"
#include "client/bus-call.h"
#include "fhash/fhash-dbus.h"

/*
 * One run, seen from here: inputs are sent in order, up to FHASH_MAX_FDS_PER_CALL fds per call, each
 * opened by the feed. The first call of a job is HashFds with "more" and the rest are AddFds calls to
 * that job, pipelined; the call that sends the job's last files says more=false (or a Close()
 * follows). A job holds one algorithm and at most FILES_PER_JOB files; then the next job starts. A
 * pipe or device goes alone into a job of its own, the only kind that gets "max-size". Results come
 * as (job, index): each reply says where its call's files start (bus-call.c), and the signals bring
 * the results (bus-jobs.c). The feed is pulled only while the window has room, so a directory walk
 * goes on while fhashd hashes what it found first, and stops while fhashd has enough to do.
 */

/* Files sent whose result has not come back: each is an fd fhashd holds open (against its
 * RLIMIT_NOFILE) until the file is hashed. Enough to keep its workers busy across our round trips,
 * and results come back in batches of up to 256. */
#define FILES_IN_FLIGHT 1024
/* Files per open job (fhashd allows 2^20): what one job keeps in fhashd's memory, a result per file
 * until the job expires, stays moderate. */
#define FILES_PER_JOB 65536

typedef struct Bus {
        Feed *feed;
        const RunOptions *options;
        sd_bus_error *ret_error;
        BusPeer peer;
        BusJobs jobs;
        BusCalls calls;
        size_t next;           /* where the next input to send is looked for in the feed */
        size_t window;         /* files in flight at most */
        BusJob *cur;           /* the open job the next files go to */
        uint64_t bytes_total;  /* sizes of the files sent */
        bool stop;             /* cancelled: nothing more is sent */
        bool done;
} Bus;

/* A pipe or a device: a job of its own, the only kind that gets "max-size". */
static int send_stream(Bus *c, size_t item, int fd)
{
        BusCall *call;
        BusJob *j;
        int r;

        r = bus_job_new(&c->jobs, input_kind(feed_input(c->feed, item)), &j);
        call = r >= 0 ? bus_call_new(&c->calls, j, CALL_HASH_FDS) : NULL;
        if (!call) {
                safe_close(fd);
                return r < 0 ? r : -ENOMEM;
        }
        call->stream = true;
        call->idx[call->n++] = item;
        r = bus_call_send(&c->calls, call, &fd);
        if (r < 0)
                bus_call_free(call);
        return r;
}

/* Whether the next input to send could go to a job of kind that has had n_sent files (pulling it if
 * need be). */
static bool next_fits(Bus *c, JobKind kind, size_t n_sent)
{
        size_t i;
        int r = feed_next(c->feed, c->next, &i);

        if (r < 0 && c->jobs.error == 0)
                c->jobs.error = r;
        return r > 0 && kind_eq(input_kind(feed_input(c->feed, i)), kind) && n_sent < FILES_PER_JOB;
}

/* The inputs of kind from c->next on, up to max (pulling them if need be). */
static size_t count_ahead(Bus *c, JobKind kind, size_t max)
{
        size_t n = 0, i, from = c->next;

        while (n < max && feed_next(c->feed, from, &i) > 0 && kind_eq(input_kind(feed_input(c->feed, i)), kind)) {
                n++;
                from = i + 1;
        }
        return n;
}

/* Opens up to room inputs of kind from c->next into call (a pipe or device goes alone, at once). */
static int fill_call(Bus *c, BusCall *call, JobKind kind, size_t room, int fds[])
{
        size_t i;
        int r;

        while (call->n < room) {
                uint64_t size = 0;
                int fd = -EBADF;

                r = feed_next(c->feed, c->next, &i);
                if (r <= 0)
                        return r;
                if (!kind_eq(input_kind(feed_input(c->feed, i)), kind))
                        return 0;
                c->next = i + 1;
                r = feed_open(c->feed, i, &fd, &size);
                if (r < 0) {
                        bus_jobs_answer(&c->jobs, NULL, i, &(Outcome){ .status = FHASH_ERROR, .error = r });
                        continue;
                }
                if (size == UINT64_MAX) {
                        r = send_stream(c, i, fd);
                        if (r < 0)
                                return r;
                        continue;
                }
                c->bytes_total += size;
                fds[call->n] = fd;
                call->idx[call->n++] = i;
        }
        return 0;
}

/* Sends the next call, from input c->next (pulled, to hash). Returns 1 if it has to wait for
 * replies. */
static int send_next(Bus *c)
{
        JobKind kind = input_kind(feed_input(c->feed, c->next));
        int fds[FHASH_MAX_FDS_PER_CALL] = { [0 ... FHASH_MAX_FDS_PER_CALL - 1] = -EBADF };
        BusJob *j = c->cur;
        BusCall *call;
        size_t room, n_sent;
        bool last;
        int r;

        if (j && (j->finished || !j->open || !kind_eq(j->kind, kind) || j->n_sent >= FILES_PER_JOB)) {
                c->cur = NULL;
                r = bus_job_stop_sending(&c->calls, j);
                if (r < 0)
                        return r;
                j = NULL;
        }
        /* AddFds needs the job's path, from the HashFds reply. */
        if (j && !j->path)
                return 1;
        n_sent = j ? j->n_sent : 0;
        room = MIN((size_t)FHASH_MAX_FDS_PER_CALL, FILES_PER_JOB - n_sent);
        /* The call that sends the job's last files closes it, so it waits until the job's other calls
         * are answered: one of them may come back Busy and go again. */
        if (j && j->calls > 0 && (count_ahead(c, kind, room + 1) <= room || n_sent + room >= FILES_PER_JOB))
                return c->jobs.error < 0 ? c->jobs.error : 1;

        call = bus_call_new(&c->calls, NULL, CALL_HASH_FDS);
        if (!call)
                return -ENOMEM;
        r = fill_call(c, call, kind, room, fds);
        if (r >= 0 && c->jobs.error < 0)
                r = c->jobs.error;
        last = r >= 0 && !next_fits(c, kind, n_sent + call->n);
        if (r >= 0 && c->jobs.error < 0)
                r = c->jobs.error;
        if (r >= 0 && call->n == 0) {
                bus_call_free(call);
                /* Everything failed to open; if that was all the job was to get, close it. */
                if (j && last) {
                        c->cur = NULL;
                        return bus_job_stop_sending(&c->calls, j);
                }
                return 0;
        }
        if (r >= 0 && !j)
                r = bus_job_new(&c->jobs, kind, &j);
        if (r < 0)
                goto fail;
        call->job = j;
        call->kind = j->path ? CALL_ADD_FDS : CALL_HASH_FDS;
        /* A run of up to 16 files is one plain HashFds. */
        call->more = !(last && j->calls == 0);
        r = bus_call_send(&c->calls, call, fds);
        if (r < 0) {
                bus_call_free(call);
                return r;
        }
        j->open = call->more;
        c->cur = call->more ? j : NULL;
        if (call->more && last) {
                c->cur = NULL;
                return bus_job_stop_sending(&c->calls, j);
        }
        return 0;

fail:
        for (size_t k = 0; k < call->n; k++)
                safe_close(fds[k]);
        bus_call_free(call);
        return r;
}

/* Cancelled (by us, or our job by someone else): everything not sent yet is cancelled too, each
 * answered as if it had been sent, so the output is the same as when the whole list was known before
 * the first call. */
static void cancel_rest(Bus *c)
{
        size_t i;

        bus_calls_cancel_retries(&c->calls);
        feed_cancel(c->feed);
        while (feed_next(c->feed, c->next, &i) > 0) {
                bus_jobs_answer(&c->jobs, NULL, i, &(Outcome){ .status = FHASH_CANCELLED });
                c->next = i + 1;
        }
}

/* Sends what the window allows. */
static int pump(Bus *c)
{
        int r;

        for (;;) {
                size_t i;

                if (c->jobs.error < 0)
                        return c->jobs.error;
                if (c->stop || c->jobs.stop) {
                        cancel_rest(c);
                        return 0;
                }
                if (c->jobs.files_in_flight + FHASH_MAX_FDS_PER_CALL > c->window)
                        return 0;
                if (bus_calls_retry_waiting(&c->calls)) {
                        if (!bus_calls_retry_due(&c->calls, now_usec()))
                                return 0;
                        r = bus_calls_resend(&c->calls);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = feed_next(c->feed, c->next, &i);
                if (r < 0)
                        return r;
                if (r == 0) {
                        /* The feed holds all it may (results wait behind a slow file), or the source
                         * ended, perhaps after inputs answered without hashing: then the job the
                         * last call left open is closed now. */
                        if (!feed_source_done(c->feed) || !c->cur)
                                return 0;
                        r = bus_job_stop_sending(&c->calls, TAKE_PTR(c->cur));
                        if (r < 0)
                                return r;
                        continue;
                }
                c->next = i;
                r = send_next(c);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
        }
}

static int gone(Bus *c)
{
        if (c->jobs.error == 0)
                c->jobs.error = -ECONNRESET;
        if (!sd_bus_error_is_set(c->ret_error))
                sd_bus_error_set(c->ret_error, FHASH_ERROR_PREFIX "Gone", "fhashd went away while hashing");
        return c->jobs.error;
}

/* Until every input is answered and every call answered (a last Close() included). Waits up to
 * timeout_usec for the bus when there is nothing to do. */
static int bus_step(void *p, uint64_t timeout_usec)
{
        Bus *c = p;
        int r;

        if (c->done)
                return 0;
        while (!feed_finished(c->feed) || c->calls.calls_out > 0) {
                r = pump(c);
                if (r >= 0)
                        r = sd_bus_process(c->peer.bus, NULL);
                /* A direct connection has no NameOwnerChanged to tell that fhashd exited: only the
                 * socket does. */
                if (c->peer.gone || r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE)
                        return gone(c);
                if (r < 0)
                        return r;
                if (c->jobs.error < 0)
                        return c->jobs.error;
                if (r > 0)
                        continue;
                if (feed_finished(c->feed) && c->calls.calls_out == 0)
                        break;
                if (timeout_usec == 0)
                        return 1;
                r = sd_bus_wait(c->peer.bus, timeout_usec);
                if (r < 0 && r != -EINTR)
                        return r;
                if (r == 0)
                        return 1;
        }
        c->done = true;
        return 0;
}

/* How many files may be in flight: FILES_IN_FLIGHT, unless our own fd limit is lower. Until
 * dbus-daemon has read them, the fds of queued calls are ours (sd-bus holds a dup in each message,
 * and the kernel counts fds in a socket against the sender's RLIMIT_NOFILE); the soft limit goes up
 * to the hard one first, as nothing here uses select(). */
static size_t files_window(void)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return FILES_IN_FLIGHT / 4;
        if (rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                        (void)getrlimit(RLIMIT_NOFILE, &rl);
        }
        if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= (rlim_t)2 * FILES_IN_FLIGHT + 64)
                return FILES_IN_FLIGHT;
        return MAX((size_t)FHASH_MAX_FDS_PER_CALL, ((size_t)rl.rlim_cur - 64) / 2);
}

static void bus_free(void *p)
{
        Bus *c = p;

        if (!c)
                return;
        bus_calls_done(&c->calls);
        bus_jobs_done(&c->jobs);
        bus_peer_unwatch(&c->peer);
        free(c);
}

static int bus_start(const BackendArgs *args, void **ret)
{
        Bus *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        *c = (Bus){ .feed = args->feed, .options = args->options, .ret_error = args->error,
                    .window = files_window() };
        bus_calls_init(&c->calls, &c->jobs, args->options, args->error);
        /* The watch and the matches first (synchronously acknowledged by the bus), calls after. */
        r = bus_peer_watch(&c->peer, args->bus);
        if (r >= 0)
                r = bus_jobs_init(&c->jobs, args->feed, &c->peer, args->options->watch_progress);
        if (r < 0) {
                bus_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

static int bus_get_fd(void *p)
{
        Bus *c = p;

        return sd_bus_get_fd(c->peer.bus);
}

static int bus_get_events(void *p)
{
        Bus *c = p;

        return sd_bus_get_events(c->peer.bus);
}

static uint64_t bus_get_timeout(void *p)
{
        Bus *c = p;
        uint64_t t = UINT64_MAX, now = now_usec();

        /* Busy retries are the library's own clock: look in again within 100 ms whatever the fd
         * says. */
        (void)sd_bus_get_timeout(c->peer.bus, &t);
        return MIN(t, now + 100000);
}

static void bus_progress(void *p, uint64_t *ret_bytes_done, uint64_t *ret_bytes_total)
{
        Bus *c = p;

        *ret_bytes_done = bus_jobs_bytes_done(&c->jobs);
        *ret_bytes_total = c->bytes_total;
}

static void bus_cancel(void *p)
{
        Bus *c = p;

        /* fhashd cancels the jobs it has (their files come back cancelled); what is not sent yet is
         * answered cancelled here (cancel_rest()). Files in calls not answered yet may still be
         * hashed. */
        for (BusJob *j = c->jobs.list; j; j = j->next)
                if (j->path && !j->finished)
                        (void)sd_bus_call_method_async(c->peer.bus, NULL, c->peer.dest, j->path, FHASH_JOB_INTERFACE,
                                                       "Cancel", NULL, NULL, NULL);
        c->stop = true;
}

const BackendOps backend_bus = {
        .name = "bus",
        .start = bus_start,
        .step = bus_step,
        .get_fd = bus_get_fd,
        .get_events = bus_get_events,
        .get_timeout = bus_get_timeout,
        .progress = bus_progress,
        .cancel = bus_cancel,
        .free = bus_free,
};
