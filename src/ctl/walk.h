/* SPDX-License-Identifier: MIT */
/* walk.h: turns fhashctl's FILE|DIR arguments into the ordered stream of files to hash (-r, --exclude) */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ctl/macro.h"

typedef struct WalkOptions {
        bool recursive;         /* descend into directory arguments */
        bool follow;            /* follow symbolic links found while descending */
        bool one_file_system;   /* do not descend into directories on another file system */
        char *const *excludes;  /* fnmatch() globs, matched against the base name and the whole path */
        size_t n_excludes;
} WalkOptions;

typedef struct WalkEntry {
        const char *path;
        int error;         /* 0, or -errno: could not be examined (report it like an unreadable file) */
        const char *note;  /* non-NULL: skipped on purpose; a static reason for a note on stderr */
} WalkEntry;

/*
 * The order: arguments are kept in the order given and "-" is passed through. Without recursive every
 * argument is an entry as it is (the hasher reports directories and missing files, as sha256sum does).
 * With it, a directory argument (symbolic links on the command line are followed, as find -H does)
 * expands to its files in a depth-first walk, each directory's entries sorted bytewise (strcmp), so
 * the output is stable across runs and machines. Inside the walk, only regular files are hashed;
 * symbolic links (without follow), devices, sockets and FIFOs are noted and skipped, and excluded
 * names are dropped silently (an excluded directory is not entered).
 */

/* An incremental walk: each walk_next() does only the work up to the next entry (reading and sorting
 * one directory at most), so hashing can start with the first file and the memory is that of the
 * directories on the current path, not of the whole tree. args and options (and its excludes) are
 * borrowed and must outlive the Walk. */
typedef struct Walk Walk;

int walk_new(char *const *args, size_t n_args, const WalkOptions *options, Walk **ret);
Walk *walk_free(Walk *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(Walk *, walk_free);
/* The next entry: 1 and *ret (its path valid until the next call or walk_free()), 0 once the walk is
 * over, or -ENOMEM. Examination failures are entries with an error, not failures of the walk. */
int walk_next(Walk *w, WalkEntry *ret);

/* The whole walk at once, for tests and small callers. */
typedef struct WalkList {
        WalkEntry *entries;  /* paths owned by the list */
        size_t n_entries;
} WalkList;

/* Returns 0 or -ENOMEM. */
int walk_expand(char *const *args, size_t n_args, const WalkOptions *options, WalkList **ret);
WalkList *walk_list_free(WalkList *l);
DEFINE_TRIVIAL_CLEANUP_FUNC(WalkList *, walk_list_free);
