/* SPDX-License-Identifier: MIT */
/* utf8.c: strict UTF-8 checks, as Python's decoder makes them */
#include "basic/utf8.h"

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s does not start one. Rejects overlong
 * forms, surrogates and code points past U+10FFFF, as a strict decoder (Python's) does. */
size_t utf8_char_len(const unsigned char *s)
{
        uint32_t cp;
        size_t n;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                n = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                n = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0; /* also stops at the terminating NUL */
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return n;
}

bool utf8_is_valid(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n = utf8_char_len(p);
                if (n == 0)
                        return false;
                p += n;
        }
        return true;
}
