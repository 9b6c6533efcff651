/* SPDX-License-Identifier: MIT */
/* bus-client.h: libfhash's side of org.fhash.Hasher1: the direct connection, HashFds/AddFds, jobs, results */
#pragma once

#include <stdbool.h>
#include <stdio.h>
#include <systemd/sd-bus.h>

#include "client/runner.h"
#include "protocol/bus.h"

/*
 * Swaps *bus for a direct connection to fhashd (its OpenConnection(): a socketpair with a private
 * D-Bus connection, so that fds do not pass through dbus-daemon) and closes the bus connection.
 * Returns 1 if it did, 0 if fhashd does not offer one (an older fhashd) or refused (Busy): *bus is
 * then unchanged and works as before. bus_client_start() works on either.
 */
int bus_client_open_direct(sd_bus **bus);

/*
 * Hashes the items of source through fhashd, pulling them as the window below has room, so that a
 * directory walk goes on while fhashd hashes what it found first. The client opens every file itself
 * and passes fds, FHASH_MAX_FDS_PER_CALL
 * per call. All the files of a run (up to 65,536, of one algorithm) go to one job: HashFds with the
 * "more" option opens it, pipelined AddFds calls feed it, the last one (or a Close()) closes it. At
 * most 1,024 files are in flight (sent, no result yet): each is an fd fhashd holds open until the file
 * is hashed. A Busy answer (a per-uid quota) sends the call again once some of our files are done. A
 * pipe or device goes into a job of its own with "max-size". Expected digests are passed as the
 * "expected" option, so the daemon compares and reports Mismatch. ro sets "dontcache" and "strategy"
 * on every job. Results are delivered to fn in input order.
 *
 * An older fhashd without open jobs refuses "more" (InvalidArgs) or AddFds (UnknownMethod): then each
 * call is a job of its own, 8 at a time, as before.
 *
 * Race-freedom: the match for FilesHashed/JobFinished is added (synchronously, so dbus-daemon has it)
 * before the first call, and signals for a job path not known yet (its HashFds reply not processed)
 * are kept and replayed once the reply names the job, so no result can be lost whatever the order.
 */
/* The run above, in steps on the caller's loop: start sets up (the matches, synchronously),
 * step does what is ready, waiting up to timeout_usec for the bus (0: not at all), and returns 1
 * while the run goes on, 0 once every item was delivered and every call answered, or -errno (error,
 * given to start, says why); the caller polls sd_bus_get_fd() of the bus for sd_bus_get_events()
 * in between. The source, options and error must outlive the run. */
typedef struct BusClient BusClient;
int bus_client_start(sd_bus *bus, const RunSource *source, const RunReadOptions *ro, RunResultFn fn,
                     void *userdata, sd_bus_error *error, BusClient **ret);
int bus_client_step(BusClient *c, uint64_t timeout_usec);
sd_bus *bus_client_get_bus(BusClient *c);
/* Stops the run: fhashd's jobs are cancelled, the rest of the source is answered cancelled; step
 * goes on until every item is delivered. */
void bus_client_cancel_run(BusClient *c);
/* Files and bytes done so far, and the totals known. */
void bus_client_get_progress(BusClient *c, ProgressState *ret);
BusClient *bus_client_free(BusClient *c);
