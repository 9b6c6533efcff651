/* SPDX-License-Identifier: MIT */
/* manager.h: fhashd's event loop: engine eventfd, bus, timers, signals, sd_notify, idle exit, shutdown */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "basic/macro.h"
#include "daemon/config.h"
#include "daemon/context.h"
#include "protocol/bus.h"

/*
 * Only fhashd.c includes this. The model (job, owner, peer) and the bus code (bus-*.c) see the
 * Context the manager owns and tell it what changed through the Context's hooks.
 */

/* How long shutdown waits for cancelled jobs to report before exiting anyway. */
#define MANAGER_SHUTDOWN_TIMEOUT_USEC (5 * 1000000ULL)
/* How long after the last job ended fhashd gives its free memory back (malloc_trim()). */
#define MANAGER_TRIM_USEC (1000 * 1000ULL)
/* Progress PropertiesChanged at most this often per job. */
#define MANAGER_PROGRESS_USEC (250 * 1000ULL)

typedef struct Manager {
        Context context;  /* first: the hooks find the manager from it */

        BusKind bus_kind;
        char *address;            /* for BUS_KIND_ADDRESS */
        uint64_t idle_exit_usec;  /* 0 = never */

        sd_event_source *engine_source;
        sd_event_source *background_source;  /* the background engine's, once it is made */
        EngineConfig engine_config;           /* what the background engine is made with */
        sd_event_source *progress_timer;
        sd_event_source *idle_timer;
        sd_event_source *status_timer;
        sd_event_source *trim_timer;  /* memory back to the system once the jobs are done */
        sd_event_source *shutdown_timer;
        sd_event_source *sigterm_source, *sigint_source;

        bool notify;  /* NOTIFY_SOCKET is set */
        uint64_t status_bytes, status_usec;  /* for the rate in STATUS= */
        int exit_code;
} Manager;

/* Starts the engine with the configuration's settings; the bus is connected by manager_start(). */
int manager_new(const FhashConfig *config, BusKind bus_kind, const char *address, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Connects to the bus, registers the objects and asks for the name; systemd is told we are ready
 * once the bus has given it. */
int manager_start(Manager *m);
/* Runs the event loop until shutdown or idle exit; returns the exit code for main(). */
int manager_run(Manager *m);
