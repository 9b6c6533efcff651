/* SPDX-License-Identifier: MIT */
/* owner.h: a client that owns jobs, tracked once however many jobs it has */
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "daemon/context.h"

typedef struct Owner Owner;
typedef struct OwnerRef OwnerRef;

/*
 * Each tracked name costs a match rule on fhashd's own bus connection, and dbus-daemon allows a
 * connection only so many (512 by default on the system bus). So a client is tracked once, by the
 * Owner all its jobs share, not once per job: match rules grow with clients, never with jobs. The
 * match is added asynchronously with a handler for its reply: sd_bus_track (and any async match
 * without one) closes the whole connection when the AddMatch fails, and it fails when fhashd is
 * stopped longer than sd-bus's 25 s call timeout (I2: fhashd then left the bus).
 *
 * Whatever holds an Owner does so through an OwnerRef embedded in it (a job's). When the client
 * leaves, each ref's gone() runs once, so the Owner never needs to know what holds it.
 */
struct Owner {
        Context *context;
        OwnerEntry entry;      /* name and uid, in the registry; charged as one owner to the uid */
        char *name;            /* unique bus name, or a direct connection's name (peer.h) */
        sd_bus *bus;           /* where it is reached: fhashd's bus or that direct connection */
        /* On the bus only (a direct connection tells its close itself): the NameOwnerChanged match
         * for name, and the GetNameOwner that checks the name once the match is in place. */
        sd_bus_slot *match;
        sd_bus_slot *check;
        OwnerRef *refs;        /* what holds it */
};

struct OwnerRef {
        Owner *owner;          /* NULL while it holds none */
        OwnerRef *next, *prev; /* Owner.refs */
        /* The client left: ref no longer holds the Owner (owner is NULL) when this runs. */
        void (*gone)(OwnerRef *ref);
};

/* Makes ref hold the Owner of a caller (bus_caller_name()) on bus, tracked from now on. 0, -ENOMEM,
 * the errno of tracking it, or USER_E_TOTAL when as many clients are tracked as the
 * USER_RESOURCE_OWNERS limit allows (OWNERS_MAX in config.h: the match rules it costs). */
int owner_acquire(Context *c, sd_bus *bus, const char *name, uid_t uid, OwnerRef *ref);
/* Lets go; the last ref stops tracking the client. Takes a ref that holds nothing. */
void owner_release(OwnerRef *ref);
/* The caller left (a direct connection closed): every ref's gone() runs and the Owner is freed.
 * Nothing happens if it has no jobs. */
void owner_disconnected(Context *c, const char *name);
