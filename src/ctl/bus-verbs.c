/* SPDX-License-Identifier: MIT */
/* bus-verbs.c: fhashctl's jobs, watch, cancel and status: fhashd's properties and jobs, printed */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/args.h"
#include "ctl/bus-verbs.h"
#include "ctl/macro.h"
#include "fhash/fhash-dbus.h"

void ctl_err_unreachable(const fhash_error *e)
{
        const char *why = e->message;
        /* libfhash's messages say "cannot reach fhashd" themselves; sd-bus's do not. */
        const char *prefix = strncmp(why, "cannot reach fhashd: ", 21) == 0 ? "" : "cannot reach fhashd: ";

        /* What to do next, for the two ways it fails: the bus answered and nothing there is fhashd,
         * or there was no bus to ask. */
        if (fhash_error_is_no_daemon(e))
                ctl_err("%s%s; install fhash so that the bus starts fhashd on demand, or start fhashd on that bus "
                        "(see fhashd(8)); --local hashes without it", prefix, why);
        else
                ctl_err("%s%s; is that bus running? --system, --user and --address pick the bus; --local hashes "
                        "without fhashd", prefix, why);
}

void ctl_err_job(const char *verb, const char *job, int r, const sd_bus_error *error)
{
        if (sd_bus_error_has_names(error, SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_INTERFACE,
                                   SD_BUS_ERROR_UNKNOWN_METHOD, SD_BUS_ERROR_UNKNOWN_PROPERTY))
                ctl_err("%s: no job %s in fhashd (a finished job goes after KeepFinishedSec); 'fhashctl jobs' lists "
                        "yours", verb, job);
        else if (sd_bus_error_has_name(error, SD_BUS_ERROR_INVALID_ARGS))
                ctl_err("%s: '%s' is not a job: give its number or its object path, as 'fhashctl jobs' shows them",
                        verb, job);
        else if (sd_bus_error_has_names(error, SD_BUS_ERROR_ACCESS_DENIED, "org.fhash.Hasher1.Error.AccessDenied"))
                ctl_err("%s: job %s is not yours: only its owner and root may %s it", verb, job, verb);
        else
                ctl_err("%s: job %s: %s", verb, job,
                        sd_bus_error_is_set(error) && error->message ? error->message : strerror(r < 0 ? -r : EIO));
}

/* The object path of a job given as a path or an id; one that is not a valid path is InvalidArgs.
 * Its users free it by hand, not by _cleanup_: clang-tidy 14 does not see cleanup attributes and
 * reports a leak on every early return. */
static int job_path(const char *job, char **ret, sd_bus_error *error)
{
        char *path;

        if (job[0] == '/')
                path = strdup(job);
        else if (asprintf(&path, "%s/%s", FHASH_JOB_PATH_PREFIX, job) < 0)
                path = NULL;
        if (!path)
                return -ENOMEM;
        if (!sd_bus_object_path_is_valid(path)) {
                free(path);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "'%s' is not a job", job);
        }
        *ret = path;
        return 0;
}

int ctl_bus_status(sd_bus *bus, FILE *f, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *key;
        int r;

        r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Properties",
                               "GetAll", error, &reply, "s", FHASH_MANAGER_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                const char *contents;
                char type;

                r = sd_bus_message_read(reply, "s", &key);
                if (r < 0)
                        return r;
                r = sd_bus_message_peek_type(reply, &type, &contents);
                if (r < 0)
                        return r;
                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_VARIANT, contents);
                if (r < 0)
                        return r;
                fprintf(f, "%s: ", key);
                if (streq(contents, "s")) {
                        const char *s;
                        r = sd_bus_message_read(reply, "s", &s);
                        fprintf(f, "%s", s);
                } else if (streq(contents, "u")) {
                        uint32_t u;
                        r = sd_bus_message_read(reply, "u", &u);
                        fprintf(f, "%" PRIu32, u);
                } else if (streq(contents, "t")) {
                        uint64_t t;
                        r = sd_bus_message_read(reply, "t", &t);
                        fprintf(f, "%" PRIu64, t);
                } else if (streq(contents, "as")) {
                        const char *s;
                        bool first = true;
                        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "s");
                        while (r >= 0 && (r = sd_bus_message_read(reply, "s", &s)) > 0) {
                                fprintf(f, "%s%s", first ? "" : " ", s);
                                first = false;
                        }
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                } else
                        r = sd_bus_message_skip(reply, contents);
                if (r < 0)
                        return r;
                fputc('\n', f);
                r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        return r;
}

typedef struct JobProps {
        const char *state, *algorithm;
        uint32_t files_total, files_done;
        uint64_t bytes_total, bytes_done, rate;
} JobProps;

/* The Job properties fhashctl shows: the name, the variant's type, and where it goes in JobProps. */
static const struct {
        const char *key, *type;
        size_t offset;
} job_prop_map[] = {
        { "State", "s", offsetof(JobProps, state) }, { "Algorithm", "s", offsetof(JobProps, algorithm) },
        { "FilesTotal", "u", offsetof(JobProps, files_total) }, { "FilesDone", "u", offsetof(JobProps, files_done) },
        { "BytesTotal", "t", offsetof(JobProps, bytes_total) }, { "BytesDone", "t", offsetof(JobProps, bytes_done) },
        { "Rate", "t", offsetof(JobProps, rate) },
};

static int job_props(sd_bus *bus, const char *path, sd_bus_message **reply, JobProps *p, sd_bus_error *error)
{
        const char *key;
        int r;

        r = sd_bus_call_method(bus, FHASH_BUS_NAME, path, "org.freedesktop.DBus.Properties", "GetAll", error,
                               reply, "s", FHASH_JOB_INTERFACE);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(*reply, SD_BUS_TYPE_ARRAY, "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(*reply, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                r = sd_bus_message_read(*reply, "s", &key);
                if (r < 0)
                        break;
                size_t k = 0;

                while (k < ELEMENTSOF(job_prop_map) && !streq(key, job_prop_map[k].key))
                        k++;
                if (k < ELEMENTSOF(job_prop_map))
                        r = sd_bus_message_read(*reply, "v", job_prop_map[k].type, (uint8_t *)p + job_prop_map[k].offset);
                else
                        r = sd_bus_message_skip(*reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(*reply);
        }
        return r < 0 ? r : 0;
}

typedef struct JobRow {
        char id[32], state[16], algorithm[64], files[32], bytes[48];
} JobRow;

/* "12.3 MiB/47.7 MiB": done and total in binary units. */
static void format_bytes_of(char *buf, size_t size, uint64_t done, uint64_t total)
{
        char d[24], t[24];

        progress_format_bytes(d, sizeof(d), (double)done);
        progress_format_bytes(t, sizeof(t), (double)total);
        snprintf(buf, size, "%s/%s", d, t);
}

int ctl_bus_list_jobs(sd_bus *bus, FILE *f, sd_bus_error *error)
{
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ JobRow *rows = NULL;
        JobRow head = { "JOB", "STATE", "ALGORITHM", "FILES", "BYTES" };
        size_t n = 0, alloc = 0, w[5];
        const char *path;
        int r;

        r = sd_bus_call_method(bus, FHASH_BUS_NAME, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "ListJobs", error,
                               &reply, NULL);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "o");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "o", &path)) > 0) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *props = NULL;
                JobProps p = { .state = "?", .algorithm = "?" };
                const char *id = strrchr(path, '/');

                /* A job may vanish between ListJobs and GetAll (its linger time ended): skip it. */
                if (job_props(bus, path, &props, &p, NULL) < 0)
                        continue;
                if (n == alloc) {
                        JobRow *nr = reallocarray(rows, alloc = MAX(alloc * 2, (size_t)16), sizeof(*nr));
                        if (!nr)
                                return -ENOMEM;
                        rows = nr;
                }
                JobRow *row = &rows[n++];
                snprintf(row->id, sizeof(row->id), "%s", id ? id + 1 : path);
                snprintf(row->state, sizeof(row->state), "%s", p.state);
                snprintf(row->algorithm, sizeof(row->algorithm), "%s", p.algorithm);
                snprintf(row->files, sizeof(row->files), "%" PRIu32 "/%" PRIu32, p.files_done, p.files_total);
                format_bytes_of(row->bytes, sizeof(row->bytes), p.bytes_done, p.bytes_total);
        }
        if (r < 0)
                return r;
        /* Columns as wide as their widest cell, text to the left, counts to the right, and no
         * blanks at the end of a line. */
        for (size_t c = 0; c < ELEMENTSOF(w); c++)
                w[c] = strlen(((const char *[]){ head.id, head.state, head.algorithm, head.files, head.bytes })[c]);
        for (size_t i = 0; i < n; i++) {
                w[0] = MAX(w[0], strlen(rows[i].id));
                w[1] = MAX(w[1], strlen(rows[i].state));
                w[2] = MAX(w[2], strlen(rows[i].algorithm));
                w[3] = MAX(w[3], strlen(rows[i].files));
                w[4] = MAX(w[4], strlen(rows[i].bytes));
        }
        for (size_t i = 0; i <= n; i++) {
                const JobRow *row = i == 0 ? &head : &rows[i - 1];

                fprintf(f, "%-*s  %-*s  %-*s  %*s  %*s\n", (int)w[0], row->id, (int)w[1], row->state,
                        (int)w[2], row->algorithm, (int)w[3], row->files, (int)w[4], row->bytes);
        }
        return 0;
}

int ctl_bus_cancel(sd_bus *bus, const char *job, sd_bus_error *error)
{
        char *path = NULL;
        int r;

        r = job_path(job, &path, error);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, FHASH_BUS_NAME, path, FHASH_JOB_INTERFACE, "Cancel", error, NULL, NULL);
        free(path);
        return r;
}

static int watch_path(sd_bus *bus, const char *path, Progress *progress, FILE *f, sd_bus_error *error)
{
        /* Without a progress line (into a pipe, or --no-progress) a line each time the job moves,
         * flushed: a pipe reads them as they come, not all at the end. */
        bool lines = !progress->enabled;
        uint32_t last_done = UINT32_MAX;
        char last_state[16] = "";
        int r;

        /* Polling GetAll 4 times a second is what the daemon rate-limits its PropertiesChanged to
         * anyway, and it also works for a job whose signals go to another connection of ours. */
        for (;;) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
                JobProps p = {};

                r = job_props(bus, path, &reply, &p, error);
                if (r < 0)
                        return r;
                progress_update(progress, &(ProgressState){ .bytes_done = p.bytes_done, .bytes_total = p.bytes_total,
                                                            .files_done = p.files_done,
                                                            .files_total = p.files_total,
                                                            .rate = (double)p.rate });
                const char *state = p.state ?: "";
                bool over = p.state && !streq(p.state, "queued") && !streq(p.state, "running");
                if (over || (lines && (p.files_done != last_done || !streq(last_state, state)))) {
                        char bytes[48];

                        progress_clear(progress);
                        format_bytes_of(bytes, sizeof(bytes), p.bytes_done, p.bytes_total);
                        fprintf(f, "%s: %s, %" PRIu32 "/%" PRIu32 " files, %s\n", path, state,
                                p.files_done, p.files_total, bytes);
                        fflush(f);
                        last_done = p.files_done;
                        snprintf(last_state, sizeof(last_state), "%s", state);
                }
                if (over)
                        return streq(p.state, "done") ? 0 : 1;
                usleep(250000);
        }
}

int ctl_bus_watch(sd_bus *bus, const char *job, Progress *progress, FILE *f, sd_bus_error *error)
{
        char *path = NULL;
        int r;

        r = job_path(job, &path, error);
        if (r < 0)
                return r;
        r = watch_path(bus, path, progress, f, error);
        free(path);
        return r;
}
