/* SPDX-License-Identifier: MIT */
/* common.h: what fhashctl's tool personalities share: the compat mode, whole lines, messages */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

/*
 * Called as one of the checksum tools (a symbolic link of that name, or `fhashctl --as NAME`),
 * fhashctl is that tool: its options, defaults, messages, output stream and exit codes, as its
 * documentation and its upstream tests say, for the newest released version. Each tool family has
 * its own files, its entry point in the one named after it: coreutils*.c (md5sum, sha*sum,
 * b2sum, cksum, sum), b3*.c (b3sum), xxh*.c (xxhsum, xxh32sum, xxh64sum, xxh128sum,
 * xxh3sum), dispatched by personality.c. A personality hashes in the calling thread with plain
 * reads (hash/oneshot.h) and never talks to fhashd, as the tools never do.
 *
 * FHASH_COMPAT=debian12 selects, where Debian 12's version of a tool (coreutils 9.1, b3sum 1.2.0,
 * xxhsum 0.8.1) behaves differently in a way a script could notice (a message, an output format),
 * that older behaviour; features Debian 12's tool lacks stay available.
 */

typedef enum PersonaCompat {
        COMPAT_NEWEST,
        COMPAT_DEBIAN12,
} PersonaCompat;

typedef struct Persona Persona;
/* A family's entry: argv[0] is the tool's name; returns the exit status. */
typedef int (*PersonaMain)(const Persona *p, int argc, char *argv[]);

struct Persona {
        const char *name;  /* what the tool is called: argv[0]'s basename */
        PersonaMain main;
        int tool;          /* which tool of the family (the family's own enum) */
};

/* FHASH_COMPAT, read once. */
PersonaCompat persona_compat(void);

/* A line of output, built in pieces and written whole: one write(2) per line, as coreutils'
 * line-buffered stdout does, so that the lines of processes writing to one pipe never interleave
 * (a write of up to PIPE_BUF bytes to a pipe is atomic). */
typedef struct Line {
        char *buf;
        size_t n, alloc;
        bool oom;
} Line;

void line_add(Line *l, const void *s, size_t n);
void line_adds(Line *l, const char *s);
void line_addc(Line *l, char c);
_printf_(2, 3) void line_addf(Line *l, const char *fmt, ...);
void line_add_hex(Line *l, const uint8_t *d, size_t n);
/* Adds name; where escape is set, with '\n', '\r' and '\\' written as "\\n", "\\r" and "\\\\", as
 * coreutils and xxhsum write a name in a line that starts with a backslash. */
void line_add_escaped(Line *l, const char *name, bool escape);
/* Writes the line to fd in one write(2) (more only if the kernel takes less) and empties it: 0,
 * or -errno (the line is dropped). */
int line_write(Line *l, int fd);
void line_free(Line *l);

/* The standard output of a personality: a failed write is remembered (the tool goes on, as
 * stdio's would), and persona_finish() reports it as "PROG: write error: REASON", exit 1, as
 * coreutils' close_stdout() does. */
int persona_out(Line *l);
/* Exit status status, or 1 after reporting a write error on standard output. */
int persona_finish(const char *prog, int status);

/* Undoes "\\n", "\\r" and "\\\\" in place over len bytes (a NUL after the shorter result); false for
 * any other escape, a trailing backslash or a NUL: coreutils' filename_unescape(), which xxhsum's
 * check mode follows. */
bool persona_filename_unescape(char *s, size_t len);

/* "PROG: MESSAGE\n" on stderr as one write. */
_printf_(2, 3) void persona_err(const char *prog, const char *fmt, ...);
