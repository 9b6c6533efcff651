/* SPDX-License-Identifier: MIT */
/* context.h: what fhashd's model and its bus code share: loop, bus, engine, registry, limits */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "daemon/registry.h"
#include "engine/engine.h"
#include "io/fsinfo.h"

/*
 * The manager (manager.c: event loop, timers, signals, sd_notify, idle exit, shutdown) owns one
 * Context and is known to fhashd.c alone. Jobs, owners, direct connections and the vtables see only
 * this: the objects they need and two hooks through which they tell the manager that something it
 * watches changed. That keeps the model and the bus code from calling up into the loop (and lets the
 * unit tests run the model with a Context of their own, without a manager or a bus).
 */
typedef struct Context Context;
typedef struct Gate Gate;
typedef struct FdScreen FdScreen;
typedef struct Closing Closing;
struct SenderUids;
struct SenderCreds;

struct Context {
        sd_event *event;
        sd_bus *bus;          /* fhashd's connection to the bus (direct connections are peers'); may be NULL */
        Gate *bus_gate;       /* reads the bus socket for sd-bus (gate.h) */
        sd_bus *driver;       /* asks the bus driver what the bus connection cannot (bus-connect.h) */
        char *bus_address;
        struct SenderUids *sender_uids; /* senders' uids as the driver said them (bus-connect.c) */
        struct SenderCreds *sender_creds; /* and their groups, for HashNames (bus-connect.c) */
        FdScreen *fd_screen;  /* judges every fd a gate receives */
        Closing *closing;     /* fds only the closer may close */
        Engine *engine;
        Engine *background;   /* background jobs' (engine.h, "Priorities"); made when the first comes */
        Registry registry;
        FsTable *fs_table;    /* the mount table, for the file system of callers' fds */
        uid_t uid;            /* fhashd's own euid: HashPaths is for it and root */
        bool shutting_down;   /* new jobs and connections are refused */

        /* From the configuration (config.h). */
        uint32_t max_paths;           /* per HashPaths call */
        uint64_t keep_finished_usec;  /* how long finished jobs stay on the bus */
        uint64_t max_file_size;       /* MaxFileSize: larger files fail as TooLarge; 0 = unlimited */

        /* Set by the manager; NULL ones are skipped. */
        void (*jobs_changed)(Context *c);     /* a job was added, finished or removed */
        void (*clients_changed)(Context *c);  /* an owner or a direct connection came or went */
        /* Makes c->background and watches it; NULL: no background engine can be made. */
        int (*background_start)(Context *c);
};

/* The engine of background jobs, made (and watched) on first use: 0 or -errno. */
static inline int context_background(Context *c)
{
        if (c->background)
                return 0;
        return c->background_start ? c->background_start(c) : -EOPNOTSUPP;
}

/* What both engines hashed and have queued: the daemon's totals. */
static inline uint64_t context_bytes_hashed(Context *c)
{
        return engine_get_bytes_hashed(c->engine) + (c->background ? engine_get_bytes_hashed(c->background) : 0);
}

static inline unsigned context_files_queued(Context *c)
{
        return engine_get_files_queued(c->engine) + (c->background ? engine_get_files_queued(c->background) : 0);
}

static inline void context_jobs_changed(Context *c)
{
        if (c->jobs_changed)
                c->jobs_changed(c);
}

static inline void context_clients_changed(Context *c)
{
        if (c->clients_changed)
                c->clients_changed(c);
}
