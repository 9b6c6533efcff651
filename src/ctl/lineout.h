/* SPDX-License-Identifier: MIT */
/* lineout.h: standard output in blocks of whole lines, never a line split between two writes */
#pragma once

/*
 * fhashctl writes a line per file. Fully buffered, stdio cuts its buffer wherever it fills, so the
 * lines of processes sharing a pipe (xargs -P, make -j) interleave mid-line (coreutils' md5sum
 * avoids that by line buffering: a write(2) per line). Here stdio still buffers 64 KiB, but what
 * it hands on is written in pieces that each end at a line's end and hold at most PIPE_BUF bytes,
 * the most a pipe takes atomically: about 50 small-file lines per write(2), and no line torn. A
 * line longer than PIPE_BUF goes out alone in one write(2) (no tool can do better). What follows
 * the last line end waits for the rest of its line, or for exit.
 */

/* When standard output is not a terminal (a terminal keeps stdio's line buffering), replaces
 * stdout by such a stream over fd 1, lines ending with delim ('\n', or '\0' for -z). 0, or -errno
 * with stdout left as it was. */
int lineout_install(char delim);
/* Writes what is left (an unfinished last line: --raw's bytes) and closes the stream: stdio flushes
 * at exit but never closes it. 0, or -errno of the write. A no-op without lineout_install(). */
int lineout_finish(void);
