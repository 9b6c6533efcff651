/* SPDX-License-Identifier: MIT */
/* libfhash-probe.c: libfhash's API driven as an integrator drives it, with what it sees: the error a
 * failed client gave. Only the public header. Its script is tests/integration/test-client-loop.py.
 *
 *   libfhash-probe connect BUS|--system
 *
 * BUS is a D-Bus address. Each prints one line of "key=value" words, exits 0, or 3 with
 * "error=-errno name=NAME message=..." when it failed.
 */
#include <stdio.h>
#include <string.h>

#include <fhash/fhash.h>

/* A client of where; flags apply to a bus (FHASH_CLIENT_NO_FALLBACK: nothing in-process). */
static int client(const char *where, unsigned flags, fhash_client **ret)
{
        fhash_client_options o = { .flags = flags };
        fhash_error e;

        if (strcmp(where, "--local") == 0)
                o.flags = FHASH_CLIENT_LOCAL;
        else if (strcmp(where, "--system") != 0) {
                o.bus = FHASH_BUS_ADDRESS;
                o.address = where;
        }
        if (fhash_client_new(&o, ret, &e) < 0) {
                printf("error=%d name=%s message=%s\n", e.error, e.name, e.message);
                return -1;
        }
        return 0;
}

static int probe_connect(const char *where)
{
        fhash_client *c = NULL;

        if (client(where, FHASH_CLIENT_NO_FALLBACK, &c) < 0)
                return 3;
        printf("connected daemon=%d\n", fhash_client_uses_daemon(c));
        fhash_client_free(c);
        return 0;
}

int main(int argc, char *argv[])
{
        if (argc == 3 && strcmp(argv[1], "connect") == 0)
                return probe_connect(argv[2]);
        fprintf(stderr, "usage: see the top of libfhash-probe.c\n");
        return 2;
}
