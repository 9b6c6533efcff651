/* SPDX-License-Identifier: MIT */
/* hash-files.c: libfhash's blocking API in a few lines. Prints what `sha256sum FILE...` prints, through
 * fhashd where it can be reached (the system bus, or --address ADDR), else (or with --local) in this
 * process.
 *
 *     cc hash-files.c $(pkg-config --cflags --libs fhash) -o hash-files
 */
#include <fhash/fhash.h>
#include <stdio.h>
#include <string.h>

static int failed;

/* sha256sum's line: names with a backslash or a line break are escaped, and the line starts with '\'. */
static void print_result(const fhash_result *r, void *userdata)
{
        const char *p;

        if (r->status != FHASH_OK) {
                fprintf(stderr, "sha256sum: %s: %s\n", r->name, r->message);
                failed = 1;
                return;
        }
        if (!strpbrk(r->name, "\\\n\r")) {
                printf("%s  %s\n", r->digest, r->name);
                return;
        }
        printf("\\%s  ", r->digest);
        for (p = r->name; *p; p++)
                fputs(*p == '\\' ? "\\\\" : *p == '\n' ? "\\n" : *p == '\r' ? "\\r" : (char[]){ *p, 0 }, stdout);
        putchar('\n');
}

int main(int argc, char *argv[])
{
        fhash_client_options o = { .bus = FHASH_BUS_SYSTEM };
        fhash_client *c = NULL;
        fhash_error e;
        int first = 1;

        if (argc > 2 && strcmp(argv[1], "--address") == 0) {
                o = (fhash_client_options){ .bus = FHASH_BUS_ADDRESS, .address = argv[2] };
                first = 3;
        } else if (argc > 1 && strcmp(argv[1], "--local") == 0) {
                o = (fhash_client_options){ .flags = FHASH_CLIENT_LOCAL };
                first = 2;
        }
        if (fhash_client_new(&o, &c, &e) < 0 ||
            fhash_hash_paths(c, (const char *const *)argv + first, (size_t)(argc - first), NULL, print_result, NULL,
                             &e) < 0) {
                fprintf(stderr, "hash-files: %s\n", e.message);
                fhash_client_free(c);
                return 2;
        }
        fhash_client_free(c);
        return failed;
}
