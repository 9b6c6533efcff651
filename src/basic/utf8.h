/* SPDX-License-Identifier: MIT */
/* utf8.h: strict UTF-8 checks, as Python's decoder makes them */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s does not start one. Rejects overlong
 * forms, surrogates and code points past U+10FFFF. */
size_t utf8_char_len(const unsigned char *s);
/* True if s is valid UTF-8 throughout. */
bool utf8_is_valid(const char *s);
