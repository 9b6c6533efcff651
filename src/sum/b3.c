/* SPDX-License-Identifier: MIT */
/* b3.c: fhashctl as BLAKE3's b3sum: its command line as clap reads it, help, main */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-config.h"
#include "sum/b3-check.h"
#include "sum/b3-hash.h"
#include "sum/b3.h"

/*
 * What b3sum/src/main.rs does (1.8.6), as b3sum/tests/cli_tests.rs and src/unit_tests.rs check it.
 * Its command line is clap's: usage errors start with "error: " and exit 2 (clap 2 in b3sum 1.2.0:
 * other words, exit 1); failures of the run itself are "Error: ..." from main() and exit 1. Names are
 * written as Rust's to_string_lossy() makes them (a byte that is not UTF-8 becomes U+FFFD), escaped
 * with a leading backslash where they hold '\\', '\n' or '\r'. A checkfile is read as UTF-8 lines.
 */

/* clap's usage errors: "error: WHAT", the usage, the hint; exit 2 (clap 2: exit 1). */
static int clap_error(const B3 *b, const char *what, const char *usage)
{
        if (b->old)
                fprintf(stderr, "error: %s\n\nUSAGE:\n    %s\n\nFor more information try --help\n", what,
                        usage ? usage : "b3sum [FLAGS] [OPTIONS] [FILE]...");
        else if (usage)
                fprintf(stderr, "error: %s\n\nUsage: %s\n\nFor more information, try '--help'.\n", what, usage);
        else
                fprintf(stderr, "error: %s\n\nFor more information, try '--help'.\n", what);
        return b->old ? 1 : 2;
}

static void help(const B3 *b)
{
        printf("Usage: b3sum [OPTIONS] [FILE]...\n\n"
               "Arguments:\n"
               "  [FILE]...  Files to hash, or checkfiles to check; with none, or with -, standard input\n\n"
               "Options:\n"
               "      --keyed                Keyed mode, the 32-byte key read from standard input\n"
               "      --derive-key <CONTEXT> Key derivation mode with this context (not with --keyed)\n"
               "  -l, --length <LEN>         Output bytes, before hex encoding [default: 32]\n"
               "      --seek <SEEK>          The output's starting byte offset [default: 0]\n"
               "      --num-threads <NUM>    Accepted; fhashctl hashes in the calling thread\n"
               "      --no-mmap              Accepted; fhashctl reads with plain read(2)s\n"
               "      --no-names             Hashes without names\n"
               "      --raw                  The output's bytes, not hex, of a single input\n"
               "      --tag                  BSD-style lines: BLAKE3 (FILE) = HASH\n"
               "  -c, --check                Read BLAKE3 sums from the FILEs and check them\n"
               "      --quiet                No OK for each file that matches (with --check)\n"
               "  -h, --help                 Print help\n"
               "  -V, --version              Print version\n\n"
               "This is fhashctl (fhash %s) as b3sum, after b3sum %s.\n",
               FHASH_VERSION, b->old ? "1.2.0" : "1.8.6");
}

static int read_key(B3 *b)
{
        uint8_t key[B3_HASH_LEN + 1];
        size_t n = 0;

        while (n < sizeof(key)) {
                ssize_t k = read(STDIN_FILENO, key + n, sizeof(key) - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        fprintf(stderr, "Error: %s (os error %d)\n", strerror(errno), errno);
                        return -EIO;
                }
                if (k == 0)
                        break;
                n += (size_t)k;
        }
        if (n < B3_HASH_LEN) {
                fprintf(stderr, "Error: expected %zu key bytes from stdin, found %zu\n", B3_HASH_LEN, n);
                explicit_bzero(key, sizeof(key));
                return -EIO;
        }
        if (n > B3_HASH_LEN) {
                fprintf(stderr, "Error: read more than %zu key bytes from stdin\n", B3_HASH_LEN);
                explicit_bzero(key, sizeof(key));
                return -EIO;
        }
        b->params.keyed = true;
        memcpy(b->params.key, key, B3_HASH_LEN);
        explicit_bzero(key, sizeof(key));
        return 0;
}

/* A u64 as clap parses it for --length, --seek, --num-threads. */
static int parse_u64(const B3 *b, const char *opt, const char *arg, uint64_t *ret)
{
        char *end;
        uint64_t v;
        char what[512];

        if (!arg)
                return clap_error(b, "a value is required", NULL);
        errno = 0;
        if (arg[0] == '\0' || arg[0] == '-' || arg[0] == '+' || arg[0] == ' ') {
                v = 0;
                end = (char *)arg;
        } else
                v = strtoull(arg, &end, 10);
        if (end == arg || *end != '\0' || errno == ERANGE) {
                snprintf(what, sizeof(what), "invalid value '%s' for '%s': %s", arg, opt,
                         arg[0] == '\0'               ? "cannot parse integer from empty string"
                         : errno == ERANGE            ? "number too large to fit in target type"
                                                      : "invalid digit found in string");
                return clap_error(b, what, NULL);
        }
        *ret = v;
        return 0;
}

enum {
        B3_KEYED = 1 << 0,
        B3_DERIVE = 1 << 1,
        B3_LENGTH = 1 << 2,
        B3_RAW = 1 << 3,
        B3_TAG = 1 << 4,
        B3_NO_NAMES = 1 << 5,
        B3_CHECK = 1 << 6,
        B3_QUIET = 1 << 7,
        B3_SEEK = 1 << 8,
};

static const struct {
        const char *name;     /* the long option */
        char short_name;
        const char *value;    /* its value's name, NULL for a flag */
        unsigned bit;
        bool new;             /* not in b3sum 1.2.0 */
} b3_options[] = {
        { "keyed", 0, NULL, B3_KEYED, false },
        { "derive-key", 0, "<CONTEXT>", B3_DERIVE, false },
        { "length", 'l', "<LEN>", B3_LENGTH, false },
        { "seek", 0, "<SEEK>", B3_SEEK, true },
        { "num-threads", 0, "<NUM>", 0, false },
        { "no-mmap", 0, NULL, 0, false },
        { "no-names", 0, NULL, B3_NO_NAMES, false },
        { "raw", 0, NULL, B3_RAW, false },
        { "tag", 0, NULL, B3_TAG, true },
        { "check", 'c', NULL, B3_CHECK, false },
        { "quiet", 0, NULL, B3_QUIET, false },
        { "help", 'h', NULL, 0, false },
        { "version", 'V', NULL, 0, false },
};

static int parse_args(B3 *b, int argc, char *argv[], unsigned *ret_seen)
{
        unsigned seen = 0;
        bool dashdash = false;
        char what[1024];

        b->files = calloc((size_t)argc + 1, sizeof(char *));
        if (!b->files)
                return 1;
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *value = NULL;
                size_t k;

                if (dashdash || a[0] != '-' || streq(a, "-")) {
                        b->files[b->n_files++] = argv[i];
                        continue;
                }
                if (streq(a, "--")) {
                        dashdash = true;
                        continue;
                }
                for (k = 0; k < ELEMENTSOF(b3_options); k++) {
                        size_t nl = strlen(b3_options[k].name);

                        if (b->old && b3_options[k].new)
                                continue;
                        if (a[1] == '-' && strncmp(a + 2, b3_options[k].name, nl) == 0 &&
                            (a[2 + nl] == '\0' || (a[2 + nl] == '=' && b3_options[k].value))) {
                                if (a[2 + nl] == '=')
                                        value = a + 3 + nl;
                                break;
                        }
                        if (a[1] != '-' && b3_options[k].short_name && a[1] == b3_options[k].short_name) {
                                if (a[2] != '\0') {
                                        if (!b3_options[k].value)
                                                k = ELEMENTSOF(b3_options); /* -cX: not a flag of ours */
                                        else
                                                value = a + 2 + (a[2] == '=');
                                }
                                break;
                        }
                }
                if (k == ELEMENTSOF(b3_options)) {
                        if (b->old)
                                snprintf(what, sizeof(what),
                                         "Found argument '%s' which wasn't expected, or isn't valid in this context", a);
                        else
                                snprintf(what, sizeof(what),
                                         "unexpected argument '%s' found\n\n  tip: to pass '%s' as a value, use '-- %s'",
                                         a, a, a);
                        return clap_error(b, what, b->old ? NULL : "b3sum [OPTIONS] [FILE]...");
                }
                const char *name = b3_options[k].name;
                char optname[64];

                snprintf(optname, sizeof(optname), "--%s %s", name, b3_options[k].value ? b3_options[k].value : "");
                if (b3_options[k].value && !value) {
                        if (i + 1 >= argc) {
                                if (b->old) {
                                        snprintf(what, sizeof(what),
                                                 "The argument '%s' requires a value but none was supplied", optname);
                                        snprintf(optname, sizeof(optname), "b3sum --%s %s", name, b3_options[k].value);
                                        return clap_error(b, what, optname);
                                }
                                snprintf(what, sizeof(what), "a value is required for '%s' but none was supplied",
                                         optname);
                                return clap_error(b, what, NULL);
                        }
                        value = argv[++i];
                }
                if (streq(name, "help")) {
                        help(b);
                        return -1;
                }
                if (streq(name, "version")) {
                        printf("b3sum %s\n", b->old ? "1.2.0" : "1.8.6");
                        return -1;
                }
                seen |= b3_options[k].bit;
                if (streq(name, "keyed"))
                        b->keyed = true;
                else if (streq(name, "derive-key"))
                        b->derive_key = value;
                else if (streq(name, "length")) {
                        b->length_given = true;
                        /* b3sum 1.2.0 parsed --length only once it hashed, per file. */
                        if (b->old && value) {
                                char *end;
                                errno = 0;
                                b->length = strtoull(value, &end, 10);
                                if (end == value || *end || errno || value[0] == '-')
                                        b->length_bad = true;
                        } else {
                                snprintf(optname, sizeof(optname), "--length <LEN>");
                                int r = parse_u64(b, optname, value, &b->length);
                                if (r != 0)
                                        return r;
                        }
                } else if (streq(name, "seek")) {
                        int r = parse_u64(b, "--seek <SEEK>", value, &b->seek);
                        if (r != 0)
                                return r;
                } else if (streq(name, "num-threads")) {
                        uint64_t ignored;
                        char *end;

                        /* 1.2.0 parsed it after the options, as an error of main(). */
                        if (b->old && value) {
                                errno = 0;
                                (void)strtoull(value, &end, 10);
                                if (end == value || *end || errno || value[0] == '-' || value[0] == '+') {
                                        fprintf(stderr, "Error: Failed to parse num threads.\n\nCaused by:\n    %s\n",
                                                value[0] == '\0' ? "cannot parse integer from empty string"
                                                : errno == ERANGE ? "number too large to fit in target type"
                                                                  : "invalid digit found in string");
                                        return 1;
                                }
                                continue;
                        }
                        int r = parse_u64(b, "--num-threads <NUM>", value, &ignored);
                        if (r != 0)
                                return r;
                } else if (streq(name, "no-names"))
                        b->no_names = true;
                else if (streq(name, "raw"))
                        b->raw = true;
                else if (streq(name, "tag"))
                        b->tag = true;
                else if (streq(name, "check"))
                        b->check = true;
                else if (streq(name, "quiet"))
                        b->quiet = true;
        }
        *ret_seen = seen;
        return 0;
}

/* clap's conflicts_with and requires, as b3sum declares them. */
static int check_conflicts(B3 *b, unsigned seen)
{
        static const struct {
                unsigned bit;
                const char *name;
        } with_check[] = {
                { B3_DERIVE, "--derive-key <CONTEXT>" }, { B3_KEYED, "--keyed" }, { B3_LENGTH, "--length <LEN>" },
                { B3_RAW, "--raw" },                     { B3_TAG, "--tag" },     { B3_NO_NAMES, "--no-names" },
        };
        char what[256];

        if ((seen & B3_KEYED) && (seen & B3_DERIVE)) {
                snprintf(what, sizeof(what), b->old ? "The argument '%s' cannot be used with '%s'"
                                                    : "the argument '%s' cannot be used with '%s'",
                         "--keyed", "--derive-key <CONTEXT>");
                return clap_error(b, what, b->old ? "b3sum --keyed" : "b3sum --keyed <FILE>...");
        }
        if (seen & B3_CHECK)
                for (size_t i = 0; i < ELEMENTSOF(with_check); i++)
                        if (seen & with_check[i].bit) {
                                snprintf(what, sizeof(what), b->old ? "The argument '%s' cannot be used with '%s'"
                                                                    : "the argument '%s' cannot be used with '%s'",
                                         "--check", with_check[i].name);
                                return clap_error(b, what, b->old ? "b3sum --check" : "b3sum --check [FILE]...");
                        }
        if ((seen & B3_QUIET) && !(seen & B3_CHECK)) {
                snprintf(what, sizeof(what), b->old ? "The following required arguments were not provided:\n    --check"
                                                    : "the following required arguments were not provided:\n  --check");
                return clap_error(b, what, b->old ? "b3sum --check --quiet" : "b3sum --check --quiet [FILE]...");
        }
        if ((seen & B3_KEYED) && b->n_files == 0) {
                snprintf(what, sizeof(what), b->old ? "The following required arguments were not provided:\n    <FILE>..."
                                                    : "the following required arguments were not provided:\n  <FILE>...");
                return clap_error(b, what, b->old ? "b3sum <FILE>... --keyed" : "b3sum --keyed <FILE>...");
        }
        return 0;
}

int b3_main(const Persona *p, int argc, char *argv[])
{
        B3 b = { .prog = "b3sum", .old = persona_compat() == COMPAT_DEBIAN12, .length = B3_HASH_LEN };
        static uint8_t buf[B3_BUF_SIZE];
        char *stdin_only[] = { (char *)"-" };
        uint64_t failed = 0;
        unsigned seen = 0;
        int r;

        b.buf = buf;
        r = parse_args(&b, argc, argv, &seen);
        if (r == 0)
                r = check_conflicts(&b, seen);
        if (r != 0) {
                free(b.files);
                return persona_finish(b.prog, r < 0 ? 0 : r);
        }
        if (b.n_files == 0) {
                free(b.files);
                b.files = stdin_only;
                b.n_files = 1;
        }
        if (b.raw && b.n_files > 1) {
                fprintf(stderr, "Error: Only one filename can be provided when using --raw\n");
                r = 1;
                goto out;
        }
        if (b.keyed && read_key(&b) < 0) {
                r = 1;
                goto out;
        }
        b.params.context = b.derive_key;
        r = hash_ctx_new(&b.ctx);
        if (r < 0) {
                fprintf(stderr, "Error: %s\n", strerror(-r));
                r = 1;
                goto out;
        }

        for (size_t i = 0; i < b.n_files; i++) {
                if (b.check) {
                        r = b3_check_file(&b, b.files[i], &failed);
                        if (r < 0) {
                                if (r == -EILSEQ)
                                        fprintf(stderr, "Error: stream did not contain valid UTF-8\n");
                                else
                                        fprintf(stderr, "Error: %s (os error %d)\n", strerror(-r), -r);
                                r = 1;
                                goto out;
                        }
                        continue;
                }
                if (!b3_hash_one(&b, b.files[i]))
                        failed++;
        }
        /* b3sum 1.2.0 said nothing more than the lines. */
        if (b.check && failed > 0 && !b.old)
                persona_err(b.prog, "WARNING: %" PRIu64 " computed checksum%s did NOT match", failed,
                            failed == 1 ? "" : "s");
        r = failed > 0 ? 1 : 0;
out:
        hash_ctx_free(b.ctx);
        hash_params_wipe(&b.params);
        line_free(&b.line);
        if (b.files != stdin_only)
                free(b.files);
        return persona_finish(b.prog, r);
}
