/* SPDX-License-Identifier: MIT */
/* bus-alone.h: a run's inputs that go alone or wait: pipes and devices in a job of their own, FIFOs
 * parked (their fd in the run's epoll set) until their writer comes, files under a lease opened again
 * a little later */
#pragma once

#include "client/bus-run-state.h"

/* An fd of its own in a job of its own. Takes fd. */
int bus_alone_send(Bus *c, size_t item, int fd, uint64_t size);
/* What the run remembers of an input it opened: a stream (not read twice), a size (counted once). */
void bus_run_note_opened(Bus *c, size_t item, uint64_t size);
/* Input item waits: a FIFO for its writer (fd), or a file for its lease (fd -EBADF). Takes fd. */
int bus_alone_park(Bus *c, size_t item, int fd);
/* Opens input item: 1 with its fd (the caller's) and size; 0 when it was parked (a FIFO without its
 * writer, a file under a lease) or answered with the open's error; -errno. */
int bus_alone_try_open(Bus *c, size_t item, int *ret_fd, uint64_t *ret_size);
/* The same, and what opened is sent alone. */
int bus_alone_open(Bus *c, size_t item);
/* The parked inputs that can go now, sent. */
int bus_alone_unpark(Bus *c);
/* Every parked input answered with o, its fd closed. */
void bus_alone_answer_parked(Bus *c, const Outcome *o);
