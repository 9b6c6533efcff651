/* SPDX-License-Identifier: MIT */
/* args.h: fhashctl's command line: the parsed options, the parser, diagnostics */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ctl/algo.h"
#include "ctl/macro.h"
#include "ctl/progress.h"
#include "fhash/fhash.h"

/* --length, --keyed, --derive-key and --block-size, as fhash_hash_options takes them. */
typedef struct CtlParams {
        uint32_t out_len;              /* digest bytes; 0: the default */
        bool keyed;                    /* key holds a BLAKE3 key */
        uint8_t key[FHASH_KEY_SIZE];
        const char *context;           /* --derive-key's context, or NULL */
        uint32_t block_size;           /* fs-verity's block size; 0: 4 KiB */
} CtlParams;

typedef struct Args {
        const char *verb;
        const char *algo;                 /* algos' first */
        AlgoSet algos;             /* -a sha256,blake3: several in one read (hash only) */
        bool algo_set;
        bool recursive, tag, zero, json, follow, one_file_system;
        bool check, binary, no_names;  /* hash -c (check), -b (" *name"), --no-names (hex only) */
        bool raw;                      /* the digest's bytes, one input (b3sum --raw) */
        /* -l/--length BITS (b2sum, cksum), --keyed (the key on stdin, as b3sum), --derive-key CONTEXT */
        const char *length, *derive_key;
        const char *block_size;  /* --block-size BYTES: fsverity's */
        bool keyed;
        CtlParams params;              /* from those; the key wiped before exit */
        bool has_params;
        ProgressMode progress;
        char **excludes;
        size_t n_excludes;
        bool local, daemon, no_direct;
        fhash_bus bus;                 /* --system, --user, --address */
        const char *address;
        bool quiet, status, strict, ignore_missing, warn;
        bool help;                     /* -h, --help: help for the verb, or the global help */
        bool no_cache;
        bool update;                   /* audit --update */
        bool create;                   /* audit --create */
        bool journal;                  /* audit --journal */
        unsigned attributes;           /* audit --attributes[=LIST] (ctl/baseline.h) */
        const char *io;                /* --io: auto, read, mmap or direct; NULL: auto */
        fhash_priority priority;       /* --priority, --background */
        char **rest;
        size_t n_rest;
} Args;

/* The name diagnostics and usage errors give ("fhashctl", whatever argv[0] was). */
extern const char *const ctl_program;

/* "fhashctl: message" on stderr, after flushing stdout so that lines do not mix. */
_printf_(1, 2) void ctl_err(const char *fmt, ...);
/* "fhashctl: NAME: reason" with NAME quoted as coreutils' quotef() does. */
void ctl_err_name(const char *name, const char *reason);
/* "fhashctl: message" and "Try 'fhashctl --help'..." on stderr; returns CTL_EXIT_USAGE. */
_printf_(1, 2) int ctl_usage_error(const char *fmt, ...);

/* Parses argv into a (as systemd's parse_argv): 1 to go on with a->verb; 0 to exit successfully
 * (--help, --version); -EINVAL for a usage error, another -errno for a failure (a key that could not
 * be read), each said on stderr already. */
int ctl_parse_args(int argc, char *argv[], Args *a);
