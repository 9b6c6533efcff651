/* SPDX-License-Identifier: MIT */
/* engine.h: the hashing engine: one shard per core, each with its io_uring ring, its part of the
 * registered pool and its files, reading and hashing them on that core */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "basic/string-table.h"
#include "hash/hash.h"
#include "io/ioring.h"

/*
 * Threads and ownership
 * ---------------------
 * The engine runs one shard per core (EngineConfig.workers; one per online CPU by default), each a thread pinned to its
 * core that owns an io_uring ring (SINGLE_ISSUER), its share of the registered pool, of the small-file
 * slots and of the files open at once. A shard opens, reads and hashes the files it takes, start to
 * end: a buffer is hashed on the core that read it, while it is in that core's cache. Every shard
 * takes the next input of a job when it has a slot free (one counter per job), so a job's inputs
 * spread over all cores as they go; only the pieces of one big BLAKE3 file are hashed on other
 * shards. Results leave through one eventfd. The thread that created the engine is the "consumer": it creates and starts jobs, cancels them and calls
 * engine_dispatch() when engine_get_fd() becomes readable. Every callback runs inside
 * engine_dispatch(), on the consumer thread, so callers need no locking of their own. All functions
 * below must be called from the consumer thread, except engine_job_get_progress() and the getters of
 * Engine, which any thread may call.
 *
 * What a shard may do to a caller's file
 * --------------------------------------
 * A shard serves every user's files: one system call that waits on a file (a lease to break, a FUSE
 * server, an NFS server gone, a FIFO with no writer, a tape drive) stops every job on that core
 * (issue 24, N2: one write lease held both shards 45 s per file). So, in a shard's own thread:
 *   - an fd input is never opened again by path except through /proc/self/fd with O_NONBLOCK (a
 *     lease then fails EWOULDBLOCK instead of waiting lease-break-time, and the file is read buffered),
 *     and never on a file system marked ENGINE_INPUT_UNTRUSTED_FS (FUSE, network, unknown), where an
 *     open asks the server;
 *   - statx of an fd runs here only for a trusted (local) file system, where it answers from the
 *     inode in memory; an untrusted one's goes through the ring (an io-wq worker waits, not the shard);
 *   - reads, polls, fadvise and closes of a caller's fd always go through the ring: a close that
 *     flushes (FUSE, NFS) is punted to io-wq by the kernel, and fhashd's gate never lets an fd whose
 *     close could wait for ever reach the engine (daemon/fd-screen.h);
 *   - fcntl() on an fd (F_GETFL, F_SETFL O_DIRECT) asks no file system;
 *   - path inputs (HashPaths: root's and fhashd's own uid's only) are opened through the ring, with
 *     O_NONBLOCK where a FIFO could be named; their statx(path) for the linked chain runs here, and
 *     root's paths are trusted as root's mounts are;
 *   - names beneath a caller's directory (EngineDir) are opened through the ring only, with
 *     O_NONBLOCK, the caller's credentials (EngineCreds) and a resolution that cannot leave the
 *     directory's mount; no statx of the path: the fd's, once open, as for any fd on that mount;
 *   - a shard's thread changes its own credentials only to register a personality (engine/creds.c):
 *     for a few system calls, none of which touches a file.
 */

typedef struct Engine Engine;
typedef struct EngineJob EngineJob;

/*
 * How path inputs are opened (see "How each file is read" in README.md). CLASSIC: OPENAT through the
 * ring, statx of the fd, reads, statx, CLOSE, each a round trip through the shard's ring. LINKED: a path
 * whose statx(path) shows a small regular file (under one pool slot, and under ENGINE_PROBE_MIN unless
 * the job forces buffered reads) goes to the ring as one chain, open into a direct descriptor -> read
 * into a pool slot -> close, with no fd in the process; everything else, and every failure the chain
 * cannot vouch for, is opened the classic way. Measured on the bench VM (bench/ANALYSIS.md, "S1"), the
 * chain was not faster hot and slower cold, so AUTO is CLASSIC for now.
 */
typedef enum EngineOpenMode {
        ENGINE_OPEN_AUTO,     /* the measured faster of the two: CLASSIC */
        ENGINE_OPEN_LINKED,   /* the linked chain where the kernel can (io_uring with a sparse file table,
                               * 5.19+), else CLASSIC: engine_get_open_mode() says which */
        ENGINE_OPEN_CLASSIC,
        _ENGINE_OPEN_MODE_MAX,
        _ENGINE_OPEN_MODE_INVALID = -EINVAL,
} EngineOpenMode;

DECLARE_STRING_TABLE_LOOKUP(engine_open_mode, EngineOpenMode);

/* The largest configuration engine_new() accepts; fhashd.conf checks the same ranges, so a value
 * the file accepts never fails at start. 16384 is the kernel's cap on registered buffers
 * (IORING_MAX_REG_BUFFERS); a slot above 256 MiB only wastes locked memory. */
#define ENGINE_MAX_WORKERS 1024u
#define ENGINE_MAX_BUFFER_SIZE (UINT64_C(256) << 20)
#define ENGINE_MAX_BUFFERS 16384u
#define ENGINE_MAX_OPEN 65536u

typedef struct EngineConfig {
        unsigned workers;      /* shards (threads, each with a ring); 0 = one per online CPU */
        size_t buffer_size;    /* bytes per pool slot; 0 = 1 MiB; rounded up to 4 KiB */
        unsigned buffers;      /* pool slots (reads + hashing in flight); 0 = default (>= 8) */
        unsigned max_open;     /* files open at once; 0 = default (64) */
        IoMode io_mode;  /* IO_MODE_AUTO unless a test forces a fallback */
        bool no_pin;           /* do not pin shards to CPUs */
        EngineOpenMode open_mode;  /* ENGINE_OPEN_AUTO unless a test or benchmark forces one */
        /* Bytes per O_DIRECT read of a large cold file: a read spans that many adjacent pool slots
         * (see "How each file is read" in README.md). 0 = the default (ENGINE_DIRECT_REQUEST);
         * buffer_size or less = one slot per read. Rounded down to whole slots. */
        size_t direct_request;
        /* Tests only: every O_DIRECT read is first issued one byte short (unaligned), so that the
         * kernel answers EINVAL and the fallback to buffered reads runs, as on a filesystem whose
         * alignment STATX_DIOALIGN did not announce. */
        bool test_direct_einval;
        /* Tests only: shards whose bit is set (bit i: shard i) run on pread instead of io_uring, as
         * if their ring could not be made, while the others use io_uring. */
        uint64_t test_pread_shards;
        /* Tests only: called on the file's shard after the statx that picked a path for the linked chain
         * and before the chain is submitted, so that a test can change the file in between. */
        void (*test_linked_hook)(const char *path, void *userdata);
        void *test_linked_userdata;
        /* A file whose I/O makes no progress for this long (a pipe nobody writes to, a FIFO nobody
         * opens, a FUSE server that does not answer) ends with status ENGINE_FILE_ERROR and error
         * -ETIMEDOUT: its operations are cancelled and its open slot, buffers and share are given
         * back (see "Fair share and stalls" below). Waiting for a buffer or for the hashing is not a
         * stall. 0 = ENGINE_STALL_TIMEOUT_DEFAULT; UINT64_MAX = never. */
        uint64_t stall_timeout_usec;
        /* A background engine (see "Priorities" below): its shards are SCHED_IDLE threads reading at
         * the idle I/O class, every job is cache-neutral (EngineJobOptions.dontcache), and while the
         * engine yield_to (if not NULL) has work that moves, they open and read nothing. yield_to
         * must outlive this engine. */
        bool background;
        Engine *yield_to;
        /* Register each shard's pool slots with its first read into one, not at start, where memlock
         * cannot refuse them (unlimited, or CAP_IPC_LOCK); small-file slots are registered at start
         * either way. Registering pins the memory, so the kernel first faults in and zeroes it: 10 MiB a
         * shard took 0.5-48 ms of an in-process run's start on the bench VM, which thousands of small
         * files never use. For short-lived engines (libfhash's in-process runs); a daemon keeps its
         * memory known from the start. */
        bool pool_on_demand;
} EngineConfig;

#define ENGINE_STALL_TIMEOUT_DEFAULT (UINT64_C(30) * 1000000)

/* The default of EngineConfig.direct_request: this VM's virtio disk reads 1 MiB O_DIRECT requests
 * at 1.2-1.5 GB/s and 4 MiB ones at up to 2.4 (bench/ANALYSIS.md, "C1/C2"). */
#define ENGINE_DIRECT_REQUEST ((size_t)4 << 20)

/* Starts the shards. -ENOMEM, -EINVAL for a bad config, or the errno of the first thing that failed.
 * Falls back from registered buffers to unregistered to pread in AUTO, each shard on its own (under
 * an 8 MiB memlock limit one shard's part of the pool may be registered and another's not). */
int engine_new(const EngineConfig *config, Engine **ret);
/* Cancels every job, joins all threads, closes every fd and frees everything. Pending results are
 * dropped without callbacks. Takes NULL. */
Engine *engine_free(Engine *e);

/* An eventfd (EFD_NONBLOCK) that is readable whenever engine_dispatch() has something to deliver. */
int engine_get_fd(Engine *e);
/* Delivers pending file results and job completions through the jobs' callbacks, at most a few
 * hundred per call so the caller's loop stays responsive; the fd stays readable while more are
 * pending. Returns the number of events delivered (>= 0), never blocks. */
int engine_dispatch(Engine *e);
/* Blocks until something can be dispatched or timeout_usec passes (UINT64_MAX = forever), then
 * dispatches. For simple clients (fhashctl --local, tests, benchmarks) without an event loop. */
int engine_run_once(Engine *e, uint64_t timeout_usec);

IoMode engine_get_io_mode(Engine *e);   /* the mode actually in use after fallbacks (shard 0's) */
IoMode engine_get_shard_io_mode(Engine *e, unsigned shard);  /* -EINVAL for no such shard */
unsigned engine_get_workers(Engine *e); /* shards */
size_t engine_get_buffer_size(Engine *e);
unsigned engine_get_buffers(Engine *e);
unsigned engine_get_direct_span(Engine *e);
EngineOpenMode engine_get_open_mode(Engine *e); /* LINKED or CLASSIC: what path inputs use */   /* pool slots one O_DIRECT read fills (1: no spans) */
uint64_t engine_get_bytes_hashed(Engine *e);  /* total since start, all jobs */
bool engine_is_background(Engine *e);         /* EngineConfig.background */
/* Background engines: how many times another process's disk requests held reads back (diskwatch.h). */
uint64_t engine_get_disk_holds(Engine *e);
/* Whether a shard of e made progress within window_usec of now (CLOCK_MONOTONIC): what a background
 * engine yields to. Any thread. */
bool engine_is_busy(Engine *e, uint64_t now, uint64_t window_usec);
uint64_t engine_get_files_linked(Engine *e);  /* files hashed whole by a linked chain, since start */
unsigned engine_get_files_queued(Engine *e);  /* files of running jobs not finished yet */

/*
 * How a regular file's bytes reach the hash. Every strategy gives the same digest; they differ in
 * copies, system calls and what is left in the page cache. AUTO decides per file from cachestat(2):
 * a large file entirely in the page cache is mapped and hashed in place (no copy: the shard that
 * hashes it would otherwise make the copy itself); a cold file opened by
 * path is read with O_DIRECT into the pool (no page-cache copy, nothing left cached); anything else,
 * and every file below ENGINE_PROBE_MIN, is read through the page cache into the pool. A strategy the
 * file cannot take (a pipe, a filesystem without O_DIRECT, an fd passed by the caller for DIRECT,
 * whose open file description is shared with the caller) falls back to BUFFERED.
 */
typedef enum EngineReadStrategy {
        ENGINE_READ_AUTO,
        ENGINE_READ_BUFFERED,  /* read(2)-style copies from the page cache into the pool */
        ENGINE_READ_MMAP,      /* map the file; the shard hashes the page cache in place */
        ENGINE_READ_DIRECT,    /* O_DIRECT reads into the pool, bypassing the page cache */
        _ENGINE_READ_MAX,
        _ENGINE_READ_INVALID = -EINVAL,
} EngineReadStrategy;

DECLARE_STRING_TABLE_LOOKUP(engine_read_strategy, EngineReadStrategy);

/* Files smaller than this are always read BUFFERED under AUTO: for them a probe or an uncached read
 * costs more than the one copy it would save. */
#define ENGINE_PROBE_MIN ((uint64_t)256 << 10)
/* AUTO maps only files of at least this size: mmap, the faults and above all munmap's TLB
 * shoot-down on every core running a shard cost more than copying a smaller file. */
#define ENGINE_MAP_MIN ((uint64_t)8 << 20)

typedef enum EngineFileStatus {
        ENGINE_FILE_OK,         /* digest is valid */
        ENGINE_FILE_ERROR,      /* error holds -errno (ENOENT, EACCES, EIO, EISDIR, EFBIG, ...);
                                 * -ETIMEDOUT: no progress for EngineConfig.stall_timeout_usec */
        /* The file changed while it was read: its size, mtime or inode differ between the stat
         * before and the one after reading, it ended early, or its ctime changed (a writer who
         * restores mtime with futimens() still changes ctime). A ctime change alone is accepted
         * when the link count changed and size and mtime did not: the file was unlinked or linked
         * meanwhile, which does not touch its bytes. */
        ENGINE_FILE_CHANGED,
        ENGINE_FILE_CANCELLED,  /* the job was cancelled before the file finished */
        _ENGINE_FILE_STATUS_MAX,
        _ENGINE_FILE_STATUS_INVALID = -EINVAL,
} EngineFileStatus;

typedef struct EngineFileResult {
        size_t index;              /* position of the input in the job, from 0 */
        EngineFileStatus status;
        int error;                 /* -errno when status == ENGINE_FILE_ERROR, else 0 */
        uint64_t size;             /* bytes hashed (for CHANGED: bytes read) */
        size_t digest_size;        /* 0 unless status == ENGINE_FILE_OK */
        uint8_t digest[HASH_SET_DIGEST_MAX];  /* a set's digests joined (EngineJobOptions.algos) */
        EngineReadStrategy strategy;  /* how the file was read: BUFFERED, MMAP or DIRECT */
        bool parallel;             /* hashed in pieces on several shards (BLAKE3 tree) */
        unsigned shard;            /* the shard (ring and core) that read it */
        /* What stat said at the start and at the end, for CHANGED (both zero if never known). */
        uint64_t size_before, size_after;
        int64_t mtime_before_nsec, mtime_after_nsec;
        uint64_t cookie;           /* EngineInput.cookie; the index for engine_job_add_path/fd() */
} EngineFileResult;

typedef enum EngineJobResult {
        ENGINE_JOB_DONE,       /* every file has a result, none cancelled */
        ENGINE_JOB_CANCELLED,  /* engine_job_cancel() or engine_free() */
} EngineJobResult;

typedef struct EngineJobCallbacks {
        /* Once per input, in completion order (input order with EngineJobOptions.ordered). */
        void (*file_done)(EngineJob *j, const EngineFileResult *r, void *userdata);
        /* Once, after the last file_done of the job. The job may be unref'd from here. */
        void (*job_done)(EngineJob *j, EngineJobResult result, void *userdata);
} EngineJobCallbacks;

/*
 * A directory that path inputs are resolved beneath (fhashd's HashFds with "names": the caller's
 * directory fd, and names in it). Counted: each input that names it holds a reference until the job
 * is freed, so the fd stays open (and its number is not reused) while any open relative to it may
 * still be in the kernel. Such a path is opened with openat2(dir, path, RESOLVE_BENEATH |
 * RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS) and O_NONBLOCK, always through the ring and never by the
 * linked chain (no statx of the path in a shard): it cannot leave the directory's mount, so a
 * directory on a local file system keeps every lookup and open on it (no FUSE, no network), and a
 * lease fails EWOULDBLOCK instead of waiting.
 */
typedef struct EngineDir EngineDir;
/* Takes fd (also on failure: then it is closed and NULL returned). */
EngineDir *engine_dir_new(int fd);
EngineDir *engine_dir_ref(EngineDir *d);
EngineDir *engine_dir_unref(EngineDir *d);
int engine_dir_fd(const EngineDir *d);
DEFINE_TRIVIAL_CLEANUP_FUNC(EngineDir *, engine_dir_unref);

/*
 * The credentials a job's path inputs are opened with, when not the process's own (fhashd opening
 * names for a caller: the caller's uid and groups, from the bus). Each shard registers them once as
 * an io_uring personality of its ring (engine/creds.c): its thread takes the uid as fsuid, the first
 * group as fsgid, all of them as its groups and no effective capability, registers, and goes back;
 * every open of such an input then runs with exactly those, so the kernel's permission checks are the
 * caller's own. A shard that cannot (no io_uring, no CAP_SETUID/CAP_SETGID) fails the file with the
 * errno (-EOPNOTSUPP, -EPERM) and never opens it with other credentials.
 */
#define ENGINE_CREDS_GROUPS_MAX 64
/* Whether this process may take another uid's and group's credentials (root with CAP_SETUID and
 * CAP_SETGID): tried once, on the calling thread, and put back at once. */
bool engine_creds_supported(void);
typedef struct EngineCreds {
        uid_t uid;
        unsigned n_groups;                      /* 1..ENGINE_CREDS_GROUPS_MAX: the first is the fsgid */
        gid_t groups[ENGINE_CREDS_GROUPS_MAX];
} EngineCreds;

typedef struct EngineJobOptions {
        uint64_t max_file_size;  /* 0 = unlimited; more bytes than this fails the file with -EFBIG */
        /* Cache-neutral: hashing adds nothing to the page cache and evicts nothing that was cached
         * before. Cached files are mapped only when entirely cached, cold ones read with O_DIRECT
         * (path inputs), the rest with RWF_DONTCACHE where the kernel has it (6.14+). */
        bool dontcache;
        EngineReadStrategy strategy;
        bool no_change_check;    /* skip the stat after reading (inputs known to be immutable) */
        /* Path inputs must be regular files: they are opened O_NONBLOCK (a FIFO's open cannot
         * hang), directories fail with -EISDIR, and pipes, sockets and devices with -ESPIPE unless
         * max_file_size bounds them. For callers (fhashd's HashPaths) that cannot check the type
         * of a path before the engine opens it without racing. */
        bool regular_only;
        /* The share group (fhashd passes the caller's uid): see "Fair share and stalls" below. */
        uint64_t share_group;
        /* Deliver file_done in input order: a result that is ready early waits (in the consumer's
         * memory, one EngineFileResult each) until every earlier input has one. */
        bool ordered;
        /* How to hash beyond the algorithm (a length, a BLAKE3 key or derive-key context); NULL: the
         * plain digest. engine_job_new() checks it against the algorithm and copies it (the key and
         * the context too): the caller may wipe its own at once. */
        const HashParams *params;
        /* Several algorithms in one read of each file: NULL (or a set of one) hashes with the job's
         * algorithm alone; otherwise a set whose first is that algorithm, and each result's digest
         * is the set's digests joined (see HashAlgoSet), digest_size their sum. Not with params
         * (-EINVAL). BLAKE3 in a set is hashed on one shard like the others. Copied. */
        const HashAlgoSet *algos;
        /* Opened before the other jobs of its share group (see "Priorities" below). */
        bool interactive;
        /* The credentials its path inputs are opened with (EngineCreds); NULL: the process's. Copied. */
        const EngineCreds *creds;
} EngineJobOptions;

/*
 * Priorities
 * ----------
 * Within a share group, interactive jobs open their inputs before the group's other jobs; they take
 * nothing from other groups' shares. Background work runs in an engine of its own
 * (EngineConfig.background), beside the normal one, on shards of its own:
 *   - CPU: each shard is SCHED_IDLE (basic/idle.h), so it runs on a core only when nothing else there
 *     wants to, and whatever wakes up preempts it at once. The kernel does the yielding, to every
 *     process on the machine, not just to fhash: a shard that hashes at normal priority and tries
 *     to step aside itself cannot see a CPU-bound process beside it.
 *   - Disk: every read carries IOPRIO_CLASS_IDLE in its own request (and the thread has it for what
 *     it issues itself), so mq-deadline and BFQ dispatch it only when no other request waits.
 *   - Page cache: its jobs are cache-neutral, so a scan of a large tree evicts nobody's hot files.
 *   - Inside the daemon, above the fair share: while one of the shards of the engine yield_to
 *     made progress within ENGINE_YIELD_WINDOW_USEC, a background shard opens no file and issues no
 *     read (it looks again every ENGINE_YIELD_POLL_USEC), so a normal or
 *     interactive job of any user has the disk queue, the buffers' memory bandwidth and the
 *     cores to itself; what is in flight finishes. A normal job waiting on a silent pipe does not
 *     make progress, so it holds background work up for at most the window.
 * Alone, a background engine runs as fast as a normal one: the idle class and SCHED_IDLE cost
 * nothing when nobody else wants the disk or the core.
 */
#define ENGINE_YIELD_WINDOW_USEC (UINT64_C(100) * 1000)
#define ENGINE_YIELD_POLL_USEC (UINT64_C(5) * 1000)

/*
 * Fair share and stalls
 * ---------------------
 * Jobs are scheduled by share group, then by job. While several groups have files to open, each may
 * hold at most an even part of the open-file slots (max_open), and while several have files open,
 * at most an even part of the buffers (pool slots and small slots) before the others have had
 * theirs; within a group its jobs split the group's part the same way. Files that finish in turn
 * give the slots to whoever is under its share, so the hashing follows. A group alone may use
 * everything. When a newcomer finds every slot held by files that will not finish soon (pipes,
 * streams), it may open up to its share beyond max_open (at most max_open more files in all). Those
 * extra slots are shared as if one more group were there (a group alone borrows at most half), so
 * that the next group to come finds some free even when the groups before it hold only streams.
 * Streams (pipes, sockets, character devices) are polled through the ring and take a buffer only
 * when they have data, so a silent pipe holds a slot but no buffer. A file that makes no progress
 * for EngineConfig.stall_timeout_usec ends with ENGINE_FILE_ERROR, error -ETIMEDOUT; if its
 * operation cannot be cancelled (a FUSE request the server read and never answers), its result is
 * posted and its share given back at once, and only its slot and the buffer in flight stay with the
 * kernel until the operation ends.
 */

/* EngineInput.flags */
enum {
        /* The file system may hang (FUSE not mounted by root, a network file system): the file's
         * statx calls go through the ring (an io-wq thread, not the engine's own threads), and it
         * is neither mapped nor switched to O_DIRECT (both would call into the file system from an
         * engine thread), so a server that never answers stalls only this file, which the stall
         * timeout then ends. Closes always go through the ring. */
        ENGINE_INPUT_UNTRUSTED_FS = 1u << 0,
};

/* What a caller already knows of an fd input from a statx of its own, with at least
 * ENGINE_FD_STATX_MASK (fhashd's gate makes one as it receives the fd), and its F_GETFL: the engine
 * then makes neither again before reading (a statx and an fcntl less per file). Only for a file on a
 * trusted (local) file system, where a statx without AT_STATX_SYNC_* is what the engine's own is. */
typedef struct EngineFdInfo {
        struct statx stx;
        int flags;          /* F_GETFL */
} EngineFdInfo;
#define ENGINE_FD_STATX_MASK (STATX_TYPE | STATX_SIZE | STATX_MTIME | STATX_CTIME | STATX_INO | STATX_NLINK)

typedef struct EngineInput {
        const char *path;   /* a path input (copied), or NULL for an fd input */
        EngineDir *dir;     /* with path: resolved beneath this directory (a reference is taken), or NULL */
        int fd;             /* with path NULL: the fd, owned by the job once added */
        uint64_t cookie;    /* handed back in EngineFileResult.cookie */
        unsigned flags;     /* ENGINE_INPUT_* */
        const EngineFdInfo *info; /* an fd input's, or NULL (copied) */
} EngineInput;

/* A job starts empty; add inputs, then start it. */
int engine_job_new(Engine *e, HashAlgo algo, const EngineJobOptions *options, EngineJob **ret);
EngineJob *engine_job_ref(EngineJob *j);
/* Drops a reference. Dropping the last reference of a started job that has not finished cancels
 * it; the engine keeps what it needs until its I/O is retired, but no callback fires any more. */
EngineJob *engine_job_unref(EngineJob *j);

/* Adds an input: a path (copied; relative paths resolve against the cwd at start) or, with path NULL,
 * an fd, which the job owns on success (not on failure), reads from offset 0 if seekable, else as a
 * stream, and closes through the ring as soon as the file is done. Returns the index. */
int engine_job_add_input(EngineJob *j, const EngineInput *in);
/* Adds a path input; its cookie is its index. Returns the index. */
int engine_job_add_path(EngineJob *j, const char *path);
/* Adds an fd input (see engine_job_add_input()); its cookie is its index. Returns the index. */
int engine_job_add_fd(EngineJob *j, int fd);
/* engine_job_add_fd() with EngineInput.flags (ENGINE_INPUT_*). */
int engine_job_add_fd_flags(EngineJob *j, int fd, unsigned flags);
/* Queues the job in the engine. Callbacks fire from engine_dispatch() afterwards. -EBUSY if started. */
int engine_job_start(EngineJob *j, const EngineJobCallbacks *callbacks, void *userdata);
/* Asks the engine to stop the job: no new reads are issued, reads in flight are cancelled, every fd
 * and buffer is released promptly; unfinished files end CANCELLED and job_done says CANCELLED. */
void engine_job_cancel(EngineJob *j);

typedef struct EngineJobProgress {
        uint64_t bytes_done;    /* hashed */
        uint64_t bytes_total;   /* sum of the sizes known so far (grows as files are opened) */
        size_t files_done;
        size_t files_total;
        size_t files_failed;
        uint64_t start_usec;    /* CLOCK_MONOTONIC when the job started; 0 if not started */
        bool running;           /* a shard has begun opening its inputs (not just queued) */
} EngineJobProgress;

/* Any thread; lock-free snapshot. */
void engine_job_get_progress(EngineJob *j, EngineJobProgress *ret);
size_t engine_job_get_n_inputs(EngineJob *j);
HashAlgo engine_job_get_algo(EngineJob *j);
/* The job's algorithms (a set of one unless EngineJobOptions.algos said more). */
const HashAlgoSet *engine_job_get_algos(EngineJob *j);
bool engine_job_is_finished(EngineJob *j);

