/* SPDX-License-Identifier: MIT */
/* hash-files-async.c: libfhash on the program's own poll(2) loop. Prints what `sha256sum FILE...`
 * prints, through fhashd where it can be reached (the system bus, or --address ADDR), else in this
 * process (--local: always), while the loop stays free for other work (here: counting its turns).
 *
 *     cc hash-files-async.c $(pkg-config --cflags --libs fhash) -o hash-files-async
 */
#include <fhash/fhash.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failed;

static void print_result(const fhash_result *r, void *userdata)
{
        if (r->status != FHASH_OK) {
                fprintf(stderr, "sha256sum: %s: %s\n", r->name, r->message);
                failed = 1;
        } else
                printf("%s  %s\n", r->digest, r->name);
}

static uint64_t now_usec(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

int main(int argc, char *argv[])
{
        fhash_client_options o = { .bus = FHASH_BUS_SYSTEM };
        fhash_client *c = NULL;
        fhash_run *run = NULL;
        fhash_error e;
        int first = 1, r;

        if (argc > 2 && strcmp(argv[1], "--address") == 0) {
                o = (fhash_client_options){ .bus = FHASH_BUS_ADDRESS, .address = argv[2] };
                first = 3;
        } else if (argc > 1 && strcmp(argv[1], "--local") == 0) {
                o = (fhash_client_options){ .flags = FHASH_CLIENT_LOCAL };
                first = 2;
        }
        r = fhash_client_new(&o, &c, &e);
        if (r >= 0)
                r = fhash_run_paths(c, (const char *const *)argv + first, (size_t)(argc - first), NULL, print_result,
                                    NULL, &run, &e);
        while (r >= 0 && (r = fhash_run_process(run, &e)) > 0) {
                struct pollfd p = { .fd = fhash_run_get_fd(run), .events = (short)fhash_run_get_events(run) };
                uint64_t t = fhash_run_get_timeout(run), now = now_usec();

                /* The loop's other sources would be polled here too. UINT64_MAX: no timeout. */
                (void)poll(&p, 1, t == UINT64_MAX ? -1 : t <= now ? 0 : (int)((t - now + 999) / 1000));
        }
        if (r < 0)
                fprintf(stderr, "hash-files-async: %s\n", e.message);
        fhash_run_free(run);
        fhash_client_free(c);
        return r < 0 ? 2 : failed;
}
