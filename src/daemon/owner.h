/* SPDX-License-Identifier: MIT */
/* owner.h: a bus client that owns jobs, tracked once however many jobs it has */
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

typedef struct Manager Manager;
typedef struct Owner Owner;

/*
 * Each tracked name costs a match rule on fhashd's own bus connection, and dbus-daemon allows a
 * connection only so many (512 by default on the system bus). When an AddMatch is refused, sd-bus
 * closes the connection and fhashd would be gone. So a client is tracked once, by the Owner all its
 * jobs share, not once per job: match rules grow with clients, never with jobs.
 */
struct Owner {
        Manager *manager;
        char *name;            /* unique bus name, or a direct connection's name (peer.h) */
        sd_bus *bus;           /* where it is reached: fhashd's bus or that direct connection */
        sd_bus_track *track;   /* on the bus only: a direct connection tells its close itself */
        uid_t uid;             /* from the bus driver when its first job was made; never changes */
        unsigned n_jobs;       /* jobs holding this owner */
        Owner *next, *prev;    /* Manager.owners */
};

/* Owners tracked at once; past it new clients get Busy. Leaves room under the system bus's 512 match
 * rules per connection for sd-bus's own. */
#define OWNERS_MAX 384

/* The Owner for a caller (owner_caller_name()) on bus, tracked from now on, with one more job
 * holding it. -EBUSY when OWNERS_MAX clients are tracked already. */
int owner_acquire(Manager *m, sd_bus *bus, const char *name, uid_t uid, Owner **ret);
/* The caller left (a direct connection closed): each of its jobs lets go of it, cancelling what still
 * runs, and the Owner is freed. Nothing happens if it has no jobs. */
void owner_disconnected(Manager *m, const char *name);
/* One job less; the last one stops tracking the client. Takes NULL. */
void owner_release(Owner *o);

/* The uid of a message's sender: from its Owner if it has one, else asked of the bus driver. The
 * question is a blocking round trip to dbus-daemon inside our event loop, and a busy dbus-daemon
 * (a client not reading tens of MB of signals) made each one slow: a client's later calls must not
 * pay it again. A unique name is never reused and its uid never changes, so the answer keeps. */
int owner_sender_uid(Manager *m, sd_bus_message *msg, uid_t *ret);
/* Who sent msg, as jobs record their owner: the sender's unique name on the bus, the connection's
 * name on a direct connection. NULL if neither is known. */
const char *owner_caller_name(Manager *m, sd_bus_message *msg);
