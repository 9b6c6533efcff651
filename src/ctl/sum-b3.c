/* SPDX-License-Identifier: MIT */
/* sum-b3.c: fhashctl as BLAKE3's b3sum */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/utf8.h"
#include "build-config.h"
#include "ctl/sum-b3.h"
#include "hash/hash.h"
#include "hash/oneshot.h"

/*
 * What b3sum/src/main.rs does (1.8.6), as b3sum/tests/cli_tests.rs and src/unit_tests.rs check it.
 * Its command line is clap's: usage errors start with "error: " and exit 2 (clap 2 in b3sum 1.2.0:
 * other words, exit 1); failures of the run itself are "Error: ..." from main() and exit 1. Names are
 * written as Rust's to_string_lossy() makes them (a byte that is not UTF-8 becomes U+FFFD), escaped
 * with a leading backslash where they hold '\\', '\n' or '\r'. A checkfile is read as UTF-8 lines.
 */

#define B3_BUF_SIZE ((size_t)128 * 1024)
#define B3_HASH_LEN ((size_t)32)

typedef struct B3 {
        const char *prog;
        bool old;  /* b3sum 1.2.0 */
        bool keyed, no_names, raw, tag, check, quiet;
        const char *derive_key;
        uint64_t length, seek;
        bool length_given, length_bad;  /* length_bad: b3sum 1.2.0 reports it per file */
        char **files;
        size_t n_files;
        HashParams params;
        HashCtx *ctx;
        uint8_t *buf;
        Line line;
} B3;

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

/* Rust's to_string_lossy(): each maximal invalid UTF-8 sequence becomes U+FFFD. */
static void add_lossy(Line *l, const char *s)
{
        const unsigned char *p = (const unsigned char *)s;

        while (*p) {
                size_t n = utf8_char_len(p);

                if (n > 0) {
                        line_add(l, p, n);
                        p += n;
                        continue;
                }
                line_adds(l, "\xef\xbf\xbd");
                /* Rust replaces the longest prefix of a valid sequence with one U+FFFD. */
                size_t k = 1;
                if (p[0] >= 0xc2 && p[0] <= 0xf4) {
                        size_t want = p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;
                        while (k < want && (p[k] & 0xc0) == 0x80 &&
                               !(k == 1 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
                                            (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))))
                                k++;
                }
                p += k;
        }
}

/* The name as b3sum writes it; true if it needed escaping. b3sum 1.2.0 escaped '\\' and '\n' but
 * wrote a '\r' as it is. */
static bool add_name(const B3 *b, Line *l, const char *name)
{
        Line lossy = {};
        bool escape;

        add_lossy(&lossy, name);
        escape = lossy.buf && strpbrk(lossy.buf, b->old ? "\\\n" : "\\\n\r");
        for (size_t i = 0; lossy.buf && i < lossy.n; i++) {
                char c = lossy.buf[i];

                if (escape && c == '\\')
                        line_adds(l, "\\\\");
                else if (escape && c == '\n')
                        line_adds(l, "\\n");
                else if (escape && c == '\r' && !b->old)
                        line_adds(l, "\\r");
                else
                        line_addc(l, c);
        }
        line_free(&lossy);
        return escape;
}

/* io::Error's Display: "No such file or directory (os error 2)". */
static void add_os_error(Line *l, int err)
{
        line_addf(l, "%s (os error %d)", strerror(err), err);
}

static int hash_input(B3 *b, const char *path, int *ret_err)
{
        _cleanup_close_ int fd = -EBADF;
        int r;

        *ret_err = 0;
        if (streq(path, "-") && b->keyed)
                return -EBADF; /* said by the caller: "Cannot open `-` in keyed mode" */
        fd = oneshot_open(path);
        if (fd < 0) {
                *ret_err = -fd;
                return fd;
        }
        r = hash_ctx_init_params(b->ctx, HASH_BLAKE3, &b->params);
        if (r >= 0)
                r = oneshot_hash_fd(b->ctx, fd, b->buf, B3_BUF_SIZE, NULL);
        if (r < 0)
                *ret_err = -r;
        return r;
}

/* length bytes of output from seek, as hex (or raw) into the line. */
static void add_output(B3 *b, bool raw)
{
        uint8_t block[64];
        uint64_t left = b->length, pos = b->seek;

        while (left > 0) {
                size_t n = left < sizeof(block) ? (size_t)left : sizeof(block);

                (void)hash_ctx_xof(b->ctx, pos, block, n);
                if (raw)
                        line_add(&b->line, block, n);
                else
                        line_add_hex(&b->line, block, n);
                pos += n;
                left -= n;
                /* A long raw output goes out as it is made rather than all at once. */
                if (raw && b->line.n >= B3_BUF_SIZE)
                        (void)persona_out(&b->line);
        }
}

static void report_error(B3 *b, const char *path, int err)
{
        Line l = {};

        line_adds(&l, "b3sum: ");
        add_lossy(&l, path);
        line_adds(&l, ": ");
        if (err == EBADF && streq(path, "-") && b->keyed)
                line_adds(&l, "Cannot open `-` in keyed mode");
        else
                add_os_error(&l, err);
        line_addc(&l, '\n');
        (void)line_write(&l, STDERR_FILENO);
        line_free(&l);
}

/* Returns true when the input was hashed. */
static bool hash_one(B3 *b, const char *path)
{
        int err;

        if (hash_input(b, path, &err) < 0) {
                report_error(b, path, err ? err : EBADF);
                return false;
        }
        if (b->old && b->length_bad) {
                /* 1.2.0 parsed --length only when it came to write a digest. */
                Line l = {};

                line_adds(&l, "b3sum: ");
                add_lossy(&l, path);
                line_adds(&l, ": Failed to parse length.\n");
                (void)line_write(&l, STDERR_FILENO);
                line_free(&l);
                return false;
        }
        if (b->raw) {
                add_output(b, true);
                (void)persona_out(&b->line);
                return true;
        }
        if (b->no_names) {
                add_output(b, false);
                line_addc(&b->line, '\n');
                (void)persona_out(&b->line);
                return true;
        }
        Line name = {};
        bool escape = add_name(b, &name, path);

        if (escape)
                line_addc(&b->line, '\\');
        if (b->tag) {
                line_adds(&b->line, "BLAKE3 (");
                line_add(&b->line, name.buf ? name.buf : "", name.n);
                line_adds(&b->line, ") = ");
                add_output(b, false);
        } else {
                add_output(b, false);
                line_adds(&b->line, "  ");
                line_add(&b->line, name.buf ? name.buf : "", name.n);
        }
        line_addc(&b->line, '\n');
        (void)persona_out(&b->line);
        line_free(&name);
        return true;
}

typedef struct B3Line {
        char *file_string;  /* as in the line, escapes kept (malloc'd) */
        bool escaped;
        char *path;         /* unescaped */
        uint8_t hash[B3_HASH_LEN];
} B3Line;

static int hex_half(char c)
{
        /* Lower case only, as b3sum. */
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* The last occurrence of needle in s[0..n). */
static char *memrmem(char *s, size_t n, const char *needle, size_t k)
{
        for (size_t i = n >= k ? n - k + 1 : 0; i > 0; i--)
                if (memcmp(s + i - 1, needle, k) == 0)
                        return s + i - 1;
        return NULL;
}

/* b3sum's parse_check_line() over len bytes (a Rust String may hold NULs): NULL, or the reason the
 * line is refused, as b3sum words it. */
static const char *parse_check_line(char *line, size_t len, B3Line *ret)
{
        char *s, *file, *hash, *sep;
        size_t hash_len, file_len, k = 0;

        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
                len--;
        if (len == 0)
                return "Empty line";
        s = line;
        ret->escaped = *s == '\\';
        if (ret->escaped)
                s++, len--;

        /* "HASH  FILE", split at the first "  "; else "BLAKE3 (FILE) = HASH", split at the last
         * ") = ", so that either separator may be in the name. */
        sep = memmem(s, len, "  ", 2);
        if (sep) {
                hash = s;
                hash_len = (size_t)(sep - s);
                file = sep + 2;
                file_len = len - hash_len - 2;
        } else if (len >= 8 && memcmp(s, "BLAKE3 (", 8) == 0 && (sep = memrmem(s + 8, len - 8, ") = ", 4))) {
                file = s + 8;
                file_len = (size_t)(sep - file);
                hash = sep + 4;
                hash_len = len - (size_t)(hash - s);
        } else
                return "Invalid check line format";

        if (hash_len != 2 * B3_HASH_LEN)
                return "Invalid hash length";
        for (size_t i = 0; i < B3_HASH_LEN; i++) {
                int hi = hex_half(hash[2 * i]), lo = hex_half(hash[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return "Invalid hex";
                ret->hash[i] = (uint8_t)(hi << 4 | lo);
        }

        ret->file_string = strndup(file, file_len);
        ret->path = malloc(file_len + 1);
        if (!ret->file_string || !ret->path)
                return "Out of memory";
        for (size_t i = 0; i < file_len; i++) {
                if (!ret->escaped || file[i] != '\\') {
                        ret->path[k++] = file[i];
                        continue;
                }
                if (i + 1 >= file_len)
                        return "Invalid backslash escape";
                i++;
                if (file[i] == 'n')
                        ret->path[k++] = '\n';
                else if (file[i] == 'r')
                        ret->path[k++] = '\r';
                else if (file[i] == '\\')
                        ret->path[k++] = '\\';
                else
                        return "Invalid backslash escape";
        }
        ret->path[k] = '\0';
        if (k == 0)
                return "empty file path";
        /* A NUL would cut the path short; a U+FFFD may stand for any invalid bytes. */
        if (memchr(ret->path, '\0', k))
                return "Null character in path";
        if (strstr(ret->path, "\xef\xbf\xbd"))
                return "Unicode replacement character in path";
        return NULL;
}

/* Whether n bytes are UTF-8 throughout (NULs included, as Rust's str takes them). */
static bool utf8_valid_n(const char *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                size_t k;

                if (s[i] == '\0') {
                        i++;
                        continue;
                }
                k = utf8_char_len((const unsigned char *)s + i);
                if (k == 0 || i + k > n)
                        return false;
                i += k;
        }
        return true;
}

/* b3sum 1.2.0's parse_check_line(): untagged lines only, "HASH  FILE" at fixed places, only '\n'
 * trimmed (a Windows line's name ends with '\r'), and only "\\n" and "\\\\" as escapes. */
static const char *parse_check_line_old(char *line, size_t len, B3Line *ret)
{
        size_t prefix = 2 * B3_HASH_LEN + 2, k = 0, chars = 0, file_len;
        char *file;

        while (len > 0 && line[len - 1] == '\n')
                len--;
        if (len == 0)
                return "Empty line";
        ret->escaped = line[0] == '\\';
        if (ret->escaped)
                line++, len--;
        if (len <= prefix)
                return "Short line";
        /* The first 66 characters (not bytes) must be ASCII. */
        for (size_t i = 0; i < len && chars < prefix; chars++) {
                size_t n = utf8_char_len((const unsigned char *)line + i);

                if (line[i] != '\0' && n != 1)
                        return "Non-ASCII prefix";
                i += n ? n : 1;
        }
        if (line[2 * B3_HASH_LEN] != ' ' || line[2 * B3_HASH_LEN + 1] != ' ')
                return "Invalid space";
        for (size_t i = 0; i < B3_HASH_LEN; i++) {
                int hi = hex_half(line[2 * i]), lo = hex_half(line[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return "Invalid hex";
                ret->hash[i] = (uint8_t)(hi << 4 | lo);
        }
        file = line + prefix;
        file_len = len - prefix;
        ret->file_string = strndup(file, file_len);
        ret->path = malloc(file_len + 1);
        if (!ret->file_string || !ret->path)
                return "Out of memory";
        for (size_t i = 0; i < file_len; i++) {
                if (!ret->escaped || file[i] != '\\') {
                        ret->path[k++] = file[i];
                        continue;
                }
                if (i + 1 >= file_len)
                        return "Invalid backslash escape";
                i++;
                if (file[i] == 'n')
                        ret->path[k++] = '\n';
                else if (file[i] == '\\')
                        ret->path[k++] = '\\';
                else
                        return "Invalid backslash escape";
        }
        ret->path[k] = '\0';
        if (memchr(ret->path, '\0', k))
                return "Null character in path";
        if (strstr(ret->path, "\xef\xbf\xbd"))
                return "Unicode replacement character in path";
        return NULL;
}

/* One checkfile line: true when it checked out. */
static bool check_line(B3 *b, char *line, size_t len)
{
        B3Line l = {};
        const char *bad;
        bool ok = false;
        int err;

        bad = b->old ? parse_check_line_old(line, len, &l) : parse_check_line(line, len, &l);
        if (bad) {
                persona_err(b->prog, "%s", bad);
                goto out;
        }
        if (hash_input(b, l.path, &err) < 0) {
                if (l.escaped)
                        line_addc(&b->line, '\\');
                line_adds(&b->line, l.file_string);
                line_adds(&b->line, ": FAILED (");
                add_os_error(&b->line, err ? err : EBADF);
                line_adds(&b->line, ")\n");
                (void)persona_out(&b->line);
                goto out;
        }
        uint8_t found[B3_HASH_LEN];

        (void)hash_ctx_xof(b->ctx, b->seek, found, sizeof(found));
        ok = memcmp(found, l.hash, sizeof(found)) == 0;
        if (!ok || !b->quiet) {
                if (l.escaped)
                        line_addc(&b->line, '\\');
                line_adds(&b->line, l.file_string);
                line_adds(&b->line, ok ? ": OK\n" : ": FAILED\n");
                (void)persona_out(&b->line);
        }
out:
        free(l.file_string);
        free(l.path);
        return ok;
}

/* A whole checkfile: 0, or -errno when it cannot be read (main() then fails with "Error: ..."). */
static int check_file(B3 *b, const char *path, uint64_t *failed)
{
        _cleanup_free_ char *line = NULL;
        size_t alloc = 0;
        FILE *f = streq(path, "-") ? stdin : fopen(path, "re");

        if (!f)
                return -errno;
        for (;;) {
                ssize_t n = getline(&line, &alloc, f);

                if (n <= 0)
                        break;
                /* read_line() fails on a line that is not UTF-8, and that ends the run. */
                if (!utf8_valid_n(line, (size_t)n)) {
                        if (f != stdin)
                                fclose(f);
                        return -EILSEQ;
                }
                if (!check_line(b, line, (size_t)n))
                        (*failed)++;
        }
        if (ferror(f)) {
                int e = errno;
                if (f != stdin)
                        fclose(f);
                return -e;
        }
        if (f != stdin)
                fclose(f);
        return 0;
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
                        r = check_file(&b, b.files[i], &failed);
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
                if (!hash_one(&b, b.files[i]))
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
