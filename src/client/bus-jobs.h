/* SPDX-License-Identifier: MIT */
/* bus-jobs.h: a run's jobs in fhashd, and the signals that bring their results */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "client/bus-connect.h"
#include "client/feed.h"

/* What a job hashes with: inputs go to the same job only when these are equal. */
typedef struct JobKind {
        HashAlgo algo;
        uint32_t out_len;          /* Input.out_len: a "length" of its own, else 0 */
} JobKind;

static inline JobKind input_kind(const Input *in)
{
        return (JobKind){ .algo = in->algo, .out_len = in->out_len };
}

static inline bool kind_eq(JobKind a, JobKind b)
{
        return a.algo == b.algo && a.out_len == b.out_len;
}

typedef struct BusJobs BusJobs;

/* bus-run.c's flags of an input (feed_flags()). */
enum {
        INPUT_IN_FLIGHT = 1u << 0,  /* in fhashd (or in a call to it), no result yet */
        INPUT_PARKED = 1u << 1,     /* a FIFO waiting for its writer, a file for its lease */
        INPUT_COUNTED = 1u << 2,    /* its size is in the run's bytes_total */
        INPUT_SENT = 1u << 3,       /* fhashd took its fd: a stream it began to read cannot go again */
        INPUT_STREAM = 1u << 4,     /* not a regular file: a pipe, a FIFO, a device */
        INPUT_HELD = 1u << 5,       /* cancelled by fhashd, not by us: kept until it is known why */
        INPUT_BY_NAME = 1u << 6,    /* sent as a name (HashNames): a failure sends its fd instead */
        INPUT_NO_NAME = 1u << 7,    /* goes as an fd only */
};

typedef struct BusJob {
        BusJobs *jobs;
        struct BusJob *next;       /* BusJobs.list, newest first */
        char *path;                /* NULL until the HashFds reply names it */
        JobKind kind;
        size_t *items;             /* job index -> input (SIZE_MAX: no reply told it yet) */
        size_t n_items, n_alloc;
        size_t n_sent;             /* files sent to it, answered or not */
        unsigned calls;            /* calls to it without a reply */
        unsigned retries;          /* calls to it waiting to be sent again */
        bool open;                 /* made with "more" and not closed by us */
        bool want_close;           /* nothing more for it: close once its calls are answered */
        bool finished;             /* JobFinished seen */
        bool by_name;              /* made by HashNames: takes AddNames and AddFds (else AddFds only) */
        uint64_t bytes_done;       /* its BytesDone property */
        uint64_t bytes_delivered;  /* sizes of its results answered so far */
} BusJob;

/* A result for an index that no reply has told us yet (fhashd sends none before the reply, but a
 * result must not get lost if one ever does). */
typedef struct Orphan Orphan;

struct BusJobs {
        Feed *feed;
        BusPeer *peer;
        BusJob *list;
        sd_bus_message **pending;  /* signals about a job whose reply has not been processed yet */
        size_t n_pending;
        Orphan *orphans;
        size_t n_orphans;
        sd_bus_slot *s_sig, *s_props;
        size_t files_in_flight;    /* sent (marked in the feed), no result yet */
        size_t results_seen;       /* results that came back, ever: a Busy retry waits for one */
        uint64_t bytes_finished;   /* sizes of the files hashed */
        bool stop;                 /* a job of ours was cancelled by someone else: so is the rest */
        /* FHASH_HASH_RESUME: a cancel that is not ours may be fhashd stopping (a restart, an
         * upgrade), whose files go to the next fhashd: such inputs are held (INPUT_HELD), not
         * answered, until fhashd's State tells (bus-run.c). */
        bool resume;
        bool cancelling;           /* the run was cancelled: cancelled results are ours */
        bool suspect;              /* something of ours was cancelled under us: is fhashd stopping? */
        BusWake *wake;             /* the run's: woken by what another run's processing brought */
        int error;                 /* fatal for the run: stop and return it */
        /* Inputs sent by name that fhashd could not hash (it opens names with our rights, beneath
         * our directory, on its mount only: anything else fails there): each goes again as an fd,
         * whose open says the error if there is one. */
        size_t *redo;              /* in the order they failed: redo[redo_head..n_redo) */
        size_t redo_head, n_redo, redo_alloc;
        bool names_off;            /* fhashd cannot take names: fds from now on */
        bool packed_off;           /* fhashd does not know "packed-results": FilesHashed it is */
        sd_bus_error *ret_error;   /* the run's: what fhashd sent that failed it */
};

/* Subscribes to the jobs' signals (FilesDigested or FilesHashed, JobFinished; PropertiesChanged for progress), from
 * fhashd only. The AddMatch calls go first on the connection, and the bus handles a connection's
 * messages in order: it has the matches before any call that makes a job. 0, or -errno; the caller
 * calls bus_jobs_done() either way. */
int bus_jobs_init(BusJobs *js, Feed *feed, BusPeer *peer, bool watch_progress, sd_bus_error *ret_error);
void bus_jobs_done(BusJobs *js);

int bus_job_new(BusJobs *js, JobKind kind, BusJob **ret);
/* The call that sent items[0..n) was answered: they are the job's files first..first+n (for the
 * HashFds that made it, path names it). Signals and results that waited for this are handled now. */
int bus_job_placed(BusJobs *js, BusJob *j, const char *path, uint32_t first, const size_t *items, size_t n);
/* Answers input item of job j (NULL: of no job) in the feed, and counts it out of the window. */
void bus_jobs_answer(BusJobs *js, BusJob *j, size_t item, const Outcome *o);
/* The inputs waiting to go again as fds (redo_by_fd()), and the first of them, taken. */
static inline size_t bus_jobs_redo_count(const BusJobs *js)
{
        return js->n_redo - js->redo_head;
}

static inline size_t bus_jobs_redo_peek(const BusJobs *js)
{
        return js->redo[js->redo_head];
}

static inline size_t bus_jobs_redo_take(BusJobs *js)
{
        size_t item = js->redo[js->redo_head++];

        if (js->redo_head == js->n_redo)
                js->redo_head = js->n_redo = 0;
        return item;
}

/* Counts item into the window: it is in fhashd now. */
void bus_jobs_sent(BusJobs *js, size_t item, bool by_name);
/* Counts item out of the window without an answer: fhashd did not take it. */
void bus_jobs_unsent(BusJobs *js, size_t item);
/* Counts item out of the window without an answer: its call was lost with fhashd, which may have
 * read it (a stream is not sent again). */
void bus_jobs_lost(BusJobs *js, size_t item);
/* Counts item out of the window, held (INPUT_HELD) rather than answered: fhashd cancelled it and the
 * run did not ask for that. */
void bus_jobs_hold(BusJobs *js, size_t item);
/* The bytes of the files done and, from the jobs' BytesDone, of those being hashed. */
uint64_t bus_jobs_bytes_done(const BusJobs *js);
