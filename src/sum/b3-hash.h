/* SPDX-License-Identifier: MIT */
/* b3-hash.h: a b3sum run, and its hashing of one input */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/hash.h"
#include "sum/common.h"

/* The files of b3sum, each including only those below it: b3.c (options, help, main),
 * b3-check.c (--check), b3-hash.c (this header's). */

#define B3_BUF_SIZE ((size_t)128 * 1024)
#define B3_HASH_LEN ((size_t)32)

typedef struct B3 {
        const char *prog;
        bool old;  /* b3sum 1.2.0 */
        bool keyed, no_names, raw, tag, check, quiet;
        const char *derive_key;
        uint64_t length, seek;
        bool length_given, length_bad;  /* length_bad: b3sum 1.2.0 reports it per file */
        char **files;
        size_t n_files;
        HashParams params;
        HashCtx *ctx;
        uint8_t *buf;
        Line line;
} B3;

/* Hashes the input at path (b->params, BLAKE3) into b->ctx: 0, or -errno with the errno to report
 * in *ret_err (0 for standard input in keyed mode, which the caller words itself). */
int b3_hash_input(B3 *b, const char *path, int *ret_err);
/* io::Error's Display: "No such file or directory (os error 2)". */
void b3_add_os_error(Line *l, int err);
/* Hashes one input and writes its line, or says why not: true when the input was hashed. */
bool b3_hash_one(B3 *b, const char *path);
