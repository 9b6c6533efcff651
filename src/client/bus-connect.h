/* SPDX-License-Identifier: MIT */
/* bus-connect.h: libfhash's connection to fhashd: the direct connection, who fhashd is, when it goes,
 * and connecting to it again */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "protocol/bus.h"

/*
 * Swaps *bus for a direct connection to fhashd (its OpenConnection(): a socketpair with a private
 * D-Bus connection, so that fds do not pass through dbus-daemon) and closes the bus connection.
 * Returns 1 if it did, 0 if fhashd refused (Busy) or the connection could not carry fds: *bus is then
 * unchanged and works as before.
 */
int bus_open_direct(sd_bus **bus);

/* Where a client found fhashd, so that a run can find it again (after a restart, a crash). */
typedef struct BusTarget {
        BusKind kind;
        char *address;  /* BUS_KIND_ADDRESS's */
        bool direct;    /* a direct connection where fhashd offers one */
} BusTarget;

/* Waking a run whose connection another run of the same client processed (the runs of a client share
 * its connection, and sd-bus calls each slot's callback whoever processes): what that run's signals
 * and replies brought was handled there, and now it has to step. */
typedef struct BusWake {
        int fd;          /* an eventfd in the run's epoll set */
        bool stepping;   /* the run is in its own step: it sees what happens */
        bool woken;      /* fd written, not read yet */
} BusWake;

/* Makes the run's fd readable unless it is stepping already. w may be NULL. */
void bus_wake(BusWake *w);

/* fhashd as one run sees it: where calls go, whose signals count, and whether it went away. */
typedef struct BusPeer {
        sd_bus *bus;         /* a reference of the peer's own */
        const char *dest;    /* FHASH_BUS_NAME on a bus; NULL on a direct connection (no names there) */
        char *daemon;        /* fhashd's unique name on a bus: signals from anybody else are ignored */
        sd_bus_slot *slot;   /* NameOwnerChanged of FHASH_BUS_NAME, or the direct connection's Disconnected */
        bool gone;           /* fhashd exited or lost its name: nothing more will come */
        BusWake *wake;       /* the run's (set by it), woken when fhashd goes */
} BusPeer;

/* Finds fhashd on bus and watches it (synchronously: the bus has the match before any call). 0, or
 * -errno; p is the caller's to unwatch either way. */
int bus_peer_watch(BusPeer *p, sd_bus *bus);
void bus_peer_unwatch(BusPeer *p);
/* Whether m is from fhashd. */
bool bus_peer_sent(const BusPeer *p, sd_bus_message *m);
/* Whether m, a reply or an error on p's connection, says that the fhashd p watches is not there any
 * more: the connection is closing (sd-bus's own NoReply for the calls left), or m came from another
 * fhashd (activated in its place), or from the bus (NoReply, ServiceUnknown, NameHasNoOwner). */
bool bus_peer_reply_says_gone(const BusPeer *p, sd_bus_message *m);

/*
 * Connecting to fhashd again without waiting, for a run that lost it: a new connection to the bus
 * (the old one and whatever fhashd made for it go), the watch on fhashd's name first, then a Ping
 * through the name, which activates fhashd where it is D-Bus activatable; an fhashd that is
 * stopping is waited out and the name asked again. Then, where the target says so, its
 * OpenConnection(). Every step is a call whose answer fhash_run_process() picks up later.
 */
typedef struct BusDial BusDial;

int bus_dial_new(const BusTarget *t, BusDial **ret);
BusDial *bus_dial_free(BusDial *d);
/* Does what is ready: 1 while connecting, 0 once connected (take it with bus_dial_take()), or
 * -errno when fhashd cannot be reached (*ret_why: why, in words for people; free() it). */
int bus_dial_step(BusDial *d, char **ret_why);
/* The fd to poll and its poll(2) events, and when to step at the latest (CLOCK_MONOTONIC, µs). */
int bus_dial_get_fd(const BusDial *d);
int bus_dial_get_events(const BusDial *d);
uint64_t bus_dial_get_timeout(const BusDial *d);
/* The connection made, watched as bus_peer_watch() watches: *p (unwatched before) is the caller's
 * now. */
void bus_dial_take(BusDial *d, BusPeer *p);
