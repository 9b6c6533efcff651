/* SPDX-License-Identifier: MIT */
/* hash-files-event.c: libfhash on an sd-event loop. Prints what `sha256sum FILE...` prints, through
 * fhashd where it can be reached (the system bus, or --address ADDR), else in this process.
 *
 *     cc hash-files-event.c $(pkg-config --cflags --libs fhash libsystemd) -o hash-files-event
 */
#include <fhash/fhash.h>
#include <stdio.h>
#include <string.h>
#include <systemd/sd-event.h>

static int failed;

static void print_result(const fhash_result *r, void *userdata)
{
        if (r->status != FHASH_OK) {
                fprintf(stderr, "sha256sum: %s: %s\n", r->name, r->message);
                failed = 1;
        } else
                printf("%s  %s\n", r->digest, r->name);
}

static void on_done(fhash_run *run, int result, const fhash_error *e, void *userdata)
{
        if (result < 0)
                fprintf(stderr, "hash-files-event: %s\n", e->message);
        (void)sd_event_exit(userdata, result < 0 ? 2 : failed);
}

int main(int argc, char *argv[])
{
        fhash_client_options o = { .bus = FHASH_BUS_SYSTEM };
        fhash_client *c = NULL;
        fhash_run *run = NULL;
        sd_event *event = NULL;
        fhash_error e;
        int first = 1, r;

        if (argc > 2 && strcmp(argv[1], "--address") == 0) {
                o = (fhash_client_options){ .bus = FHASH_BUS_ADDRESS, .address = argv[2] };
                first = 3;
        }
        if (fhash_client_new(&o, &c, &e) < 0 ||
            fhash_run_paths(c, (const char *const *)argv + first, (size_t)(argc - first), NULL, print_result, NULL,
                            &run, &e) < 0) {
                fprintf(stderr, "hash-files-event: %s\n", e.message);
                fhash_client_free(c);
                return 2;
        }
        r = sd_event_default(&event);
        if (r >= 0)
                r = fhash_run_attach_event(run, event, on_done, event);
        if (r >= 0)
                r = sd_event_loop(event);  /* the other sources of the program would be here too */
        fhash_run_free(run);
        fhash_client_free(c);
        sd_event_unref(event);
        return r < 0 ? 2 : r;
}
