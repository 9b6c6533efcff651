/* SPDX-License-Identifier: MIT */
/* bus-alone.c: a run's inputs that go alone (pipes, devices) or wait (FIFOs, leased files) */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "client/bus-alone.h"

/* An fd of its own in a job of its own (a pipe or a device: the only kind that gets "max-size"; a
 * file that was under a lease goes this way too). Takes fd. */
int bus_alone_send(Bus *c, size_t item, int fd, uint64_t size)
{
        BusCall *call;
        BusJob *j;
        int r;

        r = bus_job_new(&c->jobs, input_kind(feed_input(c->feed, item)), &j);
        call = r >= 0 ? bus_call_new(&c->calls, j, CALL_HASH_FDS) : NULL;
        if (!call) {
                safe_close(fd);
                return r < 0 ? r : -ENOMEM;
        }
        call->stream = size == UINT64_MAX;
        call->idx[call->n++] = item;
        r = bus_call_send(&c->calls, call, &fd);
        if (r < 0)
                bus_call_free(call);
        return r;
}

/* What a backend remembers of an input it opened: a stream (not read twice), a size (counted once). */
void bus_run_note_opened(Bus *c, size_t item, uint64_t size)
{
        uint8_t *fl = feed_flags(c->feed, item);

        if (size == UINT64_MAX)
                *fl |= INPUT_STREAM;
        else if (!(*fl & INPUT_COUNTED)) {
                *fl |= INPUT_COUNTED;
                c->bytes_total += size;
        }
}

/* Input item waits: a FIFO for its writer (fd, O_NONBLOCK, in the epoll set), or a file for its
 * lease (fd -EBADF). Takes fd. */
int bus_alone_park(Bus *c, size_t item, int fd)
{
        Parked *p = &c->parked[c->n_parked];

        *p = (Parked){ .item = item, .fd = fd, .retry_at = now_usec() + LEASE_RETRY_USEC };
        if (fd >= 0 && epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = fd }) < 0) {
                int r = -errno;

                safe_close(fd);
                return r;
        }
        *feed_flags(c->feed, item) |= INPUT_PARKED;
        c->n_parked++;
        return 0;
}

int bus_alone_try_open(Bus *c, size_t item, int *ret_fd, uint64_t *ret_size)
{
        uint64_t size = 0;
        int fd = -EBADF, r;

        r = feed_open(c->feed, item, &fd, &size);
        if (r == FEED_OPEN_FIFO || r == -EWOULDBLOCK) {
                r = bus_alone_park(c, item, fd);
                return r < 0 ? r : 0;
        }
        if (r < 0) {
                bus_jobs_answer(&c->jobs, NULL, item, &(Outcome){ .status = FHASH_ERROR, .error = r });
                return 0;
        }
        bus_run_note_opened(c, item, size);
        *ret_fd = fd;
        *ret_size = size;
        return 1;
}

/* Opens input item and sends it alone, parks it, or answers it with the open's error. */
int bus_alone_open(Bus *c, size_t item)
{
        uint64_t size = 0;
        int fd = -EBADF, r;

        r = bus_alone_try_open(c, item, &fd, &size);
        if (r <= 0)
                return r;
        return bus_alone_send(c, item, fd, size);
}

/* The parked inputs that can go now: FIFOs that poll(2) says are readable (or whose writer came and
 * went), files whose lease retry is due. */
int bus_alone_unpark(Bus *c)
{
        Parked was[PARKED_MAX];
        struct pollfd pfd[PARKED_MAX];
        uint64_t now = now_usec();
        size_t n = c->n_parked;
        int r = 0;

        if (n == 0)
                return 0;
        memcpy(was, c->parked, n * sizeof(Parked));
        for (size_t i = 0; i < n; i++)
                pfd[i] = (struct pollfd){ .fd = was[i].fd, .events = POLLIN };
        if (poll(pfd, n, 0) < 0 && errno != EINTR)
                return -errno;
        /* The list is made anew: those still waiting, and those bus_alone_park() puts back. */
        c->n_parked = 0;
        for (size_t i = 0; i < n; i++) {
                Parked p = was[i];
                bool ready = p.fd >= 0 ? (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0 : now >= p.retry_at;

                if (!ready || r < 0) {
                        c->parked[c->n_parked++] = p;
                        continue;
                }
                *feed_flags(c->feed, p.item) &= (uint8_t)~INPUT_PARKED;
                if (p.fd < 0) {
                        r = bus_alone_open(c, p.item);
                        continue;
                }
                (void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, p.fd, NULL);
                r = feed_fd_blocking(p.fd);
                if (r < 0) {
                        safe_close(p.fd);
                        bus_jobs_answer(&c->jobs, NULL, p.item, &(Outcome){ .status = FHASH_ERROR, .error = r });
                        r = 0;
                        continue;
                }
                bus_run_note_opened(c, p.item, UINT64_MAX);
                r = bus_alone_send(c, p.item, p.fd, UINT64_MAX);
        }
        return r;
}

/* Every parked input answered with o, its fd closed. */
void bus_alone_answer_parked(Bus *c, const Outcome *o)
{
        for (size_t i = 0; i < c->n_parked; i++) {
                if (c->parked[i].fd >= 0) {
                        (void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->parked[i].fd, NULL);
                        safe_close(c->parked[i].fd);
                }
                if (feed_flags(c->feed, c->parked[i].item))
                        *feed_flags(c->feed, c->parked[i].item) &= (uint8_t)~INPUT_PARKED;
                feed_answer(c->feed, c->parked[i].item, o);
        }
        c->n_parked = 0;
}
