/* SPDX-License-Identifier: MIT */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ctl/macro.h"
#include "ctl/output.h"
#include "fhash/fhash.h"

/* On a terminal (output_set_terminal()), besides coreutils' three escapes. */
static bool escape_controls;

void output_set_terminal(bool on)
{
        escape_controls = on;
}

/* What quotef() escapes is what a terminal may act on (fhash_name_char()). */
static bool is_control(const char *p, size_t *ret_n)
{
        return fhash_name_char(p, ret_n) > 0;
}

bool output_name_needs_escape(const char *name)
{
        if (strpbrk(name, "\n\r\\"))
                return true;
        if (!escape_controls)
                return false;
        for (size_t n; *name; name += n)
                if (is_control(name, &n))
                        return true;
        return false;
}

int output_write_name(FILE *f, const char *name, bool escape)
{
        if (!escape)
                return fputs(name, f) == EOF ? -EIO : 0;
        for (const char *p = name; *p;) {
                size_t n = 1;
                int r;

                switch (*p) {
                case '\n':
                        r = fputs("\\n", f);
                        break;
                case '\r':
                        r = fputs("\\r", f);
                        break;
                case '\\':
                        r = fputs("\\\\", f);
                        break;
                default:
                        if (!escape_controls)
                                r = putc(*p, f);
                        else if (is_control(p, &n)) {
                                r = 0;
                                for (size_t k = 0; k < n && r >= 0; k++)
                                        r = fprintf(f, "\\x%02x", (unsigned char)p[k]);
                        } else
                                r = fwrite(p, 1, n, f) == n ? 0 : EOF; /* a whole UTF-8 character */
                }
                if (r < 0)
                        return -EIO;
                p += n;
        }
        return 0;
}

int output_write_digest(FILE *f, OutputStyle style, bool zero, const char *a, const char *name, const char *hex)
{
        /* coreutils' -z writes names raw; on a terminal control characters are escaped all the same. */
        bool escape = (!zero || escape_controls) && output_name_needs_escape(name);
        size_t size = strlen(hex) / 2;
        char buf[32];
        /* A digest of another length than the default (b2sum -l 256) says so in its tag. */
        unsigned bits = size == algo_digest_size(a) ? 0 : (unsigned)size * 8;
        const char *tag = fhash_algorithm_tag(a, bits, buf, sizeof(buf));
        int r;

        if (!tag || (style != OUTPUT_UNTAGGED && style != OUTPUT_TAGGED && style != OUTPUT_BINARY &&
                     style != OUTPUT_NO_NAMES))
                return -EINVAL;
        if (style == OUTPUT_NO_NAMES)
                return fprintf(f, "%s%c", hex, zero ? '\0' : '\n') < 0 ? -EIO : 0;
        if (fhash_algorithm_features(a) & FHASH_ALGORITHM_ALWAYS_TAGGED)
                style = OUTPUT_TAGGED;

        if (escape && putc('\\', f) == EOF)
                return -EIO;
        if (style == OUTPUT_TAGGED) {
                if (fprintf(f, "%s (", tag) < 0)
                        return -EIO;
        } else if (fprintf(f, style == OUTPUT_BINARY ? "%s *" : "%s  ", hex) < 0)
                return -EIO;

        r = output_write_name(f, name, escape);
        if (r < 0)
                return r;

        if (style == OUTPUT_TAGGED && fprintf(f, ") = %s", hex) < 0)
                return -EIO;
        if (putc(zero ? '\0' : '\n', f) == EOF)
                return -EIO;
        return 0;
}

int output_write_check_name(FILE *f, const char *name)
{
        bool escape = output_name_needs_escape(name);

        if (escape && putc('\\', f) == EOF)
                return -EIO;
        return output_write_name(f, name, escape);
}

int output_quote(const char *name, char **ret)
{
        return fhash_name_format(name, FHASH_NAME_QUOTE, ret);
}

int output_write_json_string(FILE *f, const char *s)
{
        _cleanup_free_ char *json = NULL;
        int r;

        r = fhash_name_format(s, FHASH_NAME_JSON, &json);
        if (r < 0)
                return r;
        return fputs(json, f) == EOF ? -EIO : 0;
}

/* The JSON writers' one object: {"name":…,"algorithm":…, then "digest" (one algorithm, set NULL) or
 * "digests" (a set: an object by algorithm name), "size", "error", and "skipped" when given. hex
 * NULL: the digest(s) and size are null. */
static int json_result(FILE *f, const char *name, const char *algo, const AlgoSet *set, const char *hex,
                       uint64_t size, const char *error, const char *skipped)
{
        int r;

        if (fputs("{\"name\":", f) == EOF)
                return -EIO;
        r = output_write_json_string(f, name);
        if (r < 0)
                return r;
        if (fprintf(f, ",\"algorithm\":\"%s\",\"%s\":", algo, set ? "digests" : "digest") < 0)
                return -EIO;
        if (!hex)
                r = fputs("null,\"size\":null", f);
        else if (!set)
                r = fprintf(f, "\"%s\",\"size\":%" PRIu64, hex, size);
        else {
                for (unsigned i = 0; i < set->n; i++) {
                        size_t n = strcspn(hex, ",");

                        if (fprintf(f, "%s\"%s\":\"%.*s\"", i == 0 ? "{" : ",", set->algos[i],
                                    (int)n, hex) < 0)
                                return -EIO;
                        hex += n + (hex[n] == ',');
                }
                r = fprintf(f, "},\"size\":%" PRIu64, size);
        }
        if (r < 0 || fputs(",\"error\":", f) == EOF)
                return -EIO;
        r = error ? output_write_json_string(f, error) : (fputs("null", f) == EOF ? -EIO : 0);
        if (r >= 0 && skipped) {
                if (fputs(",\"skipped\":", f) == EOF)
                        return -EIO;
                r = output_write_json_string(f, skipped);
        }
        if (r < 0)
                return r;
        return fputs("}\n", f) == EOF ? -EIO : 0;
}

int output_write_json_skipped(FILE *f, const char *name, const char *a, const char *reason)
{
        const char *algo = a;

        if (!algo)
                return -EINVAL;
        return json_result(f, name, algo, NULL, NULL, 0, NULL, reason ? reason : "skipped");
}

int output_write_json_result(FILE *f, const char *name, const char *a, const char *hex, uint64_t size,
                             const char *error)
{
        const char *algo = a;

        if (!algo)
                return -EINVAL;
        return json_result(f, name, algo, NULL, hex, size, error, NULL);
}

int output_write_json_set_result(FILE *f, const char *name, const AlgoSet *set, const char *hex, uint64_t size,
                                 const char *error, const char *skipped)
{
        char names[ALGO_SET_NAMES_MAX];

        if (!algo_set_format(set, names, sizeof(names)) || (hex && !algo_set_hex_valid(set, hex)))
                return -EINVAL;
        return json_result(f, name, names, set, hex, size, error, skipped);
}

int output_write_set_digests(FILE *f, bool zero, const AlgoSet *set, const char *name, const char *hex)
{
        if (!algo_set_hex_valid(set, hex))
                return -EINVAL;
        for (unsigned i = 0; i < set->n; i++) {
                char one[ALGO_HEX_MAX];
                size_t n = strcspn(hex, ",");
                int r;

                memcpy(one, hex, n);
                one[n] = '\0';
                r = output_write_digest(f, OUTPUT_TAGGED, zero, set->algos[i], name, one);
                if (r < 0)
                        return r;
                hex += n + (hex[n] == ',');
        }
        return 0;
}
