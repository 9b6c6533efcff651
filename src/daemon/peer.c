/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <systemd/sd-id128.h>

#include "daemon/bus-job.h"
#include "daemon/bus-manager.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "daemon/manager.h"
#include "daemon/owner.h"
#include "daemon/peer.h"

Peer *peer_from_bus(Manager *m, sd_bus *bus)
{
        for (Peer *p = m->peers; p; p = p->next)
                if (p->bus == bus)
                        return p;
        return NULL;
}

Peer *peer_free(Peer *p)
{
        Manager *m;

        if (!p)
                return NULL;
        m = p->manager;
        LIST_REMOVE(m->peers, p);
        if (m->n_peers > 0)
                m->n_peers--;
        /* Inside the connection's own Disconnected handler sd-bus still holds a reference: the bus
         * goes away when that returns. */
        sd_bus_flush_close_unref(p->bus);
        free(p->name);
        free(p);
        return NULL;
}

void peer_check_backlog(Manager *m, sd_bus *bus)
{
        uint64_t queued = 0;
        Peer *p;
        int fd;

        if (bus == m->bus || sd_bus_get_n_queued_write(bus, &queued) < 0 || queued <= PEER_BACKLOG_MAX)
                return;
        p = peer_from_bus(m, bus);
        fd = sd_bus_get_fd(bus);
        if (!p || p->cut_off || fd < 0)
                return;
        p->cut_off = true;
        log_warning("Direct connection %s (uid %u) does not read its messages (%" PRIu64 " queued); closing it.",
                    p->name, (unsigned)p->uid, queued);
        /* sd-bus sees the end of the socket on its next turn and reports Disconnected, which
         * cancels the jobs; closing it from in here would free jobs under our callers. */
        (void)shutdown(fd, SHUT_RDWR);
}

void peer_flush_all(Manager *m)
{
        uint64_t deadline = now_usec() + PEER_FLUSH_USEC;

        /* Not sd_bus_flush(): it waits without end for a connection still in its handshake, and for
         * a client that stopped reading. A connection that is not ready has no jobs, hence nothing
         * of ours queued. */
        for (Peer *p = m->peers, *next; p; p = next) {
                /* Processing may run p's Disconnected handler, which frees p but not its bus. */
                _cleanup_(sd_bus_unrefp) sd_bus *bus = sd_bus_ref(p->bus);
                uint64_t queued = 0, now;

                next = p->next;
                if (sd_bus_is_ready(bus) <= 0)
                        continue;
                while (sd_bus_get_n_queued_write(bus, &queued) >= 0 && queued > 0 && (now = now_usec()) < deadline) {
                        if (sd_bus_process(bus, NULL) < 0)
                                break;
                        if (sd_bus_wait(bus, deadline - now) < 0)
                                break;
                }
        }
}

/* The client closed its end (or never finished the handshake within sd-bus's auth timeout): its
 * jobs end as a bus client's do when it disconnects. */
static int on_disconnected(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
        Peer *p = userdata;
        Manager *m = p->manager;

        log_debug("Direct connection %s closed.", p->name);
        owner_disconnected(m, p->name);
        peer_free(p);
        manager_check_idle(m);
        return 0;
}

/* Takes fd, whatever happens. */
static int peer_start(Peer *p, int fd)
{
        Manager *m = p->manager;
        sd_id128_t id;
        int r;

        /* The bus owns fd once sd_bus_set_fd() took it; until then it is ours to close. */
        r = sd_bus_new(&p->bus);
        if (r >= 0)
                r = sd_bus_set_fd(p->bus, fd, fd);
        if (r < 0) {
                (void)close(fd);
                return r;
        }
        (void)sd_bus_set_description(p->bus, p->name);
        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        r = sd_bus_set_server(p->bus, true, id);
        if (r < 0)
                return r;
        /* Both ends are ours, so SO_PEERCRED names fhashd: the client's EXTERNAL uid could never
         * match it. Who the client is was settled by OpenConnection() on the bus (p->uid). */
        r = sd_bus_set_anonymous(p->bus, true);
        if (r < 0)
                return r;
        r = sd_bus_negotiate_fds(p->bus, true);
        if (r < 0)
                return r;
        r = sd_bus_start(p->bus);
        if (r < 0)
                return r;
        r = bus_manager_register(m, p->bus);
        if (r < 0)
                return r;
        r = bus_job_register(m, p->bus);
        if (r < 0)
                return r;
        /* On a connection without a bus driver a match is a local filter: no AddMatch is sent. */
        r = sd_bus_match_signal(p->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_disconnected, p);
        if (r < 0)
                return r;
        return sd_bus_attach_event(p->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
}

int peer_new(Manager *m, const char *opener, uid_t uid, Peer **ret, int *ret_fd)
{
        unsigned same_uid = 0;
        int sv[2] = { -EBADF, -EBADF };
        Peer *p;
        int r;

        for (Peer *q = m->peers; q; q = q->next)
                if (q->uid == uid)
                        same_uid++;
        if (m->n_peers >= PEERS_MAX || same_uid >= PEERS_MAX_PER_UID)
                return -EBUSY;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->manager = m;
        p->uid = uid;
        p->id = m->next_peer_id++;
        if (asprintf(&p->name, "%s/direct/%" PRIu64, opener, p->id) < 0) {
                p->name = NULL;
                free(p);
                return -ENOMEM;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
                r = -errno;
                free(p->name);
                free(p);
                return r;
        }

        /* Listed first, so that peer_free() can undo a half-made one. */
        LIST_PREPEND(m->peers, p);
        m->n_peers++;

        r = peer_start(p, sv[0]);
        if (r < 0) {
                (void)close(sv[1]);
                peer_free(p);
                return r;
        }
        *ret = p;
        *ret_fd = sv[1];
        return 0;
}
