/* SPDX-License-Identifier: MIT */
/* manifest-reader.h: a manifest read a line at a time, plain, gzip-compressed or mtree */
#pragma once

#include "ctl/manifest.h"

/*
 * A manifest read a line at a time (fhashctl check): its memory is one line's (one entry's, for an
 * mtree line continued over several), whatever its size. Lines are parsed as manifest_parse_with()
 * parses them, and blank and comment lines are skipped. An mtree manifest (ctl/mtree.h: its first
 * line that is not blank is "#mtree", /set or /unset, or its name is *.mtree, mtree or .MTREE) is
 * read as one, gzip-compressed too (pacman's .MTREE; zlib, read as it streams): entries of every
 * type, ManifestEntry.is_mtree. Not with zero (-z): mtree lines end with '\n'.
 */
typedef struct ManifestReader ManifestReader;

enum {
        MANIFEST_READ_END,    /* no more lines */
        MANIFEST_READ_ENTRY,  /* *ret is an entry (its name malloc'd: the caller's to free) */
        MANIFEST_READ_BAD,    /* an improperly formatted line: only ret->line is set */
};

/* Opens path ("-": standard input). Returns 0 or -errno (the file could not be opened). */
int manifest_reader_new(const char *path, const ManifestParseOptions *o, ManifestReader **ret);
/* The next entry or bad line, MANIFEST_READ_END, or -errno (reading failed: -EIO, -EISDIR, ...;
 * -ENOMEM). After an error or the end, it returns the same again. */
int manifest_reader_next(ManifestReader *r, ManifestEntry *ret);
ManifestReader *manifest_reader_free(ManifestReader *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ManifestReader *, manifest_reader_free);

/* Reads a whole manifest ("-": standard input) into a malloc'd buffer. Returns 0 or -errno. */
int manifest_read(const char *path, char **ret, size_t *ret_size);
