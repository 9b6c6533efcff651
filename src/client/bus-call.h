/* SPDX-License-Identifier: MIT */
/* bus-call.h: a run's calls to fhashd (HashFds, AddFds, Close), their replies, and the Busy back-off */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "client/bus-jobs.h"
#include "client/bus-names.h"
#include "fhash/fhash-dbus.h"

typedef enum CallKind {
        CALL_HASH_FDS,  /* makes the job */
        CALL_ADD_FDS,
        CALL_CLOSE,
} CallKind;

typedef struct BusCalls BusCalls;


typedef struct BusCall {
        BusCalls *calls;
        BusJob *job;
        struct BusCall *next;                 /* BusCalls.retry */
        struct BusCall *out_next, *out_prev;  /* BusCalls.out: sent, no reply yet */
        CallKind kind;
        bool more;                            /* "more": the job stays open */
        bool stream;                          /* a pipe or device: "max-size" */
        bool by_name;                         /* HashNames/AddNames: names beneath dirs (bus-names.h) */
        size_t idx[BUS_CALL_INPUTS_MAX];      /* the input of each fd or name sent */
        size_t n;
        NameDirs dirs;                        /* by_name: the names' directories */
        sd_bus_slot *slot;
} BusCall;

struct BusCalls {
        BusJobs *jobs;
        const RunOptions *options;
        sd_bus_error *ret_error;  /* what fhashd said, when a call fails the run */
        unsigned calls_out;       /* calls without a reply */
        BusCall *out;             /* those calls: each is its reply slot's until then, ours when the run goes */
        BusCall *retry, **retry_tail;
        uint64_t retry_at;        /* the first retry goes then, or once a result came back */
        size_t retry_results;
        uint64_t busy_since;      /* the first Busy answer since the last call fhashd took; 0: none */
        uint64_t busy_timeout;    /* usec, UINT64_MAX: wait for ever */
        bool busy_said;
        DirCache dirs;             /* by name (bus-names.h): the last directory opened */
        char busy_reason[256];
};

/* The calls of a run over jobs; the Busy timeout from $FHASHCTL_BUSY_TIMEOUT (seconds, 0: never). */
void bus_calls_init(BusCalls *cs, BusJobs *jobs, const RunOptions *o, sd_bus_error *ret_error);
void bus_calls_done(BusCalls *cs);

BusCall *bus_call_new(BusCalls *cs, BusJob *j, CallKind kind);
void bus_call_free(BusCall *call);
/* Sends call with fds[] (one per call->idx, closed here whatever happens; NULL for a Close and a call
 * by name, whose directories it holds). 0, or
 * -errno (the call is the caller's to free then). */
int bus_call_send(BusCalls *cs, BusCall *call, int fds[]);

/* Nothing more goes to j: it is closed once its calls are answered. */
int bus_job_stop_sending(BusCalls *cs, BusJob *j);

/* Whether a call refused as Busy is waiting, and whether its time has come. */
static inline bool bus_calls_retry_waiting(const BusCalls *cs)
{
        return cs->retry != NULL;
}
bool bus_calls_retry_due(const BusCalls *cs, uint64_t now);
/* Sends the first call refused as Busy again, its files opened anew. 0, or -errno (with
 * jobs->error set when fhashd has been busy for too long). */
int bus_calls_resend(BusCalls *cs);
/* The calls waiting to be sent again are not: their inputs are answered cancelled. */
void bus_calls_cancel_retries(BusCalls *cs);
