/* SPDX-License-Identifier: MIT */
/* bench-raw-client.c: what an integrator writes by hand with sd-bus, without libfhash, to compare
 * with it: open the files, HashFds them 16 per call (a job per call, up to 64 calls in flight), take
 * the results from FilesHashed, print "HEX  NAME" in the order given. Blocking sd-bus calls are the
 * simple way; this pipelines them asynchronously, as a careful integrator would.
 *
 *     bench-raw-client ADDRESS FILE...
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "fhash/fhash-dbus.h"

#define IN_FLIGHT 64

typedef struct Raw {
        sd_bus *bus;
        char **names;
        char **digests;     /* by input */
        size_t n, next, done, calls_out;
        struct {
                char *path;     /* the job's object path, once the reply is in */
                size_t first, n;
        } jobs[IN_FLIGHT];
} Raw;

static int on_files_hashed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
        Raw *r = userdata;
        const char *job, *name, *digest, *error;
        uint32_t index;
        uint64_t size;
        size_t k;

        if (sd_bus_message_read(m, "o", &job) < 0)
                return 0;
        for (k = 0; k < IN_FLIGHT; k++)
                if (r->jobs[k].path && strcmp(r->jobs[k].path, job) == 0)
                        break;
        if (k == IN_FLIGHT || sd_bus_message_enter_container(m, 'a', "(ustss)") < 0)
                return 0;
        while (sd_bus_message_read(m, "(ustss)", &index, &name, &size, &digest, &error) > 0)
                if (index < r->jobs[k].n) {
                        r->digests[r->jobs[k].first + index] = strdup(error[0] ? "-" : digest);
                        r->done++;
                }
        return 0;
}

/* Whether job slot s is free: never used, or every file of its job has a digest. */
static bool slot_free(const Raw *r, size_t s)
{
        for (size_t i = 0; r->jobs[s].path && i < r->jobs[s].n; i++)
                if (!r->digests[r->jobs[s].first + i])
                        return false;
        return true;
}

/* One HashFds of up to 16 files from r->next, into slot s. */
static int send_call(Raw *r, size_t s)
{
        sd_bus_message *m = NULL, *reply = NULL;
        sd_bus_error e = SD_BUS_ERROR_NULL;
        size_t n = r->n - r->next < FHASH_MAX_FDS_PER_CALL ? r->n - r->next : FHASH_MAX_FDS_PER_CALL;
        int fds[FHASH_MAX_FDS_PER_CALL], k;
        const char *path;

        k = sd_bus_message_new_method_call(r->bus, &m, FHASH_BUS_NAME, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE,
                                           "HashFds");
        if (k >= 0)
                k = sd_bus_message_open_container(m, 'a', "h");
        for (size_t i = 0; i < n; i++) {
                fds[i] = open(r->names[r->next + i], O_RDONLY | O_CLOEXEC);
                if (k >= 0)
                        k = fds[i] < 0 ? -errno : sd_bus_message_append(m, "h", fds[i]);
        }
        if (k >= 0)
                k = sd_bus_message_close_container(m);
        if (k >= 0)
                k = sd_bus_message_append(m, "sa{sv}", "sha256", 0);
        /* The reply names the job: signals that come first wait in sd-bus's queue meanwhile. */
        if (k >= 0)
                k = sd_bus_call(r->bus, m, 0, &e, &reply);
        if (k >= 0)
                k = sd_bus_message_read(reply, "o", &path);
        if (k >= 0) {
                free(r->jobs[s].path);
                r->jobs[s].path = strdup(path);
                r->jobs[s].first = r->next;
                r->jobs[s].n = n;
                r->next += n;
        } else
                fprintf(stderr, "HashFds: %s\n", e.message ? e.message : strerror(-k));
        for (size_t i = 0; i < n; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        sd_bus_message_unref(m);
        sd_bus_message_unref(reply);
        sd_bus_error_free(&e);
        return k < 0 ? k : 0;
}

int main(int argc, char *argv[])
{
        Raw r = {};
        int k;

        if (argc < 3) {
                fprintf(stderr, "usage: bench-raw-client ADDRESS FILE...\n");
                return 2;
        }
        r.names = argv + 2;
        r.n = (size_t)(argc - 2);
        r.digests = calloc(r.n, sizeof(char *));
        if (!r.digests || sd_bus_new(&r.bus) < 0 || sd_bus_set_address(r.bus, argv[1]) < 0 ||
            sd_bus_set_bus_client(r.bus, 1) < 0 || sd_bus_negotiate_fds(r.bus, 1) < 0 || sd_bus_start(r.bus) < 0)
                return 1;
        if (sd_bus_match_signal(r.bus, NULL, NULL, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "FilesHashed",
                                on_files_hashed, &r) < 0)
                return 1;
        while (r.done < r.n) {
                /* Keep up to IN_FLIGHT calls of 16 going; a slot is free once its files are done. */
                for (size_t s = 0; s < IN_FLIGHT && r.next < r.n; s++)
                        if (slot_free(&r, s) && send_call(&r, s) < 0)
                                return 1;
                while ((k = sd_bus_process(r.bus, NULL)) > 0)
                        ;
                if (k < 0)
                        return 1;
                if (r.done < r.n)
                        (void)sd_bus_wait(r.bus, 100000);
        }
        for (size_t i = 0; i < r.n; i++)
                printf("%s  %s\n", r.digests[i], r.names[i]);
        return 0;
}
