/* SPDX-License-Identifier: MIT */
/* peer.c: direct (peer-to-peer) D-Bus connections that fhashd hands out through OpenConnection() */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <systemd/sd-id128.h>

#include "basic/log.h"
#include "basic/time-util.h"
#include "daemon/gate.h"
#include "daemon/owner.h"
#include "daemon/peer.h"

Peer *peer_free(Peer *p)
{
        if (!p)
                return NULL;
        registry_remove_peer(&p->context->registry, &p->entry);
        sd_event_source_disable_unref(p->handshake_kick);
        /* Inside the connection's own Disconnected handler sd-bus still holds a reference: the bus
         * goes away when that returns. sd_bus_flush() would wait without end on a connection still
         * in its handshake whose client keeps its end open (at shutdown, say): that one is closed. */
        if (sd_bus_is_ready(p->bus) > 0)
                sd_bus_flush_close_unref(p->bus);
        else
                sd_bus_close_unref(p->bus);
        gate_free(p->gate);
        free(p->name);
        free(p->creds);
        return mfree(p);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Peer *, peer_free);

bool peer_check_backlog_max(Context *c, sd_bus *bus, uint64_t max)
{
        uint64_t queued = 0;
        PeerEntry *e;
        Peer *p;

        if (bus == c->bus || sd_bus_get_n_queued_write(bus, &queued) < 0 || queued <= max)
                return false;
        e = registry_find_peer(&c->registry, bus);
        if (!e || !e->peer->gate)
                return false;
        if (e->peer->cut_off)
                return true;
        p = e->peer;
        p->cut_off = true;
        log_warning("Direct connection %s (uid %u) does not read its messages (%" PRIu64 " queued); closing it.",
                    p->name, (unsigned)p->uid, queued);
        /* sd-bus sees the end of the socket on its next turn and reports Disconnected, which
         * cancels the jobs; closing it from in here would free jobs under our callers. */
        gate_shutdown(p->gate);
        return true;
}

void peer_check_backlog(Context *c, sd_bus *bus)
{
        (void)peer_check_backlog_max(c, bus, PEER_BACKLOG_MAX);
}

/* Every message a direct client sends is answered: one that sends calls and reads no replies
 * (16,000 GetResults, H5) made fhashd queue 1.1 GB for it. Checked before each is processed. */
static int on_incoming(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Peer *p = userdata;

        /* 1: the message is not processed (the connection is going away). */
        return peer_check_backlog_max(p->context, p->bus, PEER_BACKLOG_MAX) ? 1 : 0;
}

void peer_flush_all(Context *c)
{
        uint64_t deadline = now_usec() + PEER_FLUSH_USEC;
        PeerEntry *e, *next;

        /* Not sd_bus_flush(): it waits without end for a connection still in its handshake, and for
         * a client that stopped reading. A connection that is not ready has no jobs, hence nothing
         * of ours queued. */
        HASH_ITER(hh, c->registry.peers, e, next) {
                /* Processing may run this peer's Disconnected handler, which frees it (and its entry)
                 * but not its bus. */
                _cleanup_(sd_bus_unrefp) sd_bus *bus = sd_bus_ref(e->bus);
                uint64_t queued = 0, now;

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
        Context *c = p->context;

        log_debug("Direct connection %s closed.", p->name);
        owner_disconnected(c, p->name);
        peer_free(p);
        context_clients_changed(c);
        return 0;
}

/* sd-bus (252) reads the handshake's last line, BEGIN, together with whatever the client wrote
 * after it, and leaves those bytes in its read buffer when it starts the connection: nothing wakes
 * the loop for them, so a client that sends its first call right after BEGIN (GDBus does) waited
 * for ever. A post source runs after each turn of the loop in which something happened; until the
 * connection is running and has nothing buffered, it lets sd-bus process what it already holds. */
static int on_handshake_kick(sd_event_source *s, void *userdata)
{
        Peer *p = userdata;
        _cleanup_(sd_bus_unrefp) sd_bus *bus = sd_bus_ref(p->bus);
        int r;

        /* Processing may run the Disconnected handler, which frees p (and this source) but not bus. */
        do
                r = sd_bus_process(bus, NULL);
        while (r > 0);
        if (r < 0 || sd_bus_is_open(bus) <= 0)
                return 0;
        if (sd_bus_is_ready(bus) > 0)
                p->handshake_kick = sd_event_source_disable_unref(p->handshake_kick);
        return 0;
}

static void on_gate_violation(Gate *g, const char *what, void *userdata)
{
        Peer *p = userdata;

        log_warning("Direct connection %s (uid %u) sent %s; closing it.", p->name, (unsigned)p->uid, what);
}

static const GateOps peer_gate_ops = {
        .violation = on_gate_violation,
};

/* Takes fd, whatever happens. sd-bus writes to it and reads what the gate passes on from it. */
static int peer_start(Peer *p, int fd)
{
        Context *c = p->context;
        int inner[2] = { -EBADF, -EBADF };
        sd_id128_t id;
        int r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, inner) < 0) {
                r = -errno;
                (void)close(fd);
                return r;
        }
        r = gate_new(c, GATE_SERVER, p->uid, fd, inner[1], inner[0], &peer_gate_ops, p, &p->gate);
        if (r < 0) {
                (void)close(inner[0]);
                (void)close(fd);
                return r;
        }
        /* The bus owns both fds once sd_bus_set_fd() took them; until then they are ours to close. */
        r = sd_bus_new(&p->bus);
        if (r >= 0)
                r = sd_bus_set_fd(p->bus, inner[0], fd);
        if (r < 0) {
                (void)close(inner[0]);
                (void)close(fd);
                return r;
        }
        r = registry_add_peer(&c->registry, &p->entry, p, p->bus, p->name, p->uid);
        if (r != 0)
                return r;
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
        /* On a connection without a bus driver a match is a local filter: no AddMatch is sent. */
        r = sd_bus_match_signal(p->bus, NULL, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                "Disconnected", on_disconnected, p);
        if (r < 0)
                return r;
        r = sd_bus_add_filter(p->bus, NULL, on_incoming, p);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(p->bus, c->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        /* Not flushed by sd-bus when the loop ends: sd_bus_flush() waits for a connection still in its
         * handshake to finish it (up to sd-bus's 90 s), and a client that opened one and never spoke
         * held fhashd's exit that long. peer_flush_all() and peer_free() do it right. */
        r = sd_bus_set_close_on_exit(p->bus, false);
        if (r < 0)
                return r;
        return sd_event_add_post(c->event, &p->handshake_kick, on_handshake_kick, p);
}

int peer_new(Context *c, const char *opener, uid_t uid, Peer **ret, int *ret_fd)
{
        _cleanup_(peer_freep) Peer *p = NULL;
        int sv[2] = { -EBADF, -EBADF };
        int r;

        /* Before anything is made: a refused caller costs nothing. */
        r = user_check(&c->registry.users, uid, USER_RESOURCE_PEERS, 1);
        if (r != 0)
                return r;

        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->context = c;
        p->uid = uid;
        p->id = c->registry.next_peer_id++;
        if (asprintf(&p->name, "%s/direct/%" PRIu64, opener, p->id) < 0) {
                p->name = NULL;
                return -ENOMEM;
        }
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;

        r = peer_start(p, sv[0]);
        if (r != 0) {
                (void)close(sv[1]);
                return r;
        }
        *ret = TAKE_PTR(p);
        *ret_fd = sv[1];
        return 0;
}
