/* SPDX-License-Identifier: MIT */
/* dbus-names.c: D-Bus strings, names and signatures, checked as the specification and sd-bus 252 do */
#include <string.h>

#include "basic/macro.h"
#include "basic/utf8.h"
#include "daemon/dbus-message-internal.h"

static bool is_alpha(char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

bool dbus_signature_has_fds(const char *sig)
{
        return sig && strchr(sig, 'h');
}

bool dbus_object_path_is_valid(const char *p)
{
        bool slash = true;
        size_t i;

        if (!p || p[0] != '/')
                return false;
        if (p[1] == 0)
                return true;
        for (i = 1; p[i]; i++) {
                if (p[i] == '/') {
                        if (slash)
                                return false;
                        slash = true;
                } else if (is_alpha(p[i]) || is_digit(p[i]) || p[i] == '_')
                        slash = false;
                else
                        return false;
                if (i >= OBJECT_PATH_MAX)
                        return false;
        }
        return !slash;
}

/* Names of at least two non-empty elements separated by dots, of [A-Za-z0-9_] (and '-' if hyphen),
 * elements starting with a digit only if digit_first, at most max bytes. */
static bool dotted_name_is_valid(const char *p, bool hyphen, bool digit_first, size_t max)
{
        unsigned elements = 0;
        bool start = true;
        size_t i;

        if (!p)
                return false;
        for (i = 0; p[i]; i++) {
                char c = p[i];

                if (i >= max)
                        return false;
                if (c == '.') {
                        if (start)
                                return false;
                        start = true;
                        continue;
                }
                if (!is_alpha(c) && c != '_' && !(hyphen && c == '-') &&
                    !(is_digit(c) && (digit_first || !start)))
                        return false;
                if (start)
                        elements++;
                start = false;
        }
        return !start && elements >= 2;
}

bool dbus_interface_name_is_valid(const char *p)
{
        return dotted_name_is_valid(p, false, false, NAME_MAX_LENGTH);
}

bool dbus_bus_name_is_valid(const char *p)
{
        if (p && p[0] == ':')
                return dotted_name_is_valid(p + 1, true, true, NAME_MAX_LENGTH - 1);
        return dotted_name_is_valid(p, true, false, NAME_MAX_LENGTH);
}

bool dbus_member_name_is_valid(const char *p)
{
        size_t i;

        if (!p || !p[0] || is_digit(p[0]))
                return false;
        for (i = 0; p[i]; i++)
                if (i >= NAME_MAX_LENGTH || !(is_alpha(p[i]) || is_digit(p[i]) || p[i] == '_'))
                        return false;
        return true;
}

/* Strict UTF-8 as sd-bus 252 checks it: basic/utf8's rules (no overlong forms, surrogates or code
 * points past U+10FFFF) and no Unicode noncharacters, which sd-bus's unichar_is_valid() refuses. */
bool dbus_string_is_utf8(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; *p;) {
                size_t n = utf8_char_len(p);
                uint32_t cp;

                if (n == 0)
                        return false;
                if (n == 3) {
                        cp = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
                        if ((cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe)
                                return false;
                } else if (n == 4) {
                        cp = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
                             (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
                        if ((cp & 0xfffe) == 0xfffe)
                                return false;
                }
                p += n;
        }
        return true;
}

bool dbus_type_is_basic(char c)
{
        return c && strchr("ybnqiuxtdsogh", c);
}

/* The length of the complete type at s, checking it; 0 (and *why) if it is not one. in_array: s is
 * an array's element type, the only place a dict entry may be. */
static size_t sig_complete_type(const char *s, unsigned arrays, unsigned structs, bool in_array,
                                const char **why)
{
        const char *p;
        size_t n;

        if (dbus_type_is_basic(*s) || *s == 'v')
                return 1;
        switch (*s) {
        case 'a':
                if (arrays >= SIG_NEST_MAX)
                        return *why = R_SIG_ARRAYS, 0;
                if (!s[1])
                        return *why = R_SIG_ARRAY, 0;
                n = sig_complete_type(s + 1, arrays + 1, structs, true, why);
                return n ? n + 1 : 0;
        case '(':
                if (structs >= SIG_NEST_MAX)
                        return *why = R_SIG_STRUCTS, 0;
                if (s[1] == ')')
                        return *why = R_SIG_STRUCT, 0;
                for (p = s + 1; *p != ')'; p += n) {
                        if (!*p)
                                return *why = R_SIG_STRUCT, 0;
                        n = sig_complete_type(p, arrays, structs + 1, false, why);
                        if (!n)
                                return 0;
                }
                return (size_t)(p - s) + 1;
        case '{':
                if (!in_array)
                        return *why = R_SIG_DICT_OUTSIDE, 0;
                if (structs >= SIG_NEST_MAX)
                        return *why = R_SIG_STRUCTS, 0;
                if (!dbus_type_is_basic(s[1]) || s[2] == '}' || !s[2])
                        return *why = R_SIG_DICT, 0;
                n = sig_complete_type(s + 2, arrays, structs + 1, false, why);
                if (!n)
                        return 0;
                if (s[2 + n] != '}')
                        return *why = R_SIG_DICT, 0;
                return n + 3;
        default:
                return *why = R_SIG_CODE, 0;
        }
}

/* Zero or more complete types (SIGNATURE, a 'g' value); *why says what is wrong if not. */
bool dbus_signature_check(const char *s, const char **why)
{
        for (size_t n; *s; s += n) {
                n = sig_complete_type(s, 0, 0, false, why);
                if (!n)
                        return false;
        }
        return true;
}

/* Exactly one complete type, as a variant's signature must be. */
bool dbus_signature_is_single(const char *s)
{
        const char *why;

        return *s && sig_complete_type(s, 0, 0, false, &why) == strlen(s);
}

/* Reads the header fields of one message: all positions are offsets into m, and nothing is read
 * at or past end (the end of the fields array). */