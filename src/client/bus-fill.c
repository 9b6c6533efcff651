/* SPDX-License-Identifier: MIT */
/* bus-fill.c: what goes into a run's next call to fhashd: names while the files go by name, fds
 * otherwise, and first the files fhashd could not hash by name */
#include <errno.h>

#include "basic/macro.h"
#include "client/bus-alone.h"
#include "client/bus-fill.h"
#include "client/bus-names.h"

/* Whether input i goes by name (bus-names.h). */
bool bus_fill_by_name(Bus *c, size_t i)
{
        const Input *in = feed_input(c->feed, i);
        const uint8_t *fl = feed_flags(c->feed, i);

        return !c->jobs.names_off && !c->by_fd_only && in && fl && !(*fl & INPUT_NO_NAME) && in->fd < 0 && bus_names_eligible(in->path);
}

/* Opens input i and adds its fd to call (a pipe or device goes alone, at once; a FIFO without its
 * writer and a file under a lease are parked). */
static int add_fd(Bus *c, BusCall *call, size_t i, int fds[])
{
        uint64_t size = 0;
        int fd = -EBADF, r;

        r = bus_alone_try_open(c, i, &fd, &size);
        if (r <= 0)
                return r;
        if (size == UINT64_MAX)
                return bus_alone_send(c, i, fd, size);
        fds[call->n] = fd;
        call->idx[call->n++] = i;
        return 0;
}

/* Inputs that fhashd could not hash by name, of kind, into call as fds. */
int bus_fill_call_redo(Bus *c, BusCall *call, JobKind kind, size_t room, int fds[])
{
        BusJobs *js = &c->jobs;
        int r;

        room = MIN(room, (size_t)FHASH_MAX_FDS_PER_CALL);
        while (call->n < room && bus_jobs_redo_count(js) > 0 && c->n_parked < PARKED_MAX &&
               kind_eq(input_kind(feed_input(c->feed, bus_jobs_redo_peek(js))), kind)) {
                r = add_fd(c, call, bus_jobs_redo_take(js), fds);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Up to room inputs of kind from c->next into call: names while they go by name (at most
 * BUS_CALL_INPUTS_MAX, beneath at most FHASH_MAX_FDS_PER_CALL directories), else fds (at most
 * FHASH_MAX_FDS_PER_CALL). */
int bus_fill_call(Bus *c, BusCall *call, JobKind kind, size_t room, int fds[])
{
        size_t i;
        int r;

        while (call->n < room && c->n_parked < PARKED_MAX) {
                bool by_name;

                r = feed_next(c->feed, c->next, &i);
                if (r <= 0)
                        return r;
                if (*feed_flags(c->feed, i) & INPUT_PARKED) {
                        c->next = i + 1;
                        continue;
                }
                if (!kind_eq(input_kind(feed_input(c->feed, i)), kind))
                        return 0;
                by_name = bus_fill_by_name(c, i);
                if (call->n > 0 && by_name != call->by_name)
                        return 0;
                if (by_name) {
                        r = bus_names_add(&c->calls.dirs, &call->dirs, call->n, feed_input(c->feed, i)->path);
                        if (r == 0)
                                return 0;
                        if (r > 0) {
                                call->by_name = true;
                                call->idx[call->n++] = i;
                                c->next = i + 1;
                                continue;
                        }
                        /* Its directory cannot be opened: its own open says why, as an fd. */
                        *feed_flags(c->feed, i) |= INPUT_NO_NAME;
                        if (call->by_name)
                                return 0;
                }
                if (call->n >= FHASH_MAX_FDS_PER_CALL)
                        return 0;
                c->next = i + 1;
                r = add_fd(c, call, i, fds);
                if (r < 0)
                        return r;
        }
        return 0;
}
