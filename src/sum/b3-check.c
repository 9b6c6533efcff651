/* SPDX-License-Identifier: MIT */
/* b3-check.c: b3sum --check: checkfile lines parsed as b3sum 1.8.6 and 1.2.0 parse them */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/utf8.h"
#include "sum/b3-check.h"

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
        if (b3_hash_input(b, l.path, &err) < 0) {
                if (l.escaped)
                        line_addc(&b->line, '\\');
                line_adds(&b->line, l.file_string);
                line_adds(&b->line, ": FAILED (");
                b3_add_os_error(&b->line, err ? err : EBADF);
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

int b3_check_file(B3 *b, const char *path, uint64_t *failed)
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
