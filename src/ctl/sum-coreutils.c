/* SPDX-License-Identifier: MIT */
/* sum-coreutils.c: fhashctl as coreutils' md5sum, sha*sum, b2sum, cksum and sum */
#include <getopt.h>
#include <inttypes.h>
#include <langinfo.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/base64.h>

#include "build-config.h"
#include "ctl/output.h"
#include "ctl/sum-coreutils.h"
#include "hash/hash.h"
#include "hash/oneshot.h"
#include "hash/sum.h"

/*
 * What these tools do is what coreutils' src/cksum.c (9.11) and src/digest.c (9.1) do, as their
 * manuals and tests/cksum/ describe it; the comments below name the behaviours a script can see.
 * Since coreutils 9.8, md5sum and sha*sum are cksum with a fixed algorithm ("legacy mode": the same
 * parser, base64 digests accepted by -c, names quoted in -c output); b2sum and sum are built on their
 * own. In 9.1 (Debian 12) md5sum and sha*sum were digest.c builds of their own: that is the
 * "plain" build below, which only FHASH_COMPAT=debian12 selects.
 */

typedef enum Build {
        BUILD_CKSUM,   /* cksum; md5sum and sha*sum in 9.11 (legacy mode) */
        BUILD_BLAKE2,  /* b2sum */
        BUILD_PLAIN,   /* md5sum and sha*sum in 9.1 */
        BUILD_SUM,     /* sum */
} Build;

/* cksum -a's algorithms, in coreutils' order: the order matters ("algo <= crc32b" are not
 * checkable) and is that of cksum --help's DIGEST list. */
typedef enum CkAlgo {
        CK_BSD,
        CK_SYSV,
        CK_CRC,
        CK_CRC32B,
        CK_MD5,
        CK_SHA1,
        CK_SHA224,
        CK_SHA256,
        CK_SHA384,
        CK_SHA512,
        CK_SHA2,
        CK_SHA3,
        CK_BLAKE2B,
        CK_SM3,
        _CK_ALGO_MAX,
} CkAlgo;

static const struct {
        const char *arg;  /* -a ARG */
        const char *tag;  /* the tag of tagged lines, and the name in messages */
        int bits;         /* the default length */
        bool old;         /* cksum 9.1 had it */
        HashAlgo algo;    /* the digest, for those that are one (sha2, sha3: by length) */
} ck[_CK_ALGO_MAX] = {
        [CK_BSD] = { "bsd", "BSD", 16, true, _HASH_ALGO_INVALID },
        [CK_SYSV] = { "sysv", "SYSV", 16, true, _HASH_ALGO_INVALID },
        [CK_CRC] = { "crc", "CRC", 32, true, _HASH_ALGO_INVALID },
        [CK_CRC32B] = { "crc32b", "CRC32B", 32, false, _HASH_ALGO_INVALID },
        [CK_MD5] = { "md5", "MD5", 128, true, HASH_MD5 },
        [CK_SHA1] = { "sha1", "SHA1", 160, true, HASH_SHA1 },
        [CK_SHA224] = { "sha224", "SHA224", 224, true, HASH_SHA224 },
        [CK_SHA256] = { "sha256", "SHA256", 256, true, HASH_SHA256 },
        [CK_SHA384] = { "sha384", "SHA384", 384, true, HASH_SHA384 },
        [CK_SHA512] = { "sha512", "SHA512", 512, true, HASH_SHA512 },
        [CK_SHA2] = { "sha2", "SHA2", 512, false, _HASH_ALGO_INVALID },
        [CK_SHA3] = { "sha3", "SHA3", 512, false, _HASH_ALGO_INVALID },
        [CK_BLAKE2B] = { "blake2b", "BLAKE2b", 512, true, HASH_BLAKE2B },
        [CK_SM3] = { "sm3", "SM3", 256, true, HASH_SM3 },
};

#define BLAKE2B_MAX_BITS 512
#define B64_LEN(n) ((size_t)4 * (((size_t)(n) + 2) / 3))

typedef struct Cu {
        const char *prog;
        CuTool tool;
        Build build;
        bool old;                /* FHASH_COMPAT=debian12: coreutils 9.1 */
        bool legacy;             /* md5sum and sha*sum built as cksum (9.11) */
        CkAlgo algo;
        bool algorithm_specified;
        SumKind sum_kind;        /* sum -r / -s */
        intmax_t digest_length;  /* bits */
        const char *digest_length_str;
        size_t digest_hex_bytes;
        size_t min_line;         /* the shortest checksum line to consider */
        int bsd_reversed;        /* -1 unknown, 0 standard lines, 1 BSD reversed lines */
        bool base64, raw, debug, status_only, warn, ignore_missing, quiet, strict, do_check;
        char delim;
        int binary;              /* -1 unset, 0 text, 1 binary */
        int prefix_tag;          /* -1 unset, 0 untagged, 1 tagged */
        bool args;               /* files were named */
        Line line;
        HashCtx *ctx;
        uint8_t *buf;
} Cu;

#define CU_BUF_SIZE ((size_t)128 * 1024)

static bool is_blank(char c)
{
        return c == ' ' || c == '\t';
}

static bool is_xdigit(char c)
{
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_base64(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

static const char *type_string(const Cu *cu)
{
        return cu->build == BUILD_BLAKE2 ? "BLAKE2b" : ck[cu->algo].tag;
}

/* Whether LC_CTYPE is a UTF-8 one: quote() and quotef() depend on it. */
static bool locale_utf8(void)
{
        const char *cs = nl_langinfo(CODESET);
        return cs && (streq(cs, "UTF-8") || streq(cs, "utf8"));
}

/* quotef(): names in diagnostics and, since 9.11, in -c's status lines. */
static int quotef(const char *name, char **ret)
{
        return output_quote_locale(name, locale_utf8(), ret);
}

static void add_quoted(Line *l, const char *name)
{
        _cleanup_free_ char *q = NULL;

        if (quotef(name, &q) < 0)
                line_adds(l, name);
        else
                line_adds(l, q);
}

_printf_(2, 3) static void cu_err(const Cu *cu, const char *fmt, ...)
{
        _cleanup_free_ char *s = NULL;
        va_list ap;
        int k;

        va_start(ap, fmt);
        k = vasprintf(&s, fmt, ap);
        va_end(ap);
        persona_err(cu->prog, "%s", k >= 0 ? s : fmt);
}

/* "PROG: NAME: REASON", the name quoted as quotef() does. */
static void cu_err_name(const Cu *cu, const char *name, int err)
{
        _cleanup_free_ char *q = NULL;

        if (quotef(name, &q) < 0)
                persona_err(cu->prog, "%s: %s", name, strerror(err));
        else
                persona_err(cu->prog, "%s: %s", q, strerror(err));
}

/* quote(): 'x' in the C locale, curly quotes where the locale is UTF-8, as gnulib's
 * locale_quoting_style. */
static char *quote(const char *s)
{
        char *r;

        if (asprintf(&r, locale_utf8() ? "\xe2\x80\x98%s\xe2\x80\x99" : "'%s'", s) < 0)
                return NULL;
        return r;
}

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
                printf("Print or check %s (%d-bit) checksums.\n", type_string(cu),
                       cu->build == BUILD_BLAKE2 ? BLAKE2B_MAX_BITS : ck[cu->algo].bits);
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

/* The digest, or the checksum, of one input. */
typedef struct CuResult {
        uint8_t digest[HASH_DIGEST_MAX];
        uint32_t sum;
        uint64_t size;
} CuResult;

static int feed_sum(const void *data, size_t n, void *userdata)
{
        sum_update(userdata, data, n);
        return 0;
}

/* The digest the current algorithm and length name. */
static HashAlgo digest_algo(const Cu *cu, HashParams *ret)
{
        size_t bytes = (size_t)(cu->digest_length >> 3);

        *ret = HASH_PARAMS_DEFAULT;
        if (cu->build == BUILD_BLAKE2 || cu->algo == CK_BLAKE2B) {
                ret->out_len = (uint32_t)bytes;
                return HASH_BLAKE2B;
        }
        if (cu->algo == CK_SHA2)
                return bytes == 28 ? HASH_SHA224 : bytes == 32 ? HASH_SHA256 : bytes == 48 ? HASH_SHA384 : HASH_SHA512;
        if (cu->algo == CK_SHA3)
                return bytes == 28   ? HASH_SHA3_224
                       : bytes == 32 ? HASH_SHA3_256
                       : bytes == 48 ? HASH_SHA3_384
                                     : HASH_SHA3_512;
        return ck[cu->algo].algo;
}

/* Reads and hashes one input: 0; -ENOENT with missing set for a file --ignore-missing skips
 * (only in check mode); another -errno after saying it, as "PROG: NAME: REASON". */
static int digest_file(Cu *cu, const char *name, CuResult *res, bool *missing)
{
        _cleanup_close_ int fd = -EBADF;
        int r;

        *missing = false;
        fd = oneshot_open(name);
        if (fd < 0) {
                if (cu->ignore_missing && fd == -ENOENT && !streq(name, "-")) {
                        *missing = true;
                        return -ENOENT;
                }
                cu_err_name(cu, name, -fd);
                return fd;
        }
        if (cu->build == BUILD_SUM || cu->algo <= CK_CRC32B) {
                SumState s;
                SumKind k = cu->build == BUILD_SUM ? cu->sum_kind
                            : cu->algo == CK_BSD   ? SUM_BSD
                            : cu->algo == CK_SYSV  ? SUM_SYSV
                            : cu->algo == CK_CRC   ? SUM_CRC
                                                   : SUM_CRC32B;

                sum_init(&s, k);
                r = oneshot_read_fd(fd, cu->buf, CU_BUF_SIZE, feed_sum, &s, &res->size);
                /* cksum 9.0 to 9.3 did not see read errors of its CRC (9.4 NEWS): a directory gave
                 * the CRC of what was read, nothing. */
                if (r < 0 && cu->old && cu->build == BUILD_CKSUM && cu->algo == CK_CRC) {
                        res->size = s.size;
                        r = 0;
                }
                res->sum = sum_value(&s);
        } else {
                HashParams p;
                HashAlgo a = digest_algo(cu, &p);

                r = hash_ctx_init_params(cu->ctx, a, &p);
                if (r >= 0)
                        r = oneshot_hash_fd(cu->ctx, fd, cu->buf, CU_BUF_SIZE, &res->size);
                if (r >= 0)
                        r = hash_ctx_final(cu->ctx, res->digest);
        }
        if (r < 0)
                cu_err_name(cu, name, -r);
        return r;
}

static void add_base64(Line *l, const uint8_t *d, size_t n)
{
        char b64[B64_LEN(HASH_DIGEST_MAX) + 1];

        base64_encode_raw(b64, n, d);
        line_add(l, b64, B64_LEN(n));
}

static void write_raw(Cu *cu, const void *d, size_t n)
{
        line_add(&cu->line, d, n);
        (void)persona_out(&cu->line);
}

/* One result line, as coreutils' output_file(), output_crc(), output_bsd() and output_sysv(). */
static void output(Cu *cu, const char *name, int binary, const CuResult *res)
{
        Line *l = &cu->line;
        bool sum_like = cu->build == BUILD_SUM || (cu->build == BUILD_CKSUM && cu->algo <= CK_CRC32B);
        size_t bytes = (size_t)(cu->digest_length >> 3);

        if (sum_like) {
                bool crc = cu->build == BUILD_CKSUM && (cu->algo == CK_CRC || cu->algo == CK_CRC32B);
                bool bsd = cu->build == BUILD_SUM ? cu->sum_kind == SUM_BSD : cu->algo == CK_BSD;

                if (cu->raw) {
                        /* Big-endian: 4 bytes of a CRC, 2 of a sum. */
                        uint8_t be[4] = { (uint8_t)(res->sum >> 24), (uint8_t)(res->sum >> 16),
                                          (uint8_t)(res->sum >> 8), (uint8_t)res->sum };
                        write_raw(cu, crc ? be : be + 2, crc ? 4 : 2);
                        return;
                }
                if (crc)
                        line_addf(l, "%" PRIu32 " %" PRIu64, res->sum, res->size);
                else if (bsd)
                        line_addf(l, "%05" PRIu32 " %5" PRIu64, res->sum, DIV_ROUND_UP(res->size, 1024));
                else
                        line_addf(l, "%" PRIu32 " %" PRIu64, res->sum, DIV_ROUND_UP(res->size, 512));
                if (cu->args) {
                        line_addc(l, ' ');
                        line_adds(l, name);
                }
                line_addc(l, cu->delim);
                (void)persona_out(l);
                return;
        }

        if (cu->raw) {
                write_raw(cu, res->digest, bytes);
                return;
        }
        bool escape = cu->delim == '\n' && strpbrk(name, "\\\n\r");
        if (escape)
                line_addc(l, '\\');
        if (cu->prefix_tag) {
                if (cu->build == BUILD_CKSUM && cu->algo == CK_SHA2)
                        line_addf(l, "SHA%u", (unsigned)cu->digest_length);
                else
                        line_adds(l, type_string(cu));
                if ((cu->build == BUILD_BLAKE2 || (cu->build == BUILD_CKSUM && cu->algo == CK_BLAKE2B)) &&
                    cu->digest_length < BLAKE2B_MAX_BITS)
                        line_addf(l, "-%u", (unsigned)cu->digest_length);
                if (cu->build == BUILD_CKSUM && cu->algo == CK_SHA3)
                        line_addf(l, "-%u", (unsigned)cu->digest_length);
                line_adds(l, " (");
                line_add_escaped(l, name, escape);
                line_adds(l, ") = ");
        }
        if (cu->base64)
                add_base64(l, res->digest, bytes);
        else
                line_add_hex(l, res->digest, bytes);
        if (!cu->prefix_tag) {
                line_addc(l, ' ');
                /* cksum 9.1 wrote untagged lines in binary mode, always with two spaces. */
                line_addc(l, binary && !(cu->old && cu->build == BUILD_CKSUM) ? '*' : ' ');
                line_add_escaped(l, name, escape);
        }
        line_addc(l, cu->delim);
        (void)persona_out(l);
}

/* The digest field: hex of the current length, or (cksum builds of 9.11) base64 of it. */
static bool valid_digits(const Cu *cu, const char *s, size_t len)
{
        if (cu->build == BUILD_CKSUM && !cu->old && len == B64_LEN((size_t)(cu->digest_length >> 3))) {
                size_t i, pad = (size_t)(cu->digest_length % 3);

                for (i = 0; i < len - pad; i++)
                        if (!is_base64(s[i]))
                                return false;
                for (; i < len; i++)
                        if (s[i] != '=')
                                return false;
                return s[i] == '\0';
        }
        if (len != cu->digest_hex_bytes)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!is_xdigit(s[i]))
                        return false;
        return s[len] == '\0';
}

typedef struct Parsed {
        char *digest;
        size_t d_len;
        int binary;
        char *name;
} Parsed;

/* "TAG (NAME) = DIGEST" after the tag: the name runs to the last ')' (BSD tools do not escape). */
static bool bsd_split_3(Cu *cu, char *s, size_t s_len, bool escaped, Parsed *p)
{
        size_t i;

        if (s_len == 0)
                return false;
        i = s_len - 1;
        while (i && s[i] != ')')
                i--;
        if (s[i] != ')')
                return false;
        p->name = s;
        if (escaped && !persona_filename_unescape(s, i))
                return false;
        s[i++] = '\0';
        while (is_blank(s[i]))
                i++;
        if (s[i] != '=')
                return false;
        i++;
        while (is_blank(s[i]))
                i++;
        p->digest = s + i;
        p->d_len = s_len - i;
        return valid_digits(cu, p->digest, p->d_len);
}

/* cksum's tag lookup: the tag ends at a blank, '-', '(' or the end; -1 when it is none. */
static int algorithm_from_tag(const Cu *cu, const char *s)
{
        size_t i = 0, max = 7; /* "BLAKE2b" */

        while (i <= max && s[i] && !is_blank(s[i]) && s[i] != '-' && s[i] != '(')
                i++;
        if (i > max)
                return -1;
        for (int a = 0; a < _CK_ALGO_MAX; a++)
                if ((!cu->old || ck[a].old) && strlen(ck[a].tag) == i && memcmp(s, ck[a].tag, i) == 0)
                        return a;
        return -1;
}

static bool sha_length_ok(intmax_t bits)
{
        return bits == 224 || bits == 256 || bits == 384 || bits == 512;
}

/* The length of "TAG-BITS": false when it is not one the algorithm takes. */
static bool parse_tag_length(Cu *cu, char *s, size_t *i)
{
        char *end;
        intmax_t length;

        if (!(s[*i] >= '0' && s[*i] <= '9'))
                return false;
        errno = 0;
        length = strtoimax(s + *i, &end, 0);
        if (errno != 0 || end == s + *i)
                return false;
        if (cu->build == BUILD_CKSUM && (cu->algo == CK_SHA2 || cu->algo == CK_SHA3)) {
                if (!sha_length_ok(length))
                        return false;
        } else if (!(length > 0 && length <= cu->digest_length && length % 8 == 0))
                return false;
        *i = (size_t)(end - s);
        cu->digest_length = length;
        return true;
}

/* The untagged line's digest length, from the line, where the algorithm takes several. */
static bool auto_length(Cu *cu, const char *digest)
{
        size_t hex = 0, b64, eq = 0;
        const char *h = digest;

        for (; is_xdigit(*h); h++)
                hex++;
        if (cu->build == BUILD_CKSUM && !cu->old) {
                /* 9.11 also takes base64 here: its alphabet holds hex's. */
                for (b64 = hex; is_base64(*h); h++)
                        b64++;
                for (; *h == '='; h++)
                        eq++;
                if ((cu->algo == CK_SHA2 || cu->algo == CK_SHA3) && !sha_length_ok((intmax_t)hex * 4)) {
                        size_t n = b64 + eq;

                        if (n == B64_LEN(28))
                                hex = 56;
                        else if (n == B64_LEN(32))
                                hex = 64;
                        else if (n == B64_LEN(48))
                                hex = 96;
                        else if (n == B64_LEN(64))
                                hex = 128;
                        else
                                return false;
                } else if (cu->algo == CK_BLAKE2B && hex < b64) {
                        for (size_t j = 8; j <= BLAKE2B_MAX_BITS; j += 8)
                                if (B64_LEN(j / 8) == b64 + eq && j % 3 == eq) {
                                        hex = j / 4;
                                        break;
                                }
                }
        }
        if (hex < 2 || hex % 2 || hex > 128)
                return false;
        cu->digest_hex_bytes = hex;
        cu->digest_length = (intmax_t)hex * 4;
        return true;
}

/* One checksum line (NUL-terminated, s_len bytes, which may hold NULs), as coreutils' split_3():
 * tagged, OpenSSL's "TAG(NAME)= DIGEST", untagged with ' ' or '*', or BSD reversed "DIGEST NAME". */
static bool split_3(Cu *cu, char *s, size_t s_len, Parsed *p)
{
        bool escaped = false;
        size_t i = 0, parse_offset;
        const char *type;

        while (is_blank(s[i]))
                i++;
        if (s[i] == '\\') {
                i++;
                escaped = true;
        }

        if (cu->build == BUILD_CKSUM && (!cu->algorithm_specified || (cu->algo == CK_SHA2 && !cu->old))) {
                int tag = algorithm_from_tag(cu, s + i);

                if (!cu->algorithm_specified) {
                        /* cksum -c without -a takes tagged lines only, each naming its own. */
                        if (tag < 0 || tag <= (cu->old ? CK_CRC : CK_CRC32B))
                                return false;
                        cu->algo = (CkAlgo)tag;
                } else if (tag == CK_SHA2 || (tag >= CK_SHA224 && tag <= CK_SHA512))
                        /* As 9.11: the first such line settles the length for the lines after it. */
                        cu->algo = (CkAlgo)tag;
        }

        parse_offset = i;
        type = type_string(cu);
        if (strncmp(s + i, type, strlen(type)) == 0) {
                i += strlen(type);
                if (cu->build == BUILD_BLAKE2 || cu->build == BUILD_CKSUM) {
                        cu->digest_length = cu->build == BUILD_BLAKE2 ? BLAKE2B_MAX_BITS : ck[cu->algo].bits;
                        if (cu->old) {
                                /* 9.1 skipped the one character after the tag ('-', ' ' or '('). */
                                bool length = s[i] == '-', openssl = s[i] == '(';

                                i++;
                                if (openssl)
                                        i--;
                                if (length && !parse_tag_length(cu, s, &i))
                                        return false;
                        } else if (s[i] == '-') {
                                i++;
                                if (!parse_tag_length(cu, s, &i))
                                        return false;
                        }
                        cu->digest_hex_bytes = (size_t)(cu->digest_length >> 2);
                }
                if (s[i] == ' ')
                        i++;
                if (s[i] == '(') {
                        i++;
                        p->binary = 0;
                        return bsd_split_3(cu, s + i, s_len - i, escaped, p);
                }
                /* 9.11 goes on as untagged: a base64 digest may begin like a tag ("SHA1+..."). */
                if (cu->old)
                        return false;
                i = parse_offset;
        }

        if (s_len - i < cu->min_line + (s[i] == '\\'))
                return false;
        p->digest = s + i;

        if (cu->build == BUILD_BLAKE2 ||
            (cu->build == BUILD_CKSUM && (cu->algo == CK_BLAKE2B || cu->algo == CK_SHA2 || cu->algo == CK_SHA3)))
                if (!auto_length(cu, p->digest))
                        return false;

        if (cu->old) {
                /* 9.1: exactly the digest's length of hex, then a blank. */
                i += cu->digest_hex_bytes;
                if (i > s_len || !is_blank(s[i]))
                        return false;
                p->d_len = cu->digest_hex_bytes;
        } else {
                while (s[i] && !is_blank(s[i]))
                        i++;
                if (i == s_len)
                        return false;
                p->d_len = (size_t)(s + i - p->digest);
        }
        s[i++] = '\0';
        if (!valid_digits(cu, p->digest, p->d_len))
                return false;

        /* A single space, or a name that starts with neither ' ' nor '*': BSD reversed ("md5 -r").
         * The first line decides for the whole file, so that a name with a leading space cannot
         * pass for the other form. */
        if (s_len - i == 1 || (s[i] != ' ' && s[i] != '*')) {
                if (cu->bsd_reversed == 0)
                        return false;
                cu->bsd_reversed = 1;
        } else if (cu->bsd_reversed != 1) {
                cu->bsd_reversed = 0;
                p->binary = s[i++] == '*';
        }
        p->name = s + i;
        if (escaped)
                return persona_filename_unescape(s + i, s_len - i);
        return true;
}

static bool digest_matches(const Cu *cu, const Parsed *p, const CuResult *res)
{
        size_t bytes = (size_t)(cu->digest_length >> 3);

        if (cu->build == BUILD_CKSUM && !cu->old && p->d_len == B64_LEN(bytes)) {
                char b64[B64_LEN(HASH_DIGEST_MAX) + 1];

                base64_encode_raw(b64, bytes, res->digest);
                return memcmp(b64, p->digest, B64_LEN(bytes)) == 0;
        }
        if (p->d_len != cu->digest_hex_bytes)
                return false;
        for (size_t i = 0; i < cu->digest_hex_bytes / 2; i++) {
                static const char hex[] = "0123456789abcdef";
                char hi = p->digest[2 * i], lo = p->digest[2 * i + 1];

                if (hi >= 'A' && hi <= 'F')
                        hi = (char)(hi - 'A' + 'a');
                if (lo >= 'A' && lo <= 'F')
                        lo = (char)(lo - 'A' + 'a');
                if (hi != hex[res->digest[i] >> 4] || lo != hex[res->digest[i] & 0xf])
                        return false;
        }
        return true;
}

/* The status line's name: quotef() since 9.11; in 9.1 raw, or escaped with a leading backslash when
 * it holds a newline. */
static void add_check_name(Cu *cu, const char *name)
{
        if (!cu->old) {
                add_quoted(&cu->line, name);
                return;
        }
        if (strchr(name, '\n')) {
                line_addc(&cu->line, '\\');
                line_add_escaped(&cu->line, name, true);
        } else
                line_adds(&cu->line, name);
}

static void plural(const Cu *cu, intmax_t n, const char *one, const char *many)
{
        cu_err(cu, "WARNING: %jd %s", n, n == 1 ? one : many);
}

/* Checks every line of one checksum file: true if all is well (coreutils' digest_check()). */
static bool digest_check(Cu *cu, const char *checkfile)
{
        _cleanup_free_ char *line = NULL, *qname = NULL;
        size_t alloc = 0;
        intmax_t lineno = 0, misformatted = 0, mismatched = 0, unreadable = 0;
        bool properly = false, matched = false, is_stdin = streq(checkfile, "-");
        const char *shown = is_stdin ? "standard input" : checkfile;
        FILE *f;
        int read_err;

        if (is_stdin)
                f = stdin;
        else {
                f = fopen(checkfile, "re");
                if (!f) {
                        cu_err_name(cu, checkfile, errno);
                        return false;
                }
        }
        if (quotef(shown, &qname) < 0)
                qname = strdup(shown);

        for (;;) {
                ssize_t len;
                Parsed p = {};

                lineno++;
                len = getline(&line, &alloc, f);
                if (len <= 0)
                        break;
                if (line[0] == '#')
                        continue;
                if (line[len - 1] == '\n')
                        len--;
                if (len > 0 && line[len - 1] == '\r')
                        len--;
                if (len == 0)
                        continue;
                line[len] = '\0';

                if (!split_3(cu, line, (size_t)len, &p) || (is_stdin && streq(p.name, "-"))) {
                        misformatted++;
                        if (cu->warn)
                                cu_err(cu, "%s: %jd: improperly formatted %s checksum line", qname ? qname : shown,
                                       lineno, type_string(cu));
                        continue;
                }

                CuResult res = {};
                bool missing;
                int r;

                properly = true;
                r = digest_file(cu, p.name, &res, &missing);
                if (r < 0 && !missing) {
                        unreadable++;
                        if (!cu->status_only) {
                                add_check_name(cu, p.name);
                                line_adds(&cu->line, ": FAILED open or read\n");
                                (void)persona_out(&cu->line);
                        }
                } else if (!missing) {
                        bool match = digest_matches(cu, &p, &res);

                        if (match)
                                matched = true;
                        else
                                mismatched++;
                        if (!cu->status_only && (!match || !cu->quiet)) {
                                add_check_name(cu, p.name);
                                line_adds(&cu->line, match ? ": OK\n" : ": FAILED\n");
                                (void)persona_out(&cu->line);
                        }
                }
        }
        read_err = ferror(f);
        if (is_stdin)
                clearerr(f);
        else
                fclose(f);
        if (read_err) {
                cu_err(cu, "%s: read error", qname ? qname : shown);
                return false;
        }

        if (!properly)
                cu_err(cu, "%s: no properly formatted checksum lines found", qname ? qname : shown);
        else if (!cu->status_only) {
                if (misformatted)
                        plural(cu, misformatted, "line is improperly formatted", "lines are improperly formatted");
                if (unreadable)
                        plural(cu, unreadable, "listed file could not be read", "listed files could not be read");
                if (mismatched)
                        plural(cu, mismatched, "computed checksum did NOT match", "computed checksums did NOT match");
                if (cu->ignore_missing && !matched)
                        cu_err(cu, "%s: no file was verified", qname ? qname : shown);
        }
        return properly && matched && mismatched == 0 && unreadable == 0 && (!cu->strict || misformatted == 0);
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
                if ((!cu->old || ck[a].old) && streq(arg, ck[a].arg)) {
                        cu->algo = (CkAlgo)a;
                        cu->algorithm_specified = true;
                        return 0;
                }
        _cleanup_free_ char *q = quote(arg), *o = quote("--algorithm");
        fprintf(stderr, "%s: invalid argument %s for %s\nValid arguments are:", cu->prog, q ? q : arg,
                o ? o : "--algorithm");
        for (int a = 0; a < _CK_ALGO_MAX; a++)
                if (!cu->old || ck[a].old) {
                        _cleanup_free_ char *v = quote(ck[a].arg);
                        fprintf(stderr, "\n  - %s", v ? v : ck[a].arg);
                }
        fputc('\n', stderr);
        return -EINVAL;
}

/* -l BITS: in 9.11 as xnumtoimax(..., 0, IDX_MAX, "", "invalid length", 0, XTOINT_MAX_QUIET), a
 * number past the maximum standing for the maximum; in 9.1 as xdectoumax(), unsigned, and each -l
 * held to a multiple of 8 as it came. */
static int parse_length(Cu *cu, const char *arg)
{
        _cleanup_free_ char *q = quote(arg);
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
        _cleanup_free_ char *q = quote(cu->digest_length_str), *s = NULL;
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
        _cleanup_free_ char *qt = quote(type_string(cu));

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
                                       ck[cu->algo].arg);
                                return 1;
                        }
                        if ((!cu->do_check || given) && !sha_length_ok(cu->digest_length))
                                return invalid_length(cu, "digest length for %s must be 224, 256, 384, or 512",
                                                      qt ? qt : type_string(cu));
                } else {
                        if (cu->digest_length > BLAKE2B_MAX_BITS)
                                return invalid_length(cu, "maximum digest length for %s is %d bits",
                                                      qt ? qt : type_string(cu), BLAKE2B_MAX_BITS);
                        if (cu->digest_length % 8 != 0)
                                return invalid_length(cu, "length is not a multiple of 8");
                }
                if (cu->digest_length == 0)
                        cu->digest_length = cu->build == BUILD_BLAKE2 ? BLAKE2B_MAX_BITS : ck[cu->algo].bits;
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
                .tool = (CuTool)p->tool,
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
                cu.digest_length = ck[cu.algo].bits;
                cu.digest_hex_bytes = (size_t)ck[cu.algo].bits / 4;
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
                        ok &= digest_check(&cu, files[i]);
                        continue;
                }
                CuResult res = {};
                bool missing;

                if (digest_file(&cu, files[i], &res, &missing) < 0)
                        ok = false;
                else
                        output(&cu, files[i], cu.binary, &res);
        }
        hash_ctx_free(cu.ctx);
        line_free(&cu.line);
        return persona_finish(cu.prog, ok ? 0 : 1);
}
