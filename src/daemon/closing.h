/* SPDX-License-Identifier: MIT */
/* closing.h: fds only the closer may close, queued by uid: a fair share of its children, bounded */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"
#include "daemon/user.h"

/*
 * The closer (io/closer.h) runs at most CLOSER_CHILDREN_MAX closes at once; a FUSE server that never
 * answers FLUSH holds one of them for as long as it likes. Issue 24, N3: with the closer's queue
 * unbounded, one user's 20,706 copies of one such fd filled fhashd's fd table, and the next message
 * that carried fds cost fhashd its bus connection.
 *
 * Every fd handed here is charged to the uid that sent it (USER_RESOURCE_CLOSING) until its close has
 * ended, and a uid's closes take at most CLOSING_CHILDREN_PER_UID of the closer's children, in turn
 * with other uids': a user whose server never answers holds up only its own fds. An fd that has been
 * received must be closed by someone, and only the closer may close this one, so closing_take()
 * always takes it; what it says is whether the uid is past its share now, and the gates then stop
 * taking fds from there (daemon/gate.h): a direct connection is closed, and on the bus the fds of that
 * uid's messages are left to the kernel (never installed in our table).
 */

typedef struct Closing Closing;

/* Of the closer's children, how many one uid's closes may hold at once. */
#define CLOSING_CHILDREN_PER_UID 16u

/* Makes the closer: call it first, while fhashd is small (io/closer.h). users holds the limits of
 * USER_RESOURCE_CLOSING and outlives q. */
int closing_new(UserRegistry *users, Closing **ret);
/* Watches the closer's reports on the loop. */
int closing_attach_event(Closing *q, sd_event *event);
/* Starts what it can and lets the closer go: fds still queued then stay in the table, which the
 * closer's children that still wait (there are some, or nothing would be queued) keep open after we
 * exit; the last of them closes them. */
Closing *closing_free(Closing *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(Closing *, closing_free);

/* Takes fd, whatever happens, for uid. 0, or USER_E_QUOTA / USER_E_TOTAL: uid (or all uids) now
 * hold(s) all the share the limits give: take no more of theirs. */
int closing_take(Closing *q, uid_t uid, int fd);

/* 0 if uid may hand in n more fds, else USER_E_QUOTA / USER_E_TOTAL. */
int closing_check(Closing *q, uid_t uid, uint64_t n);

/* Whether some closes wait for a child (some uid's are stuck in its share of children, or all 64
 * are), so that a uid may be near its share: the bus gate then looks at each message's sender
 * before it takes its fds. */
bool closing_tight(const Closing *q);

/* How many fds wait or are being closed, for uid and in all (tests, status). */
uint64_t closing_held(Closing *q, uid_t uid);
uint64_t closing_held_total(const Closing *q);

/* The closer's pid (tests). */
int closing_closer_pid(const Closing *q);
