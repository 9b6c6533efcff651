/* SPDX-License-Identifier: MIT */
/* progress.h: the single self-overwriting progress line fhashctl draws on a terminal's stderr */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ProgressMode {
        PROGRESS_AUTO,  /* on a TTY, once the work has taken more than a second */
        PROGRESS_ON,    /* on a TTY, from the start (--progress) */
        PROGRESS_OFF,   /* never (--no-progress) */
} ProgressMode;

typedef struct ProgressState {
        uint64_t bytes_done, bytes_total;
        size_t files_done, files_total;
        double rate;  /* bytes/s; 0 = work it out from bytes_done and the elapsed time */
        bool open_ended;  /* more inputs may come (a walk, a manifest still being read): no total yet */
} ProgressState;

typedef struct Progress {
        bool enabled;        /* false when off or when fd is not a TTY: nothing is ever written */
        int fd;
        uint64_t delay_usec;
        uint64_t start_usec;
        uint64_t last_usec;
        bool shown;          /* a line is on the screen and must be wiped before other output */
        unsigned pct;        /* the percentage shown last: it never goes down */
} Progress;

void progress_init(Progress *p, ProgressMode mode, int fd);
/* Redraws at most four times a second, and not before the delay; the line fits the terminal's width,
 * and its percentage never goes down. */
void progress_update(Progress *p, const ProgressState *s);
/* Wipes the line, if one is shown, so that ordinary output can go to the same terminal. */
void progress_clear(Progress *p);
/* "[ 42%] 1.2 GiB / 2.9 GiB  12/100 files  850.3 MiB/s  ETA 0:02", truncated to size; while the
 * totals are not known (open_ended, or a pipe's bytes past them) "1.2 GiB  12 files  850.3 MiB/s":
 * a percentage of a total that grows sat at 92-99% with ETA 0:00. Pure. */
void progress_format(char *buf, size_t size, const ProgressState *s, uint64_t elapsed_usec);
/* Shortens a formatted line to fewer than columns characters, dropping whole fields from the end
 * (0: no limit). Pure. */
void progress_fit(char *line, unsigned columns);
/* "12.3 MiB": bytes in binary units, one decimal past bytes. */
void progress_format_bytes(char *buf, size_t size, double v);
/* Async-signal-safe: wipes a progress line that is on the screen, for a handler of SIGINT and the
 * like that then lets the signal end the process (the line stayed behind after Ctrl-C). */
void progress_erase_from_signal(void);
