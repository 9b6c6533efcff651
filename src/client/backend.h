/* SPDX-License-Identifier: MIT */
/* backend.h: what hashes a run's inputs, behind one table of operations (as fio's ioengines) */
#pragma once

#include <stdint.h>
#include <systemd/sd-bus.h>

#include "client/bus-connect.h"
#include "client/feed.h"

/*
 * A run (run.c) knows its backend only through these operations. Each backend takes the inputs to
 * hash from the run's Feed as it has room for them and answers each there (feed_answer()); the
 * feed checks, opens and orders. local.c hashes with the engine in this process, bus-run.c through
 * fhashd. A backend's state is its own (void *).
 */
typedef struct BackendArgs {
        Feed *feed;            /* the run's inputs and results */
        const RunOptions *options;
        sd_bus *bus;           /* through fhashd: the connection (the client's; not taken) */
        sd_bus_error *error;   /* through fhashd: what fhashd said when a step fails */
        /* Through fhashd, resuming (RunOptions.resume): where fhashd is found again, and the
         * client's connection, which a run that connected again replaces with its own. */
        const BusTarget *target;
        sd_bus **client_bus;
} BackendArgs;

typedef struct BackendOps {
        const char *name;
        /* Sets up (nothing is hashed yet); the args must outlive the backend. 0, or -errno. */
        int (*start)(const BackendArgs *args, void **ret);
        /* Does what is ready, waiting up to timeout_usec for it (0: not at all): 1 while the run goes
         * on, 0 once every input was answered (and fhashd's calls answered), or -errno: the bus's
         * -ENOTCONN says that fhashd went and none can be reached again (run.c may go on
         * in-process with the inputs not answered). */
        int (*step)(void *b, uint64_t timeout_usec);
        /* The fd to poll between steps, or -EAGAIN while there is none (then get_timeout is now). */
        int (*get_fd)(void *b);
        /* The poll(2) events to wait for on it. */
        int (*get_events)(void *b);
        /* When to step at the latest, whatever the fd says (CLOCK_MONOTONIC, µs; UINT64_MAX: only when
         * the fd says). */
        uint64_t (*get_timeout)(void *b);
        /* The bytes of the files done, and of those known so far (done or being hashed). */
        void (*progress)(void *b, uint64_t *ret_bytes_done, uint64_t *ret_bytes_total);
        /* Stops hashing: the files being hashed end cancelled (through fhashd: its jobs are
         * cancelled), and the rest of the inputs are answered cancelled; step goes on until every
         * input is answered. */
        void (*cancel)(void *b);
        void (*free)(void *b);
} BackendOps;

extern const BackendOps backend_local;
extern const BackendOps backend_bus;
