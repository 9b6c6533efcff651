/* SPDX-License-Identifier: MIT */
/* bus-run-state.h: what one run through fhashd holds: bus-run.c (the window of files in flight),
 * bus-alone.c (inputs that go alone or wait) and bus-resume.c (its connection, and the next fhashd)
 * share it; no .c of its own */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/backend.h"
#include "client/bus-call.h"

/* Files sent whose result has not come back: each is an fd fhashd holds open (against its
 * RLIMIT_NOFILE) until the file is hashed. Enough to keep its workers busy across our round trips,
 * and results come back in batches of up to 256. */
#define FILES_IN_FLIGHT 1024
/* Files per open job (fhashd allows 2^20): what one job keeps in fhashd's memory, a result per file
 * until the job expires, stays moderate. */
#define FILES_PER_JOB 65536
/* FIFOs waiting for their writers (and files for their leases) at once: each holds an fd of ours. */
#define PARKED_MAX 64
/* A file under a lease: opened again this often while its holder gives it up (lease-break-time). */
#define LEASE_RETRY_USEC (50 * USEC_PER_MSEC)
/* Resuming: connections in a row that fhashd left before a single result came back before the run
 * gives up (a file that makes fhashd crash every time must not loop for ever), and the pause before
 * connecting again after such a one. */
#define RESUME_FRUITLESS_MAX 3
#define RESUME_PAUSE_USEC (250 * USEC_PER_MSEC)

typedef struct Parked {
        size_t item;
        int fd;             /* a FIFO (O_NONBLOCK) until it is readable; -EBADF: a file under a lease */
        uint64_t retry_at;  /* a lease: open it again then */
} Parked;

typedef struct Bus {
        Feed *feed;
        const RunOptions *options;
        sd_bus_error *ret_error;
        const BusTarget *target;   /* FHASH_HASH_RESUME: where fhashd is found again; NULL: not */
        sd_bus **client_bus;       /* the client's connection: a resumed run leaves its own there */
        BusPeer peer;              /* peer.bus NULL while connecting again */
        BusJobs jobs;
        BusCalls calls;
        BusDial *dial;             /* connecting again */
        uint64_t dial_at;          /* connect again then (0: no need) */
        bool replace_client_bus;   /* the connection lost was the client's */
        unsigned fruitless;        /* connections in a row that fhashd left without a result */
        size_t done_at_connect;    /* feed_done() when the connection was made */
        sd_bus_slot *probe;        /* fhashd's State, asked after a cancel not ours */
        bool stopping;             /* ... and it said "stopping": its going is waited for */
        Parked parked[PARKED_MAX];
        size_t n_parked;
        int epfd;                  /* the run's fd: the connection's, the wake's and the parked FIFOs' */
        BusWake wake;
        int ep_fd;                 /* the connection's fd in it (-EBADF: none), with ep_events */
        uint32_t ep_events;
        size_t next;               /* where the next input to send is looked for in the feed */
        size_t window;             /* files in flight at most */
        BusJob *cur;               /* the open job the next files go to */
        uint64_t bytes_total;      /* sizes of the files sent */
        uint64_t bytes_before;     /* bytes of the results of connections before this one */
        bool by_fd_only;           /* $FHASH_BY_FD=1: no file goes by name (bus-names.h) */
        bool stop;                 /* cancelled: nothing more is sent */
        bool done;
} Bus;
