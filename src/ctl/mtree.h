/* SPDX-License-Identifier: MIT */
/* mtree.h: entries of mtree manifests, as libarchive's `bsdtar --format=mtree` and pacman write them */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl/algo.h"

/*
 * mtree(5) as libarchive reads it: "#mtree" first (optional), '#' comments, blank lines, lines
 * continued by a '\' before their end (the reader joins them: manifest.c), "/set KEYWORD=VALUE..."
 * (defaults of the entries that follow) and "/unset KEYWORD... | all", and entries "NAME KEYWORD..."
 * where NAME and link= values are escaped as libarchive writes them: "\ooo" octal (the first digit
 * 0-3: \040 a blank, \043 '#', \134 '\', \012 a newline, \377 a byte that is not UTF-8) and \a \b \f
 * \n \r \s \t \v \\; an unknown escape is a literal '\', as libarchive reads it. A NAME with a '/' is
 * a path from the manifest's directory (bsdtar writes "./a/b"); one without is relative to the
 * directory the last directory entry without a '/' entered (mtree -c's classic form), and ".."
 * goes back up.
 *
 * Keywords, and what becomes of them:
 *   type=file|dir|link|block|char|fifo|socket        checked (lstat)
 *   size=N                                           checked for files
 *   link=TARGET                                      checked for links (readlink)
 *   mode=OCTAL                                       checked (permission bits); a symbolic mode is
 *                                                    ignored
 *   sha256digest= sha512digest= sha384digest=        the digest checked: one per file, the first of
 *   sha1digest= md5digest= (and libarchive's         these fhash has in this order (sha256 first: the
 *   short names sha256= ... md5=)                    fastest strong one, with SHA-NI), or -a's
 *   rmd160digest= rmd160= ripemd160digest= cksum=    no algorithm in fhash: parsed, not checked (a
 *                                                    file with no other digest gets its type, size
 *                                                    and mode checked, and check says so)
 *   optional                                         a missing entry is not an error
 *   nochange                                         only that it exists is checked
 *   uid= gid= uname= gname= time= nlink= inode=      parsed and ignored: they say how a tree was
 *   device= resdevice= flags= ignore contents= ...   unpacked (a bsdtar -x not run as root owns the
 *                                                    files itself, cp and git set new times), not
 *                                                    what it holds
 */

typedef enum MtreeType {
        MTREE_FILE,
        MTREE_DIR,
        MTREE_LINK,
        MTREE_BLOCK,
        MTREE_CHAR,
        MTREE_FIFO,
        MTREE_SOCKET,
        _MTREE_TYPE_MAX,
        _MTREE_TYPE_INVALID = -EINVAL,
} MtreeType;

/* "file", "dir", ... as mtree(5) names them. */
const char *mtree_type_to_string(MtreeType t);

/* What an entry says besides its name and digest (ManifestEntry.mtree). */
typedef struct MtreeInfo {
        MtreeType type;
        bool has_size;
        bool has_mode;
        bool optional;
        bool nochange;
        uint64_t size;
        unsigned mode;            /* permission bits, 07777 */
        char *link;               /* type=link: the target, unescaped (malloc'd), or NULL */
        /* A digest keyword fhash has no algorithm for ("rmd160digest"), when the entry names no
         * other: a static string, or NULL. */
        const char *unsupported;
} MtreeInfo;

/* The state of one manifest: /set's defaults and the classic form's directory. */
typedef struct MtreeParser MtreeParser;

int mtree_parser_new(MtreeParser **ret);
MtreeParser *mtree_parser_free(MtreeParser *p);

/* Whether a manifest whose first line that is not blank is line (len bytes) is an mtree one:
 * "#mtree", or a /set or /unset. */
bool mtree_detect(const char *line, size_t len);
/* Whether a manifest's file name says mtree: *.mtree, mtree, .MTREE (pacman's). */
bool mtree_detect_filename(const char *path);

/* Parses one logical line (continuations joined, no terminator). 1: an entry, with *ret_name (the
 * path from the manifest's directory, malloc'd), the digest fhash checks in *ret_algo and ret_hex
 * (lower case; NULL and "" when none), and *ret_info (its link malloc'd); 0: a line
 * to ignore (blank, comment, /set, /unset, ".."); -EINVAL: improperly formatted; -ENOMEM. want is
 * -a's algorithm (NULL: the first fhash has). Outputs are set only on 1. */
int mtree_parse_line(MtreeParser *p, const char *line, size_t len, const char *want, char **ret_name,
                     const char **ret_algo, char ret_hex[static ALGO_HEX_MAX], MtreeInfo *ret_info);
