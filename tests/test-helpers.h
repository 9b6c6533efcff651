/* SPDX-License-Identifier: MIT */
/* test-helpers.h: temporary directories, data files and reference-tool runs for the cmocka tests */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* Creates a fresh directory under $TMPDIR (or /var/tmp: real disk, not tmpfs); returns its path
 * (malloc'd). Aborts the test on failure. */
char *th_mkdtemp(const char *tag);
/* Removes a directory tree made by th_mkdtemp(). */
void th_rm_rf(const char *path);
/* Writes size bytes of deterministic pseudo-random data (seeded) to path. Returns 0 or -errno. */
int th_write_random_file(const char *path, uint64_t size, uint32_t seed);
/* Fills buf with the same deterministic data th_write_random_file() writes. */
void th_fill_random(void *buf, size_t n, uint32_t seed);
/* Runs a shell command and returns its first whitespace-separated word of stdout (malloc'd),
 * or NULL if the command failed or printed nothing. */
char *th_run_first_word(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* True if an executable of that name is on PATH. */
int th_have_program(const char *name);
/* Number of open fds of this process. */
int th_count_fds(void);
