/* SPDX-License-Identifier: MIT */
/* config.h: fhashd's configuration file (/etc/fhash/fhashd.conf plus drop-ins) and its defaults */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "daemon/user.h"
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
 *     FhashConfig cfg = config_defaults();
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
        unsigned workers;                      /* Workers: shards (a ring and a thread per core), 0 = one per online CPU */
        uint64_t buffer_size;                  /* BufferSize: bytes per pool slot */
        unsigned buffers;                      /* Buffers: pool slots, 0 = engine default (>= 8) */
        unsigned max_open_files;               /* MaxOpenFiles: files the engine keeps open at once */
        unsigned idle_exit_sec;                /* IdleExitSec: exit after this long idle, 0 = never */
        unsigned keep_finished_sec;            /* KeepFinishedSec: finished job objects linger */
        unsigned max_paths_per_call;           /* MaxPathsPerCall: cap on HashPaths() inputs */
        unsigned max_jobs_per_uid;             /* MaxJobsPerUID: unfinished jobs per uid, 0 = no cap */
        unsigned max_queued_files_per_uid;     /* MaxQueuedFilesPerUID: same for files, 0 = no cap */
        uint64_t max_memory_per_uid;  /* MaxMemoryPerUID: names, digests and results held; 0 = unlimited */
        uint64_t max_file_size;                /* MaxFileSize: larger files fail, 0 = unlimited */
        unsigned stall_timeout_sec;            /* StallTimeoutSec: a file with no I/O progress ends, 0 = never */
        IoMode io_mode;                        /* IOMode: auto, uring-registered, uring, pread */
} FhashConfig;

/*
 * The one table of settings (config.c): name, type, built-in default, range, fhashd's command-line
 * option and its help text. The file parser, the command line (fhashd.c's getopt and --help) and
 * the defaults all come from it, and a unit test checks that systemd/fhashd.conf lists every key at
 * its default.
 */
typedef enum ConfigKeyId {
        CONFIG_WORKERS,
        CONFIG_BUFFER_SIZE,
        CONFIG_BUFFERS,
        CONFIG_MAX_OPEN_FILES,
        CONFIG_IDLE_EXIT_SEC,
        CONFIG_KEEP_FINISHED_SEC,
        CONFIG_MAX_PATHS_PER_CALL,
        CONFIG_MAX_JOBS_PER_UID,
        CONFIG_MAX_QUEUED_FILES_PER_UID,
        CONFIG_MAX_MEMORY_PER_UID,
        CONFIG_MAX_FILE_SIZE,
        CONFIG_STALL_TIMEOUT_SEC,
        CONFIG_IO_MODE,
        _CONFIG_KEY_MAX,
} ConfigKeyId;

typedef enum ConfigType {
        CONFIG_TYPE_UNSIGNED, /* unsigned, decimal digits only */
        CONFIG_TYPE_SIZE,     /* uint64_t, digits and an optional K/M/G/T suffix */
        CONFIG_TYPE_IO_MODE,  /* IoMode */
} ConfigType;

typedef struct ConfigKey {
        const char *name;           /* in fhashd.conf */
        ConfigType type;
        size_t offset;              /* of its field in FhashConfig */
        const char *default_value;  /* the built-in default, as written in fhashd.conf */
        uint64_t min, max;
        const char *option;         /* fhashd's long option setting it, or NULL */
        const char *metavar;        /* the option's argument in --help */
        const char *help;           /* the option's line in --help */
} ConfigKey;

/* The key id names; NULL past the table. */
const ConfigKey *config_key(ConfigKeyId id);

/* Limits that have no key (yet); each is one entry of the per-uid accounting (user.h). */
/* Owners tracked at once (owner.h): each costs a match rule on fhashd's own bus connection, and
 * dbus-daemon allows 512 per connection on the system bus; the rest is left for sd-bus's own. */
#define OWNERS_MAX 384u
/* Of those, what one uid may hold (dbus-daemon lets a user have 256 connections on the system bus),
 * and what only root may take: other uids together can never lock root out (L3). */
#define OWNERS_MAX_PER_UID 128u
#define OWNERS_RESERVE_ROOT 64u
/* Direct connections open at once, in all and per uid (peer.h): each is an fd and a little memory in
 * fhashd, held as long as the client keeps it; root's reserve as for owners. */
#define PEERS_MAX 256u
#define PEERS_MAX_PER_UID 16u
#define PEERS_RESERVE_ROOT 16u
/* The fds a caller can make fhashd hold, from RLIMIT_NOFILE (config_fd_limits()): after what fhashd
 * keeps for itself (a sixteenth, or what its own sockets, opens and two messages' fds need), an eighth
 * for fds on their way in (USER_RESOURCE_TRANSIT), an eighth for fds waiting for the closer
 * (USER_RESOURCE_CLOSING), the rest for inputs (USER_RESOURCE_FDS). With the unit's
 * LimitNOFILE=65536: inputs 46080 (11520 per uid), on their way in 7680 (1920 per uid), waiting
 * to be closed 7680 (960 per uid). */
#define FDS_PER_MESSAGE_MAX 253u   /* SCM_MAX_FD: the most one sendmsg() can carry */
#define CLOSING_MIN_PER_UID 64u
#define TRANSIT_MIN 64u

/* The built-in defaults (every key at its default_value). */
FhashConfig config_defaults(void);
/* Resets *c to config_defaults(). */
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
/* Fills the per-uid and daemon-wide limits (user.h): jobs and files from the keys, owners and direct
 * connections from the fixed limits above, fds from RLIMIT_NOFILE as it is now (fhashd raises it to
 * its hard limit first). */
void config_to_user_limits(const FhashConfig *c, UserLimit ret[_USER_RESOURCE_MAX]);
/* The fd budgets (USER_RESOURCE_FDS, _TRANSIT, _CLOSING) for a soft RLIMIT_NOFILE of nofile and
 * the engine's MaxOpenFiles; the other entries of ret are left as they are. */
void config_fd_limits(uint64_t nofile, unsigned max_open, UserLimit ret[_USER_RESOURCE_MAX]);
