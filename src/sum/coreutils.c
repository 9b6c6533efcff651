/* SPDX-License-Identifier: MIT */
/* coreutils.c: fhashctl as coreutils' md5sum, sha*sum, b2sum, cksum and sum: options, help, main */
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-config.h"
#include "sum/coreutils-check.h"
#include "sum/coreutils-digest.h"
#include "sum/coreutils.h"

static int try_help(const Cu *cu)
{
        fprintf(stderr, "Try '%s --help' for more information.\n", cu->prog);
        return 1;
}

/* error(0, 0, ...) and then usage(EXIT_FAILURE). */
_printf_(2, 3) static int usage_error(const Cu *cu, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        persona_err(cu->prog, "%s", k >= 0 ? s : fmt);
        return try_help(cu);
}

static void help(const Cu *cu)
{
        printf("Usage: %s [OPTION]... [FILE]...\n", cu->prog);
        if (cu->tool == CU_SUM)
                printf("Print the BSD (the default) or System V checksum and block count of each FILE.\n");
        else if (cu->tool == CU_CKSUM)
                printf("Print or verify checksums; CRC-32 (POSIX) unless --algorithm says otherwise.\n");
        else
                printf("Print or check %s (%d-bit) checksums.\n", cu_type_string(cu),
                       cu->build == BUILD_BLAKE2 ? BLAKE2B_MAX_BITS : cu_algos[cu->algo].bits);
        printf("\nWith no FILE, or when FILE is -, read standard input.\n");
        if (cu->tool == CU_SUM) {
                printf("\n  -r              BSD sum, 1 KiB blocks (the default)\n"
                       "  -s, --sysv      System V sum, 512-byte blocks\n"
                       "      --help      display this help and exit\n"
                       "      --version   output version information and exit\n");
                return;
        }
        if (cu->tool == CU_CKSUM)
                printf("\n  -a, --algorithm=TYPE  the digest TYPE to use (see DIGEST below)\n"
                       "      --base64          base64 digests, not hexadecimal\n");
        else
                printf("\n  -b, --binary          read in binary mode (no difference on GNU/Linux)\n");
        printf("  -c, --check           read checksums from the FILEs and check them\n");
        if (cu->tool == CU_CKSUM || cu->tool == CU_B2SUM)
                printf("  -l, --length=BITS     digest length in bits; a multiple of 8 up to 512 for\n"
                       "                        blake2b; 224, 256, 384 or 512 for sha2 and sha3\n");
        if (cu->tool == CU_CKSUM)
                printf("      --raw             the digest's bytes, not hexadecimal\n"
                       "      --tag             BSD-style lines (the default)\n"
                       "      --untagged        lines of the digest and the name, without the type\n");
        else
                printf("      --tag             BSD-style lines\n"
                       "  -t, --text            read in text mode (the default)\n");
        printf("  -z, --zero            end each output line with NUL, not newline, and do not\n"
               "                        escape names\n"
               "\nThese are for checking only:\n"
               "      --ignore-missing  missing files are neither failures nor reported\n"
               "      --quiet           no OK line for each file that matches\n"
               "      --status          no output at all: the exit status says it\n"
               "      --strict          exit non-zero for improperly formatted lines\n"
               "  -w, --warn            warn about each improperly formatted line\n");
        if (cu->tool == CU_CKSUM)
                printf("      --debug           say which implementation is used\n");
        printf("      --help            display this help and exit\n"
               "      --version         output version information and exit\n");
        if (cu->tool == CU_CKSUM && !cu->old)
                printf("\nDIGEST determines the digest algorithm and the default output format:\n"
                       "  sysv      (as sum -s)\n"
                       "  bsd       (as sum -r)\n"
                       "  crc       (as cksum: the default)\n"
                       "  crc32b    (the CRC-32 of zlib and gzip)\n"
                       "  md5       (as md5sum)\n"
                       "  sha1      (as sha1sum)\n"
                       "  sha2      (as sha224sum, sha256sum, sha384sum, sha512sum, by --length)\n"
                       "  sha3      (SHA3-224 ... SHA3-512, by --length)\n"
                       "  blake2b   (as b2sum)\n"
                       "  sm3       (SM3)\n");
        else if (cu->tool == CU_CKSUM)
                /* 9.1's list, which scripts read to learn what -a takes. */
                printf("\nDIGEST determines the digest algorithm and the default output format:\n"
                       "  sysv      (as sum -s)\n"
                       "  bsd       (as sum -r)\n"
                       "  crc       (as cksum: the default)\n"
                       "  md5       (as md5sum)\n"
                       "  sha1      (as sha1sum)\n"
                       "  sha224    (as sha224sum)\n"
                       "  sha256    (as sha256sum)\n"
                       "  sha384    (as sha384sum)\n"
                       "  sha512    (as sha512sum)\n"
                       "  blake2b   (as b2sum)\n"
                       "  sm3       (SM3)\n");
        if (cu->tool == CU_CKSUM)
                printf("\nWhen checking, the input should be output of this program, or of the\n"
                       "equivalent standalone program.\n");
        else if (cu->tool != CU_SUM)
                printf("\nWhen checking, the input should be output of this program. Lines are the\n"
                       "checksum, a space, '*' (binary) or ' ' (text), and the name.\n");
        printf("\nThis is fhashctl (fhash %s) as %s, after GNU coreutils %s.\n", FHASH_VERSION, cu->prog,
               cu->old ? "9.1" : "9.11");
}

static void version(const Cu *cu)
{
        printf("%s (fhash) %s\nBehaves as %s of GNU coreutils %s; fhash is not GNU coreutils.\n", cu->prog,
               FHASH_VERSION, cu->prog, cu->old ? "9.1" : "9.11");
}

enum {
        OPT_IGNORE_MISSING = 0x100,
        OPT_STATUS,
        OPT_QUIET,
        OPT_STRICT,
        OPT_TAG,
        OPT_UNTAGGED,
        OPT_DEBUG,
        OPT_RAW,
        OPT_BASE64,
        OPT_HELP,
        OPT_VERSION,
};

/* The long options, each with the tools that take it. */
enum {
        T_SUM = 1 << 0,     /* sum */
        T_DIGEST = 1 << 1,  /* md5sum, sha*sum */
        T_B2 = 1 << 2,      /* b2sum */
        T_CK = 1 << 3,      /* cksum */
        T_CK_NEW = 1 << 4,  /* cksum >= 9.2 */
};
static const struct {
        struct option opt;
        unsigned tools;
} cu_options[] = {
        { { "length", required_argument, NULL, 'l' }, T_B2 | T_CK },
        { { "check", no_argument, NULL, 'c' }, T_DIGEST | T_B2 | T_CK },
        { { "ignore-missing", no_argument, NULL, OPT_IGNORE_MISSING }, T_DIGEST | T_B2 | T_CK },
        { { "quiet", no_argument, NULL, OPT_QUIET }, T_DIGEST | T_B2 | T_CK },
        { { "status", no_argument, NULL, OPT_STATUS }, T_DIGEST | T_B2 | T_CK },
        { { "warn", no_argument, NULL, 'w' }, T_DIGEST | T_B2 | T_CK },
        { { "strict", no_argument, NULL, OPT_STRICT }, T_DIGEST | T_B2 | T_CK },
        { { "tag", no_argument, NULL, OPT_TAG }, T_DIGEST | T_B2 | T_CK },
        { { "zero", no_argument, NULL, 'z' }, T_DIGEST | T_B2 | T_CK },
        { { "algorithm", required_argument, NULL, 'a' }, T_CK },
        { { "base64", no_argument, NULL, OPT_BASE64 }, T_CK_NEW },
        { { "debug", no_argument, NULL, OPT_DEBUG }, T_CK },
        { { "raw", no_argument, NULL, OPT_RAW }, T_CK_NEW },
        { { "untagged", no_argument, NULL, OPT_UNTAGGED }, T_CK },
        { { "binary", no_argument, NULL, 'b' }, T_DIGEST | T_B2 | T_CK_NEW },
        { { "text", no_argument, NULL, 't' }, T_DIGEST | T_B2 | T_CK_NEW },
        { { "sysv", no_argument, NULL, 's' }, T_SUM },
        { { "help", no_argument, NULL, OPT_HELP }, ~0u },
        { { "version", no_argument, NULL, OPT_VERSION }, ~0u },
};

/* -a ARG, as argmatch: exact names only (no abbreviations since 9.0). */
static int parse_algorithm(Cu *cu, const char *arg)
{
        for (int a = 0; a < _CK_ALGO_MAX; a++)
                if ((!cu->old || cu_algos[a].old) && streq(arg, cu_algos[a].arg)) {
                        cu->algo = (CkAlgo)a;
                        cu->algorithm_specified = true;
                        return 0;
                }
        _cleanup_free_ char *q = cu_quote(arg), *o = cu_quote("--algorithm");
        fprintf(stderr, "%s: invalid argument %s for %s\nValid arguments are:", cu->prog, q ? q : arg,
                o ? o : "--algorithm");
        for (int a = 0; a < _CK_ALGO_MAX; a++)
                if (!cu->old || cu_algos[a].old) {
                        _cleanup_free_ char *v = cu_quote(cu_algos[a].arg);
                        fprintf(stderr, "\n  - %s", v ? v : cu_algos[a].arg);
                }
        fputc('\n', stderr);
        return -EINVAL;
}

/* -l BITS: in 9.11 as xnumtoimax(..., 0, IDX_MAX, "", "invalid length", 0, XTOINT_MAX_QUIET), a
 * number past the maximum standing for the maximum; in 9.1 as xdectoumax(), unsigned, and each -l
 * held to a multiple of 8 as it came. */
static int parse_length(Cu *cu, const char *arg)
{
        _cleanup_free_ char *q = cu_quote(arg);
        const char *t = arg + strspn(arg, " \t\n\v\f\r");
        char *end = NULL;
        bool bad = false;
        int e = 0;
        intmax_t v = 0;

        errno = 0;
        if (cu->old) {
                uintmax_t u = 0;

                if (*t == '-')
                        bad = true;
                else {
                        u = strtoumax(arg, &end, 10);
                        if (end == arg || *end != '\0')
                                bad = true;
                        else if (errno == ERANGE) {
                                bad = true;
                                e = EOVERFLOW;
                        }
                }
                v = u > INTMAX_MAX ? INTMAX_MAX : (intmax_t)u;
        } else {
                v = strtoimax(arg, &end, 10);
                if (end == arg || *end != '\0')
                        bad = true;
                else if (v < 0) {
                        bad = true;
                        e = EOVERFLOW;
                }
        }
        if (bad) {
                if (e)
                        cu_err(cu, "invalid length: %s: %s", q ? q : arg, strerror(e));
                else
                        cu_err(cu, "invalid length: %s", q ? q : arg);
                return -EINVAL;
        }
        cu->digest_length = v;
        cu->digest_length_str = arg;
        if (cu->old && v % 8 != 0) {
                cu_err(cu, "invalid length: %s", q ? q : arg);
                cu_err(cu, "length is not a multiple of 8");
                return -EINVAL;
        }
        return 0;
}

static int invalid_length(Cu *cu, const char *fmt, ...) _printf_(2, 3);
static int invalid_length(Cu *cu, const char *fmt, ...)
{
        _cleanup_free_ char *q = cu_quote(cu->digest_length_str), *s = NULL;
        va_list ap;
        int k;

        cu_err(cu, "invalid length: %s", q ? q : cu->digest_length_str);
        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        cu_err(cu, "%s", k >= 0 ? s : fmt);
        return 1;
}

/* The checks of coreutils' main() after the options, in its order: 0 to go on, else the exit
 * status. */
static int validate(Cu *cu)
{
        _cleanup_free_ char *qt = cu_quote(cu_type_string(cu));

        if (cu->build == BUILD_BLAKE2 || cu->build == BUILD_CKSUM) {
                bool sha = cu->build == BUILD_CKSUM && (cu->algo == CK_SHA2 || cu->algo == CK_SHA3);

                if (cu->build == BUILD_CKSUM && cu->digest_length != 0 && cu->algo != CK_BLAKE2B && !sha) {
                        cu_err(cu, cu->old ? "--length is only supported with --algorithm=blake2b"
                                           : "--length is only supported with --algorithm blake2b, sha2, or sha3");
                        return 1;
                }
                if (sha) {
                        bool given = cu->digest_length_str[0] != '\0';

                        if (cu->digest_length == 0 && !given && !cu->do_check) {
                                cu_err(cu, "--algorithm=%s requires specifying --length 224, 256, 384, or 512",
                                       cu_algos[cu->algo].arg);
                                return 1;
                        }
                        if ((!cu->do_check || given) && !cu_sha_length_ok(cu->digest_length))
                                return invalid_length(cu, "digest length for %s must be 224, 256, 384, or 512",
                                                      qt ? qt : cu_type_string(cu));
                } else {
                        if (cu->digest_length > BLAKE2B_MAX_BITS)
                                return invalid_length(cu, "maximum digest length for %s is %d bits",
                                                      qt ? qt : cu_type_string(cu), BLAKE2B_MAX_BITS);
                        if (cu->digest_length % 8 != 0)
                                return invalid_length(cu, "length is not a multiple of 8");
                }
                if (cu->digest_length == 0)
                        cu->digest_length = cu->build == BUILD_BLAKE2 ? BLAKE2B_MAX_BITS : cu_algos[cu->algo].bits;
                cu->digest_hex_bytes = (size_t)(cu->digest_length >> 2);
        }

        if (cu->build == BUILD_CKSUM && cu->do_check && cu->algorithm_specified &&
            cu->algo <= (cu->old ? CK_CRC : CK_CRC32B)) {
                cu_err(cu, cu->old ? "--check is not supported with --algorithm={bsd,sysv,crc}"
                                   : "--check is not supported with --algorithm={bsd,sysv,crc,crc32b}");
                return 1;
        }
        if (cu->base64 && cu->raw)
                return usage_error(cu, "--base64 and --raw are mutually exclusive");

        /* 9.1 refused --tag with --text before anything else. */
        if (cu->old && cu->prefix_tag == 1 && cu->binary == 0)
                return usage_error(cu, "--tag does not support --text mode");
        if (cu->delim != '\n' && cu->do_check)
                return usage_error(cu, "the --zero option is not supported when verifying checksums");
        if (cu->prefix_tag == 1 && cu->do_check && !(cu->old && cu->build == BUILD_CKSUM))
                return usage_error(cu, "the --tag option is meaningless when verifying checksums");
        if (cu->binary >= 0 && cu->do_check && !(cu->old && cu->build == BUILD_CKSUM))
                return usage_error(cu, "the --binary and --text options are meaningless when verifying checksums");
        if (cu->ignore_missing && !cu->do_check)
                return usage_error(cu, "the --ignore-missing option is meaningful only when verifying checksums");
        if (cu->status_only && !cu->do_check)
                return usage_error(cu, "the --status option is meaningful only when verifying checksums");
        if (cu->warn && !cu->do_check)
                return usage_error(cu, "the --warn option is meaningful only when verifying checksums");
        if (cu->quiet && !cu->do_check)
                return usage_error(cu, "the --quiet option is meaningful only when verifying checksums");
        if (cu->strict && !cu->do_check)
                return usage_error(cu, "the --strict option is meaningful only when verifying checksums");

        if (cu->prefix_tag == -1)
                cu->prefix_tag = cu->build == BUILD_CKSUM && !cu->legacy ? 1 : 0;
        if (!cu->old && cu->prefix_tag == 1 && cu->binary == 0)
                return usage_error(cu, cu->build == BUILD_CKSUM ? "--text mode is only supported with --untagged"
                                                                : "--tag does not support --text mode");
        if (cu->binary < 0)
                cu->binary = 0;
        else if (cu->prefix_tag == 1)
                cu->binary = 1;
        return 0;
}

static int parse_options(Cu *cu, int argc, char *argv[])
{
        struct option longopts[ELEMENTSOF(cu_options) + 1] = {};
        unsigned mask = cu->build == BUILD_SUM      ? T_SUM
                        : cu->build == BUILD_BLAKE2 ? T_B2
                        : cu->tool == CU_CKSUM      ? (T_CK | (cu->old ? 0 : T_CK_NEW))
                                                    : T_DIGEST;
        const char *shortopts = cu->build == BUILD_SUM      ? "rs"
                                : cu->build == BUILD_BLAKE2 ? "l:bctwz"
                                : cu->tool == CU_CKSUM      ? "a:l:bctwz"
                                                            : "bctwz";
        size_t n = 0;
        int c;

        for (size_t i = 0; i < ELEMENTSOF(cu_options); i++)
                if (cu_options[i].tools & mask)
                        longopts[n++] = cu_options[i].opt;

        /* getopt names the program by argv[0] in its messages. */
        argv[0] = (char *)cu->prog;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) >= 0) {
                switch (c) {
                case 'a':
                        if (parse_algorithm(cu, optarg) < 0)
                                return try_help(cu);
                        break;
                case 'l':
                        if (parse_length(cu, optarg) < 0)
                                return 1;
                        break;
                case 'c':
                        cu->do_check = true;
                        break;
                case OPT_STATUS:
                        cu->status_only = true;
                        cu->warn = cu->quiet = false;
                        break;
                case 'w':
                        cu->warn = true;
                        cu->status_only = cu->quiet = false;
                        break;
                case OPT_QUIET:
                        cu->quiet = true;
                        cu->status_only = cu->warn = false;
                        break;
                case OPT_IGNORE_MISSING:
                        cu->ignore_missing = true;
                        break;
                case OPT_STRICT:
                        cu->strict = true;
                        break;
                case 'b':
                case 't':
                        /* cksum 9.1 took neither (its -b came in 9.2 as --base64, and went). */
                        if (cu->old && cu->build == BUILD_CKSUM)
                                return try_help(cu);
                        cu->binary = c == 'b';
                        break;
                case OPT_TAG:
                        cu->prefix_tag = 1;
                        /* 9.1 set binary mode with --tag, so --text before it did not count. */
                        if (cu->old)
                                cu->binary = 1;
                        break;
                case OPT_UNTAGGED:
                        cu->prefix_tag = 0;
                        break;
                case OPT_BASE64:
                        cu->base64 = true;
                        break;
                case OPT_RAW:
                        cu->raw = true;
                        break;
                case OPT_DEBUG:
                        cu->debug = true;
                        break;
                case 'z':
                        cu->delim = '\0';
                        break;
                case 'r':
                        cu->sum_kind = SUM_BSD;
                        break;
                case 's':
                        cu->sum_kind = SUM_SYSV;
                        break;
                case OPT_HELP:
                        help(cu);
                        return -1;
                case OPT_VERSION:
                        version(cu);
                        return -1;
                default:
                        return try_help(cu);
                }
        }
        return 0;
}

static const struct {
        Build build;
        CkAlgo algo;
} cu_tools[_CU_TOOL_MAX] = {
        [CU_MD5SUM] = { BUILD_CKSUM, CK_MD5 },       [CU_SHA1SUM] = { BUILD_CKSUM, CK_SHA1 },
        [CU_SHA224SUM] = { BUILD_CKSUM, CK_SHA224 }, [CU_SHA256SUM] = { BUILD_CKSUM, CK_SHA256 },
        [CU_SHA384SUM] = { BUILD_CKSUM, CK_SHA384 }, [CU_SHA512SUM] = { BUILD_CKSUM, CK_SHA512 },
        [CU_B2SUM] = { BUILD_BLAKE2, CK_BLAKE2B },   [CU_CKSUM] = { BUILD_CKSUM, CK_CRC },
        [CU_SUM] = { BUILD_SUM, CK_BSD },
};

int cu_main(const Persona *p, int argc, char *argv[])
{
        Cu cu = {
                .prog = p->name,
                .tool = p->tool,
                .old = persona_compat() == COMPAT_DEBIAN12,
                .sum_kind = SUM_BSD,
                .bsd_reversed = -1,
                .delim = '\n',
                .binary = -1,
                .prefix_tag = -1,
                .digest_length_str = "",
        };
        static uint8_t buf[CU_BUF_SIZE];
        bool ok = true;
        int r;

        setlocale(LC_ALL, "");
        cu.build = cu_tools[cu.tool].build;
        cu.algo = cu_tools[cu.tool].algo;
        cu.buf = buf;
        if (cu.tool <= CU_SHA512SUM) {
                cu.algorithm_specified = true;
                if (cu.old)
                        cu.build = BUILD_PLAIN;
                else {
                        cu.legacy = true;
                        cu.prefix_tag = 0;
                }
        }

        r = parse_options(&cu, argc, argv);
        if (r != 0)
                return persona_finish(cu.prog, r < 0 ? 0 : r);

        if (cu.build == BUILD_PLAIN) {
                cu.digest_length = cu_algos[cu.algo].bits;
                cu.digest_hex_bytes = (size_t)cu_algos[cu.algo].bits / 4;
        }
        cu.min_line = cu.build == BUILD_PLAIN ? cu.digest_hex_bytes + 2 : 3;
        r = validate(&cu);
        if (r != 0)
                return r;
        if (cu.debug && cu.build == BUILD_CKSUM && cu.algo == CK_CRC)
                persona_err(cu.prog, "no hardware CRC support used (slice-by-8 software)");

        r = hash_ctx_new(&cu.ctx);
        if (r < 0) {
                persona_err(cu.prog, "%s", strerror(-r));
                return 1;
        }

        char *stdin_only[] = { (char *)"-" };
        char **files = optind < argc ? argv + optind : stdin_only;
        size_t n_files = optind < argc ? (size_t)(argc - optind) : 1;

        cu.args = optind < argc;
        if (n_files > 1 && cu.raw) {
                persona_err(cu.prog, "the --raw option is not supported with multiple files");
                hash_ctx_free(cu.ctx);
                return 1;
        }
        for (size_t i = 0; i < n_files; i++) {
                if (cu.do_check) {
                        ok &= cu_digest_check(&cu, files[i]);
                        continue;
                }
                CuResult res = {};
                bool missing;

                if (cu_digest_file(&cu, files[i], &res, &missing) < 0)
                        ok = false;
                else
                        cu_output(&cu, files[i], cu.binary, &res);
        }
        hash_ctx_free(cu.ctx);
        line_free(&cu.line);
        return persona_finish(cu.prog, ok ? 0 : 1);
}
