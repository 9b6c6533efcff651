/* SPDX-License-Identifier: MIT */
/* bus-jobs.c: a run's jobs in fhashd, and the signals that bring their results */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "client/bus-jobs.h"
#include "fhash/fhash-dbus.h"
#include "protocol/errors.h"

struct Orphan {
        BusJob *job;
        uint32_t index;
        Outcome outcome;          /* its strings below, owned */
        char *message;
        char *hex;
};

/*
 * Race-freedom: the match for FilesHashed/JobFinished is added (synchronously, so dbus-daemon has it)
 * before the first call, and signals for a job path not known yet (its HashFds reply not processed)
 * are kept and replayed once the reply names the job, so no result can be lost whatever the order.
 */

static BusJob *job_by_path(BusJobs *js, const char *path)
{
        for (BusJob *j = js->list; j; j = j->next)
                if (j->path && streq(j->path, path))
                        return j;
        return NULL;
}

int bus_job_new(BusJobs *js, JobKind kind, BusJob **ret)
{
        BusJob *j = calloc(1, sizeof(*j));

        if (!j)
                return -ENOMEM;
        *j = (BusJob){ .jobs = js, .kind = kind, .next = js->list };
        js->list = j;
        *ret = j;
        return 0;
}

void bus_jobs_sent(BusJobs *js, size_t item, bool by_name)
{
        uint8_t *fl = feed_flags(js->feed, item);

        if (fl && !(*fl & INPUT_IN_FLIGHT)) {
                *fl |= INPUT_IN_FLIGHT | INPUT_SENT;
                *fl = by_name ? (*fl | INPUT_BY_NAME) : (*fl & (uint8_t)~INPUT_BY_NAME);
                js->files_in_flight++;
        }
}

/* An input sent by name failed (or its call did): it goes again as an fd. */
static bool redo_by_fd(BusJobs *js, size_t item, const Outcome *o)
{
        uint8_t *fl = feed_flags(js->feed, item);

        if (!fl || !(*fl & INPUT_BY_NAME) || o->status != FHASH_ERROR || js->cancelling)
                return false;
        if (js->n_redo == js->redo_alloc) {
                size_t n = js->redo_alloc ? js->redo_alloc * 2 : 64;
                size_t *p = reallocarray(js->redo, n, sizeof(size_t));

                if (!p)
                        return false; /* answered with fhashd's error instead */
                js->redo = p;
                js->redo_alloc = n;
        }
        bus_jobs_unsent(js, item);
        *fl = (uint8_t)((*fl & ~INPUT_BY_NAME) | INPUT_NO_NAME);
        js->redo[js->n_redo++] = item;
        return true;
}

void bus_jobs_unsent(BusJobs *js, size_t item)
{
        uint8_t *fl = feed_flags(js->feed, item);

        if (fl && (*fl & INPUT_IN_FLIGHT)) {
                /* Refused with its call: fhashd never read it. */
                *fl &= (uint8_t)~(INPUT_IN_FLIGHT | INPUT_SENT);
                js->files_in_flight--;
        }
}

void bus_jobs_lost(BusJobs *js, size_t item)
{
        uint8_t *fl = feed_flags(js->feed, item);

        /* INPUT_SENT stays: fhashd may have begun to read it. */
        if (fl && (*fl & INPUT_IN_FLIGHT)) {
                *fl &= (uint8_t)~INPUT_IN_FLIGHT;
                js->files_in_flight--;
        }
}

void bus_jobs_hold(BusJobs *js, size_t item)
{
        uint8_t *fl = feed_flags(js->feed, item);

        if (!fl)
                return;
        if (*fl & INPUT_IN_FLIGHT) {
                *fl &= (uint8_t)~INPUT_IN_FLIGHT;
                js->files_in_flight--;
        }
        *fl |= INPUT_HELD;
        js->suspect = true;
}

/* A cancel the run did not ask for, with FHASH_HASH_RESUME: held rather than answered. */
static bool hold_cancel(const BusJobs *js, const Outcome *o)
{
        return o->status == FHASH_CANCELLED && js->resume && !js->cancelling;
}

void bus_jobs_answer(BusJobs *js, BusJob *j, size_t item, const Outcome *o)
{
        if (feed_answered(js->feed, item) || redo_by_fd(js, item, o))
                return;
        bus_jobs_unsent(js, item);
        js->results_seen++;
        if (o->status == FHASH_OK || o->status == FHASH_MISMATCH) {
                js->bytes_finished += o->size;
                if (j)
                        j->bytes_delivered += o->size;
        }
        feed_answer(js->feed, item, o);
}

/* "org.fhash.Hasher1.Error.NotFound: No such file or directory" → status, -errno and the words. */
static void parse_file_error(const char *e, Outcome *o)
{
        const char *colon = strstr(e, ": ");
        size_t nl = colon ? (size_t)(colon - e) : strlen(e);

        o->message = colon ? colon + 2 : e;
        o->status = FHASH_ERROR;
        o->error = fhash_error_to_errno(e, nl);
        if (nl == strlen(FHASH_ERROR_MISMATCH) && strncmp(e, FHASH_ERROR_MISMATCH, nl) == 0)
                o->status = FHASH_MISMATCH;
        else if (nl == strlen(FHASH_ERROR_CHANGED) && strncmp(e, FHASH_ERROR_CHANGED, nl) == 0)
                o->status = FHASH_CHANGED;
        else if (nl == strlen(FHASH_ERROR_CANCELLED) && strncmp(e, FHASH_ERROR_CANCELLED, nl) == 0)
                o->status = FHASH_CANCELLED;
}

static int add_orphan(BusJobs *js, BusJob *j, uint32_t index, const Outcome *o)
{
        Orphan *n = reallocarray(js->orphans, js->n_orphans + 1, sizeof(Orphan)), *x;

        if (!n)
                return -ENOMEM;
        js->orphans = n;
        x = &js->orphans[js->n_orphans];
        *x = (Orphan){ .job = j, .index = index, .outcome = *o };
        x->message = o->message ? strdup(o->message) : NULL;
        x->hex = o->hex ? strdup(o->hex) : NULL;
        if ((o->message && !x->message) || (o->hex && !x->hex)) {
                free(x->message);
                free(x->hex);
                return -ENOMEM;
        }
        x->outcome.message = x->message;
        x->outcome.hex = x->hex;
        js->n_orphans++;
        return 0;
}

/* Answers j's input index; one that goes again as an fd (redo_by_fd()) is not j's any more: its
 * JobFinished must not answer it cancelled. */
static void answer_at(BusJobs *js, BusJob *j, size_t index, const Outcome *o)
{
        size_t item = j->items[index];

        bus_jobs_answer(js, j, item, o);
        if (!feed_answered(js->feed, item) && feed_flags(js->feed, item) &&
            (*feed_flags(js->feed, item) & INPUT_NO_NAME))
                j->items[index] = SIZE_MAX;
}

/* Answers the orphans of j whose index is known now (or drops them all once j has finished). */
static void replay_orphans(BusJobs *js, BusJob *j)
{
        size_t k = 0;

        for (size_t i = 0; i < js->n_orphans; i++) {
                Orphan *o = &js->orphans[i];

                if (o->job == j && o->index < j->n_items && j->items[o->index] != SIZE_MAX) {
                        if (hold_cancel(js, &o->outcome))
                                bus_jobs_hold(js, j->items[o->index]);
                        else
                                answer_at(js, j, o->index, &o->outcome);
                } else if (o->job != j || !j->finished) {
                        js->orphans[k++] = *o;
                        continue;
                }
                free(o->message);
                free(o->hex);
        }
        js->n_orphans = k;
}

/* Answers the result o of index of j, or keeps it until a reply says which input index is. */
static int take_result(BusJobs *js, BusJob *j, uint32_t index, const Outcome *o)
{
        if (index >= j->n_sent)
                return 0; /* never sent: nobody's result (a daemon gone wrong) */
        if (index < j->n_items && j->items[index] != SIZE_MAX) {
                if (hold_cancel(js, o))
                        bus_jobs_hold(js, j->items[index]);
                else
                        answer_at(js, j, index, o);
                return 0;
        }
        return add_orphan(js, j, index, o);
}

/* FilesHashed's a(ustss), and FilesDigested's last argument. */
static int handle_results(BusJobs *js, BusJob *j, sd_bus_message *m)
{
        const char *name, *hex, *e;
        uint64_t size;
        uint32_t index;
        int r;

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "(ustss)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(ustss)", &index, &name, &size, &hex, &e)) > 0) {
                Outcome o = { .status = FHASH_OK, .size = size, .hex = hex[0] ? hex : NULL };

                if (e[0])
                        parse_file_error(e, &o);
                r = take_result(js, j, index, &o);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* FilesDigested (Manager.xml): the files hashed as arrays, their digests as bytes; then the rest. */
static int handle_files_digested(BusJobs *js, BusJob *j, sd_bus_message *m)
{
        const uint32_t *lengths, *indices;
        const uint64_t *sizes;
        const uint8_t *digests;
        size_t n_lengths, n, n_sizes, n_digests, each = 0;
        char hex[HASH_SET_HEX_MAX];
        bool bad = false;
        int r;

        r = sd_bus_message_read_array(m, 'u', (const void **)&lengths, &n_lengths);
        if (r >= 0)
                r = sd_bus_message_read_array(m, 'u', (const void **)&indices, &n);
        if (r >= 0)
                r = sd_bus_message_read_array(m, 't', (const void **)&sizes, &n_sizes);
        if (r >= 0)
                r = sd_bus_message_read_array(m, 'y', (const void **)&digests, &n_digests);
        if (r < 0)
                return r;
        n_lengths /= sizeof(uint32_t);
        n /= sizeof(uint32_t);
        for (size_t k = 0; k < n_lengths && k < HASH_SET_MAX; k++) {
                bad |= lengths[k] == 0 || lengths[k] > HASH_DIGEST_MAX;
                each += lengths[k];
        }
        /* A daemon gone wrong: the run cannot tell which digest is whose, and says why. */
        if (bad || n_lengths > HASH_SET_MAX || n_sizes != n * sizeof(uint64_t) || n_digests != n * each ||
            (n > 0 && n_lengths == 0)) {
                (void)sd_bus_error_setf(js->ret_error, SD_BUS_ERROR_INCONSISTENT_MESSAGE,
                                        "fhashd sent a FilesDigested of %zu indices, %zu sizes and %zu digest bytes "
                                        "of %zu each: they do not agree",
                                        n, n_sizes / sizeof(uint64_t), n_digests, each);
                return -EBADMSG;
        }
        for (size_t k = 0; k < n; k++) {
                hash_joined_to_hex(digests + k * each, lengths, n_lengths, hex);
                r = take_result(js, j, indices[k], &(Outcome){ .status = FHASH_OK, .size = sizes[k], .hex = hex });
                if (r < 0)
                        return r;
        }
        return handle_results(js, j, m);
}

static void job_finished(BusJobs *js, BusJob *j, const char *result)
{
        bool cancelled = streq(result, "cancelled");
        Outcome o = { .status = FHASH_CANCELLED };

        if (j->finished)
                return;
        j->finished = true;
        j->open = false;
        /* Inputs without a result (the job was cancelled under us, e.g. fhashd stopping). */
        for (size_t k = 0; k < j->n_items; k++)
                if (j->items[k] != SIZE_MAX && !feed_answered(js->feed, j->items[k])) {
                        if (hold_cancel(js, &o))
                                bus_jobs_hold(js, j->items[k]);
                        else
                                bus_jobs_answer(js, j, j->items[k], &o);
                }
        replay_orphans(js, j);
        /* Every result of j is in (fhashd sends them all before JobFinished): fhashd may let them go
         * now, not when the job expires, so that a run of many jobs is not held to what the uid's
         * MaxMemoryPerUID lets finished jobs keep (Job.xml's Release()). No reply wanted: an fhashd
         * without the method, or one gone meanwhile, changes nothing here. */
        if (j->path && !js->peer->gone)
                (void)sd_bus_call_method_async(js->peer->bus, NULL, js->peer->dest, j->path, FHASH_JOB_INTERFACE,
                                               "Release", NULL, NULL, NULL);
        /* Someone cancelled the job this run feeds (fhashctl cancel, fhashd stopping): the files
         * not sent yet are cancelled with it rather than going to a new job; or, resuming, not
         * before fhashd's State has said it was not stopping. */
        if (cancelled && js->resume && !js->cancelling)
                js->suspect = true;
        else if (cancelled)
                js->stop = true;
}

static int handle_signal(BusJobs *js, sd_bus_message *m)
{
        const char *path, *result = "";
        BusJob *j;
        int r;

        static const struct {
                const char *member, *signature;
        } known[] = {
                { "FilesHashed", "oa(ustss)" },
                { "FilesDigested", "oauauataya(ustss)" },
                { "JobFinished", "osuu" },
        };
        size_t kind = ELEMENTSOF(known);

        /* Each of ours by its member and its signature: anything else is ignored. */
        for (size_t k = 0; k < ELEMENTSOF(known) && kind == ELEMENTSOF(known); k++)
                if (sd_bus_message_is_signal(m, FHASH_MANAGER_INTERFACE, known[k].member) &&
                    sd_bus_message_has_signature(m, known[k].signature))
                        kind = k;
        if (kind == ELEMENTSOF(known))
                return 0;
        r = sd_bus_message_read(m, "o", &path);
        if (r < 0)
                return r;
        j = job_by_path(js, path);
        if (!j) {
                bool waiting = false;

                /* The reply that names this job may still be on its way: keep the signal for later,
                 * but only while a job of ours has no name yet, and as many as its files (a daemon
                 * sending signals for other jobs cannot make us hold them all). */
                for (const BusJob *x = js->list; x; x = x->next)
                        waiting |= !x->path && js->n_pending < x->n_sent + 2;
                if (!waiting)
                        return 0;
                sd_bus_message **np = reallocarray(js->pending, js->n_pending + 1, sizeof(sd_bus_message *));

                if (!np)
                        return -ENOMEM;
                js->pending = np;
                js->pending[js->n_pending++] = sd_bus_message_ref(m);
                return 0;
        }
        if (kind == 0)
                return handle_results(js, j, m);
        if (kind == 1)
                return handle_files_digested(js, j, m);
        r = sd_bus_message_read(m, "s", &result);
        if (r < 0)
                return r;
        job_finished(js, j, result);
        return 0;
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusJobs *js = userdata;
        int r;

        if (!bus_peer_sent(js->peer, m))
                return 0;
        r = handle_signal(js, m);
        if (r < 0 && js->error == 0)
                js->error = r;
        bus_wake(js->wake);
        return 0;
}

static int on_properties(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusJobs *js = userdata;
        const char *iface, *key;
        BusJob *j;

        if (!bus_peer_sent(js->peer, m))
                return 0;
        j = job_by_path(js, sd_bus_message_get_path(m));
        if (!j || sd_bus_message_read(m, "s", &iface) < 0 || !streq(iface, FHASH_JOB_INTERFACE))
                return 0;
        if (sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "{sv}") < 0)
                return 0;
        while (sd_bus_message_enter_container(m, SD_BUS_TYPE_DICT_ENTRY, "sv") > 0) {
                if (sd_bus_message_read(m, "s", &key) < 0)
                        return 0;
                if (streq(key, "BytesDone")) {
                        if (sd_bus_message_read(m, "v", "t", &j->bytes_done) < 0)
                                return 0;
                } else if (sd_bus_message_skip(m, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(m) < 0)
                        return 0;
        }
        return 0;
}

static void replay_pending(BusJobs *js)
{
        size_t k = 0;

        for (size_t i = 0; i < js->n_pending; i++) {
                sd_bus_message *m = js->pending[i];
                const char *path;

                if (sd_bus_message_rewind(m, true) < 0 || sd_bus_message_read(m, "o", &path) < 0 ||
                    !job_by_path(js, path)) {
                        js->pending[k++] = m;
                        continue;
                }
                (void)sd_bus_message_rewind(m, true);
                (void)handle_signal(js, m);
                sd_bus_message_unref(m);
        }
        js->n_pending = k;
}

int bus_job_placed(BusJobs *js, BusJob *j, const char *path, uint32_t first, const size_t *items, size_t n)
{
        if (path) {
                j->path = strdup(path);
                if (!j->path)
                        return -ENOMEM;
        }
        if ((size_t)first + n > j->n_alloc) {
                size_t na = MAX((size_t)first + n, j->n_alloc * 2);
                size_t *ni = reallocarray(j->items, na, sizeof(size_t));

                if (!ni)
                        return -ENOMEM;
                for (size_t k = j->n_alloc; k < na; k++)
                        ni[k] = SIZE_MAX;
                j->items = ni;
                j->n_alloc = na;
        }
        for (size_t k = 0; k < n; k++)
                j->items[first + k] = items[k];
        j->n_items = MAX(j->n_items, (size_t)first + n);
        if (path)
                replay_pending(js);
        replay_orphans(js, j);
        return 0;
}

uint64_t bus_jobs_bytes_done(const BusJobs *js)
{
        uint64_t done = js->bytes_finished;

        /* The jobs' BytesDone, where PropertiesChanged is watched. */
        for (const BusJob *j = js->list; j; j = j->next)
                if (!j->finished && j->bytes_done > j->bytes_delivered)
                        done += j->bytes_done - j->bytes_delivered;
        return done;
}

/* The bus refused a match: the run would wait for results that never come. */
static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusJobs *js = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e && js->error == 0) {
                js->error = -sd_bus_error_get_errno(e) ?: -EIO;
                bus_wake(js->wake);
        }
        return 0;
}

int bus_jobs_init(BusJobs *js, Feed *feed, BusPeer *peer, bool watch_progress, sd_bus_error *ret_error)
{
        int r;

        *js = (BusJobs){ .feed = feed, .peer = peer, .ret_error = ret_error };
        r = sd_bus_match_signal_async(peer->bus, &js->s_sig, peer->daemon, FHASH_MANAGER_PATH,
                                      FHASH_MANAGER_INTERFACE, NULL, on_signal, on_match_installed, js);
        if (r >= 0 && watch_progress)
                r = sd_bus_match_signal_async(peer->bus, &js->s_props, peer->daemon, NULL,
                                              "org.freedesktop.DBus.Properties", "PropertiesChanged", on_properties,
                                              on_match_installed, js);
        return r < 0 ? r : 0;
}

void bus_jobs_done(BusJobs *js)
{
        js->s_sig = sd_bus_slot_unref(js->s_sig);
        js->s_props = sd_bus_slot_unref(js->s_props);
        while (js->list) {
                BusJob *j = js->list;

                js->list = j->next;
                free(j->path);
                free(j->items);
                free(j);
        }
        for (size_t i = 0; i < js->n_pending; i++)
                sd_bus_message_unref(js->pending[i]);
        js->pending = mfree(js->pending);
        js->n_pending = 0;
        js->redo = mfree(js->redo);
        js->redo_head = js->n_redo = js->redo_alloc = 0;
        for (size_t i = 0; i < js->n_orphans; i++) {
                free(js->orphans[i].message);
                free(js->orphans[i].hex);
        }
        js->orphans = mfree(js->orphans);
        js->n_orphans = 0;
}
