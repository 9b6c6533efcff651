/* SPDX-License-Identifier: MIT */
/* bus-run.c: the backend that hashes through fhashd: the run's window of files in flight, FIFOs
 * waiting for their writers, and (FHASH_HASH_RESUME) the run going on with the next fhashd when one
 * goes away */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "client/backend.h"
#include "client/bus-alone.h"
#include "client/bus-call.h"
#include "client/bus-fill.h"
#include "client/bus-resume.h"
#include "client/bus-run-state.h"
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
 *
 * Nothing here waits in the caller's thread but for the run's fd: a FIFO opened by path waits for its
 * writer "parked" (its fd in the run's epoll set beside the connection's), a file under a lease is
 * opened again a little later, and connecting again after fhashd went is a chain of calls
 * (bus-connect.h's BusDial).
 *
 * FHASH_HASH_RESUME: the feed keeps every input until its result is delivered, so when fhashd goes
 * (a crash, a restart, an upgrade) the inputs without a result are exactly those to send again: the
 * jobs and calls of the old fhashd are dropped with its connection, a new connection (which
 * activates fhashd again) takes them from the first input not answered. A stream fhashd had begun
 * to read cannot be read again: it alone gets an error. An fhashd that stops cleanly cancels its jobs
 * first: a cancel the run did not ask for is held (bus-jobs.h) and fhashd's State asked; "stopping"
 * means the files go to the next fhashd, anything else that someone cancelled them (as without
 * resume).
 */

/* Cancelled with nothing in an fhashd (it went, or the run was connecting to the next): every input
 * not answered yet (held, parked, not sent) is answered cancelled here, and so is the rest of an
 * array of inputs (feed_cancel()). */
static void cancel_all(Bus *c)
{
        const Outcome o = { .status = FHASH_CANCELLED };
        size_t i;

        feed_cancel(c->feed);
        bus_alone_answer_parked(c, &o);
        c->jobs.redo_head = c->jobs.n_redo = 0; /* answered below with the rest */
        for (i = feed_head(c->feed); i < feed_pulled(c->feed); i++)
                if (feed_flags(c->feed, i))
                        feed_answer(c->feed, i, &o);
        /* Each pulled now is answered as it is pulled: nothing waits before it. */
        (void)feed_next(c->feed, feed_pulled(c->feed), &i);
        c->next = feed_pulled(c->feed);
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

/* Sends the next call, from input c->next (pulled, to hash). Returns 1 if it has to wait for
 * replies. */
static int send_next(Bus *c)
{
        bool redo = bus_jobs_redo_count(&c->jobs) > 0;
        size_t first = redo ? bus_jobs_redo_peek(&c->jobs) : c->next;
        JobKind kind = input_kind(feed_input(c->feed, first));
        bool by_name = !redo && bus_fill_by_name(c, first);
        int fds[FHASH_MAX_FDS_PER_CALL] = { [0 ... FHASH_MAX_FDS_PER_CALL - 1] = -EBADF };
        BusJob *j = c->cur;
        BusCall *call;
        size_t room, n_sent;
        bool last;
        int r;

        if (j && (j->finished || !j->open || !kind_eq(j->kind, kind) || j->n_sent >= FILES_PER_JOB ||
                  (by_name && !j->by_name))) {
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
        room = MIN(by_name ? (size_t)BUS_CALL_INPUTS_MAX : (size_t)FHASH_MAX_FDS_PER_CALL, FILES_PER_JOB - n_sent);
        /* The call that sends the job's last files closes it, so it waits until the job's other calls
         * are answered: one of them may come back Busy and go again. */
        if (j && j->calls > 0 && (count_ahead(c, kind, room + 1) <= room || n_sent + room >= FILES_PER_JOB))
                return c->jobs.error < 0 ? c->jobs.error : 1;

        call = bus_call_new(&c->calls, NULL, CALL_HASH_FDS);
        if (!call)
                return -ENOMEM;
        r = redo ? bus_fill_call_redo(c, call, kind, room, fds) : bus_fill_call(c, call, kind, room, fds);
        if (r >= 0 && c->jobs.error < 0)
                r = c->jobs.error;
        /* The job's last call: nothing more of its kind to come, nor waiting to go again as fds. */
        last = r >= 0 && bus_jobs_redo_count(&c->jobs) == 0 && !next_fits(c, kind, n_sent + call->n);
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
        if (r >= 0 && !j) {
                r = bus_job_new(&c->jobs, kind, &j);
                if (r >= 0)
                        j->by_name = call->by_name; /* HashNames made it: AddNames may follow */
        }
        if (r < 0)
                goto fail;
        call->job = j;
        call->kind = j->path ? CALL_ADD_FDS : CALL_HASH_FDS;
        /* A run of up to 16 files is one plain HashFds. */
        call->more = !(last && j->calls == 0);
        r = bus_call_send(&c->calls, call, call->by_name ? NULL : fds);
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
        for (size_t k = 0; !call->by_name && k < call->n; k++)
                safe_close(fds[k]);
        bus_call_free(call);
        return r;
}

/* Cancelled (by us, or our job by someone else): everything not sent yet is cancelled too, each
 * answered as if it had been sent, so the output is the same as when the whole list was known before
 * the first call; the source is not called again. */
static void cancel_rest(Bus *c)
{
        size_t i;

        bus_calls_cancel_retries(&c->calls);
        feed_cancel(c->feed);
        bus_alone_answer_parked(c, &(Outcome){ .status = FHASH_CANCELLED });
        /* Nor are those waiting to go again as fds. */
        while (bus_jobs_redo_count(&c->jobs) > 0)
                bus_jobs_answer(&c->jobs, NULL, bus_jobs_redo_take(&c->jobs),
                                &(Outcome){ .status = FHASH_CANCELLED });
        /* Held inputs are not in fhashd any more: nothing else will answer them. */
        for (i = feed_head(c->feed); i < c->next && i < feed_pulled(c->feed); i++) {
                uint8_t *fl = feed_flags(c->feed, i);

                if (fl && (*fl & INPUT_HELD))
                        feed_answer(c->feed, i, &(Outcome){ .status = FHASH_CANCELLED });
        }
        /* A cancelled feed answers what it holds from c->next on, and gives nothing more. */
        (void)feed_next(c->feed, c->next, &i);
        c->next = MAX(c->next, feed_pulled(c->feed));
}

static int on_probe(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Bus *c = userdata;
        const char *state = NULL;

        c->probe = sd_bus_slot_unref(c->probe);
        bus_wake(&c->wake);
        if (bus_peer_reply_says_gone(&c->peer, m) || sd_bus_message_is_method_error(m, SD_BUS_ERROR_NO_REPLY)) {
                c->peer.gone = true;
                return 0;
        }
        if (!sd_bus_message_is_method_error(m, NULL) && sd_bus_message_read(m, "v", "s", &state) > 0 &&
            streq(state, "stopping")) {
                /* Its going (the connection's end, NameOwnerChanged) starts the resume. */
                c->stopping = true;
                return 0;
        }
        /* Running (or an fhashd that does not say): someone cancelled our job, as without resume. */
        c->jobs.suspect = false;
        c->jobs.stop = true;
        return 0;
}

/* A cancel not ours: fhashd is asked whether it is stopping, nothing more is sent meanwhile. */
static int probe(Bus *c)
{
        if (c->probe || c->stopping)
                return 0;
        /* To the fhashd we know (its unique name): the well-known one could activate another. */
        return sd_bus_call_method_async(c->peer.bus, &c->probe, c->peer.daemon, FHASH_MANAGER_PATH,
                                        "org.freedesktop.DBus.Properties", "Get", on_probe, c, "ss",
                                        FHASH_MANAGER_INTERFACE, "State");
}

/* Sends what the window allows. */
static int pump(Bus *c)
{
        int r;

        r = bus_alone_unpark(c);
        if (r < 0)
                return r;
        for (;;) {
                size_t i;

                if (c->jobs.error < 0)
                        return c->jobs.error;
                if (c->stop || c->jobs.stop) {
                        cancel_rest(c);
                        return 0;
                }
                if (c->jobs.suspect)
                        return probe(c);
                if (c->jobs.files_in_flight + FHASH_MAX_FDS_PER_CALL > c->window || c->n_parked == PARKED_MAX)
                        return 0;
                if (bus_calls_retry_waiting(&c->calls)) {
                        if (!bus_calls_retry_due(&c->calls, now_usec()))
                                return 0;
                        r = bus_calls_resend(&c->calls);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (bus_jobs_redo_count(&c->jobs) > 0) {
                        /* What fhashd could not hash by name goes as fds, before new files (after the calls
                         * that wait to go again). */
                        r = send_next(c);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return 0;
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

/* fhashd is not there any more: a resume, the end of a cancelled run, or the run's error. */
static int gone(Bus *c)
{
        if (c->target && c->stop) {
                /* Cancelled: what fhashd had ends cancelled, as it would have there. */
                cancel_all(c);
                return 0;
        }
        if (c->target)
                return bus_run_resume(c);
        if (c->jobs.error == 0)
                c->jobs.error = -ECONNRESET;
        if (!sd_bus_error_is_set(c->ret_error))
                sd_bus_error_set(c->ret_error, FHASH_ERROR_GONE, "fhashd went away while hashing");
        return c->jobs.error;
}

static uint64_t bus_get_timeout(void *p);

/* Waits up to timeout_usec (and no longer than the run's own timeout) for the run's fd: > 0 when it
 * is readable, 0 at the timeout, or -errno. */
static int wait_fd(Bus *c, uint64_t timeout_usec)
{
        struct epoll_event ev[4];
        uint64_t now = now_usec(), t = bus_get_timeout(c);
        uint64_t deadline = timeout_usec > UINT64_MAX - now ? UINT64_MAX : now + timeout_usec;
        int ms, r;

        deadline = MIN(deadline, t);
        ms = deadline <= now ? 0 : deadline == UINT64_MAX ? -1 : (int)MIN((deadline - now + 999) / 1000, (uint64_t)INT_MAX);
        bus_run_epoll_update(c);
        r = epoll_wait(c->epfd, ev, (int)ELEMENTSOF(ev), ms);
        return r < 0 ? -errno : r;
}

/* Until every input is answered and every call answered (a last Close() included). Waits up to
 * timeout_usec for the run's fd when there is nothing to do. */
static int step(Bus *c, uint64_t timeout_usec)
{
        int r;

        if (c->done)
                return 0;
        for (;;) {
                if (c->stop && (c->dial || c->dial_at)) {
                        /* Cancelled while connecting again: nothing is in an fhashd. */
                        bus_run_epoll_forget(c);
                        c->dial = bus_dial_free(c->dial);
                        c->dial_at = 0;
                        cancel_all(c);
                }
                if (c->dial || c->dial_at) {
                        r = bus_run_dial_step(c);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                goto wait;
                }
                if (!c->peer.bus) {
                        /* Cancelled while connecting: answered above. */
                        if (feed_finished(c->feed))
                                break;
                        goto wait;
                }
                r = pump(c);
                if (r >= 0)
                        r = sd_bus_process(c->peer.bus, NULL);
                /* A direct connection has no NameOwnerChanged to tell that fhashd exited: only the
                 * socket does. */
                if (c->peer.gone || r == -ECONNRESET || r == -ENOTCONN || r == -EPIPE) {
                        r = gone(c);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                break;
                        continue;
                }
                if (r < 0)
                        return r;
                if (c->jobs.error < 0)
                        return c->jobs.error;
                if (r > 0)
                        continue;
                if (feed_finished(c->feed) && c->calls.calls_out == 0)
                        break;
        wait:
                if (timeout_usec == 0)
                        return 1;
                r = wait_fd(c, timeout_usec);
                if (r < 0 && r != -EINTR)
                        return r;
                if (r == 0)
                        return 1;
        }
        c->done = true;
        return 0;
}

static int bus_step(void *p, uint64_t timeout_usec)
{
        Bus *c = p;
        uint64_t n;
        int r;

        /* Whatever woke it is seen now. */
        if (c->wake.woken) {
                (void)read(c->wake.fd, &n, sizeof(n));
                c->wake.woken = false;
        }
        c->wake.stepping = true;
        r = step(c, timeout_usec);
        c->wake.stepping = false;
        return r;
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
        c->probe = sd_bus_slot_unref(c->probe);
        bus_calls_done(&c->calls);
        bus_jobs_done(&c->jobs);
        c->dial = bus_dial_free(c->dial);
        for (size_t i = 0; i < c->n_parked; i++)
                safe_close(c->parked[i].fd);
        bus_peer_unwatch(&c->peer);
        safe_close(c->wake.fd);
        safe_close(c->epfd);
        free(c);
}

static int bus_start(const BackendArgs *args, void **ret)
{
        Bus *c = calloc(1, sizeof(*c));
        int r;

        if (!c)
                return -ENOMEM;
        *c = (Bus){ .feed = args->feed, .options = args->options, .ret_error = args->error,
                    .target = args->options->resume ? args->target : NULL, .client_bus = args->client_bus,
                    .window = files_window(), .epfd = -EBADF, .ep_fd = -EBADF, .wake.fd = -EBADF };
        c->epfd = epoll_create1(EPOLL_CLOEXEC);
        c->wake.fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->epfd < 0 || c->wake.fd < 0 ||
            epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->wake.fd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = c->wake.fd }) < 0) {
                r = -errno;
                safe_close(c->wake.fd);
                safe_close(c->epfd);
                free(c);
                return r;
        }
        bus_calls_init(&c->calls, &c->jobs, args->options, args->error);
        /* Every file as an fd, as before names (to compare the two, or for an fhashd that should
         * not open anything for us). */
        c->by_fd_only = streq_ptr(getenv("FHASH_BY_FD"), "1");
        /* The watch and the matches first, calls after. */
        r = bus_peer_watch(&c->peer, args->bus);
        if (r < 0 && c->target) {
                /* The client's fhashd went between runs (a restart): this run finds the next one. */
                bus_peer_unwatch(&c->peer);
                c->replace_client_bus = true;
                c->dial_at = now_usec();
                r = 0;
        } else if (r >= 0) {
                r = bus_jobs_init(&c->jobs, args->feed, &c->peer, args->options->watch_progress, c->ret_error);
                c->jobs.resume = c->target != NULL;
                c->jobs.wake = c->peer.wake = &c->wake;
        }
        if (r < 0) {
                bus_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

/* One fd whatever the run waits for: an epoll set of the connection's fd (or that of the connection
 * being made) and the FIFOs waiting for their writers. */
static int bus_get_fd(void *p)
{
        Bus *c = p;

        bus_run_epoll_update(c);
        return c->epfd;
}

static int bus_get_events(void *p)
{
        Bus *c = p;

        bus_run_epoll_update(c);
        return POLLIN;
}

/* Only what the run itself must do by a time: a call's timeout (sd-bus's), a Busy retry, connecting
 * again, a lease retry. Results, replies and FIFOs wake the fd. */
static uint64_t bus_get_timeout(void *p)
{
        Bus *c = p;
        uint64_t t = UINT64_MAX;

        if (c->dial)
                t = bus_dial_get_timeout(c->dial);
        else if (c->dial_at)
                t = c->dial_at;
        else if (c->peer.bus)
                (void)sd_bus_get_timeout(c->peer.bus, &t);
        if (bus_calls_retry_waiting(&c->calls))
                t = MIN(t, c->calls.retry_at);
        for (size_t i = 0; i < c->n_parked; i++)
                if (c->parked[i].fd < 0)
                        t = MIN(t, c->parked[i].retry_at);
        return t;
}

static void bus_progress(void *p, uint64_t *ret_bytes_done, uint64_t *ret_bytes_total)
{
        Bus *c = p;

        *ret_bytes_done = c->bytes_before + bus_jobs_bytes_done(&c->jobs);
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
        c->jobs.cancelling = true;
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
