/* SPDX-License-Identifier: MIT */
/* bus-args.h: what the method handlers read from a call: caller, fds, paths (bus-options.h: the rest) */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "daemon/context.h"
#include "daemon/parcel.h"
#include "engine/engine.h"
#include "hash/hash.h"

/*
 * Every reader reports what is wrong with the call as InvalidArgs naming the argument (and returns
 * the negative errno sd-bus makes of it), so that a handler is a sequence of reads and model calls.
 * Nothing here changes the model.
 */

/* The uid of msg's sender: on a direct connection its opener's (never the socket's credentials:
 * they are fhashd's own); on the bus its Owner's if it has one, else the bus driver's answer. The
 * question is a blocking round trip to dbus-daemon inside our event loop, and a busy dbus-daemon
 * (a client not reading tens of MB of signals) made each one slow: a client's later calls must not
 * pay it again. A unique name is never reused and its uid never changes, so the answer keeps. */
int bus_caller_uid(Context *c, sd_bus_message *msg, uid_t *ret);
/* bus_caller_uid() with the failure set in error ("Cannot determine the caller's uid"). */
int bus_read_caller_uid(Context *c, sd_bus_message *msg, uid_t *ret, sd_bus_error *error);
/* Who sent msg, as jobs record their owner: the sender's unique name on the bus, the connection's
 * name on a direct connection. NULL if neither is known. */
const char *bus_caller_name(Context *c, sd_bus_message *msg);

/* Busy while fhashd shuts down: new jobs and connections are refused. */
int bus_check_accepting(Context *c, sd_bus_error *error);
/* Sets error for a refused charge (outcome USER_E_QUOTA or USER_E_TOTAL from the registry) of n of r
 * by uid: Busy with the numbers. Returns the negative errno to return from the handler. */
int bus_error_quota(Context *c, uid_t uid, UserResource r, int outcome, size_t n, sd_bus_error *error);

/* One input of a Hash call, checked before it is added to a job. */
typedef struct HashInput {
        int fd;                  /* an fd input: ours; -EBADF otherwise or when refused */
        const EngineFdInfo *info; /* what the gate knew of fd (into the parcel), or NULL */
        unsigned flags;          /* ENGINE_INPUT_* for the engine */
        const char *path;        /* a path input: points into the message */
        EngineDir *dir;          /* a name's (HashNames, AddNames): path is beneath it */
        bool dir_ref;            /* this input holds the call's reference to dir (the others borrow it) */
        const char *error_name;  /* set if the input fails up front */
        const char *error_message;
} HashInput;

/* n inputs, none with an fd yet. */
HashInput *hash_inputs_new(size_t n);
void hash_inputs_free(HashInput *inputs, size_t n);

/* Reads the "as" of HashPaths: 1 to max absolute paths shorter than PATH_MAX, else InvalidArgs
 * naming paths or paths[i]. */
int bus_read_paths(sd_bus_message *m, size_t max, char ***ret, sd_bus_error *error);
/* HashInputs for paths[0..n) (hash_inputs_free() them): no fds, each pointing into paths. */
int hash_inputs_from_paths(char **paths, size_t n, HashInput **ret);

/* Reads the "au" of a gated HashFds/AddFds (daemon/gate.h: the gate renamed the call and keeps its
 * fds in a parcel, which this takes out of it into *ret_parcel: parcel_free() it, also on failure):
 * 1 to FHASH_MAX_FDS_PER_CALL indexes into the parcel, else InvalidArgs naming "fds". */
int bus_read_fds(Context *c, sd_bus_message *m, Parcel **ret_parcel, uint32_t ret_idx[], size_t *ret_n,
                 sd_bus_error *error);

/* Checks each input idx[0..n) of p, as the gate's screen judged its fd, into a new HashInput array
 * (hash_inputs_free() it, also on failure: *ret is set whenever it was allocated), taking the fds it
 * keeps out of p. Access-mode mistakes are the caller's bug and fail the call (InvalidArgs naming
 * fds[i]); the kind of file is a per-file outcome (in->error_name), so one directory does not sink a
 * batch: fds the gate refused (FUSE, sockets, ...), directories, and streams (pipes, devices) unless
 * allow_streams (the job has "max-size"). Files on FUSE, network or unknown mounts are marked
 * ENGINE_INPUT_UNTRUSTED_FS; for an unprivileged caller, regular files on pseudo file systems
 * (procfs, sysfs, ...: checked against fhashd's credentials at read time), on FUSE and on mounts
 * fhashd cannot see are refused (AccessDenied, per file). Nothing here makes a system call but an
 * fcntl for an fd given twice. */
int bus_check_fds(Context *c, Parcel *p, const uint32_t idx[], size_t n, bool allow_streams, bool privileged,
                  HashInput **ret, sd_bus_error *error);

/* Reads an "as" of at most max strings of at most max_len bytes each, in time linear in what it
 * reads, and stops at the first entry too many: sd_bus_message_read_strv() appends through
 * strv_extend(), which walks the vector each time, so 200,000 empty names held the event loop for
 * 12 s. An empty array gives an empty vector, never NULL. -E2BIG (and no error set) at entry
 * max + 1; what names the argument in the error for a string too long. */
int bus_read_strv_bounded(sd_bus_message *m, const char *what, size_t max, size_t max_len, char ***ret,
                          sd_bus_error *error);

/* Bytes of s to echo in an error message: at most max, cut at a UTF-8 character boundary (a cut
 * inside a character makes the whole message invalid UTF-8, which sd-bus refuses to send, and the
 * caller would get no reply at all). For "%.*s". */
int bus_echo_len(const char *s, size_t max);
