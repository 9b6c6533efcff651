/* SPDX-License-Identifier: MIT */
/* bus-connect.h: fhashd's connection to the bus, read through a gate (the bus driver's: bus-driver.h) */
#pragma once

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "daemon/context.h"
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
 * and c->driver (bus-driver.h). ops are the bus gate's. */
int bus_connect(Context *c, const char *address, const GateOps *ops, void *userdata);

/* Closes c->bus, c->bus_gate and c->driver. */
void bus_disconnect(Context *c);
