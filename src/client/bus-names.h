/* SPDX-License-Identifier: MIT */
/* bus-names.h: files sent to fhashd by name (HashNames, AddNames): a few directory fds and the names
 * beneath them, instead of an fd per file */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "client/feed.h"
#include "fhash/fhash-dbus.h"

/*
 * Issue 24: an fd per file costs this process an open, a stat and a close, and fhashd a receive, a
 * screen and a close, on the same two cores that hash; by name, fhashd's shards open each file in
 * their rings as the engine in-process does (fhashd: daemon/bus-names.h), with our uid and groups,
 * beneath the directory we name, never leaving its mount. So a file whose path is a name in a
 * directory goes by name; whatever fhashd cannot hash that way (a symlink out of the directory or
 * its mount, a mount point, a device, a directory on FUSE, NFS or procfs, an fhashd without
 * HashNames, any error at all) goes again as an fd (bus-jobs.h, INPUT_NO_NAME), and its result is
 * the one the fd gives: what the user sees is what an fd for every file gives. A directory fhashd
 * refused (AccessDenied) is not offered again while the next files share it.
 */

/* Inputs in one call: fds at most FHASH_MAX_FDS_PER_CALL, names this many. */
#define BUS_CALL_INPUTS_MAX 256

/* A call's directories: ours (dups), sent as its "ah". */
typedef struct NameDirs {
        int fds[FHASH_MAX_FDS_PER_CALL];
        uint64_t gen[FHASH_MAX_FDS_PER_CALL];  /* which of the DirCache's directories each is */
        unsigned n;
        uint8_t dir_of[BUS_CALL_INPUTS_MAX];   /* each name's */
} NameDirs;

/* A run's last directory opened (the next files mostly share it), and the last fhashd refused. */
typedef struct DirCache {
        char *path;
        size_t path_len;
        int fd;
        uint64_t gen;          /* directories opened so far */
        uint64_t refused_gen;  /* fhashd said AccessDenied of it: its files go as fds */
} DirCache;

void name_dirs_init(NameDirs *d);
void name_dirs_done(NameDirs *d);
void dir_cache_init(DirCache *c);
void dir_cache_done(DirCache *c);

/* Whether input path may go by name: a path in a directory, not standard input ("-"), its name
 * not "", "." or ".." (any bytes: names go as "ay"). */
bool bus_names_eligible(const char *path);

/* Readies the k-th input of a call, path, to go by name with its directory (opened O_PATH in c, kept
 * while the next inputs share it, and duplicated into d): 1 when it may, 0 when d has
 * FHASH_MAX_FDS_PER_CALL directories already and this needs another, or -errno when its directory
 * cannot be opened or was refused (then it goes as an fd). */
int bus_names_add(DirCache *c, NameDirs *d, size_t k, const char *path);

/* HashNames' and AddNames' "ah" (d's directories), "ay" dir_of and "ay" names (of inputs idx[0..n),
 * each ending with a NUL). */
int bus_names_append(sd_bus_message *m, const NameDirs *d, const Feed *f, const size_t *idx, size_t n);

/* Whether a call by name failing with e means fhashd takes no names from us at all (an fhashd
 * without HashNames; one that cannot take our credentials): then everything goes as fds. */
bool bus_names_error_disables(const sd_bus_error *e);
/* fhashd refused the directory of a call that had one (AccessDenied): its next files go as fds. */
void dir_cache_refused(DirCache *c, const NameDirs *d);
