/* SPDX-License-Identifier: MIT */
/* gate.h: every socket that can bring a caller's fds is read here, and sd-bus gets its messages without them */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "daemon/context.h"
#include "daemon/parcel.h"

/*
 * Issue 24. Whatever reads a socket holds the fds that come with it, and sd-bus 252 loses some
 * (the fds of a message whose header it refuses: N1, 19,848 fds in a second) and closes the others
 * on the event loop, where the close of a FUSE fd may never return (H6). So fhashd reads each
 * socket that can carry a caller's fds itself: the bus connection (sd-bus reads the other end of a
 * socketpair and writes to the bus directly) and every direct connection, the same way, as
 * dbus-broker reads its sockets.
 *
 * The gate passes the handshake through (a client's lines up to its BEGIN on a direct connection;
 * the bus's answers up to AGREE_UNIX_FD on the bus), then frames each message by its header,
 * validates the header as the D-Bus specification and sd-bus do (daemon/dbus-message.h), judges each
 * fd that came with it (daemon/fd-screen.h) and keeps none in the message it passes on:
 *   - HashFds, AddFds, HashNames and AddNames are renamed to hidden methods (GATE_MEMBER_*) whose
 *     "ah" is an "au" of indexes into the parcel the gate keeps (daemon/parcel.h), taken by the
 *     handler;
 *   - any other message's fds are closed at once, and an "h" in its signature becomes a "u";
 *   - an fd whose close could wait for ever goes to the closer (daemon/closing.h), charged to the
 *     sender's uid.
 * On a direct connection a message that cannot be framed or validated, fds in the handshake, fds
 * that do not match the header's UNIX_FDS, a call of a hidden method, or a uid past its share of
 * fds waiting for the closer close the connection. On the bus dbus-daemon has validated every
 * message already; one that fails here anyway is dropped, its fds closed.
 *
 * Budgets: a direct connection is read only while its uid has room for one more message's fds on
 * their way in (USER_RESOURCE_TRANSIT), and not at all once its uid is past its share of closes;
 * the bus cannot wait for one sender, so while budgets are tight (daemon/closing.h) it looks at each
 * message that brings fds before taking them (MSG_PEEK, which installs none) and leaves the fds of a
 * uid past its share to the kernel: those inputs fail, the rest go on, and the read never finds the
 * table full.
 *
 * The gate passes sd-bus at most GATE_UNREAD_MAX bytes it has not read yet, and forgets the parcels
 * of calls sd-bus has read and no handler took (a call to a job that does not exist, say).
 */

typedef struct Gate Gate;

typedef enum GateSide {
        GATE_SERVER,  /* a direct client: its handshake ends with its BEGIN */
        GATE_CLIENT,  /* the bus: sd-bus is the client, the bus's handshake ends with AGREE_UNIX_FD */
} GateSide;

typedef struct GateOps {
        /* GATE_SERVER: the gate has closed the connection for what the client sent (a description). */
        void (*violation)(Gate *g, const char *what, void *userdata);
        /* GATE_CLIENT: the uid of a message's sender (a unique name), or -errno; -EAGAIN while it is
         * being found out: the gate then reads nothing more until gate_sender_uid_known(). */
        int (*sender_uid)(const char *sender, uid_t *ret, void *userdata);
} GateOps;

/* The hidden methods a gated call is renamed to; a client may not call them (nor anything named
 * GATE_MEMBER_PREFIX...). */
#define GATE_MEMBER_PREFIX "Gate"
#define GATE_MEMBER_HASH_FDS "GateHashFds"
#define GATE_MEMBER_ADD_FDS "GateAddFds"
#define GATE_MEMBER_HASH_NAMES "GateHashNames"
#define GATE_MEMBER_ADD_NAMES "GateAddNames"

/* Bytes passed to sd-bus and not read by it yet past which the gate stops reading. */
#define GATE_UNREAD_MAX ((size_t)1 << 20)
/* The handshake's lines, before BEGIN, may take this much. */
#define GATE_AUTH_MAX ((size_t)16 << 10)

/* Starts a gate on outer_fd (borrowed: the gate reads a dup of it; sd-bus writes to it) towards
 * inner_fd (taken: the end of a socketpair whose other end, sdbus_fd, sd-bus reads). uid is a direct
 * client's (GATE_SERVER). */
int gate_new(Context *c, GateSide side, uid_t uid, int outer_fd, int inner_fd, int sdbus_fd, const GateOps *ops,
             void *userdata, Gate **ret);
/* Closes what the gate holds (fds only the closer may close go to it). Takes NULL. */
Gate *gate_free(Gate *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(Gate *, gate_free);

/* Shuts the outer socket down both ways (the connection then ends through sd-bus as a close). */
void gate_shutdown(Gate *g);

/* The parcel of the gated call from sender (NULL on a direct connection) with this serial, taken
 * out of the gate: the caller frees it. NULL if there is none. */
Parcel *gate_take_parcel(Gate *g, const char *sender, uint32_t serial);

/* What sender_uid() was finding out is known (or could not be): the gate goes on (after this turn of
 * the loop) with the message it stopped at. */
void gate_sender_uid_known(Gate *g);

/* Parcels waiting for their handler and their fds (tests, status). */
size_t gate_parcels(const Gate *g, uint64_t *ret_fds);
