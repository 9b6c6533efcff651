/* SPDX-License-Identifier: MIT */
/** @file
 * fhash.h: libfhash, the client library of fhashd, the file-hashing service.
 *
 * A program hands files to a client and gets one result per file, in the order it gave them:
 *
 *     fhash_client *c;
 *     if (fhash_client_new(NULL, &c, NULL) < 0) ...                       system bus, or in-process
 *     fhash_hash_paths(c, paths, n, NULL, print_result, NULL, &error);    sha256, blocking
 *     fhash_client_free(c);
 *
 * Through fhashd the library does what its D-Bus API asks of a client: it activates fhashd, takes a
 * direct connection when fhashd offers one, opens every file itself and passes the fds (16 per call,
 * in open jobs that it feeds as results come back), retries when fhashd says Busy, and reorders the
 * results, which arrive as they complete. Where no fhashd can be reached it hashes in this process
 * with the same engine, unless told not to.
 *
 * Errors are negative errno values. A function that takes an fhash_error fills it in on failure with
 * the D-Bus error name (or "") and a message for people: fhashd's names (fhash-dbus.h), the bus's,
 * and two of libfhash's own, org.fhash.Hasher1.Error.NotReachable (no fhashd could be reached:
 * no bus, or a bus that refused the connection) and org.fhash.Hasher1.Error.Gone (fhashd went away
 * during a run). Thread safety: an fhash_client is used by one thread at a time; different clients
 * may be used from different threads at once. A client may have several runs at once.
 *
 * Environment: FHASHCTL_BUSY_TIMEOUT (seconds, default 300, 0: for ever) is how long a run through
 * fhashd goes on sending calls that fhashd answers Busy (a per-user limit) before it fails with
 * org.fhash.Hasher1.Error.Busy; DBUS_SYSTEM_BUS_ADDRESS and DBUS_SESSION_BUS_ADDRESS (or
 * XDG_RUNTIME_DIR) say where the buses are, as for every D-Bus client.
 *
 * Room to grow: the structs a program fills in (options, inputs) end in reserved fields that must be
 * zero (zero-initialise them, as in the examples), and those the library fills in (results, progress,
 * errors) end in reserved fields too, so that later versions add fields without a new soname. The
 * symbols are versioned (LIBFHASH_0.1, LIBFHASH_0.2); bindings that mirror the structs check their
 * sizes with fhash_struct_size().
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FHASH_ERROR_NAME_MAX 128     /**< the size of fhash_error.name, its NUL included */
#define FHASH_ERROR_MESSAGE_MAX 512  /**< the size of fhash_error.message, its NUL included */

/** Why a call failed: filled in by the functions that take one. */
typedef struct fhash_error {
        int error;                                /**< -errno; 0 when nothing failed */
        char name[FHASH_ERROR_NAME_MAX];          /**< "org.fhash.Hasher1.Error.Busy", or "" */
        char message[FHASH_ERROR_MESSAGE_MAX];    /**< for people, never empty after a failure */
        uint64_t reserved[4];                     /**< set to zero by the library; for later fields */
} fhash_error;

/** Where fhash_client_new() looks for fhashd. */
typedef enum fhash_bus {
        FHASH_BUS_SYSTEM = 0,   /**< fhashd on the system bus (the default) */
        FHASH_BUS_USER = 1,     /**< fhashd on the user's session bus */
        FHASH_BUS_ADDRESS = 2,  /**< the bus at fhash_client_options.address */
} fhash_bus;

/** fhash_client_options.flags */
enum {
        FHASH_CLIENT_LOCAL = 1u << 0,        /**< never fhashd: hash in this process */
        FHASH_CLIENT_NO_FALLBACK = 1u << 1,  /**< fail (-ENOTCONN) rather than hash in-process */
        FHASH_CLIENT_NO_DIRECT = 1u << 2,    /**< pass fds through the bus, not a direct connection */
};

/** How fhash_client_new() connects; zeroed (or NULL): the system bus, with fallback. */
typedef struct fhash_client_options {
        fhash_bus bus;        /**< which bus fhashd is on */
        const char *address;  /**< FHASH_BUS_ADDRESS: a D-Bus address ("unix:path=/run/...") */
        unsigned flags;       /**< FHASH_CLIENT_* */
        /** Called once per run when fhashd has answered Busy (a per-user limit) for over a second:
         * reason is its message, gives_up is 1 when the run will fail after FHASHCTL_BUSY_TIMEOUT
         * seconds (the environment variable; default 300; 0: waits for ever). NULL: nothing is
         * said. */
        void (*busy_notice)(const char *reason, int gives_up, void *userdata);
        void *notice_userdata;  /**< given to busy_notice */
        uint64_t reserved[8];   /**< must be zero (-EINVAL otherwise): for later options */
} fhash_client_options;

/** A connection to fhashd, or the engine in this process: one thread at a time. */
typedef struct fhash_client fhash_client;

/** Connects (options NULL: the system bus, in-process where fhashd cannot be reached). Reaching
 * fhashd activates it where it is D-Bus activatable. 0, or -errno with error filled in: -ENOTCONN
 * with FHASH_CLIENT_NO_FALLBACK and no fhashd (the bus's error name when it answered, as
 * org.freedesktop.DBus.Error.ServiceUnknown when nothing on it is or starts fhashd; else
 * org.fhash.Hasher1.Error.NotReachable: no bus there, or one that refused the connection; the
 * message names the bus and its address), -EINVAL for bad options (an address that is not a D-Bus
 * address among them), -ENOMEM. */
int fhash_client_new(const fhash_client_options *options, fhash_client **ret, fhash_error *error);
/** Closes the connection. NULL is allowed. Returns NULL. */
fhash_client *fhash_client_free(fhash_client *c);
/** libsystemd's bus connection (sd-bus(3)), declared here so that this header needs no other. */
typedef struct sd_bus sd_bus;
/** A connection to the bus options name (NULL: the system bus) on which fhashd answers, reached as
 * fhash_client_new() reaches it (activated where it is activatable): for a program's own calls to
 * fhashd's D-Bus API (fhash-dbus.h), as fhashctl's jobs, watch, cancel and status make them. The
 * caller owns *ret (sd_bus_flush_close_unref()). 0, or -errno with error filled in: -ENOTCONN when
 * fhashd cannot be reached, with error as fhash_client_new() gives it with FHASH_CLIENT_NO_FALLBACK;
 * -EINVAL for bad options, FHASH_CLIENT_LOCAL among them. Since LIBFHASH_0.2. */
int fhash_bus_open(const fhash_client_options *options, sd_bus **ret, fhash_error *error);
/** 1 when address is a D-Bus address a client can connect to (TRANSPORT:KEY=VALUE,...; what
 * fhash_client_options.address must be), else 0: for a program to refuse a typo before it tries.
 * Since LIBFHASH_0.2. */
int fhash_bus_address_is_valid(const char *address);
/** 1 when error says that a bus answered and nothing on it is or starts fhashd (its name is the
 * bus's: ServiceUnknown, NameHasNoOwner, a D-Bus activation that found no service ...): the user
 * should install or start fhashd, where any other -ENOTCONN means no bus was there to ask. Else 0.
 * Since LIBFHASH_0.2. */
int fhash_error_is_no_daemon(const fhash_error *error);
/** 1 when the client hashes through fhashd, 0 when in this process. */
int fhash_client_uses_daemon(const fhash_client *c);
/** Why the client hashes in this process although it was not told to (FHASH_CLIENT_LOCAL): what
 * reaching fhashd said (the bus, its address, what was wrong), or why a run with FHASH_HASH_RESUME
 * that lost fhashd went on in this process; NULL otherwise. Lasts as long as the client (a later
 * fallback replaces it). */
const char *fhash_client_get_fallback_reason(const fhash_client *c);

/** What became of one file (fhash_result.status): the same through fhashd and in this process. */
typedef enum fhash_status {
        FHASH_OK = 0,         /**< hashed: digest holds it (equal to the expected digest, if one was given) */
        FHASH_MISMATCH = 1,   /**< hashed, but not the expected digest: digest holds the one computed */
        FHASH_CHANGED = 2,    /**< the file changed while it was read (size, mtime or identity): no digest */
        FHASH_ERROR = 3,      /**< it could not be opened or read: error and message say why */
        FHASH_CANCELLED = 4,  /**< the run was cancelled (or fhashd cancelled the job) before it was hashed */
        FHASH_SKIPPED = 5,    /**< an input given with a skip reason: not hashed; skip holds the reason */
} fhash_status;

/** One file's result, given to an fhash_result_fn. */
typedef struct fhash_result {
        size_t index;         /**< the file's position in the call, from 0 */
        const char *name;     /**< as given */
        uint64_t size;        /**< bytes hashed */
        /** Lower-case hex; with several algorithms ("sha256,blake3") their digests joined by ','.
         * NULL unless status is FHASH_OK or FHASH_MISMATCH. */
        const char *digest;
        /** 0 with FHASH_OK and FHASH_SKIPPED. With FHASH_ERROR the -errno of the failure, as fhashd's
         * error names class them (the same in both paths): -ENOENT (also for ENOTDIR, ENXIO,
         * ENODEV), -EACCES (also EPERM), -EISDIR (not a regular file), -EFBIG, -ETIMEDOUT, -EIO for
         * every other read error (an NFS ESTALE or a checksum EBADMSG from the file system included;
         * message names it). With the other statuses, as before status existed: -EBADMSG
         * (FHASH_MISMATCH), -ESTALE (FHASH_CHANGED), -ECANCELED (FHASH_CANCELLED): test status to
         * tell them apart. */
        int error;
        const char *message;  /**< what went wrong, NULL with FHASH_OK and FHASH_SKIPPED */
        const char *skip;     /**< with FHASH_SKIPPED, the reason the input was given with */
        fhash_status status;  /**< what became of the file */
        /** The algorithm it was hashed with: the input's own or the options' (with several, their
         * names joined by ','). */
        const char *algorithm;
        const char *expected; /**< the expected digest it was compared with, or NULL */
        void *userdata;       /**< the input's fhash_input.userdata; NULL for fhash_hash_paths() and _fds() */
        uint64_t reserved[4]; /**< zero; for later fields */
} fhash_result;

/** Called once per file, in the order the files were given, from inside fhash_hash_paths(). The
 * strings last until it returns. */
typedef void (*fhash_result_fn)(const fhash_result *result, void *userdata);

/** fhash_hash_options.flags */
enum {
        FHASH_HASH_DONTCACHE = 1u << 0,  /**< cache-neutral: add nothing to the page cache, evict nothing */
        /** fhash_run_get_progress() counts the bytes of files being hashed too, not only of those done
         * (through fhashd: the jobs' BytesDone, watched on the bus). */
        FHASH_HASH_PROGRESS = 1u << 1,
        /** Results as files complete, not in the order given (index says which): a slow file does not
         * hold back the others' results. */
        FHASH_HASH_UNORDERED = 1u << 2,
        /** Through fhashd: when fhashd goes away in the middle of the run (a crash, a restart, a
         * package upgrade), connect again, which activates it again where it is D-Bus activatable, and
         * send it exactly the inputs that have no result yet; where no fhashd answers any more, go on
         * in this process unless the client has FHASH_CLIENT_NO_FALLBACK. No result is lost or given
         * twice, and results keep their order. A stream (a pipe, a FIFO, a device, standard input
         * that is not a file) fhashd had begun to read cannot be read again: its result is an
         * -EIO error. An fhashd that stops cleanly cancels its jobs first; the run tells that from a
         * cancel by someone else (fhashctl cancel) by fhashd's State property. When fhashd keeps
         * going away before it hashed anything (3 times in a row), or no fhashd answers and the
         * client has FHASH_CLIENT_NO_FALLBACK, the run fails with -ENOTCONN and
         * org.fhash.Hasher1.Error.Gone. Without this flag a run that loses fhashd fails with
         * -ECONNRESET and org.fhash.Hasher1.Error.Gone (after a clean stop, which cancelled the
         * job first, its files not hashed may instead end FHASH_CANCELLED). fhashctl sets it;
         * libraries from before it ignore it. */
        FHASH_HASH_RESUME = 1u << 3,
};

/** How a run's files compete with other work (fhash_hash_options.priority). A library from before
 * priorities refuses a nonzero one (-EINVAL: it was a reserved field), never ignores it. */
typedef enum fhash_priority {
        FHASH_PRIORITY_NORMAL = 0,       /**< the default: a fair share beside other users' jobs */
        /** someone waits for it: its files go before the same user's other jobs' (never ahead of
         * another user's fair share) */
        FHASH_PRIORITY_INTERACTIVE = 1,
        /** only what nobody else wants: idle CPU time (SCHED_IDLE threads), the idle I/O class,
         * nothing left in the page cache, and inside fhashd it waits while any normal or interactive
         * job of any user moves; alone, as fast as a normal run */
        FHASH_PRIORITY_BACKGROUND = 2,
} fhash_priority;

/** What to compute and how to read; zeroed (or NULL): SHA-256, files read as fhashd sees fit. */
typedef struct fhash_hash_options {
        const char *algorithm;        /**< NULL: "sha256"; one of fhashctl's names (fhash_algorithms()),
                                       * or up to 4 joined by ',' to read each file once and hash it
                                       * with each */
        const char *const *expected;  /**< NULL, or a hex digest per path (NULL or "": none) */
        unsigned flags;               /**< FHASH_HASH_* */
        const char *strategy;         /**< how files are read: NULL or "auto", "read", "mmap", "direct" */
        /** One algorithm only: the digest length in bits (blake2b, blake2s, blake3; as b2sum -l), a
         * 32-byte BLAKE3 key (b3sum --keyed; copied, wiped after use), a BLAKE3 key-derivation
         * context (b3sum --derive-key). 0 and NULL: none. */
        unsigned length_bits;
        const uint8_t *key;           /**< 32 bytes, or NULL (see length_bits) */
        const char *derive_key;       /**< a context string, or NULL (see length_bits) */
        uint64_t max_size;            /**< a file past this many bytes fails with -EFBIG; 0: no limit */
        /** fsverity and fsverity-sha512 only: the Merkle tree's block size in bytes, a power of two
         * from 1024 to 65536 (fsverity digest --block-size); 0: 4096. Since LIBFHASH_0.2: it took
         * the first of the reserved fields, whose size it keeps. */
        uint32_t block_size;
        /** FHASH_PRIORITY_*; it takes the place of the 32 bits after block_size, which a library
         * from before it refuses when nonzero, so the struct keeps its size and layout */
        fhash_priority priority;
        uint64_t reserved[7];         /**< must be zero (-EINVAL otherwise): for later options */
} fhash_hash_options;

/** Hashes n files by path (relative paths from the current directory; "-" is standard input),
 * calling fn for each, in order, and returns once every file has its result: 0 (files that failed
 * have an error in their result, not here), or -errno with error filled in when the run itself
 * could not happen (-EINVAL: an unknown algorithm or bad options; -ECONNRESET with
 * org.fhash.Hasher1.Error.Gone: fhashd went away in the middle, see FHASH_HASH_RESUME). */
int fhash_hash_paths(fhash_client *c, const char *const *paths, size_t n, const fhash_hash_options *options,
                     fhash_result_fn fn, void *userdata, fhash_error *error);

/** The same for n open files: each is read from its start (a pipe or socket from where it is), the
 * fds stay the caller's (never closed; a regular file's offset is left as it was), and fhashd gets
 * a duplicate of each, so the caller's permission to read it is what counts. names: NULL, or a label
 * per fd for the results (NULL entries and a NULL array: ""). */
int fhash_hash_fds(fhash_client *c, const int *fds, const char *const *names, size_t n,
                   const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_error *error);

/** One input of a source: a path, or with path NULL an open fd (read from its start, left open). */
typedef struct fhash_input {
        const char *path;       /**< a path (relative: from the current directory; "-": standard input) */
        int fd;                 /**< with path NULL: an open fd, read from its start and left open */
        const char *name;       /**< the result's label; NULL: the path, or "" */
        const char *expected;   /**< NULL, or the hex digest the file must have */
        /** This input's own algorithm (one name; NULL: the options'): a manifest's lines may name
         * theirs. */
        const char *algorithm;
        unsigned length_bits;   /**< this input's digest length in bits (0: the options', or the default) */
        int error;              /**< -errno: not hashed, its result carries this error in its place */
        const char *skip;       /**< a reason: not hashed, its result carries it as skip */
        void *userdata;         /**< the caller's: given back in the input's fhash_result.userdata */
        uint64_t reserved[4];   /**< zeroed before each call to the source; must stay zero */
} fhash_input;

/** Gives the next input: 1 with *ret filled (its strings valid until the next call), 0 when there
 * are no more, or -errno to end the run with that error. Called as the run has room for more, so a
 * directory walk can go on while the first files are hashed. */
typedef int (*fhash_source_fn)(void *userdata, fhash_input *ret);

/** fhash_hash_paths() over inputs as a source gives them, any number (options->expected must be
 * NULL: expected digests come with each input). An input that is neither a path nor an fd, or whose
 * expected digest is not of the algorithm's form, gets a result with -EINVAL in its place. */
int fhash_hash_source(fhash_client *c, fhash_source_fn next, void *source_userdata,
                      const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_error *error);

/**
 * The same without blocking, for programs with their own event loop: fhash_run_paths() and
 * fhash_run_fds() start the run and return at once; the caller polls fhash_run_get_fd() for
 * fhash_run_get_events() (poll(2) flags) until fhash_run_get_timeout() (CLOCK_MONOTONIC, µs; at the
 * latest) and then calls fhash_run_process(), which does what is ready and calls fn for each result
 * that is in order. The fd may change while the run goes on (in-process, when the engine starts):
 * ask for it again after each fhash_run_process(). Nothing waits in the caller's thread: a FIFO
 * without a writer, or a device that waits for a carrier, is opened without waiting and waits in the
 * run (its fd among those the run's fd stands for); connecting to fhashd again (FHASH_HASH_RESUME)
 * goes on call by call. The arrays and strings given to the start functions are copied or needed
 * only during the call, but the client must outlive the run. A client may have several runs at once
 * (each polled on its own fd, fhash_run_process() called for each): through fhashd they share the
 * client's connection, and a run's fd becomes readable when another run's fhash_run_process()
 * handled something for it.
 */
typedef struct fhash_run fhash_run;

/** fhash_hash_paths() without blocking: *ret is the run (free it with fhash_run_free()). 0, or
 * -errno with error filled in. */
int fhash_run_paths(fhash_client *c, const char *const *paths, size_t n, const fhash_hash_options *options,
                    fhash_result_fn fn, void *userdata, fhash_run **ret, fhash_error *error);
/** fhash_hash_fds() without blocking, as fhash_run_paths(). */
int fhash_run_fds(fhash_client *c, const int *fds, const char *const *names, size_t n,
                  const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                  fhash_error *error);
/** fhash_hash_source() without blocking, as fhash_run_paths(): the source is called from
 * fhash_run_process(). */
int fhash_run_source(fhash_client *c, fhash_source_fn next, void *source_userdata,
                     const fhash_hash_options *options, fhash_result_fn fn, void *userdata, fhash_run **ret,
                     fhash_error *error);
/** The fd to poll, or -errno. */
int fhash_run_get_fd(fhash_run *r);
/** The poll(2) events to wait for on it. */
int fhash_run_get_events(fhash_run *r);
/** When to call fhash_run_process() at the latest, whatever the fd says (CLOCK_MONOTONIC, µs), or
 * UINT64_MAX when only the fd says: an idle run (a pipe that has nothing yet) does not wake its loop.
 * A run that is over, or has work to do at once, says now. */
uint64_t fhash_run_get_timeout(fhash_run *r);
/** Does what is ready without blocking: 1 while the run goes on, 0 once every file has its result,
 * or -errno with error filled in (the run is over then too). */
int fhash_run_process(fhash_run *r, fhash_error *error);
/** How far a run is (fhash_run_get_progress()). */
typedef struct fhash_progress {
        size_t files_done;    /**< files with a result */
        size_t files_total;   /**< files given (a source: so far) */
        int complete;         /**< every input is known (a source ended): totals are final */
        uint64_t bytes_done;  /**< bytes of the files done (and, through fhashd, of the running ones as
                               * its jobs report them) */
        uint64_t bytes_total; /**< bytes of the files opened so far: the total grows as files open */
        uint64_t reserved[4]; /**< set to zero; for later fields */
} fhash_progress;

/** Where the run is: 0, or -EINVAL. */
int fhash_run_get_progress(fhash_run *r, fhash_progress *ret);
/** Stops the run: files being hashed end with -ECANCELED (fhashd's jobs are cancelled), and inputs not
 * handed over yet get -ECANCELED results too; fhash_run_process() goes on until every input has its
 * result (a file already hashed or nearly may still come back with its digest). A run's source
 * (fhash_run_source()) is not called again: the inputs it gave before get their results, and the
 * run ends. 0, or -EINVAL. */
int fhash_run_cancel(fhash_run *r);
/** libsystemd's event loop (sd-event(3)), declared here so that this header needs no other. */
typedef struct sd_event sd_event;
/** Called once when a run attached to an sd-event loop is over: result is 0 or the run's -errno,
 * error its D-Bus name and message. */
typedef void (*fhash_done_fn)(fhash_run *r, int result, const fhash_error *error, void *userdata);
/** Runs r on an sd-event loop (sd-event(3), from libsystemd): an io source on its fd and a timer
 * call fhash_run_process() when they fire; done is called once when the run is over, with 0 or
 * the run's -errno and error (then the sources are gone; free the run from done or later). 0, or
 * -errno from sd-event. */
int fhash_run_attach_event(fhash_run *r, sd_event *event, fhash_done_fn done, void *userdata);

/** Frees the run; one not finished is abandoned (fhashd cancels its jobs when the client goes). */
fhash_run *fhash_run_free(fhash_run *r);

/** The algorithm names, in the order of fhashd's Algorithms property: a static NULL-terminated array. */
const char *const *fhash_algorithms(void);

#define FHASH_DIGEST_MAX 64        /**< bytes: the longest digest of one algorithm (length_bits 512 at most) */
#define FHASH_KEY_SIZE 32          /**< bytes of fhash_hash_options.key */
#define FHASH_ALGORITHMS_MAX 4     /**< the most names fhash_hash_options.algorithm joins with ',' */
#define FHASH_BLOCK_SIZE_MIN 1024u /**< fhash_hash_options.block_size's smallest (fs-verity) */
#define FHASH_BLOCK_SIZE_MAX 65536u /**< and its largest */

/** fhash_algorithm_features(): what fhash_hash_options may set for an algorithm, and how its lines
 * look. */
enum {
        FHASH_ALGORITHM_LENGTH = 1u << 0,      /**< length_bits (blake2b, blake2s, blake3; b2sum -l) */
        FHASH_ALGORITHM_KEY = 1u << 1,         /**< key (blake3; b3sum --keyed) */
        FHASH_ALGORITHM_DERIVE_KEY = 1u << 2,  /**< derive_key (blake3; b3sum --derive-key) */
        FHASH_ALGORITHM_BLOCK_SIZE = 1u << 3,  /**< block_size (fsverity, fsverity-sha512) */
        /** Its BSD tag goes on every checksum line, also where the others' lines have none: xxh3 (an
         * untagged line of 16 hex digits is xxh64 to every reader, xxhsum -c among them) and crc32c
         * (8 digits read as xxh32). */
        FHASH_ALGORITHM_ALWAYS_TAGGED = 1u << 4,
};

/** The digest's size in bytes for one algorithm name (fhash_algorithms()) with length_bits (0: its
 * default; 256 for blake2b is b2sum -l 256): what fhash_result.digest holds in hex, 2 digits a byte.
 * 0 for an unknown name, or a length the algorithm does not take (not a multiple of 8, above
 * fhash_algorithm_digest_max(), or any length of a fixed-size algorithm). Since LIBFHASH_0.2. */
size_t fhash_algorithm_digest_size(const char *name, unsigned length_bits);
/** The longest digest in bytes length_bits may ask of it (64 for blake2b and blake3, 32 for
 * blake2s); the fixed size of an algorithm without FHASH_ALGORITHM_LENGTH; 0 for an unknown name.
 * Since LIBFHASH_0.2. */
size_t fhash_algorithm_digest_max(const char *name);
/** FHASH_ALGORITHM_* for one algorithm name; 0 for most, and for an unknown name. Since
 * LIBFHASH_0.2. */
unsigned fhash_algorithm_features(const char *name);
/** The tag of its BSD-style checksum lines ("SHA256 (name) = hex"), as the reference tools write it:
 * coreutils' "SHA256", "MD5", "BLAKE2b" ("BLAKE2b-256" for length_bits 256, as b2sum -l 256 --tag),
 * xxhsum's "XXH64", "XXH3", rhash's "SHA3-256", "BLAKE3", ... Written into buf of n bytes (32 are
 * always enough); returns buf, or NULL for an unknown name, a length it does not take, or a buf
 * too small. Since LIBFHASH_0.2. */
const char *fhash_algorithm_tag(const char *name, unsigned length_bits, char *buf, size_t n);
/** The reverse, over the n bytes at tag (not NUL-terminated): the algorithm's name (a string of
 * fhash_algorithms()), with *ret_length_bits the length the tag says ("BLAKE2b-256": 256) or 0 for
 * the default (ret_length_bits may be NULL; set only on success). Takes fhash_algorithm_tag()'s tags,
 * the names themselves, and "SHA2-256" and the like, which coreutils >= 9.8 writes; NULL for
 * anything else. Since LIBFHASH_0.2. */
const char *fhash_algorithm_from_tag(const char *tag, size_t n, unsigned *ret_length_bits);
/** "0.1.0". */
const char *fhash_version(void);
/** The size of one of this header's structs as the library was built ("fhash_result", "fhash_input",
 * "fhash_hash_options", "fhash_client_options", "fhash_progress", "fhash_error"), 0 for another name:
 * bindings that mirror the structs (the Python module) check theirs against it. Since LIBFHASH_0.2. */
size_t fhash_struct_size(const char *name);
/** "ok", "mismatch", "changed", "error", "cancelled", "skipped"; NULL for another value. Since
 * LIBFHASH_0.2. */
const char *fhash_status_to_string(fhash_status status);

/** How fhash_name_format() writes a file name. */
typedef enum fhash_name_style {
        /** For a diagnostic, as coreutils' quotef(): unchanged when shell-safe, else '...' (or "..."),
         * control characters and bytes that are not UTF-8 as $'\n' / $'\377'. */
        FHASH_NAME_QUOTE = 0,
        /** A JSON string, its quotes included: UTF-8 as it is, every byte that is not UTF-8 as a lone
         * surrogate \\udcXX (Python's surrogateescape reads the name back byte for byte). */
        FHASH_NAME_JSON = 1,
} fhash_name_style;
/** A file name written in style: 0 and a new string in *ret (free() it), -EINVAL for a NULL name or
 * an unknown style, -ENOMEM. What sha256sum-style lines need besides (the backslash prefix and the
 * escapes of a newline, a carriage return and a backslash) is the caller's: those lines' format is the tools'. Since
 * LIBFHASH_0.2. */
int fhash_name_format(const char *name, fhash_name_style style, char **ret);
/** The character at p of a name: its length in bytes in *ret_len (1 for a byte that is not part of
 * valid UTF-8, 0 at the string's end), and 1 when a terminal may act on it (a C0 or C1 control, DEL,
 * a byte that is not UTF-8, such as a lone 0x9b, CSI to a terminal that reads 8-bit controls), else 0:
 * a program that prints names a hostile tree chose escapes those. Since LIBFHASH_0.2. */
int fhash_name_char(const char *p, size_t *ret_len);

#ifdef __cplusplus
}
#endif
