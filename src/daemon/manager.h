/* SPDX-License-Identifier: MIT */
/* manager.h: fhashd's model: the engine, the bus connection, the jobs and per-uid accounting */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "engine/engine.h"
#include "daemon/owner.h"
#include "daemon/peer.h"
#include "daemon/job.h"
#include "protocol/bus.h"
#include "basic/macro.h"

typedef struct ManagerConfig {
        EngineConfig engine;
        BusKind bus_kind;
        const char *address;
        uint32_t max_paths;           /* per HashPaths call */
        uint64_t keep_finished_usec;  /* how long finished jobs stay on the bus */
        uint64_t idle_exit_usec;      /* 0 = never */
        uint32_t max_jobs_per_uid;    /* unfinished jobs; 0 = unlimited */
        uint64_t max_files_per_uid;   /* unfinished files over all jobs of a uid; 0 = unlimited */
        uint64_t max_file_size;       /* MaxFileSize: larger files fail as TooLarge; 0 = unlimited */
} ManagerConfig;

#define MANAGER_CONFIG_DEFAULT                                                                             \
        (ManagerConfig)                                                                                    \
        {                                                                                                  \
                .engine = { .io_mode = IO_MODE_AUTO }, .bus_kind = BUS_KIND_SYSTEM,                      \
                .max_paths = 100000, .keep_finished_usec = 60 * 1000000ULL, .idle_exit_usec = 0,           \
                .max_jobs_per_uid = 64, .max_files_per_uid = 1000000,                                      \
        }

/* How long shutdown waits for cancelled jobs to report before exiting anyway. */
#define MANAGER_SHUTDOWN_TIMEOUT_USEC (5 * 1000000ULL)
/* Progress PropertiesChanged at most this often per job. */
#define MANAGER_PROGRESS_USEC (250 * 1000ULL)

typedef struct Manager {
        ManagerConfig config;
        char *address;  /* owned copy of config.address */

        sd_event *event;
        sd_bus *bus;
        Engine *engine;
        uid_t uid;  /* the daemon's own euid: HashPaths is for it and root */

        sd_event_source *engine_source;
        sd_event_source *progress_timer;
        sd_event_source *idle_timer;
        sd_event_source *status_timer;
        sd_event_source *shutdown_timer;
        sd_event_source *sigterm_source, *sigint_source;

        Owner *owners;    /* clients with jobs, each tracked once (owner.h) */
        Peer *peers;      /* direct connections handed out (peer.h) */
        unsigned n_peers;
        uint64_t next_peer_id;
        unsigned n_owners;
        Job *jobs;        /* every job on the bus, finished or not */
        uint32_t n_jobs;
        uint32_t active_jobs;  /* queued or running; "ActiveJobs" */
        uint64_t next_job_id;

        bool shutting_down;
        bool notify;  /* NOTIFY_SOCKET is set */
        uint64_t status_bytes, status_usec;  /* for the rate in STATUS= */
        int exit_code;
} Manager;

int manager_new(const ManagerConfig *config, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Connects to the bus, registers the objects, takes the name and tells systemd we are ready. */
int manager_start(Manager *m);
/* Runs the event loop until shutdown or idle exit; returns the exit code for main(). */
int manager_run(Manager *m);

/* SIGTERM/SIGINT: refuses new jobs, cancels running ones, exits once their owners were told. */
void manager_begin_shutdown(Manager *m);

Job *manager_find_job(Manager *m, uint64_t id);
/* May uid queue n_files more files (in a new job if new_job)? 0, or Busy set in error (shutting down,
 * or the per-uid limits on unfinished jobs and files). */
int manager_check_quota(Manager *m, uid_t uid, bool new_job, size_t n_files, sd_bus_error *error);

/* Arms the idle-exit timer when no job is unfinished and no job owner is connected. */
void manager_check_idle(Manager *m);

/* Called by Job: bookkeeping when a job appears, finishes or goes away. */
void manager_job_added(Manager *m, Job *j);
void manager_job_finished(Manager *m, Job *j);
void manager_job_removed(Manager *m, Job *j);
