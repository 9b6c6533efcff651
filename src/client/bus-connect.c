/* SPDX-License-Identifier: MIT */
/* bus-connect.c: the direct connection to fhashd, and watching it */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "client/bus-connect.h"
#include "fhash/fhash-dbus.h"

int bus_open_direct(sd_bus **bus)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *direct = NULL;
        int fd, r;

        r = sd_bus_call_method(*bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "OpenConnection",
                               &error, &reply, "a{sv}", 0);
        if (r < 0)
                return 0;
        r = sd_bus_message_read_basic(reply, SD_BUS_TYPE_UNIX_FD, &fd);
        if (r <= 0)
                return 0;
        /* The message owns fd: the connection gets its own copy. */
        fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return 0;
        r = sd_bus_new(&direct);
        if (r >= 0)
                r = sd_bus_set_fd(direct, fd, fd);
        if (r < 0) {
                (void)close(fd);
                return 0;
        }
        r = sd_bus_negotiate_fds(direct, true);
        if (r >= 0)
                r = sd_bus_start(direct);
        if (r < 0)
                return 0;
        /* fd passing is what the connection is for: a server that did not agree to it is no use. */
        if (sd_bus_can_send(direct, SD_BUS_TYPE_UNIX_FD) <= 0)
                return 0;
        sd_bus_flush_close_unref(*bus);
        *bus = TAKE_PTR(direct);
        return 1;
}

void bus_wake(BusWake *w)
{
        uint64_t one = 1;

        if (!w || w->stepping || w->woken || w->fd < 0)
                return;
        /* An eventfd's counter only fails to take 1 at UINT64_MAX - 1: nothing is lost. */
        if (write(w->fd, &one, sizeof(one)) == (ssize_t)sizeof(one))
                w->woken = true;
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusPeer *p = userdata;
        const char *name, *old, *new;

        /* Only the fhashd we know can go: while a new connection waits for its Ping, the name may
         * change hands (an fhashd stopping, one being activated) and none of that is ours yet. */
        if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0)
                return 0;
        if (streq(name, FHASH_BUS_NAME) && p->daemon && streq(old, p->daemon)) {
                p->gone = true;
                bus_wake(p->wake);
        }
        return 0;
}

/* The direct connection closed under us: fhashd exited. */
static int on_disconnected(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusPeer *p = userdata;

        p->gone = true;
        bus_wake(p->wake);
        return 0;
}

/* The bus refused the watch (AddMatch): fhashd's going could not be seen, so it counts as gone. */
static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusPeer *p = userdata;

        if (sd_bus_message_is_method_error(m, NULL)) {
                p->gone = true;
                bus_wake(p->wake);
        }
        return 0;
}

static int watch_name(BusPeer *p, bool async)
{
        if (async)
                return sd_bus_match_signal_async(p->bus, &p->slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                 "org.freedesktop.DBus", "NameOwnerChanged", on_owner_changed,
                                                 on_match_installed, p);
        return sd_bus_match_signal(p->bus, &p->slot, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                   "org.freedesktop.DBus", "NameOwnerChanged", on_owner_changed, p);
}

/* On a direct connection there is no driver to ask: the match is sd-bus's own, nothing is sent. */
static int watch_direct(BusPeer *p)
{
        return sd_bus_match_signal(p->bus, &p->slot, NULL, "/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
                                   "Disconnected", on_disconnected, p);
}

int bus_peer_watch(BusPeer *p, sd_bus *bus)
{
        int r;

        *p = (BusPeer){ .bus = sd_bus_ref(bus) };
        /* On a direct connection fhashd is the only one there: no names, no driver, no sender. */
        if (sd_bus_is_bus_client(bus) > 0) {
                _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
                const char *unique;

                p->dest = FHASH_BUS_NAME;
                r = sd_bus_get_name_creds(bus, FHASH_BUS_NAME, SD_BUS_CREDS_UNIQUE_NAME, &creds);
                if (r < 0)
                        return r;
                r = sd_bus_creds_get_unique_name(creds, &unique);
                if (r < 0)
                        return r;
                p->daemon = strdup(unique);
                if (!p->daemon)
                        return -ENOMEM;
                return watch_name(p, false);
        }
        return watch_direct(p);
}

void bus_peer_unwatch(BusPeer *p)
{
        p->slot = sd_bus_slot_unref(p->slot);
        p->daemon = mfree(p->daemon);
        p->bus = sd_bus_unref(p->bus);
}

bool bus_peer_sent(const BusPeer *p, sd_bus_message *m)
{
        return streq_ptr(sd_bus_message_get_sender(m), p->daemon);
}

bool bus_peer_reply_says_gone(const BusPeer *p, sd_bus_message *m)
{
        const char *sender = sd_bus_message_get_sender(m);

        /* The connection is closing (fhashd's direct socket, or the bus, hung up): sd-bus answers
         * every call still waiting with a NoReply of its own ("Connection terminated"). */
        if (sd_bus_is_open(p->bus) <= 0)
                return true;
        if (!p->daemon || bus_peer_sent(p, m))
                return false;
        /* The bus: the fhashd the call went to exited before it answered, or the name has nobody (its
         * other errors, LimitsExceeded for a full queue or AccessDenied, are errors of the call). */
        if (streq_ptr(sender, "org.freedesktop.DBus"))
                return sd_bus_message_is_method_error(m, SD_BUS_ERROR_NO_REPLY) ||
                       sd_bus_message_is_method_error(m, SD_BUS_ERROR_SERVICE_UNKNOWN) ||
                       sd_bus_message_is_method_error(m, SD_BUS_ERROR_NAME_HAS_NO_OWNER);
        /* Another fhashd, activated in its place, answered a call to the name. sd-bus's own errors
         * (a call that timed out) have no sender. */
        return sender != NULL;
}

typedef enum DialState {
        DIAL_PING,      /* Ping through the name: activates fhashd, says who has the name */
        DIAL_STATE,     /* is the fhashd that answered stopping? */
        DIAL_STOPPING,  /* yes: until it has gone, then the name again */
        DIAL_OPEN,      /* OpenConnection() */
        DIAL_DIRECT,    /* the direct connection authenticating */
        DIAL_DONE,
        DIAL_FAILED,
} DialState;

/* fhashds that go or stop (answering the Ping while they stop) in a row while one is being reached:
 * past this many the dial gives up. */
#define DIAL_STOPPING_MAX 8

struct BusDial {
        const BusTarget *target;
        BusPeer peer;        /* the new connection, and who answered on it */
        sd_bus *direct;      /* DIAL_DIRECT: starting */
        sd_bus_slot *call;   /* the call whose answer is awaited */
        DialState state;
        unsigned stopping;   /* fhashds that went or stopped while being reached */
        int error;           /* DIAL_FAILED: -errno */
        char *why;           /* DIAL_FAILED: for people */
};

BusDial *bus_dial_free(BusDial *d)
{
        if (!d)
                return NULL;
        d->call = sd_bus_slot_unref(d->call);
        sd_bus_close_unref(d->direct);
        if (d->peer.bus)
                sd_bus_close(d->peer.bus);
        bus_peer_unwatch(&d->peer);
        free(d->why);
        return mfree(d);
}

static void dial_fail(BusDial *d, int r, const sd_bus_error *e)
{
        if (d->state == DIAL_FAILED)
                return;
        d->state = DIAL_FAILED;
        d->error = r < 0 ? r : -ENOTCONN;
        free(d->why);
        d->why = bus_explain_open_error(d->target->kind, d->target->address, d->error, e);
}

static void dial_ping(BusDial *d);

/* Too many fhashds went (or stopped) one after the other while the run tried to reach one. */
static void dial_give_up(BusDial *d)
{
        dial_fail(d, -ECONNRESET, NULL);
        free(d->why);
        if (asprintf(&d->why, "fhashd went away %u times in a row while it was being reached", d->stopping) < 0)
                d->why = NULL;
}

/* The fhashd that had the name went while it was asked (it answered nothing, NoReply, or its unique
 * name is gone): the name is asked again, which activates the next one, a few times at most. */
static void dial_again(BusDial *d)
{
        if (++d->stopping <= DIAL_STOPPING_MAX) {
                dial_ping(d);
                return;
        }
        dial_give_up(d);
}

/* A reply on the dial's bus that says the fhashd asked has gone: from the bus (NoReply when it exited
 * without answering, ServiceUnknown for a unique name gone, ...) or from another fhashd. */
static bool dial_reply_says_gone(const BusDial *d, sd_bus_message *m)
{
        return (d->peer.daemon && bus_peer_reply_says_gone(&d->peer, m)) ||
               sd_bus_message_is_method_error(m, SD_BUS_ERROR_NO_REPLY);
}

static int on_ping(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

static void dial_ping(BusDial *d)
{
        int r;

        d->state = DIAL_PING;
        d->peer.gone = false;
        d->peer.daemon = mfree(d->peer.daemon);
        r = sd_bus_call_method_async(d->peer.bus, &d->call, FHASH_BUS_NAME, FHASH_MANAGER_PATH,
                                     "org.freedesktop.DBus.Peer", "Ping", on_ping, d, NULL);
        if (r < 0)
                dial_fail(d, r, NULL);
}

/* Connected: through the bus, or OpenConnection() refused (Busy) or failed and the bus will do. */
static void dial_done(BusDial *d)
{
        d->direct = sd_bus_close_unref(d->direct);
        d->state = DIAL_DONE;
}

static int on_open(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusDial *d = userdata;
        _cleanup_close_ int fd = -EBADF;
        int r, mfd;

        d->call = sd_bus_slot_unref(d->call);
        if (sd_bus_message_is_method_error(m, NULL) || sd_bus_message_read_basic(m, SD_BUS_TYPE_UNIX_FD, &mfd) <= 0) {
                dial_done(d);
                return 0;
        }
        /* The message owns its fd: the connection gets a copy. */
        fd = fcntl(mfd, F_DUPFD_CLOEXEC, 3);
        r = fd < 0 ? -errno : sd_bus_new(&d->direct);
        if (r >= 0)
                r = sd_bus_set_fd(d->direct, fd, fd);
        if (r >= 0) {
                TAKE_FD(fd);
                r = sd_bus_negotiate_fds(d->direct, true);
        }
        if (r >= 0)
                r = sd_bus_start(d->direct);
        if (r < 0)
                dial_done(d);
        else
                d->state = DIAL_DIRECT;
        return 0;
}

/* Past the Ping and the stopping check: the direct connection, where wanted. */
static void dial_connect(BusDial *d)
{
        int r;

        if (!d->target->direct) {
                dial_done(d);
                return;
        }
        d->state = DIAL_OPEN;
        r = sd_bus_call_method_async(d->peer.bus, &d->call, d->peer.daemon, FHASH_MANAGER_PATH,
                                     FHASH_MANAGER_INTERFACE, "OpenConnection", on_open, d, "a{sv}", 0);
        if (r < 0)
                dial_done(d);
}

static int on_state(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusDial *d = userdata;
        const char *state = NULL;

        d->call = sd_bus_slot_unref(d->call);
        /* It went between the two calls: ask the name again. */
        if (dial_reply_says_gone(d, m)) {
                dial_again(d);
                return 0;
        }
        /* An fhashd without the property (older) is not stopping for all it says. Stopping: its going
         * (NameOwnerChanged) is waited for, then the name asked again. */
        if (!sd_bus_message_is_method_error(m, NULL) && sd_bus_message_read(m, "v", "s", &state) > 0 &&
            streq(state, "stopping")) {
                if (++d->stopping > DIAL_STOPPING_MAX)
                        dial_give_up(d);
                else
                        d->state = DIAL_STOPPING;
                return 0;
        }
        dial_connect(d);
        return 0;
}

static int on_ping(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        BusDial *d = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        int r;

        d->call = sd_bus_slot_unref(d->call);
        /* The fhashd that had the name exited while the Ping waited for it (a restart): the name
         * again, which activates the next. */
        if (dial_reply_says_gone(d, m)) {
                dial_again(d);
                return 0;
        }
        if (e) {
                dial_fail(d, -sd_bus_error_get_errno(e), e);
                return 0;
        }
        d->peer.daemon = strdup(sd_bus_message_get_sender(m) ?: "");
        if (!d->peer.daemon) {
                dial_fail(d, -ENOMEM, NULL);
                return 0;
        }
        /* An fhashd still answers Ping while it stops (its jobs cancelled, its name kept until it
         * exits): one that says so is waited out rather than sent files it would refuse. */
        d->state = DIAL_STATE;
        r = sd_bus_call_method_async(d->peer.bus, &d->call, d->peer.daemon, FHASH_MANAGER_PATH,
                                     "org.freedesktop.DBus.Properties", "Get", on_state, d, "ss",
                                     FHASH_MANAGER_INTERFACE, "State");
        if (r < 0)
                dial_fail(d, r, NULL);
        return 0;
}

int bus_dial_new(const BusTarget *t, BusDial **ret)
{
        BusDial *d = calloc(1, sizeof(*d));
        sd_bus *bus = NULL;
        int r;

        if (!d)
                return -ENOMEM;
        *d = (BusDial){ .target = t };
        /* sd-bus connects and authenticates as the connection is processed: nothing waits here. */
        r = bus_open(t->kind, t->address, NULL, &bus);
        if (r < 0) {
                dial_fail(d, r, NULL);
                *ret = d;
                return d->why ? 0 : (bus_dial_free(d), -ENOMEM);
        }
        d->peer = (BusPeer){ .bus = bus, .dest = FHASH_BUS_NAME };
        /* The watch before the Ping: the bus has it before the Ping is answered, so that the
         * fhashd which answers cannot go unseen. */
        r = watch_name(&d->peer, true);
        if (r < 0)
                dial_fail(d, r, NULL);
        else
                dial_ping(d);
        if (d->state == DIAL_FAILED && !d->why) {
                bus_dial_free(d);
                return -ENOMEM;
        }
        *ret = d;
        return 0;
}

/* The direct connection is up: it replaces the bus connection, which goes with its watch. */
static void dial_switch_direct(BusDial *d)
{
        int r;

        if (sd_bus_can_send(d->direct, SD_BUS_TYPE_UNIX_FD) <= 0) {
                dial_done(d);
                return;
        }
        d->peer.slot = sd_bus_slot_unref(d->peer.slot);
        d->peer.daemon = mfree(d->peer.daemon);
        d->peer.dest = NULL;
        sd_bus_close_unref(d->peer.bus);
        d->peer.bus = TAKE_PTR(d->direct);
        r = watch_direct(&d->peer);
        if (r < 0)
                dial_fail(d, r, NULL);
        else
                d->state = DIAL_DONE;
}

int bus_dial_step(BusDial *d, char **ret_why)
{
        for (;;) {
                sd_bus *b = d->direct ?: d->peer.bus;
                int r;

                if (d->state == DIAL_FAILED) {
                        *ret_why = TAKE_PTR(d->why);
                        return d->error;
                }
                if (d->state == DIAL_DONE)
                        return 0;
                r = sd_bus_process(b, NULL);
                if (r < 0) {
                        /* A direct connection that broke while it authenticated: the bus will do. */
                        if (d->direct)
                                dial_done(d);
                        else
                                dial_fail(d, r, NULL);
                        continue;
                }
                if (d->state == DIAL_STOPPING && d->peer.gone) {
                        dial_ping(d);
                        continue;
                }
                if (d->state == DIAL_DIRECT && sd_bus_is_ready(d->direct) > 0) {
                        dial_switch_direct(d);
                        continue;
                }
                if (r == 0)
                        return 1;
        }
}

int bus_dial_get_fd(const BusDial *d)
{
        sd_bus *b = d->direct ?: d->peer.bus;

        return b ? sd_bus_get_fd(b) : -EAGAIN;
}

int bus_dial_get_events(const BusDial *d)
{
        sd_bus *b = d->direct ?: d->peer.bus;

        return b ? sd_bus_get_events(b) : 0;
}

uint64_t bus_dial_get_timeout(const BusDial *d)
{
        sd_bus *b = d->direct ?: d->peer.bus;
        uint64_t t = UINT64_MAX;

        if (!b || d->state == DIAL_FAILED || d->state == DIAL_DONE)
                return 0;
        (void)sd_bus_get_timeout(b, &t);
        return t;
}

void bus_dial_take(BusDial *d, BusPeer *p)
{
        *p = d->peer;
        d->peer = (BusPeer){};
        if (p->slot)
                (void)sd_bus_slot_set_userdata(p->slot, p);
}
