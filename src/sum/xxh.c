/* SPDX-License-Identifier: MIT */
/* xxh.c: fhashctl as xxHash's xxhsum, xxh32sum, xxh64sum, xxh128sum and xxh3sum: options, usage, main */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build-config.h"
#include "sum/xxh-check.h"
#include "sum/xxh-hash.h"
#include "sum/xxh.h"

/*
 * What xxHash's cli/xxhsum.c does (0.8.3), as its Makefile's check and test-xxhsum-c and its
 * tests/cli-*.sh check it. Unlike coreutils, xxhsum says most things on standard output, check
 * summaries included; errors about opening files go to standard error. Options end at the first
 * name. In 0.8.1 (FHASH_COMPAT=debian12) -H3 lines were always BSD-style, names were never escaped,
 * and -c knew neither comments, XXH3_ lines nor --ignore-missing.
 */

static void usage(const Xxh *x, bool advanced)
{
        fprintf(stderr, "%s (fhash %s), as xxhsum %s\n", x->exe, FHASH_VERSION, x->old ? "0.8.1" : "0.8.3");
        fprintf(stderr, "Print or verify checksums using fast non-cryptographic algorithm xxHash \n\n"
                        "Usage: %s [options] [files] \n\n"
                        "When no filename provided or when '-' is provided, uses stdin as input. \n"
                        "\nOptions: \n"
                        "  -H#          select an xxhash algorithm (default: %d) \n"
                        "               0: XXH32 \n"
                        "               1: XXH64 \n"
                        "               2: XXH128 (also called XXH3_128bits) \n"
                        "               3: XXH3 (also called XXH3_64bits) \n"
                        "  -c, --check  read xxHash checksum from [files] and check them \n"
                        "  -h, --help   display a long help page about advanced options \n",
                x->exe, (int)x->default_algo);
        if (!advanced)
                return;
        fprintf(stderr, "\nAdvanced :\n"
                        "  -V, --version        Display version information \n"
                        "      --tag            Produce BSD-style checksum lines \n"
                        "      --little-endian  Checksum values use little endian convention (default: big endian) \n"
                        "      --binary         Read in binary mode \n"
                        "  -q, --quiet          Don't display version header in benchmark mode \n"
                        "\n"
                        "The following five options are useful only when verifying checksums (-c): \n"
                        "  -q, --quiet          Don't print OK for each successfully verified file \n"
                        "      --status         Don't output anything, status code shows success \n"
                        "      --strict         Exit non-zero for improperly formatted checksum lines \n"
                        "      --warn           Warn about improperly formatted checksum lines \n"
                        "      --ignore-missing Don't fail or report status for missing files \n"
                        "\nThe benchmark mode of xxhsum (-b, -i, -B) is not part of fhashctl.\n");
}

static int bad_usage(const Xxh *x)
{
        fprintf(stderr, "Wrong parameters\n\n");
        usage(x, false);
        return 1;
}

/* -H's number, with xxhsum's K/M suffixes: false on overflow. */
static bool read_u32(const char **s, unsigned *ret)
{
        unsigned v = 0;

        while (**s >= '0' && **s <= '9') {
                if (v > (~0u / 10) - 1)
                        return false;
                v = v * 10 + (unsigned)(**s - '0');
                (*s)++;
        }
        if (**s == 'K' || **s == 'M') {
                if (v > (~0u >> 10))
                        return false;
                v <<= 10;
                if (**s == 'M') {
                        if (v > (~0u >> 10))
                                return false;
                        v <<= 10;
                }
                (*s)++;
                if (**s == 'i')
                        (*s)++;
                if (**s == 'B')
                        (*s)++;
        }
        *ret = v;
        return true;
}

static const char *base_name(const char *path)
{
        const char *s = strrchr(path, '/');
        return s ? s + 1 : path;
}

int xxh_main(const Persona *p, int argc, char *argv[])
{
        static uint8_t buf[XXH_BUF_SIZE];
        Xxh x = {
                .exe = base_name(argv[0]),
                .old = persona_compat() == COMPAT_DEBIAN12,
                .algo = XA_64,
                .default_algo = XA_64,
                .bitmask = (1u << _XA_MAX) - 1,
                .log_level = 2,
                .buf = buf,
        };
        int files_start = 0, r = 0;
        bool explicit_stdin = false, bench = false;

        switch ((XxhTool)p->tool) {
        case XXH_32SUM:
                x.algo = x.default_algo = XA_32;
                break;
        case XXH_64SUM:
                x.algo = x.default_algo = XA_64;
                break;
        case XXH_128SUM:
                x.algo = x.default_algo = XA_128;
                break;
        case XXH_3SUM:
                x.algo = x.default_algo = XA_3;
                break;
        default:
                break;
        }
        /* Since 0.8.2, xxhNNsum -c takes only its own algorithm's lines. */
        if ((XxhTool)p->tool != XXH_SUM && !x.old)
                x.bitmask = 1u << x.algo;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];

                if (streq(a, "--check")) {
                        x.check = true;
                        continue;
                }
                if (streq(a, "--benchmark-all") || streq(a, "--bench-all")) {
                        bench = true;
                        continue;
                }
                if (streq(a, "--quiet")) {
                        x.log_level--;
                        continue;
                }
                if (streq(a, "--little-endian")) {
                        x.little_endian = true;
                        continue;
                }
                if (streq(a, "--strict")) {
                        x.strict = true;
                        continue;
                }
                if (streq(a, "--status")) {
                        x.status = true;
                        continue;
                }
                if (streq(a, "--warn")) {
                        x.warn = true;
                        continue;
                }
                if (!x.old && streq(a, "--binary"))
                        continue;
                if (!x.old && streq(a, "--ignore-missing")) {
                        x.ignore_missing = true;
                        continue;
                }
                if (streq(a, "--help")) {
                        usage(&x, true);
                        return 0;
                }
                if (streq(a, "--version")) {
                        fprintf(stderr, "%s (fhash %s), as xxhsum %s \n", x.exe, FHASH_VERSION, x.old ? "0.8.1" : "0.8.3");
                        return 0;
                }
                if (streq(a, "--tag")) {
                        x.tag = true;
                        continue;
                }
                if (streq(a, "--")) {
                        if (files_start == 0 && i != argc - 1)
                                files_start = i + 1;
                        break;
                }
                if (a[0] != '-') {
                        if (files_start == 0)
                                files_start = i;
                        break;
                }
                a++;
                if (*a == '\0')
                        explicit_stdin = true;
                while (*a) {
                        unsigned v;

                        switch (*a) {
                        case 'V':
                                fprintf(stderr, "%s (fhash %s), as xxhsum %s \n", x.exe, FHASH_VERSION,
                                        x.old ? "0.8.1" : "0.8.3");
                                return 0;
                        case 'h':
                                usage(&x, true);
                                return 0;
                        case 'H':
                                a++;
                                if (!read_u32(&a, &v)) {
                                        fprintf(stderr, "Error: numeric value too large \n");
                                        return 1;
                                }
                                if (v == 0 || v == 32)
                                        x.algo = XA_32;
                                else if (v == 1 || v == 64)
                                        x.algo = XA_64;
                                else if (v == 2 || v == 128)
                                        x.algo = XA_128;
                                else if (v == 3)
                                        x.algo = XA_3;
                                else
                                        return bad_usage(&x);
                                break;
                        case 'c':
                                x.check = true;
                                a++;
                                break;
                        case 'w':
                                x.warn = true;
                                a++;
                                break;
                        case 'q':
                                x.log_level--;
                                a++;
                                break;
                        case 'b':
                        case 'i':
                        case 'B':
                                /* The benchmark's options: their numbers are read and the run refused
                                 * below. */
                                bench = bench || *a == 'b';
                                a++;
                                do {
                                        if (*a == ',')
                                                a++;
                                        if (!read_u32(&a, &v)) {
                                                fprintf(stderr, "Error: numeric value too large \n");
                                                return 1;
                                        }
                                } while (*a == ',');
                                break;
                        default:
                                return bad_usage(&x);
                        }
                }
        }

        if (bench) {
                fprintf(stderr, "%s: the benchmark mode of xxhsum (-b) is not part of fhashctl: "
                                "run xxHash's own xxhsum -b\n", x.exe);
                return 1;
        }
        if (files_start == 0 && isatty(STDIN_FILENO) && !explicit_stdin)
                return bad_usage(&x);

        r = hash_ctx_new(&x.ctx);
        if (r < 0) {
                fprintf(stderr, "Error: %s\n", strerror(-r));
                return 1;
        }
        char *stdin_only[] = { (char *)"-" };
        char **files = files_start > 0 ? argv + files_start : stdin_only;
        int n = files_start > 0 ? argc - files_start : 1;

        r = 0;
        if (x.check) {
                bool ok = true;

                for (int i = 0; i < n; i++)
                        ok &= xxh_check_file(&x, files[i]);
                r = ok ? 0 : 1;
        } else {
                for (int i = 0; i < n; i++)
                        r |= xxh_hash_file(&x, files[i]);
                /* 0.8.1 cleared a progress line on stderr after hashing named files, at the default
                 * verbosity. */
                if (x.old && x.log_level >= 2 && files_start > 0)
                        fprintf(stderr, "\r%70s\r", "");
        }
        hash_ctx_free(x.ctx);
        line_free(&x.line);
        return persona_finish("xxhsum", r);
}
