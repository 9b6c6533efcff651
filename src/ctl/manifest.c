/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl/macro.h"
#include "ctl/manifest.h"
#include "ctl/output.h"

/* An untagged line's algorithm from its digest's length: what the most common writer of that length
 * writes (xxhsum's default for 8 and 16 hex digits, as xxhsum -c reads them; coreutils' for the
 * others). Our own XXH3 and CRC32C lines are always tagged. */
static const char *algo_from_hex_len(size_t n)
{
        switch (n) {
        case 8:
                return "xxh32";
        case 16:
                return "xxh64";
        case 32:
                return "md5";
        case 40:
                return "sha1";
        case 56:
                return "sha224";
        case 64:
                return "sha256";
        case 96:
                return "sha384";
        case 128:
                return "sha512";
        default:
                return NULL;
        }
}

/* Manifest names as the tools that write them name them. */
static const struct {
        const char *name;  /* a whole file name */
        const char *ext;   /* or a suffix */
        const char *algo;
} manifest_names[] = {
        { "MD5SUMS", ".md5", "md5" },          { NULL, ".md5sums", "md5" },
        { "SHA1SUMS", ".sha1", "sha1" },       { "SHA224SUMS", ".sha224", "sha224" },
        { "SHA256SUMS", ".sha256", "sha256" }, { "SHA384SUMS", ".sha384", "sha384" },
        { "SHA512SUMS", ".sha512", "sha512" }, { "B2SUMS", ".b2", "blake2b" },
        { "B3SUMS", ".b3", "blake3" },         { NULL, ".xxh32", "xxh32" },
        { NULL, ".xxh64", "xxh64" },           { NULL, ".xxh", "xxh64" },
        { NULL, ".xxh3", "xxh3" },             { NULL, ".xxh128", "xxh128" },
        { NULL, ".sm3", "sm3" },               { NULL, ".crc32c", "crc32c" },
};

const char *manifest_algo_from_filename(const char *path)
{
        const char *base = path ? strrchr(path, '/') : NULL;
        size_t n;

        base = base ? base + 1 : path;
        if (!base)
                return NULL;
        n = strlen(base);
        for (size_t i = 0; i < ELEMENTSOF(manifest_names); i++) {
                const char *ext = manifest_names[i].ext;
                size_t l = strlen(ext);

                if ((manifest_names[i].name && streq(base, manifest_names[i].name)) ||
                    (n > l && strcmp(base + n - l, ext) == 0))
                        return algo_from_string(manifest_names[i].algo);
        }
        return NULL;
}

static size_t hex_span(const char *s, size_t len)
{
        size_t n = 0;

        while (n < len && isxdigit((unsigned char)s[n]))
                n++;
        return n;
}

/* Copies the name, undoing coreutils' escapes when the line started with a backslash. */
static int name_copy(const char *s, size_t len, bool escaped, char **ret)
{
        _cleanup_free_ char *name = NULL;
        size_t k = 0;

        if (len == 0 || memchr(s, '\0', len))
                return -EINVAL;
        name = malloc(len + 1);
        if (!name)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                if (!escaped || s[i] != '\\') {
                        name[k++] = s[i];
                        continue;
                }
                if (++i >= len)
                        return -EINVAL;
                if (s[i] == 'n')
                        name[k++] = '\n';
                else if (s[i] == 'r')
                        name[k++] = '\r';
                else if (s[i] == '\\')
                        name[k++] = '\\';
                else
                        return -EINVAL;
        }
        name[k] = '\0';
        *ret = TAKE_PTR(name);
        return 0;
}

static int base64_value(char c)
{
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* cksum --base64's digest of size bytes (padded with '=', as it writes it) into hex; false if s is
 * not exactly that. Written here: this parser is pure, for its fuzzer. */
static bool base64_to_hex(const char *s, size_t n, size_t size, char *hex)
{
        static const char digits[] = "0123456789abcdef";
        size_t pad = (3 - size % 3) % 3, k = 0;
        uint32_t acc = 0;
        int bits = 0;

        if (n != 4 * ((size + 2) / 3))
                return false;
        for (size_t i = 0; i < n; i++) {
                int v = base64_value(s[i]);

                if (i >= n - pad) {
                        if (s[i] != '=')
                                return false;
                        continue;
                }
                if (v < 0)
                        return false;
                acc = acc << 6 | (uint32_t)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (k < size) {
                                uint8_t b = (uint8_t)(acc >> bits);
                                hex[2 * k] = digits[b >> 4];
                                hex[2 * k + 1] = digits[b & 0xf];
                        }
                        k++;
                }
        }
        hex[2 * size] = '\0';
        return k == size;
}

/* The digest of algo is out_len bytes (0: its default) and is the n characters at hex: hex digits,
 * or base64 as cksum --base64 writes it. */
static int set_hex(ManifestEntry *e, const char *hex, size_t n, const char *algo, uint32_t out_len)
{
        size_t size = out_len ? out_len : algo_digest_size(algo);

        if (out_len && fhash_algorithm_digest_size(algo, out_len * 8) != out_len)
                return -EINVAL;
        if (2 * size >= sizeof(e->hex))
                return -EINVAL;
        if (n == 2 * size && hex_span(hex, n) == n) {
                for (size_t i = 0; i < n; i++)
                        e->hex[i] = (char)tolower((unsigned char)hex[i]);
                e->hex[n] = '\0';
        } else if (!base64_to_hex(hex, n, size, e->hex))
                return -EINVAL;
        e->algo = algo_from_string(algo);
        e->out_len = size == algo_digest_size(algo) ? 0 : (uint32_t)size;
        return 0;
}

/* "TAG (NAME) = HEX"; returns -EAGAIN if the line does not start with a known tag. */
static int parse_tagged(const char *s, size_t len, bool escaped, const ManifestParseOptions *o, ManifestEntry *e)
{
        size_t t = 0, i, close;
        unsigned bits = 0;
        const char *a;
        int r;

        bool le = false;

        while (t < len && (isalnum((unsigned char)s[t]) || s[t] == '-' || s[t] == '_'))
                t++;
        i = t;
        if (i < len && s[i] == ' ')
                i++;
        if (t == 0 || i >= len || s[i] != '(')
                return -EAGAIN;
        a = fhash_algorithm_from_tag(s, t, &bits);
        /* xxhsum --tag --little-endian: "XXH64_LE (name) = hex", the digest's bytes reversed. */
        if (!a && t > 3 && memcmp(s + t - 3, "_LE", 3) == 0) {
                a = fhash_algorithm_from_tag(s, t - 3, &bits);
                if (!algo_is(a, "xxh32") && !algo_is(a, "xxh64") && !algo_is(a, "xxh128") && !algo_is(a, "xxh3"))
                        return -EAGAIN;
                le = true;
        }
        if (!a)
                return -EAGAIN;
        /* The tag says the length; -l does not change it (b2sum -l N -c neither). */
        if (o->algo && !algo_is(a, o->algo))
                return -EINVAL;
        i++;

        /* BSD tools do not escape names, so the name ends at the last ')' of the line. */
        close = len;
        while (close > i && s[close - 1] != ')')
                close--;
        if (close <= i)
                return -EINVAL;
        close--;

        size_t h = close + 1;
        while (h < len && (s[h] == ' ' || s[h] == '\t'))
                h++;
        if (h >= len || s[h] != '=')
                return -EINVAL;
        h++;
        while (h < len && (s[h] == ' ' || s[h] == '\t'))
                h++;

        r = set_hex(e, s + h, len - h, a, bits / 8);
        if (r < 0)
                return r;
        if (le)
                for (size_t k = 0, n = strlen(e->hex); k < n / 2; k += 2) {
                        char c0 = e->hex[k], c1 = e->hex[k + 1];

                        e->hex[k] = e->hex[n - 2 - k];
                        e->hex[k + 1] = e->hex[n - 1 - k];
                        e->hex[n - 2 - k] = c0;
                        e->hex[n - 1 - k] = c1;
                }
        return name_copy(s + i, close - i, escaped, &e->name);
}

/* The length of an untagged line of a: for -a blake2b/blake2s the line's own, whatever -l says
 * (as b2sum -c, with or without -l); for BLAKE3 -l's (b3sum --check has no --length); 0 for the
 * default. */
static uint32_t untagged_length(const char *a, size_t n, const ManifestParseOptions *o)
{
        if (!(fhash_algorithm_features(a) & FHASH_ALGORITHM_LENGTH))
                return 0;
        if (algo_is(a, o->algo) && (algo_is(a, "blake2b") || algo_is(a, "blake2s")))
                return n % 2 == 0 && n / 2 >= 1 && n / 2 <= fhash_algorithm_digest_max(a) ? (uint32_t)(n / 2) : 0;
        return o->length;
}

static int parse_untagged(const char *s, size_t len, bool escaped, const ManifestParseOptions *o, ManifestEntry *e)
{
        const char *a = o->algo, *hint = o->hint;
        size_t n, i;
        int r;

        if (len > 5 && memcmp(s, "XXH3_", 5) == 0) {
                if (o->algo && !algo_is(o->algo, "xxh3"))
                        return -EINVAL;
                a = "xxh3";
                s += 5;
                len -= 5;
        }
        n = hex_span(s, len);
        if (n == 0 || n >= len || (s[n] != ' ' && s[n] != '\t'))
                return -EINVAL;
        /* The manifest's name, where its algorithm has this length; else the length's writer. */
        if (!a && hint && n == 2 * algo_digest_size(hint))
                a = hint;
        if (!a)
                a = algo_from_hex_len(n);
        if (!a)
                return -EINVAL;
        r = set_hex(e, s, n, a, untagged_length(a, n, o));
        if (r < 0)
                return r;
        i = n + 1;
        /* One blank and a name that starts with neither ' ' nor '*' (or a name of one character):
         * BSD reversed. As coreutils, the first untagged line decides for the manifest, so that a
         * name with a leading blank cannot pass for the other form. */
        int local = -1, *reversed = o->bsd_reversed ? o->bsd_reversed : &local;
        if (i >= len)
                return -EINVAL; /* no name at all */
        if (len - i == 1 || (s[i] != ' ' && s[i] != '*')) {
                if (*reversed == 0)
                        return -EINVAL;
                *reversed = 1;
        } else if (*reversed != 1) {
                *reversed = 0;
                i++;
        }
        return name_copy(s + i, len - i, escaped, &e->name);
}

int manifest_parse_line_with(const char *line, size_t len, const ManifestParseOptions *o, ManifestEntry *ret)
{
        ManifestEntry e = { .algo = NULL };
        bool escaped = false;
        int r;

        if (len > 0 && line[len - 1] == '\r')
                len--;
        while (len > 0 && (*line == ' ' || *line == '\t'))
                line++, len--;
        if (len == 0 || *line == '#')
                return 0;
        if (*line == '\\') {
                escaped = true;
                line++, len--;
        }

        r = parse_tagged(line, len, escaped, o, &e);
        e.tagged = r != -EAGAIN;
        if (r == -EAGAIN)
                r = parse_untagged(line, len, escaped, o, &e);
        if (r < 0) {
                free(e.name);
                return r;
        }
        e.from_stdin = streq(e.name, "stdin") && (algo_is(e.algo, "xxh32") || algo_is(e.algo, "xxh64") ||
                                                  algo_is(e.algo, "xxh128") || algo_is(e.algo, "xxh3"));
        *ret = e;
        return 1;
}

int manifest_parse_line(const char *line, size_t len, const char *algo, ManifestEntry *ret)
{
        return manifest_parse_line_with(line, len, &(ManifestParseOptions){ .algo = algo, .hint = NULL }, ret);
}

int manifest_parse(const char *buf, size_t size, const char *algo, bool zero, Manifest **ret)
{
        return manifest_parse_with(buf, size,
                                   &(ManifestParseOptions){ .algo = algo, .hint = NULL, .zero = zero },
                                   ret);
}

int manifest_parse_with(const char *buf, size_t size, const ManifestParseOptions *opts, Manifest **ret)
{
        /* The form of the manifest's untagged lines, decided by the first (coreutils' bsd_reversed). */
        int reversed = -1;
        ManifestParseOptions local = *opts;
        const ManifestParseOptions *o = &local;
        bool zero = o->zero;
        _cleanup_free_ Manifest *m = NULL;
        size_t entries_alloc = 0, bad_alloc = 0;
        unsigned lineno = 0;
        char end = zero ? '\0' : '\n';
        int r = 0;

        if (!local.bsd_reversed)
                local.bsd_reversed = &reversed;
        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;

        for (size_t off = 0; off < size;) {
                const char *p = buf + off, *nl = memchr(p, end, size - off);
                size_t len = nl ? (size_t)(nl - p) : size - off;
                ManifestEntry e;

                off += len + (nl ? 1 : 0);
                lineno++;

                r = manifest_parse_line_with(p, len, o, &e);
                if (r == -ENOMEM)
                        break;
                if (r == 0)
                        continue;
                if (r < 0) {
                        if (m->n_bad == bad_alloc) {
                                size_t na = MAX(bad_alloc * 2, (size_t)16);
                                unsigned *nb = reallocarray(m->bad_lines, na, sizeof(*nb));
                                if (!nb) {
                                        r = -ENOMEM;
                                        break;
                                }
                                m->bad_lines = nb;
                                bad_alloc = na;
                        }
                        m->bad_lines[m->n_bad++] = lineno;
                        r = 0;
                        continue;
                }
                if (m->n_entries == entries_alloc) {
                        size_t na = MAX(entries_alloc * 2, (size_t)16);
                        ManifestEntry *ne = reallocarray(m->entries, na, sizeof(*ne));
                        if (!ne) {
                                free(e.name);
                                r = -ENOMEM;
                                break;
                        }
                        m->entries = ne;
                        entries_alloc = na;
                }
                e.line = lineno;
                m->entries[m->n_entries++] = e;
                r = 0;
        }
        if (r < 0) {
                manifest_free(TAKE_PTR(m));
                return r;
        }
        *ret = TAKE_PTR(m);
        return 0;
}

void manifest_entry_clear(ManifestEntry *e)
{
        if (!e)
                return;
        e->name = mfree(e->name);
        e->mtree.link = mfree(e->mtree.link);
}

Manifest *manifest_free(Manifest *m)
{
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_entries; i++)
                free(m->entries[i].name);
        free(m->entries);
        free(m->bad_lines);
        free(m);
        return NULL;
}
