/* SPDX-License-Identifier: MIT */
/* baseline.h: an audit's baseline: a checksum file sha256sum -c reads, with a versioned header, the
 * attributes of each file in comment lines, and a trailer that says it is whole */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "ctl/algo.h"

/*
 * Format, version 1 (fhash-audit(8), "BASELINE FORMAT"). Every line that is not a
 * checksum line starts with '#', which sha256sum -c (and fhashctl check) skip, so the file is also a
 * plain manifest of the tree (cd ROOT && sha256sum -c BASELINE):
 *
 *   # fhash-baseline 1
 *   # algorithm sha256
 *   # attributes mode,uid,gid,ino,mtime,ctime,xattrs      (those recorded; may be empty)
 *   #@ mode=100644 uid=0 gid=0 ino=1234 mtime=1732640000.123456789 ctime=... xattrs=<hex>|-
 *   <hex>  <name>                                         (the checksum line the #@ line is about)
 *   ...
 *   # end 139449
 *
 * Names are relative to the audited directory, escaped as sha256sum escapes them. A "#@" line
 * belongs to the checksum line right after it and holds the keys of the "# attributes" line; xattrs is
 * the SHA-256 of every extended attribute (ACLs and file capabilities are ones) as name NUL, 8-byte
 * little-endian length, value, in byte order of names, or "-" when there are none. "# end N" counts
 * the checksum lines: a file without it, or with another count, was cut short and is refused. Unknown
 * header keys are ignored (a later minor addition); another version number is refused.
 */
#define BASELINE_VERSION 1
#define BASELINE_MAGIC "# fhash-baseline "

typedef enum BaselineAttr {
        BASELINE_MODE,
        BASELINE_UID,
        BASELINE_GID,
        BASELINE_INO,
        BASELINE_MTIME,
        BASELINE_CTIME,
        BASELINE_XATTRS,
        _BASELINE_ATTR_MAX,
        _BASELINE_ATTR_INVALID = -EINVAL,
} BaselineAttr;

#define BASELINE_ATTRS_ALL ((1u << _BASELINE_ATTR_MAX) - 1)

const char *baseline_attr_to_string(BaselineAttr a);
BaselineAttr baseline_attr_from_string(const char *s);

typedef struct BaselineAttrs {
        unsigned mask;        /* which of the fields below are known (1u << BaselineAttr) */
        mode_t mode;
        uid_t uid;
        gid_t gid;
        uint64_t ino;
        int64_t mtime_sec, ctime_sec;
        uint32_t mtime_nsec, ctime_nsec;
        char xattrs[65];      /* hex SHA-256, or "-" */
} BaselineAttrs;

/* The attributes of mask of path (lstat, and its extended attributes), as the baseline records them.
 * 0 or -errno. */
int baseline_attrs_get(const char *path, unsigned mask, BaselineAttrs *ret);
/* Parses the text after "#@ ": 0, or -EINVAL naming nothing (the caller says which line). */
int baseline_attrs_parse(const char *s, size_t len, BaselineAttrs *ret);
/* "mode=... uid=..." of a's fields, without a newline. */
int baseline_attrs_write(FILE *f, const BaselineAttrs *a);
/* The attributes known to both that differ (a mask). */
unsigned baseline_attrs_diff(const BaselineAttrs *a, const BaselineAttrs *b);
/* "mode,uid" of a mask, into buf. */
const char *baseline_attrs_format_mask(unsigned mask, char *buf, size_t size);
/* Parses "mode,uid,..." (or "all"); -EINVAL names the first unknown one in *ret_bad. */
int baseline_attrs_parse_mask(const char *s, unsigned *ret, const char **ret_bad);

/* What a manifest's header and comment lines say. A manifest without the magic line is a plain
 * checksum file: version 0, no attributes. */
typedef struct BaselineInfo {
        unsigned version;        /* 0: a plain manifest */
        unsigned mask;           /* "# attributes" */
        bool has_end;
        size_t end_count;        /* "# end N" */
        BaselineAttrs *attrs;    /* the "#@" lines, in file order */
        unsigned *attr_line;     /* the checksum line each describes: its "#@" line's number + 1 */
        size_t n_attrs;
} BaselineInfo;

/* The attributes of the checksum line at line (from 1), or NULL. */
const BaselineAttrs *baseline_info_attrs(const BaselineInfo *info, unsigned line);
/* Scans a whole manifest for the header, "#@" lines and the trailer. 0, -EINVAL with *ret_line the
 * line at fault (a "#@" line that does not parse, a second header, another version: *ret_why says
 * which), or -ENOMEM. */
int baseline_scan(const char *buf, size_t size, BaselineInfo *ret, unsigned *ret_line, const char **ret_why);
void baseline_info_done(BaselineInfo *info);

/* One file of a baseline to write: its name (relative), digest and attributes (mask 0: none). */
typedef struct BaselineEntry {
        const char *name;
        const char *hex;
        const BaselineAttrs *attrs;
} BaselineEntry;

/*
 * Writes path anew, atomically: a temporary file in the same directory (mode 0600, or the old file's
 * mode), flushed and fsync()ed, renamed over path, and the directory fsync()ed, so that a crash or a
 * full disk leaves the old baseline (or none) and never half of one; on failure the temporary file is
 * removed. With version 0 it writes a plain checksum file (tagged or not, names with "./" or not, as
 * the manifest it replaces had them). 0 or -errno.
 */
int baseline_write(const char *path, unsigned version, const char *algo, unsigned mask, bool tagged, bool dot,
                   const BaselineEntry *entries, size_t n);
