/* SPDX-License-Identifier: MIT */
/* manager.c: fhashd's model and main loop plumbing: engine eventfd, bus, timers, notify, shutdown */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <systemd/sd-daemon.h>

#include "daemon/bus-job.h"
#include "daemon/bus-manager.h"
#include "daemon/bus-util.h"
#include "build-config.h"
#include "fhash/fhash-dbus.h"
#include "protocol/errors.h"
#include "basic/log.h"
#include "basic/time-util.h"
#include "daemon/manager.h"

static int on_engine_fd(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Manager *m = userdata;
        int r;

        /* Every engine callback, hence every job change and signal, happens in here, on the loop
         * thread: the workers never see the bus. */
        r = engine_dispatch(m->engine);
        if (r < 0)
                log_warning_errno(r, "Engine dispatch failed: %m");
        return 0;
}

static int on_progress_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        for (Job *j = m->jobs; j; j = j->next) {
                JobState before = j->state;

                if (job_is_finished(j) || !j->started)
                        continue;
                if (job_update_progress(j))
                        (void)bus_job_emit_properties_changed(j, j->state != before, true);
        }
        if (m->active_jobs == 0)
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
        uint64_t now = now_usec(), bytes = engine_get_bytes_hashed(m->engine);
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
                         m->shutting_down ? "Shutting down: " : "", m->active_jobs,
                         engine_get_files_queued(m->engine), rate);
}

static int on_status_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        manager_send_status(m);
        return sd_event_source_set_time_relative(s, 1000000);
}

static bool manager_is_idle(Manager *m)
{
        if (m->active_jobs > 0 || m->shutting_down)
                return false;
        /* A client holding a direct connection is about to use it: exiting would cut it off. */
        if (m->peers)
                return false;
        /* A connected owner of a finished job may still call GetResults: not idle yet. Finished
         * jobs whose owner left do not count; they are lost on exit, as they would be on expiry. */
        for (Job *j = m->jobs; j; j = j->next)
                if (j->owner_ref)
                        return false;
        return true;
}

void manager_check_idle(Manager *m)
{
        if (!m->idle_timer)
                return;
        if (manager_is_idle(m)) {
                int enabled = SD_EVENT_OFF;

                /* Already counting down: keep the deadline, idleness did not start anew. */
                (void)sd_event_source_get_enabled(m->idle_timer, &enabled);
                if (enabled != SD_EVENT_OFF)
                        return;
                (void)sd_event_source_set_time_relative(m->idle_timer, m->config.idle_exit_usec);
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
        log_info("Idle for %" PRIu64 " s, exiting.", m->config.idle_exit_usec / 1000000);
        (void)sd_notify(false, "STOPPING=1\nSTATUS=Idle, exiting.");
        /* Give the name up first, so that a call from now on activates a new instance instead of
         * queueing to us. */
        r = sd_bus_release_name(m->bus, FHASH_BUS_NAME);
        if (r < 0)
                log_warning_errno(r, "Failed to release %s: %m", FHASH_BUS_NAME);
        return sd_event_exit(m->event, 0);
}

static void manager_maybe_exit(Manager *m)
{
        if (m->shutting_down && m->active_jobs == 0) {
                /* JobFinished for every cancelled job is queued on the bus or a direct connection:
                 * make sure it leaves. */
                peer_flush_all(m);
                (void)sd_bus_flush(m->bus);
                (void)sd_event_exit(m->event, m->exit_code);
        }
}

static int on_shutdown_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
        Manager *m = userdata;

        log_warning("%" PRIu32 " jobs did not finish cancelling in time, exiting anyway.", m->active_jobs);
        peer_flush_all(m);
        (void)sd_bus_flush(m->bus);
        return sd_event_exit(m->event, m->exit_code);
}

void manager_begin_shutdown(Manager *m)
{
        int r;

        if (m->shutting_down)
                return;
        m->shutting_down = true;
        log_info("Shutting down, cancelling %" PRIu32 " jobs.", m->active_jobs);
        (void)sd_notify(false, "STOPPING=1");
        manager_send_status(m);

        r = sd_event_add_time_relative(m->event, &m->shutdown_timer, CLOCK_MONOTONIC,
                                       MANAGER_SHUTDOWN_TIMEOUT_USEC, 0, on_shutdown_timeout, m);
        if (r < 0)
                log_warning_errno(r, "Failed to arm the shutdown timeout: %m");

        /* Cancelled jobs finish through the engine's job_done, which sends JobFinished "cancelled"
         * to each owner; the last one ends the loop. */
        for (Job *j = m->jobs; j; j = j->next)
                job_cancel(j);
        manager_maybe_exit(m);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
        Manager *m = userdata;

        if (m->shutting_down) {
                log_notice("Got signal %u again, exiting now.", si->ssi_signo);
                return sd_event_exit(m->event, m->exit_code);
        }
        log_info("Got signal %u.", si->ssi_signo);
        manager_begin_shutdown(m);
        return 0;
}

int manager_new(const ManagerConfig *config, Manager **ret)
{
        Manager *m;
        int r;

        /* A fail label rather than _cleanup_: clang-tidy 14 and cppcheck 2.10 do not see cleanup
         * attributes and report the early returns as leaks. */
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->config = *config;
        m->next_job_id = 1;
        m->next_peer_id = 1;
        m->uid = geteuid();
        if (config->address) {
                m->address = strdup(config->address);
                if (!m->address) {
                        r = -ENOMEM;
                        goto fail;
                }
                m->config.address = m->address;
        }

        r = sd_event_default(&m->event);
        if (r < 0)
                goto fail;

        r = engine_new(&m->config.engine, &m->engine);
        if (r < 0)
                goto fail;

        *ret = m;
        return 0;

fail:
        manager_free(m);
        return r;
}

Manager *manager_free(Manager *m)
{
        if (!m)
                return NULL;

        while (m->jobs)
                job_free(m->jobs);
        while (m->peers)
                peer_free(m->peers);

        sd_event_source_disable_unref(m->engine_source);
        sd_event_source_disable_unref(m->progress_timer);
        sd_event_source_disable_unref(m->idle_timer);
        sd_event_source_disable_unref(m->status_timer);
        sd_event_source_disable_unref(m->shutdown_timer);
        sd_event_source_disable_unref(m->sigterm_source);
        sd_event_source_disable_unref(m->sigint_source);

        engine_free(m->engine);
        if (m->bus) {
                (void)sd_bus_flush(m->bus);
                sd_bus_flush_close_unref(m->bus);
        }
        sd_event_unref(m->event);
        free(m->address);
        free(m);
        return NULL;
}

static int manager_connect_bus(Manager *m)
{
        int r;

        r = bus_open(m->config.bus_kind, m->config.address, "fhashd", &m->bus);
        if (r < 0)
                return r;
        /* Without the bus nobody can reach us or hear about jobs: leave (with a failure status, so
         * that a service manager notices) instead of hashing for no one. */
        r = sd_bus_set_exit_on_disconnect(m->bus, true);
        if (r < 0)
                return r;
        return sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
}

int manager_start(Manager *m)
{
        uint64_t watchdog_usec;
        int r;

        r = sd_bus_error_add_map(fhash_error_map());
        if (r < 0)
                return log_error_errno(r, "Failed to register the error names: %m");

        r = sd_event_add_signal(m->event, &m->sigterm_source, SIGTERM, on_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGTERM: %m");
        r = sd_event_add_signal(m->event, &m->sigint_source, SIGINT, on_signal, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch SIGINT: %m");

        /* Engine results are delivered before new bus calls are looked at: finishing work frees
         * quota and memory sooner than accepting more does. */
        r = sd_event_add_io(m->event, &m->engine_source, engine_get_fd(m->engine), EPOLLIN, on_engine_fd, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch the engine: %m");
        (void)sd_event_source_set_priority(m->engine_source, SD_EVENT_PRIORITY_NORMAL - 1);

        r = sd_event_add_time_relative(m->event, &m->progress_timer, CLOCK_MONOTONIC, MANAGER_PROGRESS_USEC,
                                       MANAGER_PROGRESS_USEC / 10, on_progress_timer, m);
        if (r < 0)
                return log_error_errno(r, "Failed to add the progress timer: %m");
        (void)sd_event_source_set_enabled(m->progress_timer, SD_EVENT_OFF);

        if (m->config.idle_exit_usec > 0) {
                r = sd_event_add_time_relative(m->event, &m->idle_timer, CLOCK_MONOTONIC,
                                               m->config.idle_exit_usec, 100000, on_idle_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the idle timer: %m");
        }

        m->notify = getenv("NOTIFY_SOCKET") != NULL;
        if (m->notify) {
                r = sd_event_add_time_relative(m->event, &m->status_timer, CLOCK_MONOTONIC, 1000000, 100000,
                                               on_status_timer, m);
                if (r < 0)
                        return log_error_errno(r, "Failed to add the status timer: %m");
        }
        /* sd-event sends WATCHDOG=1 at half of WATCHDOG_USEC from the loop itself, so a stuck loop
         * is what gets us restarted. */
        if (sd_watchdog_enabled(false, &watchdog_usec) > 0) {
                r = sd_event_set_watchdog(m->event, true);
                if (r < 0)
                        log_warning_errno(r, "Failed to enable the watchdog: %m");
        }

        r = manager_connect_bus(m);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to the %s bus: %m",
                                       bus_kind_to_string(m->config.bus_kind));

        r = bus_manager_register(m, m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to register the manager object: %m");
        r = bus_job_register(m, m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to register the job objects: %m");

        r = sd_bus_request_name(m->bus, FHASH_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to acquire %s: %m", FHASH_BUS_NAME);

        manager_check_idle(m);
        log_info("fhashd " FHASH_VERSION " ready: %u workers, io mode %s.", engine_get_workers(m->engine),
                 io_mode_to_string(engine_get_io_mode(m->engine)));
        m->status_usec = now_usec();
        (void)sd_notifyf(false, "READY=1\nSTATUS=Ready, %u workers.", engine_get_workers(m->engine));
        return 0;
}

int manager_run(Manager *m)
{
        int r;

        r = sd_event_loop(m->event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        /* sd-bus ends the loop with EXIT_FAILURE when the bus goes away (or refuses us, e.g. a
         * match rule past dbus-daemon's limit): say so, or the log shows only "Exiting.". Our own
         * exits (SIGTERM, idle) end it with 0, and sd-bus closes the bus on any loop exit, so the
         * bus being closed alone does not tell. */
        if (r != 0 && m->bus && sd_bus_is_open(m->bus) <= 0)
                log_error("Lost the connection to the bus; exiting.");
        return r;
}

Job *manager_find_job(Manager *m, uint64_t id)
{
        for (Job *j = m->jobs; j; j = j->next)
                if (j->id == id)
                        return j;
        return NULL;
}

int manager_check_quota(Manager *m, uid_t uid, bool new_job, size_t n_files, sd_bus_error *error)
{
        uint32_t jobs = 0;
        uint64_t files = 0;

        if (m->shutting_down)
                return sd_bus_error_set(error, FHASH_ERROR_BUSY, "fhashd is shutting down.");

        for (Job *j = m->jobs; j; j = j->next) {
                if (j->uid != uid || job_is_finished(j))
                        continue;
                jobs++;
                files += j->n_inputs - j->files_done;
        }
        if (new_job && m->config.max_jobs_per_uid > 0 && jobs >= m->config.max_jobs_per_uid)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u already has %" PRIu32 " unfinished jobs (limit %" PRIu32 ").",
                                         (unsigned)uid, jobs, m->config.max_jobs_per_uid);
        if (m->config.max_files_per_uid > 0 && files + n_files > m->config.max_files_per_uid)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u has %" PRIu64 " unfinished files, %zu more exceed the limit of %" PRIu64 ".",
                                         (unsigned)uid, files, n_files, m->config.max_files_per_uid);
        return 0;
}

void manager_job_added(Manager *m, Job *j)
{
        LIST_PREPEND(m->jobs, j);
        m->n_jobs++;
        m->active_jobs++;
        manager_check_idle(m);
        if (m->progress_timer) {
                int enabled = SD_EVENT_OFF;

                (void)sd_event_source_get_enabled(m->progress_timer, &enabled);
                if (enabled == SD_EVENT_OFF) {
                        (void)sd_event_source_set_time_relative(m->progress_timer, MANAGER_PROGRESS_USEC);
                        (void)sd_event_source_set_enabled(m->progress_timer, SD_EVENT_ON);
                }
        }
}

void manager_job_finished(Manager *m, Job *j)
{
        if (m->active_jobs > 0)
                m->active_jobs--;
        manager_check_idle(m);
        manager_maybe_exit(m);
}

void manager_job_removed(Manager *m, Job *j)
{
        if (!m)
                return;
        if (!j->prev && m->jobs != j)
                return;  /* not registered */
        LIST_REMOVE(m->jobs, j);
        m->n_jobs--;
        if (!job_is_finished(j) && m->active_jobs > 0)
                m->active_jobs--;
        manager_check_idle(m);
        manager_maybe_exit(m);
}
