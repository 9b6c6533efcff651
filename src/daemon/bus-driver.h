/* SPDX-License-Identifier: MIT */
/* bus-driver.h: what the bus driver says of a sender (its uid, its credentials), asked on a
 * connection of its own and kept */
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "daemon/context.h"
#include "engine/engine.h"

/* Opens c->driver, the connection fhashd asks the bus driver on (bus-connect.h says why a second
 * one), on c->bus_address. */
int bus_driver_open(Context *c);
/* Closes c->driver and forgets every sender's answer. */
void bus_driver_close(Context *c);

/* The euid the bus driver saw when sender (a unique name) connected, never augmented from /proc.
 * A unique name is never reused and its uid never changes: the answer is kept. A blocking round trip
 * to dbus-daemon the first time (GetConnectionCredentials, whose groups are kept too): the bus gate
 * asks first, without waiting (below), so that a method handler finds the answer kept. */
int bus_driver_uid(Context *c, const char *sender, uid_t *ret);

/* The same without waiting: 0 and *ret from what is kept; -EAGAIN while the driver is asked (one
 * question at a time; gate_sender_uid_known(c->bus_gate) runs once it is answered or has failed);
 * after a failure, its error for that sender (bus_driver_uid() says it too, once, instead of asking
 * again). Long names (never kept) are asked as above. The question is GetConnectionCredentials: its
 * answer's groups are kept too, so that the HashNames the gate passes on finds them
 * (bus_driver_creds()) and fhashd's loop never waits for the driver on a caller's behalf. */
int bus_driver_uid_async(Context *c, const char *sender, uid_t *ret);
/* What the bus driver says of sender's credentials (GetConnectionCredentials): its uid, which must be
 * uid, and its groups, the primary one among them. The last few senders' answers are kept (a unique
 * name is never reused; forgotten with the connection), the gate's question among them; one not
 * kept is asked now, waiting. -ENODATA when the bus does not say the groups, -E2BIG past
 * ENGINE_CREDS_GROUPS_MAX. */
int bus_driver_creds(Context *c, const char *sender, uid_t uid, EngineCreds *ret);

