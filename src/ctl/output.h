/* SPDX-License-Identifier: MIT */
/* output.h: fhashctl's line formats: coreutils-compatible digest lines, BSD tags, quoting, JSON */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ctl/algo.h"

typedef enum OutputStyle {
        OUTPUT_UNTAGGED,  /* "<hex>  <name>", as sha256sum */
        OUTPUT_TAGGED,    /* "SHA256 (<name>) = <hex>", as cksum --tag / BSD */
        OUTPUT_BINARY,    /* "<hex> *<name>", as sha256sum --binary */
        OUTPUT_NO_NAMES,  /* "<hex>", as b3sum --no-names */
        OUTPUT_JSON,      /* one JSON object per line */
        _OUTPUT_STYLE_MAX,
        _OUTPUT_STYLE_INVALID = -EINVAL,
} OutputStyle;

/*
 * Names in digest lines and in check and audit verdicts, as the newest coreutils writes them in both:
 * a name that holds '\n', '\r' or '\\' is written with a '\' before the line and those as "\\n",
 * "\\r" and "\\\\", so that a name cannot end a line or fake another. On a terminal (fhashctl says
 * so with output_set_terminal() when standard output is one) every other control character, every
 * C1 control and every byte that is not part of valid UTF-8 is written "\\xHH" as well, in a line
 * escaped the same way: a hostile name cannot move the cursor, clear the screen or set the title.
 * Into a pipe or a file those bytes stay raw, as coreutils writes them, so that the output stays a
 * manifest every tool reads back.
 */
void output_set_terminal(bool on);

/* True if the name must be written escaped (output_write_name() with escape, after a leading '\'). */
bool output_name_needs_escape(const char *name);

/* Writes name raw, or with escape as output_set_terminal() says (the caller writes the leading '\'
 * at the start of the line). */
int output_write_name(FILE *f, const char *name, bool escape);

/* Writes one digest line. With zero, the line ends with NUL and the name is written raw (coreutils -z),
 * but on a terminal; otherwise a name that needs escaping is escaped (see output_set_terminal()).
 * Returns 0 or -errno (-EINVAL for OUTPUT_JSON, which has its own writer). */
int output_write_digest(FILE *f, OutputStyle style, bool zero, const char *a, const char *name, const char *hex);

/* Writes the name part of a check-mode line ("NAME: OK") as the newest coreutils does: escaped as in a
 * digest line, its leading '\' included (coreutils 9.1, Debian 12's, escaped only a name that
 * holds a newline, and printed '\r' raw). */
int output_write_check_name(FILE *f, const char *name);

/* Quotes a name for a diagnostic the way coreutils' quotef() does in a UTF-8 locale (basic/quote.h):
 * unchanged when it is shell-safe, else '...' (or "..." when only a single quote needs it), control
 * characters and bytes that are not UTF-8 as $'\n' / $'\377'. */
int output_quote(const char *name, char **ret);

/* Writes s as a JSON string (with the quotes). Valid UTF-8 is kept, control characters are escaped,
 * and every byte that is not part of valid UTF-8 becomes a lone surrogate "\udcXX" (XX = the byte),
 * which is PEP 383's "surrogateescape": Python's json.loads() accepts it and os.fsencode() returns
 * the original bytes, so names stay lossless; other parsers see one unpaired surrogate per bad byte. */
int output_write_json_string(FILE *f, const char *s);

/* Writes one result object and a newline:
 * {"name":…,"algorithm":…,"digest":…|null,"size":N|null,"error":null|"…"}
 * hex NULL means the file failed; error is NULL on success. */
int output_write_json_result(FILE *f, const char *name, const char *a, const char *hex, uint64_t size,
                             const char *error);
/* Several algorithms in one read (-a sha256,blake3): one object per input,
 * {"name":…,"algorithm":"sha256,blake3","digests":{"sha256":…,"blake3":…}|null,"size":N|null,"error":null|"…"}
 * and, with skipped non-NULL, "digests":null and "skipped":REASON. hex is the set's digests joined
 * by ',' (fhash_result.digest), or NULL when the file failed or was skipped. */
int output_write_json_set_result(FILE *f, const char *name, const AlgoSet *set, const char *hex, uint64_t size,
                                 const char *error, const char *skipped);
/* The set's hex digests joined by ',' as tagged lines, one per algorithm ("SHA256 (name) = hex"). */
int output_write_set_digests(FILE *f, bool zero, const AlgoSet *set, const char *name, const char *hex);

/* {"name":..,"algorithm":..,"digest":null,"size":null,"error":null,"skipped":REASON}: an input that
 * was not hashed by design (a symlink not followed, not a regular file), so that --json has an
 * object for every input. */
int output_write_json_skipped(FILE *f, const char *name, const char *a, const char *reason);
