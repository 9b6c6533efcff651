/* SPDX-License-Identifier: MIT */
/* peer-gate.h: what a direct client sends reaches sd-bus only as whole messages with the fds they declare */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"

/*
 * sd-bus 252 keeps the fds that come with a message it drops as invalid (a header whose UNIX_FDS
 * does not match them): on a direct connection, where nothing checks a client's messages before
 * fhashd, one client leaked 19,760 fds into fhashd in a second (issue 13, H3). On the bus
 * dbus-daemon checks every message first; a gate does that here.
 *
 * The gate reads the client's socket, passes the handshake through up to and including its BEGIN
 * line, then frames messages by their headers and passes each whole message, with the fds that
 * came with it, to a socketpair that sd-bus reads (sd-bus writes to the client's socket directly).
 * A message whose fds do not match its UNIX_FDS field, fds during the handshake, or a header that
 * cannot be one, close the connection, and those fds are closed at once. sd-bus closes a connection
 * whose fds arrive in a read during its handshake, and one read of its may take BEGIN and the first
 * call together: a message with fds waits until ready() says sd-bus is past the handshake, so a
 * client may send its first call with fds right behind BEGIN (GDBus does).
 *
 * Fds arrive with the bytes of the sendmsg() that carried them, and a read that delivers them ends
 * with that sendmsg's last byte: they belong to the last message that starts within that read.
 */

typedef struct PeerGate PeerGate;

/* Called once when the gate closes the connection for what the client sent (a description). */
typedef void (*PeerGateViolation)(const char *what, void *userdata);

/* Whether the reader of inner_fd is past the handshake (asked again after each event dispatched). */
typedef bool (*PeerGateReady)(void *userdata);

/* Starts a gate on the client's socket client_fd (borrowed: the gate reads a dup of it) towards
 * inner_fd (taken: the end of a socketpair whose other end sd-bus reads). */
int peer_gate_new(sd_event *event, int client_fd, int inner_fd, PeerGateViolation violation,
                  PeerGateReady ready, void *userdata, PeerGate **ret);
PeerGate *peer_gate_free(PeerGate *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(PeerGate *, peer_gate_free);

/* Shuts the client's socket down both ways (the connection then ends through sd-bus as a close). */
void peer_gate_shutdown(PeerGate *g);

/* The largest message the gate passes on: sd-bus's own limit. */
#define PEER_GATE_MESSAGE_MAX ((size_t)128 << 20)
/* The handshake's lines, before BEGIN, may take this much. */
#define PEER_GATE_AUTH_MAX ((size_t)16 << 10)
