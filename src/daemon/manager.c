/* SPDX-License-Identifier: MIT */
/* manager.c: fhashd's event loop: engine eventfd, bus, timers, signals, sd_notify, idle exit, shutdown */
#include <inttypes.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>

#include "basic/log.h"
#include "basic/time-util.h"
#include "build-config.h"
#include "daemon/bus-connect.h"
#include "daemon/bus-driver.h"
#include "daemon/bus-job.h"
#include "daemon/bus-manager.h"
#include "daemon/closing.h"
#include "daemon/fd-screen.h"
#include "daemon/job.h"
#include "daemon/manager.h"
#include "daemon/peer.h"
#include "fhash/fhash-dbus.h"
#include "protocol/errors.h"

static int on_engine_fd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Manager *m = userdata;
        int r;

        /* Every engine callback, hence every job change and signal, happens in here, on the loop
         * thread: the workers never see the bus. */
        r = engine_dispatch(m->context.engine);
        if (r < 0)
                log_warning_errno(r, "Engine dispatch failed: %m");
        return 0;
}

static int on_background_fd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Manager *m = userdata;
        int r;

        r = engine_dispatch(m->context.background);
        if (r < 0)
                log_warning_errno(r, "Background engine dispatch failed: %m");
        return 0;
}

/* The first background job makes the background engine: shards of its own, SCHED_IDLE at the idle
 * I/O class, yielding to the normal engine (engine.h, "Priorities"). It stays until fhashd exits:
 * its pool is registered once, like the normal engine's. */
static int manager_background_start(Context *c)
{
        Manager *m = container_of(c, Manager, context);
        EngineConfig cfg = m->engine_config;
        int r;

        cfg.background = true;
        cfg.yield_to = c->engine;
        r = engine_new(&cfg, &c->background);
        if (r < 0)
                return log_error_errno(r, "Failed to start the background engine: %m");
        r = sd_event_add_io(c->event, &m->background_source, engine_get_fd(c->background), EPOLLIN, on_background_fd, m);
        if (r < 0) {
                c->background = engine_free(c->background);
                return log_error_errno(r, "Failed to watch the background engine: %m");
        }
        (void)sd_event_source_set_priority(m->background_source, SD_EVENT_PRIORITY_NORMAL - 1);
        log_info("Background engine ready: %u idle workers.", engine_get_workers(c->background));
        return 0;
}

static int on_progress_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        REGISTRY_FOREACH_ACTIVE_JOB(e, next, &m->context.registry) {
                Job *j = e->job;
                JobState before = j->state;

                if (!j->started)
                        continue;
                if (job_update_progress(j))
                        (void)bus_job_emit_properties_changed(j, j->state != before, true);
        }
        if (registry_n_active_jobs(&m->context.registry) == 0)
                return sd_event_source_set_enabled(s, SD_EVENT_OFF);
        return sd_event_source_set_time_relative(s, MANAGER_PROGRESS_USEC);
}

static void format_bytes(uint64_t n, char *buf, size_t size)
{
        static const char *const units[] = { "B", "kB", "MB", "GB", "TB", "PB" };
        double v = (double)n;
        size_t u = 0;

        while (v >= 1000.0 && u + 1 < ELEMENTSOF(units)) {
                v /= 1000.0;
                u++;
        }
        if (u == 0)
                (void)snprintf(buf, size, "%" PRIu64 " B", n);
        else
                (void)snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void manager_send_status(Manager *m)
{
        uint64_t now = now_usec(), bytes = context_bytes_hashed(&m->context);
        char rate[32];

        if (!m->notify)
                return;
        format_bytes(now > m->status_usec ? (uint64_t)((double)(bytes - m->status_bytes) * 1e6 /
                                                       (double)(now - m->status_usec))
                                          : 0,
                     rate, sizeof(rate));
        m->status_bytes = bytes;
        m->status_usec = now;
        (void)sd_notifyf(false, "STATUS=%s%" PRIu32 " jobs, %u files queued, %s/s",
                         m->context.shutting_down ? "Shutting down: " : "",
                         registry_n_active_jobs(&m->context.registry), context_files_queued(&m->context), rate);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        manager_send_status(m);
        return sd_event_source_set_time_relative(s, 1000000);
}

static bool manager_is_idle(Manager *m)
{
        Registry *reg = &m->context.registry;

        if (registry_n_active_jobs(reg) > 0 || m->context.shutting_down)
                return false;
        /* A client holding a direct connection is about to use it: exiting would cut it off. */
        if (registry_n_peers(reg) > 0)
                return false;
        /* A connected owner of a finished job may still call GetResults: not idle yet. An owner
         * exists exactly as long as a job holds it, so finished jobs whose owner left do not count;
         * they are lost on exit, as they would be on expiry. */
        return registry_n_owners(reg) == 0;
}

static void manager_check_idle(Manager *m)
{
        if (!m->idle_timer)
                return;
        if (manager_is_idle(m)) {
                int enabled = SD_EVENT_OFF;

                /* Already counting down: keep the deadline, idleness did not start anew. */
                (void)sd_event_source_get_enabled(m->idle_timer, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return;
                (void)sd_event_source_set_time_relative(m->idle_timer, m->idle_exit_usec);
                (void)sd_event_source_set_enabled(m->idle_timer, SD_EVENT_ONESHOT);
        } else
                (void)sd_event_source_set_enabled(m->idle_timer, SD_EVENT_OFF);
}

static int on_idle_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;
        int r;

        if (!manager_is_idle(m))
                return 0;
        log_info("Idle for %" PRIu64 " s, exiting.", m->idle_exit_usec / 1000000);
        (void)sd_notify(false, "STOPPING=1\nSTATUS=Idle, exiting.");
        /* Give the name up first, so that a call from now on activates a new instance instead of
         * queueing to us. Not a blocking call: its answer would come through the gate, on this
         * loop; the request is flushed before we exit. */
        r = sd_bus_release_name_async(m->context.bus, NULL, FHASH_BUS_NAME, NULL, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to release %s: %m", FHASH_BUS_NAME);
        return sd_event_exit(m->context.event, 0);
}

/* Sends what is queued for clients (JobFinished of every cancelled job) and ends the loop. */
static int manager_exit(Manager *m)
{
        peer_flush_all(&m->context);
        (void)sd_bus_flush(m->context.bus);
        return sd_event_exit(m->context.event, m->exit_code);
}

static void manager_maybe_exit(Manager *m)
{
        if (m->context.shutting_down && registry_n_active_jobs(&m->context.registry) == 0)
                (void)manager_exit(m);
}

static int on_shutdown_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        log_warning("%" PRIu32 " jobs did not finish cancelling in time, exiting anyway.",
                    registry_n_active_jobs(&m->context.registry));
        return manager_exit(m);
}

/* SIGTERM/SIGINT: refuses new jobs, cancels running ones, exits once their owners were told. */
static void manager_begin_shutdown(Manager *m)
{
        Context *c = &m->context;
        int r;

        if (c->shutting_down)
                return;
        c->shutting_down = true;
        log_info("Shutting down, cancelling %" PRIu32 " jobs.", registry_n_active_jobs(&c->registry));
        (void)sd_notify(false, "STOPPING=1");
        manager_send_status(m);

        r = sd_event_add_time_relative(c->event, &m->shutdown_timer, CLOCK_MONOTONIC,
                                       MANAGER_SHUTDOWN_TIMEOUT_USEC, 0, on_shutdown_timeout, m);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the shutdown timeout: %m");

        /* Cancelled jobs finish through the engine's job_done, which sends JobFinished "cancelled"
         * to each owner; the last one ends the loop. */
        REGISTRY_FOREACH_ACTIVE_JOB(e, next, &c->registry)
                job_cancel(e->job);
        manager_maybe_exit(m);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        Manager *m = userdata;

        if (m->context.shutting_down) {
                log_notice("Got signal %u again, exiting now.", si->ssi_signo);
                return sd_event_exit(m->context.event, m->exit_code);
        }
        log_info("Got signal %u.", si->ssi_signo);
        manager_begin_shutdown(m);
        return 0;
}

/* The jobs are done: what a burst of them took (results, names, buffers of their calls) is free but
 * kept by malloc for the next; a daemon that may sit idle for hours gives it back (32 users' load
 * left 8-10 MiB more resident than before it). */
static int on_trim_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        if (registry_n_active_jobs(&m->context.registry) == 0)
                (void)malloc_trim(0);
        return 0;
}

static void manager_schedule_trim(Manager *m)
{
        if (!m->trim_timer) {
                if (sd_event_add_time_relative(m->context.event, &m->trim_timer, CLOCK_MONOTONIC, MANAGER_TRIM_USEC,
                                               MANAGER_TRIM_USEC / 4, on_trim_timer, m) < 0)
                        return;
        } else
                (void)sd_event_source_set_time_relative(m->trim_timer, MANAGER_TRIM_USEC);
        (void)sd_event_source_set_enabled(m->trim_timer, SD_EVENT_ONESHOT);
}

static void on_jobs_changed(Context *c)
{
        Manager *m = container_of(c, Manager, context);

        if (registry_n_active_jobs(&c->registry) == 0)
                manager_schedule_trim(m);

        if (registry_n_active_jobs(&c->registry) > 0 && m->progress_timer) {
                int enabled = SD_EVENT_OFF;

                (void)sd_event_source_get_enabled(m->progress_timer, &enabled);
                if (enabled == SD_EVENT_OFF) {
                        (void)sd_event_source_set_time_relative(m->progress_timer, MANAGER_PROGRESS_USEC);
                        (void)sd_event_source_set_enabled(m->progress_timer, SD_EVENT_ON);
                }
        }
        manager_check_idle(m);
        manager_maybe_exit(m);
}

static void on_clients_changed(Context *c)
{
        manager_check_idle(container_of(c, Manager, context));
}

int manager_new(const FhashConfig *config, BusKind bus_kind, const char *address, Manager **ret)
{
        UserLimit limits[_USER_RESOURCE_MAX];
        Manager *m;
        int r;

        /* A fail label rather than _cleanup_: clang-tidy 14 and cppcheck 2.10 do not see cleanup
         * attributes on a struct that owns other allocations, and report each early return after
         * the strdup() below as a leak of it. */
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        config_to_user_limits(config, limits);
        registry_init(&m->context.registry, limits);
        m->context.uid = geteuid();
        m->context.max_paths = config->max_paths_per_call;
        m->context.keep_finished_usec = (uint64_t)config->keep_finished_sec * USEC_PER_SEC;
        m->context.max_file_size = config->max_file_size;
        m->context.jobs_changed = on_jobs_changed;
        m->context.clients_changed = on_clients_changed;
        m->context.background_start = manager_background_start;
        m->idle_exit_usec = (uint64_t)config->idle_exit_sec * USEC_PER_SEC;
        m->bus_kind = bus_kind;
        if (address) {
                m->address = strdup(address);
                if (!m->address) {
                        r = -ENOMEM;
                        goto fail;
                }
        }

        /* First, while fhashd is small: the closer is a copy of it (io/closer.h). */
        r = closing_new(&m->context.registry.users, &m->context.closing);
        if (r < 0) {
                log_error_errno(r, "Failed to start the closer: %m");
                goto fail;
        }
        r = fd_screen_new(&m->context.fd_screen);
        if (r < 0) {
                log_error_errno(r, "Failed to open /proc/self/mountinfo: %m");
                goto fail;
        }

        r = sd_event_default(&m->context.event);
        if (r < 0)
                goto fail;

        config_to_engine_config(config, &m->engine_config);
        r = fs_table_new(&m->context.fs_table);
        if (r < 0) {
                log_error_errno(r, "Failed to open /proc/self/mountinfo: %m");
                goto fail;
        }
        r = engine_new(&m->engine_config, &m->context.engine);
        if (r >= 0) {
                *ret = m;
                return 0;
        }
fail:
        manager_free(m);
        return r;
}

Manager *manager_free(Manager *m)
{
        Context *c;
        PeerEntry *p, *tmp;

        if (!m)
                return NULL;
        c = &m->context;

        /* Nothing to watch any more: what goes now tells nobody. */
        c->jobs_changed = NULL;
        c->clients_changed = NULL;
        while (c->registry.jobs)
                job_free(c->registry.jobs->job);
        /* uthash.h is a system header, which cppcheck is not given. */
        // cppcheck-suppress unknownMacro
        HASH_ITER(hh, c->registry.peers, p, tmp)
                peer_free(p->peer);

        sd_event_source_disable_unref(m->engine_source);
        sd_event_source_disable_unref(m->background_source);
        sd_event_source_disable_unref(m->progress_timer);
        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->status_timer);
        sd_event_source_disable_unref(m->trim_timer);
        sd_event_source_disable_unref(m->shutdown_timer);
        sd_event_source_disable_unref(m->sigterm_source);
        sd_event_source_disable_unref(m->sigint_source);

        /* The background engine first: it reads the normal one's state (EngineConfig.yield_to). */
        engine_free(c->background);
        engine_free(c->engine);
        fs_table_free(c->fs_table);
        bus_disconnect(c);
        fd_screen_free(c->fd_screen);
        /* After every gate: what they held that only the closer may close went to it. */
        c->closing = closing_free(c->closing);
        sd_event_unref(c->event);
        registry_done(&c->registry);
        free(m->address);
        free(m);
        return NULL;
}

static int bus_gate_sender_uid(const char *sender, uid_t *ret, void *userdata)
{
        Context *c = userdata;
        OwnerEntry *o = registry_find_owner(&c->registry, sender);

        if (o) {
                *ret = o->uid;
                return 0;
        }
        return bus_driver_uid_async(c, sender, ret);
}

static const GateOps bus_gate_ops = {
        .sender_uid = bus_gate_sender_uid,
};

static int manager_connect_bus(Manager *m)
{
        _cleanup_free_ char *address = NULL;
        Context *c = &m->context;
        int r;

        r = bus_address_resolve(m->bus_kind, m->address, &address);
        if (r < 0)
                return r;
        return bus_connect(c, address, &bus_gate_ops, c);
}

static int on_name_acquired(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        Manager *m = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e) {
                log_error("Failed to acquire %s: %s", FHASH_BUS_NAME, e->message ? e->message : e->name);
                return sd_event_exit(m->context.event, EXIT_FAILURE);
        }
        log_info("fhashd " FHASH_VERSION " ready: %u workers, io mode %s.", engine_get_workers(m->context.engine),
                 io_mode_to_string(engine_get_io_mode(m->context.engine)));
        m->status_usec = now_usec();
        (void)sd_notifyf(false, "READY=1\nSTATUS=Ready, %u workers.", engine_get_workers(m->context.engine));
        return 0;
}

int manager_start(Manager *m)
{
        uint64_t watchdog_usec;
        int r;

        r = sd_bus_error_add_map(fhash_error_map());
        if (r < 0)
                return log_error_errno(r, "Failed to register the error names: %m");

        r = closing_attach_event(m->context.closing, m->context.event);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the closer: %m");
        r = sd_event_add_signal(m->context.event, &m->sigterm_source, SIGTERM, on_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGTERM: %m");
        r = sd_event_add_signal(m->context.event, &m->sigint_source, SIGINT, on_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGINT: %m");

        /* Engine results are delivered before new bus calls are looked at: finishing work frees
         * quota and memory sooner than accepting more does. */
        r = sd_event_add_io(m->context.event, &m->engine_source, engine_get_fd(m->context.engine), EPOLLIN, on_engine_fd, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the engine: %m");
        (void)sd_event_source_set_priority(m->engine_source, SD_EVENT_PRIORITY_NORMAL - 1);

        r = sd_event_add_time_relative(m->context.event, &m->progress_timer, CLOCK_MONOTONIC, MANAGER_PROGRESS_USEC,
                                       MANAGER_PROGRESS_USEC / 10, on_progress_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the progress timer: %m");
        (void)sd_event_source_set_enabled(m->progress_timer, SD_EVENT_OFF);

        if (m->idle_exit_usec > 0) {
                r = sd_event_add_time_relative(m->context.event, &m->idle_timer, CLOCK_MONOTONIC,
                                               m->idle_exit_usec, 100000, on_idle_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the idle timer: %m");
        }

        m->notify = getenv("NOTIFY_SOCKET") != NULL;
        if (m->notify) {
                r = sd_event_add_time_relative(m->context.event, &m->status_timer, CLOCK_MONOTONIC, 1000000, 100000,
                                               on_status_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the status timer: %m");
        }
        /* sd-event sends WATCHDOG=1 at half of WATCHDOG_USEC from the loop itself, so a stuck loop
         * is what gets us restarted. */
        if (sd_watchdog_enabled(false, &watchdog_usec) > 0) {
                r = sd_event_set_watchdog(m->context.event, true);
                if (r < 0)
                        log_warning_errno(r, "Failed to enable the watchdog: %m");
        }

        r = manager_connect_bus(m);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the %s bus: %m",
                                       bus_kind_to_string(m->bus_kind));

        r = bus_manager_register(&m->context, m->context.bus);
        if (r < 0)
                return log_error_errno(r, "Failed to register the manager object: %m");
        r = bus_job_register(&m->context, m->context.bus);
        if (r < 0)
                return log_error_errno(r, "Failed to register the job objects: %m");

        /* Not a blocking call: its answer comes through the gate, on the loop. */
        r = sd_bus_request_name_async(m->context.bus, NULL, FHASH_BUS_NAME, 0, on_name_acquired, m);
        if (r < 0)
                return log_error_errno(r, "Failed to acquire %s: %m", FHASH_BUS_NAME);

        manager_check_idle(m);
        return 0;
}

int manager_run(Manager *m)
{
        int r;

        r = sd_event_loop(m->context.event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        /* sd-bus ends the loop with EXIT_FAILURE when the bus goes away (or refuses us, e.g. a
         * match rule past dbus-daemon's limit): say so, or the log shows only "Exiting.". Our own
         * exits (SIGTERM, idle) end it with 0, and sd-bus closes the bus on any loop exit, so the
         * bus being closed alone does not tell. */
        if (r != 0 && m->context.bus && sd_bus_is_open(m->context.bus) <= 0)
                log_error("Lost the connection to the bus; exiting.");
        return r;
}
