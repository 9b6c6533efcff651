/* SPDX-License-Identifier: MIT */
/* bus-resume.c: a run's connection to fhashd, connecting again, and resuming with the next fhashd */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/macro.h"
#include "basic/time-util.h"
#include "client/bus-resume.h"
#include "fhash/fhash-dbus.h"

/* The connection's fd in the epoll set, with the events sd-bus (or the dial) waits for now. */
void bus_run_epoll_update(Bus *c)
{
        int fd = -EBADF;
        uint32_t ev = 0;

        if (c->dial) {
                fd = bus_dial_get_fd(c->dial);
                ev = (uint32_t)bus_dial_get_events(c->dial);
        } else if (c->peer.bus) {
                fd = sd_bus_get_fd(c->peer.bus);
                ev = (uint32_t)sd_bus_get_events(c->peer.bus);
        }
        if (fd < 0 || (int)ev < 0) {
                fd = -EBADF;
                ev = 0;
        }
        if (fd != c->ep_fd && c->ep_fd >= 0)
                (void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->ep_fd, NULL);
        else if (fd == c->ep_fd && ev == c->ep_events)
                return;
        if (fd < 0) {
                c->ep_fd = -EBADF;
                return;
        }
        struct epoll_event e = { .events = ev, .data.fd = fd };

        /* POLLIN and POLLOUT are EPOLLIN and EPOLLOUT. A closed fd leaves the set by itself, and a
         * new one may come with its number: MOD then finds nothing and it is added. */
        if (fd == c->ep_fd && epoll_ctl(c->epfd, EPOLL_CTL_MOD, fd, &e) >= 0) {
                c->ep_events = ev;
                return;
        }
        if (epoll_ctl(c->epfd, EPOLL_CTL_ADD, fd, &e) >= 0 ||
            (errno == EEXIST && epoll_ctl(c->epfd, EPOLL_CTL_MOD, fd, &e) >= 0)) {
                c->ep_fd = fd;
                c->ep_events = ev;
        } else
                c->ep_fd = -EBADF;
}

/* Before the connection's fd is closed: out of the set while its number is still its own. */
void bus_run_epoll_forget(Bus *c)
{
        if (c->ep_fd >= 0)
                (void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, c->ep_fd, NULL);
        c->ep_fd = -EBADF;
}

/* Connected (again): the jobs' signals watched on the new connection, which the client keeps too
 * when it lost the same one. */
int bus_run_connected(Bus *c)
{
        int r;

        r = bus_jobs_init(&c->jobs, c->feed, &c->peer, c->options->watch_progress, c->ret_error);
        c->jobs.resume = c->target != NULL;
        c->jobs.cancelling = c->stop;
        c->jobs.wake = c->peer.wake = &c->wake;
        if (r < 0)
                return r;
        bus_calls_init(&c->calls, &c->jobs, c->options, c->ret_error);
        if (c->replace_client_bus && c->client_bus) {
                sd_bus_unref(*c->client_bus);
                *c->client_bus = sd_bus_ref(c->peer.bus);
        }
        c->replace_client_bus = false;
        c->stopping = false;
        c->done_at_connect = feed_done(c->feed);
        return 0;
}

/* No fhashd to go on with: the run fails with Gone (-ENOTCONN; run.c falls back in-process where the
 * client allows it). FIFOs still waiting were never read: their fds go back to the feed, for the
 * in-process run to read from where they are (nothing answers them when the run fails). */
int bus_run_give_up(Bus *c, const char *why)
{
        for (size_t i = 0; i < c->n_parked; i++) {
                Parked *p = &c->parked[i];

                if (feed_flags(c->feed, p->item))
                        *feed_flags(c->feed, p->item) &= (uint8_t)~INPUT_PARKED;
                /* A file under a lease has no fd yet: opened again in-process. */
                if (p->fd < 0)
                        continue;
                (void)epoll_ctl(c->epfd, EPOLL_CTL_DEL, p->fd, NULL);
                feed_keep_fd(c->feed, p->item, p->fd);
        }
        c->n_parked = 0;
        (void)sd_bus_error_setf(c->ret_error, FHASH_ERROR_GONE, "fhashd went away while hashing and cannot be reached again: %s",
                                why ?: "no reason given");
        c->jobs.error = -ENOTCONN;
        return -ENOTCONN;
}

/* Connecting again, when its time has come: 1 while it goes on, 0 once connected, or -errno. */
int bus_run_dial_step(Bus *c)
{
        _cleanup_free_ char *why = NULL;
        int r;

        if (!c->dial) {
                if (now_usec() < c->dial_at)
                        return 1;
                r = bus_dial_new(c->target, &c->dial);
                if (r < 0)
                        return r;
        }
        r = bus_dial_step(c->dial, &why);
        if (r > 0)
                return 1;
        if (r < 0) {
                bus_run_epoll_forget(c);
                c->dial = bus_dial_free(c->dial);
                c->dial_at = 0;
                return bus_run_give_up(c, why);
        }
        bus_dial_take(c->dial, &c->peer);
        c->dial = bus_dial_free(c->dial);
        c->dial_at = 0;
        return bus_run_connected(c);
}

/* Whether input i, sent by name, names a stream (a FIFO fhashd reads as one): fhashd may have read
 * some of it, as of a stream sent as an fd. */
static bool named_stream(Bus *c, size_t i)
{
        const char *path = feed_input(c->feed, i)->path;
        struct stat st;

        return path && stat(path, &st) >= 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

/* fhashd went away (FHASH_HASH_RESUME): what it had is dropped with its connection and its inputs
 * are sent again to the next fhashd, but for streams it had begun to read. 1, or -errno when the run
 * gives up. */
int bus_run_resume(Bus *c)
{
        char why[128];

        c->fruitless = feed_done(c->feed) == c->done_at_connect ? c->fruitless + 1 : 0;
        c->bytes_before += c->jobs.bytes_finished;
        c->replace_client_bus = c->client_bus && *c->client_bus == c->peer.bus;
        c->probe = sd_bus_slot_unref(c->probe);
        bus_calls_done(&c->calls);
        bus_jobs_done(&c->jobs);
        c->jobs = (BusJobs){};
        bus_run_epoll_forget(c);
        /* Closed, not only dropped: whatever jobs another fhashd made for its calls go with it. */
        sd_bus_close(c->peer.bus);
        bus_peer_unwatch(&c->peer);
        c->cur = NULL;
        c->next = feed_head(c->feed);
        for (size_t i = c->next, end = feed_pulled(c->feed); i < end; i++) {
                uint8_t *fl = feed_flags(c->feed, i);

                if (!fl)
                        continue;
                if ((*fl & INPUT_SENT) && ((*fl & INPUT_STREAM) || ((*fl & INPUT_BY_NAME) && named_stream(c, i))))
                        feed_answer(c->feed, i,
                                    &(Outcome){ .status = FHASH_ERROR, .error = -EIO,
                                                .message = "fhashd went away while it read this stream, which cannot be read again" });
                else
                        *fl &= (uint8_t)~(INPUT_IN_FLIGHT | INPUT_SENT | INPUT_HELD);
        }
        if (c->fruitless >= RESUME_FRUITLESS_MAX) {
                (void)snprintf(why, sizeof(why), "it went away %u times in a row before it hashed a file", c->fruitless);
                return bus_run_give_up(c, why);
        }
        c->dial_at = now_usec() + (c->fruitless > 0 ? RESUME_PAUSE_USEC : 0);
        return 1;
}
