/* SPDX-License-Identifier: MIT */
/* sum-xxh.c: fhashctl as xxHash's xxhsum, xxh32sum, xxh64sum, xxh128sum and xxh3sum */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build-config.h"
#include "ctl/sum-xxh.h"
#include "hash/hash.h"
#include "hash/oneshot.h"

/*
 * What xxHash's cli/xxhsum.c does (0.8.3), as its Makefile's check and test-xxhsum-c and its
 * tests/cli-*.sh check it. Unlike coreutils, xxhsum says most things on standard output, check
 * summaries included; errors about opening files go to standard error. Options end at the first
 * name. In 0.8.1 (FHASH_COMPAT=debian12) -H3 lines were always BSD-style, names were never escaped,
 * and -c knew neither comments, XXH3_ lines nor --ignore-missing.
 */

typedef enum XxhAlgo {
        XA_32,
        XA_64,
        XA_128,
        XA_3,
        _XA_MAX,
} XxhAlgo;

static const struct {
        const char *name, *le_name;
        size_t len;
        HashAlgo algo;
} xa[_XA_MAX] = {
        [XA_32] = { "XXH32", "XXH32_LE", 4, HASH_XXH32 },
        [XA_64] = { "XXH64", "XXH64_LE", 8, HASH_XXH64 },
        [XA_128] = { "XXH128", "XXH128_LE", 16, HASH_XXH128 },
        [XA_3] = { "XXH3", "XXH3_LE", 8, HASH_XXH3 },
};

#define XXH_BUF_SIZE ((size_t)64 * 1024)
#define XXH_MAX_LINE ((size_t)32 * 1024)

typedef struct Xxh {
        const char *exe;      /* the name it was called by, for usage */
        bool old;             /* xxhsum 0.8.1 */
        XxhAlgo algo, default_algo;
        unsigned bitmask;     /* the algorithms -c takes */
        bool little_endian, tag, check, strict, status, warn, ignore_missing;
        int log_level;
        HashCtx *ctx;
        uint8_t *buf;
        Line line;
} Xxh;

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

static bool name_needs_escape(const Xxh *x, const char *name)
{
        return !x->old && strpbrk(name, "\\\n\r");
}

static void add_digest(Xxh *x, const uint8_t *d, size_t n, bool reverse)
{
        for (size_t i = 0; i < n; i++)
                line_add_hex(&x->line, d + (reverse ? n - 1 - i : i), 1);
}

/* Hashes one open input into digest (canonical, big-endian): 0, or -errno of a read. */
static int hash_fd(Xxh *x, int fd, XxhAlgo a, uint8_t *digest)
{
        int r = hash_ctx_init(x->ctx, xa[a].algo);

        if (r >= 0)
                r = oneshot_hash_fd(x->ctx, fd, x->buf, XXH_BUF_SIZE, NULL);
        if (r >= 0)
                r = hash_ctx_final(x->ctx, digest);
        return r;
}

static bool is_directory(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* xxhsum ends the run on a read error in the middle of a file. */
_noreturn_ static void read_failure(Xxh *x)
{
        fprintf(stderr, "Error: a failure occurred reading the input file.\n");
        exit(persona_finish("xxhsum", 1));
}

static int hash_file(Xxh *x, const char *name)
{
        _cleanup_close_ int fd = -EBADF;
        uint8_t d[16];
        bool bsd = x->tag || (x->old && x->algo == XA_3);
        const char *shown = name;
        bool escape;

        if (streq(name, "-")) {
                fd = oneshot_open("-");
                shown = "stdin";
        } else {
                if (is_directory(name)) {
                        fprintf(stderr, "xxhsum: %s: Is a directory \n", name);
                        return 1;
                }
                fd = oneshot_open(name);
                if (fd < 0) {
                        fprintf(stderr, "Error: Could not open '%s': %s. \n", name, strerror(-fd));
                        return 1;
                }
        }
        if (fd < 0 || hash_fd(x, fd, x->algo, d) < 0)
                read_failure(x);

        escape = name_needs_escape(x, shown);
        if (escape)
                line_addc(&x->line, '\\');
        if (bsd) {
                line_adds(&x->line, x->little_endian ? xa[x->algo].le_name : xa[x->algo].name);
                line_adds(&x->line, " (");
                line_add_escaped(&x->line, shown, escape);
                line_adds(&x->line, ") = ");
                add_digest(x, d, xa[x->algo].len, x->little_endian);
        } else {
                if (x->algo == XA_3)
                        line_adds(&x->line, "XXH3_");
                add_digest(x, d, xa[x->algo].len, x->little_endian);
                line_adds(&x->line, "  ");
                line_add_escaped(&x->line, shown, escape);
        }
        line_addc(&x->line, '\n');
        (void)persona_out(&x->line);
        return 0;
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* The canonical digest from the 2n hex digits at hex (hex_len of them there), the byte pairs read
 * backwards for little-endian lines. */
static bool canonical_from_string(uint8_t *dst, size_t n, const char *hex, size_t hex_len, bool rev)
{
        if (hex_len < 2 * n)
                return false;
        for (size_t i = 0; i < n; i++) {
                size_t j = rev ? n - i - 1 : i;
                int h0 = hex_value(hex[2 * j]), h1;

                if (h0 < 0)
                        return false;
                h1 = hex_value(hex[2 * j + 1]);
                if (h1 < 0)
                        return false;
                dst[i] = (uint8_t)(h0 << 4 | h1);
        }
        return true;
}

typedef struct XxhParsed {
        uint8_t canonical[16];
        const char *name;
        XxhAlgo algo;
} XxhParsed;

/* xxhsum's XSUM_parseLine(): "HEX  NAME" (8, 16 or 32 hex digits, or XXH3_ and 16), the second
 * separator any character; or "TAG (NAME) = HEX", TAG ending in _LE for little-endian digests. */
static bool parse_line(const Xxh *x, char *line, bool rev, XxhParsed *p)
{
        bool unescape = false;
        char *first_space;
        const char *hash;
        size_t hash_len;

        if (!x->old) {
                const char *t = line;
                while (*t == ' ' || *t == '\t')
                        t++;
                /* xxhsum looks past blanks for the backslash but then steps over one character. */
                if (*t == '\\') {
                        unescape = true;
                        line++;
                }
        }
        first_space = strchr(line, ' ');
        p->algo = XA_64;
        if (!first_space || !first_space[1])
                return false;
        if (first_space[1] == '(') {
                char *last_space = strrchr(line, ' ');

                if (last_space - first_space < 5)
                        return false;
                if (last_space[-1] != '=' || last_space[-2] != ' ' || last_space[-3] != ')')
                        return false;
                last_space[-3] = '\0';
                *first_space = '\0';
                rev = strstr(line, "_LE") != NULL;
                hash = last_space + 1;
                hash_len = strlen(hash);
                if (strncmp(line, "XXH3", 4) == 0)
                        p->algo = XA_3;
                if (strncmp(line, "XXH32", 5) == 0)
                        p->algo = XA_32;
                if (strncmp(line, "XXH64", 5) == 0)
                        p->algo = XA_64;
                if (strncmp(line, "XXH128", 6) == 0)
                        p->algo = XA_128;
        } else {
                hash = line;
                hash_len = (size_t)(first_space - line);
                if (hash_len == 8)
                        p->algo = XA_32;
                if (hash_len == 16)
                        p->algo = XA_64;
                if (hash_len == 21 && !x->old)
                        p->algo = XA_3;
                if (hash_len == 32)
                        p->algo = XA_128;
        }
        if (!(x->bitmask & (1u << p->algo)))
                return false;
        switch (hash_len) {
        case 8:
                if (p->algo != XA_32 || !canonical_from_string(p->canonical, 4, hash, hash_len, rev))
                        return false;
                break;
        case 16:
                if ((p->algo != XA_64 && p->algo != XA_3) || !canonical_from_string(p->canonical, 8, hash, hash_len, rev))
                        return false;
                break;
        case 21:
                if (x->old || p->algo != XA_3 || strncmp(hash, "XXH3_", 5) != 0 ||
                    !canonical_from_string(p->canonical, 8, hash + 5, hash_len - 5, rev))
                        return false;
                break;
        case 32:
                if (p->algo != XA_128 || !canonical_from_string(p->canonical, 16, hash, hash_len, rev))
                        return false;
                break;
        default:
                return false;
        }
        /* The character after the first space is skipped, whatever it is: a '*' marker passes. */
        char *name = first_space + 2;
        if (unescape && !persona_filename_unescape(name, strlen(name)))
                return false;
        p->name = name;
        return true;
}

/* Reads a line up to '\n' (kept out): 1, 0 at the end, -E2BIG past XXH_MAX_LINE. */
static int get_line(FILE *f, char **buf, size_t *alloc, size_t *ret_len)
{
        size_t len = 0;

        for (;;) {
                int c = getc(f);

                if (c == EOF) {
                        if (len == 0)
                                return 0;
                        break;
                }
                if (len + 1 >= *alloc) {
                        size_t na = *alloc ? *alloc + *alloc / 2 + 1 : 4096 + 19;
                        char *nb;

                        if (na > XXH_MAX_LINE)
                                na = XXH_MAX_LINE;
                        if (len + 1 >= na)
                                return -E2BIG;
                        nb = realloc(*buf, na);
                        if (!nb)
                                return -ENOMEM;
                        /* Zeroed, so that no read of a parser past the line's NUL meets garbage
                         * (clang-analyzer cannot tell that none does). */
                        memset(nb + *alloc, 0, na - *alloc);
                        *buf = nb;
                        *alloc = na;
                }
                if (c == '\n')
                        break;
                (*buf)[len++] = (char)c;
        }
        (*buf)[len] = '\0';
        *ret_len = len;
        return 1;
}

/* One checksum file, as XSUM_checkFile(): true if all is well. */
static bool check_file(Xxh *x, const char *path)
{
        unsigned long lineno = 0, properly = 0, improperly = 0, mismatched = 0, matched = 0, unreadable = 0;
        _cleanup_free_ char *line = NULL;
        size_t alloc = 0;
        const char *shown = streq(path, "-") ? "stdin" : path;
        bool quit = false, ok;
        FILE *f = streq(path, "-") ? stdin : fopen(path, "re");

        if (!f) {
                fprintf(stderr, "Error: Could not open '%s': %s\n", shown, strerror(errno));
                return false;
        }
        while (!quit) {
                XxhParsed p = {};
                size_t len;
                int r;

                lineno++;
                r = get_line(f, &line, &alloc, &len);
                if (r == 0)
                        break;
                if (r < 0) {
                        fprintf(stderr, "%s:%lu: Error: %s.\n", shown, lineno,
                                r == -E2BIG ? "Line too long" : "Out of memory");
                        quit = true;
                        break;
                }
                if (!x->old && line[0] == '#')
                        continue;
                if (!parse_line(x, line, x->little_endian, &p)) {
                        improperly++;
                        if (x->warn)
                                fprintf(stderr, "%s:%lu: Error: Improperly formatted checksum line.\n", shown, lineno);
                        continue;
                }
                properly++;

                /* "stdin" is how xxhsum names standard input in the lines it writes. */
                _cleanup_close_ int fd = streq(p.name, "stdin") ? oneshot_open("-") : oneshot_open(p.name);
                uint8_t d[16];

                if (fd < 0) {
                        if (x->ignore_missing)
                                continue;
                        unreadable++;
                        if (!x->status) {
                                line_addf(&x->line, "%s:%lu: Could not open or read '%s': %s.\n", shown, lineno,
                                          p.name, strerror(-fd));
                                (void)persona_out(&x->line);
                        }
                        continue;
                }
                if (hash_fd(x, fd, p.algo, d) < 0)
                        read_failure(x);
                bool match = memcmp(d, p.canonical, xa[p.algo].len) == 0;

                if (match)
                        matched++;
                else
                        mismatched++;
                if ((!match || x->log_level >= 2) && !x->status) {
                        bool escape = name_needs_escape(x, p.name);

                        if (escape)
                                line_addc(&x->line, '\\');
                        line_add_escaped(&x->line, p.name, escape);
                        line_adds(&x->line, match ? ": OK\n" : ": FAILED\n");
                        (void)persona_out(&x->line);
                }
        }
        if (f != stdin)
                fclose(f);

        if (properly == 0)
                fprintf(stderr, "%s: no properly formatted xxHash checksum lines found\n", shown);
        else if (!x->status) {
                if (improperly)
                        line_addf(&x->line, "%lu %s improperly formatted\n", improperly,
                                  improperly == 1 ? "line is" : "lines are");
                if (unreadable)
                        line_addf(&x->line, "%lu listed %s could not be read\n", unreadable,
                                  unreadable == 1 ? "file" : "files");
                if (mismatched)
                        line_addf(&x->line, "%lu computed %s did NOT match\n", mismatched,
                                  mismatched == 1 ? "checksum" : "checksums");
                (void)persona_out(&x->line);
        }
        ok = properly != 0 && mismatched == 0 && unreadable == 0 && (!x->strict || improperly == 0) && !quit;
        if (x->ignore_missing && matched == 0) {
                line_addf(&x->line, "%s: no file was verified\n", shown);
                (void)persona_out(&x->line);
                ok = false;
        }
        return ok;
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
                        ok &= check_file(&x, files[i]);
                r = ok ? 0 : 1;
        } else {
                for (int i = 0; i < n; i++)
                        r |= hash_file(&x, files[i]);
                /* 0.8.1 cleared a progress line on stderr after hashing named files, at the default
                 * verbosity. */
                if (x.old && x.log_level >= 2 && files_start > 0)
                        fprintf(stderr, "\r%70s\r", "");
        }
        hash_ctx_free(x.ctx);
        line_free(&x.line);
        return persona_finish("xxhsum", r);
}
