/* SPDX-License-Identifier: MIT */
/* config.h: fhashd's configuration file (/etc/fhash/fhashd.conf plus drop-ins) and its defaults */
#pragma once

#include <stdint.h>

#include "engine/engine.h"

/*
 * File format
 * -----------
 * A single "[Daemon]" section of "Key=Value" lines. Blank lines and lines whose first non-blank
 * character is '#' or ';' are comments; there are no trailing comments. Whitespace around keys and
 * values is ignored. Keys are case-sensitive. An empty value ("Workers=") resets the key to its
 * built-in default, so a drop-in can undo what the main file set. Sizes take an optional binary
 * suffix K, M, G or T (case-insensitive, powers of 1024). Anything else -- an unknown section or key,
 * a line that is not "Key=Value", a value that does not parse or is out of range -- rejects the whole
 * load with a message of the form "<file>:<line>: <Key>=<Value>: <reason>".
 *
 * Load order: the main file, then every "*.conf" in the drop-in directory in strcmp() order of the
 * file names; a later assignment wins. Files that do not exist are skipped: no file at all means the
 * built-in defaults.
 *
 * Typical use in a program's main() (library code never logs; the caller prints ret_error):
 *
 *     FhashConfig cfg = FHASH_CONFIG_DEFAULTS;
 *     _cleanup_free_ char *err = NULL;
 *     r = config_load(&cfg, FHASH_SYSCONFDIR "/" FHASH_CONFIG_FILE,
 *                     FHASH_SYSCONFDIR "/" FHASH_CONFIG_DROPIN_DIR, &err);
 *     if (r < 0)
 *             return log_error_errno(r, "%s", err);
 *     ... then apply command-line options with config_set() so they override the files.
 */

/* Relative to sysconfdir (FHASH_SYSCONFDIR in the build's generated header). */
#define FHASH_CONFIG_FILE "fhash/fhashd.conf"
#define FHASH_CONFIG_DROPIN_DIR "fhash/fhashd.conf.d"

typedef struct FhashConfig {
        unsigned workers;                      /* Workers: hashing threads, 0 = one per online CPU */
        uint64_t buffer_size;                  /* BufferSize: bytes per pool slot */
        unsigned buffers;                      /* Buffers: pool slots, 0 = engine default (>= 8) */
        unsigned max_open_files;               /* MaxOpenFiles: files the engine keeps open at once */
        unsigned idle_exit_sec;                /* IdleExitSec: exit after this long idle, 0 = never */
        unsigned keep_finished_sec;            /* KeepFinishedSec: finished job objects linger */
        unsigned max_paths_per_call;           /* MaxPathsPerCall: cap on HashPaths() inputs */
        unsigned max_jobs_per_uid;             /* MaxJobsPerUID: unfinished jobs per uid, 0 = no cap */
        unsigned max_queued_files_per_uid;     /* MaxQueuedFilesPerUID: same for files, 0 = no cap */
        uint64_t max_bytes_in_flight_per_uid;  /* MaxBytesInFlightPerUID: 0 = unlimited */
        uint64_t max_file_size;                /* MaxFileSize: larger files fail, 0 = unlimited */
        IoMode io_mode;                  /* IOMode: auto, uring-registered, uring, pread */
} FhashConfig;

/* The built-in defaults; also documented, key by key, in systemd/fhashd.conf. */
#define FHASH_CONFIG_DEFAULTS                                                                              \
        ((FhashConfig){                                                                                    \
                .workers = 0,                                                                              \
                .buffer_size = UINT64_C(1) << 20,                                                          \
                .buffers = 0,                                                                              \
                .max_open_files = 64,                                                                      \
                .idle_exit_sec = 30,                                                                       \
                .keep_finished_sec = 60,                                                                   \
                .max_paths_per_call = 100000,                                                              \
                .max_jobs_per_uid = 64,                                                                    \
                .max_queued_files_per_uid = 1000000,                                                       \
                .max_bytes_in_flight_per_uid = 0,                                                          \
                .max_file_size = 0,                                                                        \
                .io_mode = IO_MODE_AUTO,                                                                 \
        })

/* Resets *c to FHASH_CONFIG_DEFAULTS. */
void config_init_defaults(FhashConfig *c);

/* Applies one file on top of *c. Returns 1 if the file was read, 0 if it does not exist (*c
 * untouched), or -errno: -EINVAL for a bad line (*ret_error = "<path>:<line>: ..."), another -errno
 * if the file could not be opened or read (*ret_error = "<path>: <strerror>"). On failure *c is left
 * as it was. *ret_error is set (malloc'd, caller frees) only on failure; ret_error may be NULL. */
int config_load_file(FhashConfig *c, const char *path, char **ret_error);

/* Applies main_path (may be NULL) and then every "*.conf" in dropin_dir (may be NULL) in strcmp()
 * order of their names. Returns the number of files read (>= 0) or the first failure as
 * config_load_file() does; on failure *c is left as it was. */
int config_load(FhashConfig *c, const char *main_path, const char *dropin_dir, char **ret_error);

/* Sets one key from its text form, with the same parsing and ranges as the file (an empty value
 * resets it to the default). For command-line overrides: config_set(&c, "BufferSize", optarg, &err).
 * Returns 0, or -EINVAL with *ret_error = "<Key>=<Value>: <reason>" (-ENOENT for an unknown key). */
int config_set(FhashConfig *c, const char *key, const char *value, char **ret_error);

/* Fills the engine's part of the configuration (workers, buffers, open files, I/O mode). */
void config_to_engine_config(const FhashConfig *c, EngineConfig *ret);
