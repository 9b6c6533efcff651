/* SPDX-License-Identifier: MIT */
/* bus-connect.h: fhashd's connections to the bus: one read through a gate, one for the bus driver's answers */
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "daemon/context.h"
#include "engine/engine.h"
#include "daemon/gate.h"
#include "protocol/bus.h"

/*
 * fhashd connects its bus socket itself and gives sd-bus two fds: the socket to write to, and one
 * end of a socketpair to read from, whose other end a gate writes what it read from the socket
 * (daemon/gate.h). sd-bus does the handshake and Hello over them as usual.
 *
 * A blocking call on that connection would wait for ever: its answer comes through the gate, which
 * runs on the loop the call holds. So what fhashd must ask the bus driver (a caller's uid) goes on a
 * second connection, which never takes fds (NEGOTIATE_UNIX_FD is not sent, and dbus-daemon delivers no
 * message with fds to it) and is read by sd-bus as usual. The name is requested asynchronously.
 */

/* The address fhashd connects to for kind (address for BUS_KIND_ADDRESS), as sd-bus would pick it:
 * $DBUS_SYSTEM_BUS_ADDRESS or /run/dbus/system_bus_socket; $DBUS_SESSION_BUS_ADDRESS or
 * $XDG_RUNTIME_DIR/bus. -ENXIO when there is none. */
int bus_address_resolve(BusKind kind, const char *address, char **ret);

/* Connects to the first entry of a D-Bus address list that is a unix socket ("unix:path=...",
 * "unix:abstract=..."; escapes as the specification says) and answers. -EPROTONOSUPPORT when no entry
 * is a unix socket (fhashd receives fds: nothing else carries them), -errno of the last connect. */
int bus_address_connect(const char *address, int *ret_fd);

/* Opens c->bus (started, attached to c->event, exit on disconnect) with its input through c->bus_gate,
 * and c->driver for bus_driver_uid(). ops are the bus gate's. */
int bus_connect(Context *c, const char *address, const GateOps *ops, void *userdata);

/* The euid the bus driver saw when sender (a unique name) connected, never augmented from /proc.
 * A unique name is never reused and its uid never changes: the answer is kept. A blocking round trip
 * to dbus-daemon the first time: the bus gate asks first, without waiting (below), so that a method
 * handler finds the answer kept. */
int bus_driver_uid(Context *c, const char *sender, uid_t *ret);

/* The same without waiting: 0 and *ret from what is kept; -EAGAIN while the driver is asked (one
 * question at a time; gate_sender_uid_known(c->bus_gate) runs once it is answered or has failed);
 * after a failure, its error for that sender (bus_driver_uid() says it too, once, instead of asking
 * again). Long names (never kept) are asked as above. */
int bus_driver_uid_async(Context *c, const char *sender, uid_t *ret);
/* What the bus driver says of sender's credentials (GetConnectionCredentials): its uid, which must be
 * uid, and its groups, the primary one among them. A blocking round trip the first time: the last
 * few senders' answers are kept (a unique name is never reused; forgotten with the connection).
 * -ENODATA when the bus does not say the groups, -E2BIG past ENGINE_CREDS_GROUPS_MAX. */
int bus_driver_creds(Context *c, const char *sender, uid_t uid, EngineCreds *ret);

/* Closes c->bus, c->bus_gate and c->driver. */
void bus_disconnect(Context *c);
