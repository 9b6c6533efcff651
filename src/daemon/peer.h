/* SPDX-License-Identifier: MIT */
/* peer.h: direct (peer-to-peer) D-Bus connections that fhashd hands out through OpenConnection() */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "daemon/context.h"
#include "daemon/gate.h"

typedef struct Peer Peer;

/*
 * Every fd a client passes through the bus is received, kept and sent again by dbus-daemon: with
 * 4 KiB files that costs as much as hashing them. OpenConnection() gives the caller one end of a
 * socketpair instead, with a private D-Bus connection on it: the same Manager and Job objects, the
 * same calls and signals, but nothing in between. The caller's identity is fixed when the
 * connection is made: its uid and unique name come from the bus driver at that moment, so a peer's
 * calls are judged exactly as its bus calls would be (SO_PEERCRED on a socketpair would only name
 * fhashd itself). Whoever holds the fd acts as that caller, as with any fd it hands on.
 *
 * The connection owns the jobs made through it: its signals go back on it, AddFds()/Close() are
 * accepted only on it, and when it closes its unfinished jobs are cancelled and their fds and buffers
 * released, as when a bus client disconnects.
 */
struct Peer {
        Context *context;
        PeerEntry entry;    /* bus, name and uid, in the registry; charged as one peer to the uid */
        uint64_t id;
        sd_bus *bus;
        char *name;         /* "<opener's unique name>/direct/<id>": the Owner of its jobs */
        uid_t uid;          /* the opener's euid, from the bus driver */
        EngineCreds *creds; /* the opener's uid and groups, for HashNames (bus-names.h); NULL: none */
        bool cut_off;       /* shut down for not reading (peer_check_backlog()) */
        sd_event_source *handshake_kick; /* until the handshake is done: see on_handshake_kick() */
        Gate *gate;         /* reads the client's socket and passes its messages to sd-bus, without fds */
};

/* Makes a connection for a caller (unique name opener, euid uid), started and attached to the loop
 * but with no objects on it yet, and returns the caller's end of it in *ret_fd (close-on-exec).
 * USER_E_QUOTA / USER_E_TOTAL past the USER_RESOURCE_PEERS limits (PEERS_MAX and PEERS_MAX_PER_UID in
 * config.h). */
int peer_new(Context *c, const char *opener, uid_t uid, Peer **ret, int *ret_fd);
/* Closes the connection and forgets it; takes NULL. Its jobs must have been let go of already
 * (closing from the client's side does that). */
Peer *peer_free(Peer *p);

/* Messages queued for a direct connection past which its client counts as not reading: the
 * connection is closed and its jobs cancelled. On the bus dbus-daemon bounds what it queues for a
 * client (max_outgoing_bytes); here fhashd would, so it bounds it itself. Clients that read, even
 * slowly, stay far below: the socket buffer holds the first few hundred KiB. */
#define PEER_BACKLOG_MAX 64u

/* After a send on bus: if it is a direct connection with more than PEER_BACKLOG_MAX messages
 * queued, shuts its socket down. The close is handled from the event loop (Disconnected), never
 * inside the caller. */
void peer_check_backlog(Context *c, sd_bus *bus);
/* The same with another bound: true if bus is a direct connection with more than max messages
 * queued, which is then (or was already) cut off. */
bool peer_check_backlog_max(Context *c, sd_bus *bus, uint64_t max);
/* Replies of GetResults (up to FHASH_REPLY_BYTES_MAX each) queued for a direct connection past which
 * its client counts as not reading: 4 of 8 MiB, where PEER_BACKLOG_MAX small messages stay small. */
#define PEER_BACKLOG_RESULTS 4u
/* The same on fhashd's bus connection, whose queue is everybody's: GetResults is Busy past it. */
#define BUS_BACKLOG_RESULTS 64u

/* Sends what is queued on every direct connection (JobFinished before an exit), waiting at most
 * PEER_FLUSH_USEC in all for clients that do not read. */
#define PEER_FLUSH_USEC (1000 * 1000ULL)
void peer_flush_all(Context *c);
