/* SPDX-License-Identifier: MIT */
/* bus-names.h: HashNames' and AddNames' arguments: the caller's directories, the names beneath them,
 * and the credentials fhashd opens them with */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "daemon/bus-args.h"
#include "daemon/context.h"
#include "daemon/parcel.h"
#include "engine/engine.h"

/*
 * Issue 24: an fd per file costs the caller an open, a stat, a close and a send, and fhashd a
 * receive, a screen and a close, where the engine in-process opens, reads and closes in its rings.
 * With HashNames a caller sends a few directory fds and many names beneath them, and fhashd's
 * shards open each name the way the engine does for its own paths, with three guarantees:
 *   - the caller's rights: every open runs with the caller's uid and groups, as the bus driver saw
 *     them when the caller connected (GetConnectionCredentials: SO_PEERCRED and SO_PEERGROUPS), and
 *     no capability (EngineCreds, an io_uring personality); root's and fhashd's own uid's names are
 *     opened with fhashd's own credentials, as their HashPaths are;
 *   - the caller's view: a name resolves beneath the caller's directory fd, in the caller's mount
 *     namespace, never through "..", an absolute symlink, a magic link or a mount point
 *     (RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS), so it can reach nothing the
 *     directory's own mount does not hold;
 *   - nothing that can wait: the directory must be on a local file system (the fd screen's
 *     FS_CLASS_LOCAL: no FUSE, no network, no pseudo file system), which the name cannot leave,
 *     and opens are O_NONBLOCK (a lease fails EWOULDBLOCK).
 * A name that cannot be opened so fails with the errno (EXDEV, ELOOP, EACCES, EWOULDBLOCK, ...), and
 * the caller may send that file's fd instead (libfhash does). fhashd without CAP_SETUID and
 * CAP_SETGID answers an unprivileged caller's HashNames NotSupported.
 */

typedef struct NameRef {
        uint32_t dir;      /* index into the call's directory fds */
        const char *name;  /* beneath it: points into the message */
} NameRef;

/* Reads "ay dir_of, ay names": 1 to FHASH_MAX_NAMES_PER_CALL names, each ending with a NUL byte,
 * one after the other, and the index of each one's directory (one byte each, below n_dirs); a name
 * is bytes, as a file name is, not empty, not absolute, shorter than PATH_MAX. InvalidArgs naming
 * names[i] or dir_of[i] otherwise. The names point into m. */
int bus_read_names(sd_bus_message *m, size_t n_dirs, NameRef **ret, size_t *ret_n, sd_bus_error *error);

/* Inputs for names beneath the parcel's directories (idx: the call's "au"): each directory fd must be
 * a directory on a local file system (else AccessDenied, naming it: the caller sends fds instead).
 * The inputs hold references to them. */
int bus_check_names(Context *c, Parcel *p, const uint32_t idx[], size_t n_dirs, const NameRef *names, size_t n,
                    HashInput **ret, sd_bus_error *error);

/* The credentials msg's sender's names are opened with: 0 and *ret_own true for root and fhashd's
 * own uid (fhashd's own credentials); 0 and *ret for any other uid; NotSupported when fhashd cannot
 * take them (no CAP_SETUID/CAP_SETGID) or the bus does not say the caller's groups. On a direct
 * connection, those its opener had on the bus. */
int bus_caller_creds(Context *c, sd_bus_message *msg, uid_t uid, EngineCreds *ret, bool *ret_own,
                     sd_bus_error *error);

/* For OpenConnection: the opener's credentials, to keep with its direct connection (NULL when they
 * are fhashd's own or cannot be had: then its HashNames says why). */
EngineCreds *bus_opener_creds(Context *c, const char *opener, uid_t uid);
