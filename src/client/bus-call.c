/* SPDX-License-Identifier: MIT */
/* bus-call.c: a run's calls to fhashd, their replies, and the Busy back-off */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "basic/utf8.h"
#include "client/bus-call.h"
#include "fhash/fhash-dbus.h"

/* A call refused as Busy (a per-uid quota) is sent again after one of our results came back, or
 * after this long. */
#define RETRY_USEC (200 * 1000ULL)
/* Busy without a pause this long: say so (busy_notice), once. */
#define BUSY_SAY_USEC (1000 * 1000ULL)
/* ... and give up after $FHASHCTL_BUSY_TIMEOUT seconds (0: never), by default this long. */
#define BUSY_TIMEOUT_DEFAULT_SEC 300u

void bus_calls_init(BusCalls *cs, BusJobs *jobs, const RunOptions *o, sd_bus_error *ret_error)
{
        const char *env = getenv("FHASHCTL_BUSY_TIMEOUT");
        unsigned secs = BUSY_TIMEOUT_DEFAULT_SEC;

        *cs = (BusCalls){ .jobs = jobs, .options = o, .ret_error = ret_error };
        dir_cache_init(&cs->dirs);
        cs->retry_tail = &cs->retry;
        if (env && *env) {
                char *end;
                unsigned long v;

                errno = 0;
                v = strtoul(env, &end, 10);
                if (errno == 0 && *end == '\0' && v <= UINT_MAX)
                        secs = (unsigned)v;
        }
        cs->busy_timeout = secs == 0 ? UINT64_MAX : (uint64_t)secs * 1000000;
}

BusCall *bus_call_new(BusCalls *cs, BusJob *j, CallKind kind)
{
        BusCall *call = calloc(1, sizeof(*call));

        if (call) {
                *call = (BusCall){ .calls = cs, .job = j, .kind = kind };
                name_dirs_init(&call->dirs);
        }
        return call;
}

void bus_call_free(BusCall *call)
{
        if (!call)
                return;
        sd_bus_slot_unref(call->slot);
        name_dirs_done(&call->dirs);
        free(call);
}

void bus_calls_done(BusCalls *cs)
{
        /* Calls fhashd never answered (it went away): their slots hold the bus, and nothing else
         * will free them. */
        for (BusCall *call = cs->out, *next; call; call = next) {
                next = call->out_next;
                bus_call_free(call);
        }
        cs->out = NULL;
        while (cs->retry) {
                BusCall *call = cs->retry;

                cs->retry = call->next;
                bus_call_free(call);
        }
        cs->retry_tail = &cs->retry;
        dir_cache_done(&cs->dirs);
}

static const char *input_name(const Feed *f, size_t item)
{
        return feed_input(f, item)->name;
}

static const char *input_expected(const Feed *f, size_t item)
{
        return feed_input(f, item)->expected ?: "";
}

/* Appends {"key": as} with the strings get(feed, item) of the call's inputs. */
static int append_strv_option(sd_bus_message *m, const char *key, const BusCall *call,
                              const char *(*get)(const Feed *f, size_t item))
{
        const Feed *f = call->calls->jobs->feed;
        int r;

        r = sd_bus_message_open_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", key);
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, "as");
        if (r >= 0)
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "s");
        for (size_t k = 0; r >= 0 && k < call->n; k++)
                r = sd_bus_message_append(m, "s", get(f, call->idx[k]));
        for (int close = 0; r >= 0 && close < 3; close++)
                r = sd_bus_message_close_container(m);
        return r;
}

/* A length, block size, key or derive-key as HashFds options. The message holding the key is erased when
 * freed. */
static int append_params(sd_bus_message *m, const HashParams *p)
{
        int r = 0;

        if (p->out_len)
                r = sd_bus_message_append(m, "{sv}", "length", "u", p->out_len * 8);
        if (r >= 0 && p->block_size)
                r = sd_bus_message_append(m, "{sv}", "block-size", "u", p->block_size);
        if (r >= 0 && p->context)
                r = sd_bus_message_append(m, "{sv}", "derive-key", "s", p->context);
        if (r >= 0 && p->keyed) {
                r = sd_bus_message_sensitive(m);
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv");
                if (r >= 0)
                        r = sd_bus_message_append(m, "s", "key");
                if (r >= 0)
                        r = sd_bus_message_open_container(m, SD_BUS_TYPE_VARIANT, "ay");
                if (r >= 0)
                        r = sd_bus_message_append_array(m, 'y', p->key, HASH_KEY_SIZE);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        return r;
}

/* HashFds' and AddFds' a{sv}: labels and expected digests always; the rest makes the job, so only
 * HashFds says it. */
static int append_options(sd_bus_message *m, const BusCalls *cs, const BusCall *call)
{
        const RunOptions *o = cs->options;
        const Feed *f = cs->jobs->feed;
        bool names_utf8 = true, any_expected = false;
        int r;

        for (size_t k = 0; k < call->n; k++) {
                const Input *in = feed_input(f, call->idx[k]);

                if (!call->by_name && (!utf8_is_valid(in->name) || strlen(in->name) > FHASH_NAME_MAX))
                        names_utf8 = false;
                if (in->expected)
                        any_expected = true;
        }
        r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "{sv}");
        /* Names are only labels for jobs and GetResults (results are matched by index), and D-Bus
         * strings must be UTF-8 (fhashd takes at most FHASH_NAME_MAX bytes): a call with a name that
         * is not goes without labels. A call by name goes without: the names it carries are what
         * fhashd opens, and a label per file costs both processes a copy and fhashd memory. */
        if (r >= 0 && names_utf8 && !call->by_name)
                r = append_strv_option(m, "names", call, input_name);
        if (r >= 0 && any_expected)
                r = append_strv_option(m, "expected", call, input_expected);
        if (call->kind == CALL_HASH_FDS) {
                /* fhashd hashes a pipe or device only under an explicit size cap; the user asked for
                 * this stream (e.g. '-'), so the cap is "no limit" as sha256sum has none. */
                if (r >= 0 && (call->stream || o->max_size > 0))
                        r = sd_bus_message_append(m, "{sv}", "max-size", "t",
                                                  o->max_size > 0 ? o->max_size : UINT64_MAX);
                if (r >= 0 && o->dontcache)
                        r = sd_bus_message_append(m, "{sv}", "dontcache", "b", 1);
                if (r >= 0 && o->strategy != ENGINE_READ_AUTO)
                        r = sd_bus_message_append(m, "{sv}", "strategy", "s",
                                                  engine_read_strategy_to_string(o->strategy));
                /* Only when asked: an fhashd older than priorities refuses the key. */
                if (r >= 0 && o->priority != JOB_PRIORITY_NORMAL)
                        r = sd_bus_message_append(m, "{sv}", "priority", "s", job_priority_to_string(o->priority));
                /* Results as FilesDigested: bytes the bus copies, not strings it checks one by one. */
                if (r >= 0 && !cs->jobs->packed_off)
                        r = sd_bus_message_append(m, "{sv}", "packed-results", "b", 1);
                if (r >= 0 && call->job->kind.out_len)
                        r = sd_bus_message_append(m, "{sv}", "length", "u", call->job->kind.out_len * 8);
                else if (r >= 0 && o->params)
                        r = append_params(m, o->params);
        }
        if (r >= 0 && call->more)
                r = sd_bus_message_append(m, "{sv}", "more", "b", 1);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

int bus_call_send(BusCalls *cs, BusCall *call, int fds[])
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        const BusPeer *peer = cs->jobs->peer;
        BusJob *j = call->job;
        int r;

        if (call->kind == CALL_HASH_FDS)
                r = sd_bus_message_new_method_call(peer->bus, &m, peer->dest, FHASH_MANAGER_PATH,
                                                   FHASH_MANAGER_INTERFACE, call->by_name ? "HashNames" : "HashFds");
        else
                r = sd_bus_message_new_method_call(peer->bus, &m, peer->dest, j->path, FHASH_JOB_INTERFACE,
                                                   call->kind == CALL_CLOSE ? "Close"
                                                   : call->by_name          ? "AddNames"
                                                                            : "AddFds");
        if (r >= 0 && call->kind != CALL_CLOSE && call->by_name)
                r = bus_names_append(m, &call->dirs, cs->jobs->feed, call->idx, call->n);
        else if (r >= 0 && call->kind != CALL_CLOSE) {
                assert(fds);
                r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "h");
                for (size_t k = 0; r >= 0 && k < call->n; k++)
                        r = sd_bus_message_append(m, "h", fds[k]); /* sd-bus dups it */
                if (r >= 0)
                        r = sd_bus_message_close_container(m);
        }
        if (r >= 0 && call->kind != CALL_CLOSE) {
                if (r >= 0 && call->kind == CALL_HASH_FDS)
                        r = sd_bus_message_append(m, "s",
                                                  cs->options->algos.n > 1 ? cs->options->algos_name
                                                                           : hash_algo_to_string(j->kind.algo));
                if (r >= 0)
                        r = append_options(m, cs, call);
        }
        for (size_t k = 0; fds && !call->by_name && k < call->n; k++)
                fds[k] = safe_close(fds[k]);
        if (r >= 0)
                r = sd_bus_call_async(peer->bus, &call->slot, m, on_reply, call, 0);
        if (r < 0)
                return r;
        LIST_PREPEND_BY(out_next, out_prev, cs->out, call);
        for (size_t k = 0; k < call->n; k++)
                bus_jobs_sent(cs->jobs, call->idx[k], call->by_name);
        j->n_sent += call->n;
        j->calls++;
        cs->calls_out++;
        return 0;
}

/* Closes j once nothing more is coming for it and all its calls are answered. */
static int job_try_close(BusCalls *cs, BusJob *j)
{
        BusCall *call;
        int r;

        if (!j->open || !j->want_close || !j->path || j->calls > 0 || j->retries > 0 || j->finished)
                return 0;
        call = bus_call_new(cs, j, CALL_CLOSE);
        if (!call)
                return -ENOMEM;
        r = bus_call_send(cs, call, NULL);
        if (r < 0) {
                bus_call_free(call);
                return r;
        }
        j->open = false;
        return 0;
}

int bus_job_stop_sending(BusCalls *cs, BusJob *j)
{
        if (!j->open)
                return 0;
        j->want_close = true;
        return job_try_close(cs, j);
}

/* A call that opened or will open no job content: its HashFds failed or had nothing to send (there is
 * no job: nothing to send to or close), or its closing AddFds did (Close() closes the job, once the
 * other calls are answered). */
static int call_dropped(BusCalls *cs, BusJob *j, const BusCall *call)
{
        if (call->kind == CALL_HASH_FDS) {
                j->open = false;
                return 0;
        }
        if (call->more)
                return 0;
        j->open = true;
        return bus_job_stop_sending(cs, j);
}

/* fhashd answered Busy (reason is its message): waited on, said after a second, given up on after
 * busy_timeout. */
static void note_busy(BusCalls *cs, const char *reason)
{
        if (cs->busy_since == 0)
                cs->busy_since = now_usec();
        (void)snprintf(cs->busy_reason, sizeof(cs->busy_reason), "%s", reason ? reason : "Busy");
}

/* Before a call is sent again: false (with jobs->error set) once fhashd has been busy too long. */
static bool busy_wait_ok(BusCalls *cs)
{
        const RunOptions *o = cs->options;
        uint64_t waited;

        if (cs->busy_since == 0)
                return true;
        waited = now_usec() - cs->busy_since;
        if (!cs->busy_said && waited >= BUSY_SAY_USEC) {
                if (o->busy_notice)
                        o->busy_notice(cs->busy_reason, cs->busy_timeout != UINT64_MAX, o->busy_userdata);
                cs->busy_said = true;
        }
        if (waited < cs->busy_timeout)
                return true;
        cs->jobs->error = sd_bus_error_setf(cs->ret_error, FHASH_ERROR_BUSY,
                                            "fhashd has been busy for %" PRIu64
                                            " s, giving up (FHASHCTL_BUSY_TIMEOUT): %s",
                                            waited / 1000000, cs->busy_reason);
        return false;
}

static void retry_later(BusCalls *cs, BusCall *call)
{
        call->slot = sd_bus_slot_unref(call->slot);
        call->next = NULL;
        *cs->retry_tail = call;
        cs->retry_tail = &call->next;
        cs->retry_at = now_usec() + RETRY_USEC;
        cs->retry_results = cs->jobs->results_seen;
        call->job->retries++;
}

/* The inputs of call are not in fhashd: they count as in flight no more. */
static void call_unsend(BusCalls *cs, BusCall *call)
{
        for (size_t k = 0; k < call->n; k++)
                bus_jobs_unsent(cs->jobs, call->idx[k]);
        call->job->n_sent -= call->n;
}

static int on_reply_error(BusCalls *cs, BusCall *call, sd_bus_message *m, const sd_bus_error *e)
{
        BusJob *j = call->job;
        bool hold;
        int r;

        call_unsend(cs, call);
        /* An fhashd older than "packed-results" refuses the call whole, before it looks at a file:
         * the same call again at once, without it. */
        if (call->kind == CALL_HASH_FDS && !cs->jobs->packed_off &&
            sd_bus_error_has_name(e, SD_BUS_ERROR_INVALID_ARGS) && e->message &&
            strstr(e->message, "\"packed-results\"")) {
                cs->jobs->packed_off = true;
                retry_later(cs, call);
                cs->retry_at = 0;
                return 0;
        }
        /* An fhashd without HashNames, or one that cannot open names for us: fds from now on, and
         * this call's inputs go again as fds (bus_jobs_answer()). */
        if (call->by_name && bus_names_error_disables(e))
                cs->jobs->names_off = true;
        else if (call->by_name && sd_bus_error_has_name(e, FHASH_ERROR_ACCESS_DENIED))
                dir_cache_refused(&cs->dirs, &call->dirs); /* not a directory fhashd opens names in */
        /* Over a per-uid quota of fhashd, or dbus-daemon's queue of messages for fhashd is full (its
         * max_outgoing_unix_fds is 64 on the system bus): again once some of our files are done.
         * fhashd's own LimitsExceeded (a job's input limit) is final. */
        if (sd_bus_error_has_name(e, FHASH_ERROR_BUSY) ||
            (sd_bus_error_has_name(e, SD_BUS_ERROR_LIMITS_EXCEEDED) &&
             streq_ptr(sd_bus_message_get_sender(m), "org.freedesktop.DBus"))) {
                note_busy(cs, e->message);
                if (call->by_name && call->n > FHASH_MAX_FDS_PER_CALL)
                        /* More names than fhashd takes now (a per-uid file quota below a call's 256,
                         * say): they go as fds, 16 a call, each sent again as Busy allows. */
                        goto answer;
                retry_later(cs, call);
                return 0;
        }
answer:
        /* Resuming, an AddFds to a job fhashd cancelled under us (while it stops, say): held with
         * the job's other files until it is known why. */
        hold = cs->jobs->resume && !cs->jobs->cancelling && sd_bus_error_has_name(e, FHASH_ERROR_JOB_CLOSED);
        for (size_t k = 0; k < call->n; k++)
                if (hold)
                        bus_jobs_hold(cs->jobs, call->idx[k]);
                else
                        bus_jobs_answer(cs->jobs, j, call->idx[k],
                                        &(Outcome){ .status = FHASH_ERROR, .error = -sd_bus_error_get_errno(e),
                                                    .message = e->message ?: e->name });
        r = call_dropped(cs, j, call);
        bus_call_free(call);
        return r;
}

static int on_reply_handle(sd_bus_message *m, BusCall *call);

static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusCall *call = userdata;
        BusJobs *js = call->calls->jobs;
        int r;

        r = on_reply_handle(m, call);
        bus_wake(js->wake);
        return r;
}

static int on_reply_handle(sd_bus_message *m, BusCall *call)
{
        BusCalls *cs = call->calls;
        BusJob *j = call->job;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        const char *path = NULL;
        uint32_t first = 0;
        int r;

        call->slot = sd_bus_slot_unref(call->slot);
        LIST_REMOVE_BY(out_next, out_prev, cs->out, call);
        cs->calls_out--;
        j->calls--;
        /* An answer from the bus, sd-bus or another fhashd that says ours has gone: its files are
         * not answered here (no file of it failed); they go again to the next fhashd
         * (FHASH_HASH_RESUME), or the run fails with Gone. */
        if (bus_peer_reply_says_gone(cs->jobs->peer, m)) {
                cs->jobs->peer->gone = true;
                for (size_t k = 0; k < call->n; k++)
                        bus_jobs_lost(cs->jobs, call->idx[k]);
                bus_call_free(call);
                return 0;
        }
        if (call->kind == CALL_CLOSE) {
                /* Closed, or already gone (finished, cancelled): either way nothing is left to do. */
                bus_call_free(call);
                return 0;
        }
        if (e)
                r = on_reply_error(cs, call, m, e);
        else {
                /* fhashd took a call: whatever Busy it said is over. */
                cs->busy_since = 0;
                cs->busy_said = false;
                const char *want = call->kind == CALL_HASH_FDS ? "o" : "u";

                if (call->kind == CALL_HASH_FDS)
                        r = sd_bus_message_read(m, "o", &path);
                else
                        r = sd_bus_message_read(m, "u", &first);
                /* A reply that does not say where its files went leaves them unknown for good: the
                 * run cannot go on, and says which reply it was. */
                if (r <= 0) {
                        r = -EBADMSG;
                        (void)sd_bus_error_setf(cs->ret_error, SD_BUS_ERROR_INCONSISTENT_MESSAGE,
                                                "fhashd answered %s with \"%s\", not \"%s\"",
                                                call->kind == CALL_HASH_FDS ? "HashFds" : "AddFds",
                                                sd_bus_message_get_signature(m, true) ?: "", want);
                } else if ((size_t)first + call->n > j->n_sent) {
                        r = -EBADMSG;
                        (void)sd_bus_error_setf(cs->ret_error, SD_BUS_ERROR_INCONSISTENT_MESSAGE,
                                                "fhashd put %zu files at index %" PRIu32 " of a job it was sent %zu",
                                                call->n, first, j->n_sent);
                }
                if (r >= 0)
                        r = bus_job_placed(cs->jobs, j, path, first, call->idx, call->n);
                if (r >= 0)
                        r = job_try_close(cs, j);
                bus_call_free(call);
        }
        if (r < 0 && cs->jobs->error == 0)
                cs->jobs->error = r;
        return 0;
}

bool bus_calls_retry_due(const BusCalls *cs, uint64_t now)
{
        return cs->retry && (now >= cs->retry_at || cs->jobs->results_seen != cs->retry_results);
}

int bus_calls_resend(BusCalls *cs)
{
        BusCall *call = cs->retry;
        BusJob *j;
        int fds[FHASH_MAX_FDS_PER_CALL] = { [0 ... FHASH_MAX_FDS_PER_CALL - 1] = -EBADF };
        size_t n = 0;
        int r;

        if (!busy_wait_ok(cs))
                return cs->jobs->error;
        cs->retry = call->next;
        if (!cs->retry)
                cs->retry_tail = &cs->retry;
        j = call->job;
        j->retries--;
        if (call->by_name) {
                /* Names again, beneath the directories the call holds. */
                r = bus_call_send(cs, call, NULL);
                if (r < 0)
                        bus_call_free(call);
                return r;
        }
        for (size_t k = 0; k < call->n; k++) {
                size_t item = call->idx[k];
                uint64_t size;
                int fd = -EBADF;

                r = feed_open(cs->jobs->feed, item, &fd, &size);
                /* A FIFO went once already: its writer is there. */
                if (r == FEED_OPEN_FIFO)
                        r = feed_fd_blocking(fd);
                if (r < 0) {
                        safe_close(fd);
                        bus_jobs_answer(cs->jobs, j, item, &(Outcome){ .status = FHASH_ERROR, .error = r });
                        continue;
                }
                fds[n] = fd;
                call->idx[n++] = item;
        }
        call->n = n;
        if (n == 0) {
                /* Every file failed to open: nothing to send. */
                r = call_dropped(cs, j, call);
                bus_call_free(call);
                return r;
        }
        r = bus_call_send(cs, call, fds);
        if (r < 0)
                bus_call_free(call);
        return r;
}

void bus_calls_cancel_retries(BusCalls *cs)
{
        while (cs->retry) {
                BusCall *call = cs->retry;

                cs->retry = call->next;
                call->job->retries--;
                for (size_t k = 0; k < call->n; k++)
                        bus_jobs_answer(cs->jobs, call->job, call->idx[k], &(Outcome){ .status = FHASH_CANCELLED });
                bus_call_free(call);
        }
        cs->retry_tail = &cs->retry;
}
