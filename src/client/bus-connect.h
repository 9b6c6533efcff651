/* SPDX-License-Identifier: MIT */
/* bus-connect.h: libfhash's connection to fhashd: the direct connection, who fhashd is, and when it goes */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

/*
 * Swaps *bus for a direct connection to fhashd (its OpenConnection(): a socketpair with a private
 * D-Bus connection, so that fds do not pass through dbus-daemon) and closes the bus connection.
 * Returns 1 if it did, 0 if fhashd refused (Busy) or the connection could not carry fds: *bus is then
 * unchanged and works as before.
 */
int bus_open_direct(sd_bus **bus);

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
        sd_bus *bus;
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
