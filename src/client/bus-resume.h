/* SPDX-License-Identifier: MIT */
/* bus-resume.h: a run's connection to fhashd: its fd in the run's epoll set, connecting again, and
 * (FHASH_HASH_RESUME) going on with the next fhashd when one goes away */
#pragma once

#include "client/bus-run-state.h"

/* The connection's fd (or the dial's) in the run's epoll set, with the events it waits for now. */
void bus_run_epoll_update(Bus *c);
/* Before the connection's fd is closed: out of the set while its number is still its own. */
void bus_run_epoll_forget(Bus *c);
/* Connected (again): the jobs and calls set up on the new connection. Returns 0 or -errno. */
int bus_run_connected(Bus *c);
/* No fhashd to go on with: the run fails with Gone (-ENOTCONN), parked FIFOs handed back to the
 * feed for an in-process run. Returns -ENOTCONN. */
int bus_run_give_up(Bus *c, const char *why);
/* Connecting again when its time has come: 1 while it goes on, 0 once connected, or -errno. */
int bus_run_dial_step(Bus *c);
/* fhashd went away: its jobs dropped, the inputs without a result to be sent again. 1, or -errno
 * when the run gives up. */
int bus_run_resume(Bus *c);
