/* SPDX-License-Identifier: MIT */
/* coreutils-check.c: the coreutils tools' -c: each checksum line parsed as split_3() does, and checked */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/base64.h>

#include "sum/coreutils-check.h"
#include "sum/coreutils-digest.h"

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
                if ((!cu->old || cu_algos[a].old) && strlen(cu_algos[a].tag) == i && memcmp(s, cu_algos[a].tag, i) == 0)
                        return a;
        return -1;
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
                if (!cu_sha_length_ok(length))
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
                if ((cu->algo == CK_SHA2 || cu->algo == CK_SHA3) && !cu_sha_length_ok((intmax_t)hex * 4)) {
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
        type = cu_type_string(cu);
        if (strncmp(s + i, type, strlen(type)) == 0) {
                i += strlen(type);
                if (cu->build == BUILD_BLAKE2 || cu->build == BUILD_CKSUM) {
                        cu->digest_length = cu->build == BUILD_BLAKE2 ? BLAKE2B_MAX_BITS : cu_algos[cu->algo].bits;
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
                cu_add_quoted(&cu->line, name);
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
bool cu_digest_check(Cu *cu, const char *checkfile)
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
        if (cu_quotef(shown, &qname) < 0)
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
                                       lineno, cu_type_string(cu));
                        continue;
                }

                CuResult res = {};
                bool missing;
                int r;

                properly = true;
                r = cu_digest_file(cu, p.name, &res, &missing);
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
