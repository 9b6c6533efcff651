/* SPDX-License-Identifier: MIT */
/* quote.h: names in diagnostics as coreutils' quotef() writes them */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Here, below both of fhashctl's parts, because both name files as coreutils does: its tools
 * (src/sum/, "sha256sum: 'a b': No such file or directory") and its verbs (src/ctl/, also for what
 * a terminal may be sent). */

/* True if the character at p must be written as an escape by quotef(), with its length in bytes in
 * *ret_n: a C0 control or DEL, a C1 control (U+0080..U+009F), a byte that is not part of valid
 * UTF-8 (0x9b alone is CSI to a terminal that reads 8-bit controls): what a terminal may act on.
 * In a locale that is not UTF-8 (utf8 false) every byte past ASCII is one. */
bool quote_is_escape(const unsigned char *p, bool utf8, size_t *ret_n);

/* Quotes a name for a diagnostic the way coreutils' quotef() does: unchanged when it is shell-safe,
 * else '...' (or "..." when only a single quote needs it), control characters and bytes that are
 * not UTF-8 as $'\n' / $'\377'. utf8 says whether the locale is UTF-8: in the C locale quotef()
 * escapes every byte past ASCII ($'\303\251'), as coreutils does there. Returns 0 and a new string
 * in *ret, or -ENOMEM. */
int quote_name(const char *name, bool utf8, char **ret);
