/* SPDX-License-Identifier: MIT */
/* owner.h: a bus client that owns jobs, tracked once however many jobs it has */
#pragma once

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
        char *name;            /* unique bus name */
        sd_bus_track *track;
        unsigned n_jobs;       /* jobs holding this owner */
        Owner *next, *prev;    /* Manager.owners */
};

/* Owners tracked at once; past it new clients get Busy. Leaves room under the system bus's 512 match
 * rules per connection for sd-bus's own. */
#define OWNERS_MAX 384

/* The Owner for a unique name, tracked from now on, with one more job holding it. -EBUSY when
 * OWNERS_MAX clients are tracked already. */
int owner_acquire(Manager *m, const char *name, Owner **ret);
/* One job less; the last one stops tracking the client. Takes NULL. */
void owner_release(Owner *o);
