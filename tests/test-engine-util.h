/* SPDX-License-Identifier: MIT */
/* test-engine-util.h: what the engine tests share: a result collector, reference digests, engines, * page-cache helpers, children with restrictions */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>

#include "engine/engine.h"
#include "hash/hash.h"
#include "io/pagecache.h"

#define SLOT (1u << 20)

typedef struct Collector {
        EngineFileResult *results;
        bool *seen;
        size_t n, n_seen, n_dupes;
        bool done;
        EngineJobResult job_result;
} Collector;

typedef struct PipeWriter {
        int fd;
        size_t size;
        uint32_t seed;
} PipeWriter;

extern const EngineJobCallbacks test_callbacks;
/* Sizes on both sides of the small slots (64 KiB) and of a 1 MiB pool slot. */
#define N_EDGE_SIZES 12
extern const uint64_t edge_sizes[N_EDGE_SIZES];

void on_file(EngineJob *j, const EngineFileResult *r, void *userdata);
void on_done(EngineJob *j, EngineJobResult result, void *userdata);
void collector_init(Collector *c, size_t n);
void collector_done(Collector *c);
void wait_job(Engine *e, Collector *c, uint64_t timeout_usec);
char *reference_digest(HashAlgo a, const char *path);
void assert_result_matches(const EngineFileResult *r, HashAlgo a, const char *path);
Engine *new_engine(IoMode mode, size_t bufsize, unsigned buffers);
void check_paths_all_algos_opts(Engine *e, char **paths, size_t n, const EngineJobOptions *o, EngineReadStrategy expect);
void check_paths_all_algos(Engine *e, char **paths, size_t n);
void file_make_cold(const char *path);
void file_make_cached(const char *path, uint64_t off, uint64_t len);
/* The first len bytes of path read into the page cache and locked there (a shared mapping,
 * mlock()ed): nothing evicts them, not even a DAMON pageout scheme, until file_unpin(). NULL (with a
 * message) where mlock() is refused: the caller then has the pages cached, not pinned. */
void *file_pin_cached(const char *path, size_t len);
void file_unpin(void *p, size_t len);
PageCacheState file_cache_state(const char *path);
bool have_cachestat(void);
bool dir_has_direct(const char *dir);
EngineFileResult hash_one(Engine *e, HashAlgo a, const char *path, int fd, const EngineJobOptions *o);
void assert_digest_hex(const EngineFileResult *r, const char *ref);
int child_hash_check(IoMode expect);
/* In a child: drops CAP_IPC_LOCK and sets RLIMIT_MEMLOCK to bytes, so that registering more fails
 * for real. -errno when either cannot be done (the caller skips). */
int limit_memlock(rlim_t bytes);
/* Runs fn in a child: fails the test if it fails, skips it (cmocka skip()) if it exits 77 because the
 * restriction it needs could not be set up here. */
void run_child(int (*fn)(void), const char *what);
/* Hashes paths in one job (SHA-256); results into c (initialised here). */
void run_paths(Engine *e, const EngineJobOptions *o, char **paths, size_t n, Collector *c);
/* 77 (skip, with a message) when a reference tool is missing: without them nothing can be checked.
 * require_tools() for a NULL-terminated list, require_reference_tools() for every algorithm's. */
int require_tools(const char *const *tools);
int require_reference_tools(void);
