/* SPDX-License-Identifier: MIT */
/* xxh-check.c: xxhsum -c: checksum lines parsed as XSUM_parseLine() parses them, and checked */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hash/oneshot.h"
#include "sum/xxh-check.h"

#define XXH_MAX_LINE ((size_t)32 * 1024)

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

bool xxh_check_file(Xxh *x, const char *path)
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
                if (xxh_hash_fd(x, fd, p.algo, d) < 0)
                        xxh_read_failure(x);
                bool match = memcmp(d, p.canonical, xxh_algos[p.algo].len) == 0;

                if (match)
                        matched++;
                else
                        mismatched++;
                if ((!match || x->log_level >= 2) && !x->status) {
                        bool escape = xxh_name_needs_escape(x, p.name);

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
