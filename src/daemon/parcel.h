/* SPDX-License-Identifier: MIT */
/* parcel.h: the fds of one call, kept by the gate that received them until the call's handler takes them */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "basic/macro.h"
#include "daemon/fd-screen.h"
#include "daemon/user.h"

/*
 * sd-bus never holds a caller's fd (daemon/gate.h): the gate keeps the fds of a HashFds or AddFds
 * call in a parcel, in the order they came (the call's "ah" indexes point into it), each with what
 * the screen said of it, and passes sd-bus the call without them. The handler takes the parcel by
 * the call's sender and serial, and each fd it keeps out of it; what it leaves is closed with the
 * parcel. The kept fds are charged to the sender's uid (USER_RESOURCE_TRANSIT) while they wait.
 */

typedef struct ParcelEntry {
        int fd;             /* ours; -EBADF if refused (verdict.refusal says why) or taken */
        FdVerdict verdict;
        EngineFdInfo info;  /* from the verdict, for the engine (engine.h) */
} ParcelEntry;

typedef struct Parcel Parcel;
struct Parcel {
        char *sender;       /* on the bus, the call's SENDER; NULL on a direct connection */
        uint32_t serial;
        uint64_t end;       /* the gate's: sd-bus has read the call once it has read this far */
        uid_t uid;
        UserCharge transit; /* the fds still in entries[] */
        Parcel *next, *prev;
        size_t n;
        ParcelEntry entries[];
};

/* A parcel of n entries, each -EBADF with no verdict. -ENOMEM. */
int parcel_new(const char *sender, uint32_t serial, uid_t uid, size_t n, Parcel **ret);
/* Closes the fds left (each kept one passed the screen: closing it waits on nothing of a user's) and
 * gives back the charge. Takes NULL. */
Parcel *parcel_free(Parcel *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(Parcel *, parcel_free);

/* Takes entry i's fd: the caller owns it now (-EBADF if refused or taken already). */
int parcel_take_fd(Parcel *p, size_t i);
