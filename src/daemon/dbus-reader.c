/* SPDX-License-Identifier: MIT */
/* dbus-reader.c: a D-Bus header's fields array, every value checked as it is read */
#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/dbus-message-internal.h"

const FieldRule field_rules[_DBUS_FIELD_MAX] = {
        [DBUS_FIELD_PATH] = { 'o', "PATH is not of type OBJECT_PATH", "PATH appears twice",
                              "PATH is not a valid object path", dbus_object_path_is_valid },
        [DBUS_FIELD_INTERFACE] = { 's', "INTERFACE is not of type STRING", "INTERFACE appears twice",
                                   "INTERFACE is not a valid interface name", dbus_interface_name_is_valid },
        [DBUS_FIELD_MEMBER] = { 's', "MEMBER is not of type STRING", "MEMBER appears twice",
                                "MEMBER is not a valid member name", dbus_member_name_is_valid },
        [DBUS_FIELD_ERROR_NAME] = { 's', "ERROR_NAME is not of type STRING", "ERROR_NAME appears twice",
                                    "ERROR_NAME is not a valid error name", dbus_interface_name_is_valid },
        [DBUS_FIELD_REPLY_SERIAL] = { 'u', "REPLY_SERIAL is not of type UINT32",
                                      "REPLY_SERIAL appears twice", R_REPLY_SERIAL_ZERO, NULL },
        [DBUS_FIELD_DESTINATION] = { 's', "DESTINATION is not of type STRING", "DESTINATION appears twice",
                                     "DESTINATION is not a valid bus name", dbus_bus_name_is_valid },
        [DBUS_FIELD_SENDER] = { 's', "SENDER is not of type STRING", "SENDER appears twice",
                                "SENDER is not a valid bus name", dbus_bus_name_is_valid },
        /* A SIGNATURE's rules are those of every signature (take_signature()). */
        [DBUS_FIELD_SIGNATURE] = { 'g', "SIGNATURE is not of type SIGNATURE", "SIGNATURE appears twice",
                                   NULL, NULL },
        [DBUS_FIELD_UNIX_FDS] = { 'u', "UNIX_FDS is not of type UINT32", "UNIX_FDS appears twice", NULL,
                                  NULL },
};

int reader_fail(Reader *r, const char *why)
{
        r->why = why;
        return -EBADMSG;
}

/* Moves *pos to a multiple of align, over padding that must be zero. */
static int skip_padding(Reader *r, size_t *pos, size_t align)
{
        size_t to = ALIGN_TO(*pos, align);

        if (to > r->end)
                return reader_fail(r, R_PAST_END);
        for (size_t i = *pos; i < to; i++)
                if (r->m[i] != 0)
                        return reader_fail(r, R_PADDING);
        *pos = to;
        return 0;
}

static int take(Reader *r, size_t *pos, size_t align, size_t n, const uint8_t **ret)
{
        int k = skip_padding(r, pos, align);

        if (k < 0)
                return k;
        if (n > r->end - *pos)
                return reader_fail(r, R_PAST_END);
        *ret = r->m + *pos;
        *pos += n;
        return 0;
}

static int take_u32(Reader *r, size_t *pos, uint32_t *ret)
{
        const uint8_t *p;
        int k = take(r, pos, 4, 4, &p);

        if (k < 0)
                return k;
        *ret = get32(p, r->big_endian);
        return 0;
}

/* n bytes of text at *pos and the NUL after them. */
static int take_text(Reader *r, size_t *pos, size_t n, const char **ret)
{
        const char *s = (const char *)r->m + *pos;

        if (n >= r->end - *pos)
                return reader_fail(r, R_PAST_END);
        if (memchr(s, 0, n))
                return reader_fail(r, R_NUL_INSIDE);
        if (s[n] != 0)
                return reader_fail(r, R_NOT_TERMINATED);
        *pos += n + 1;
        *ret = s;
        return 0;
}

/* A STRING or OBJECT_PATH: its length, its text, its NUL. */
static int take_string(Reader *r, size_t *pos, const char **ret)
{
        uint32_t n;
        int k = take_u32(r, pos, &n);

        return k < 0 ? k : take_text(r, pos, n, ret);
}

/* A SIGNATURE: its length in one byte, its text, its NUL, checked as a list of complete types. */
static int take_signature(Reader *r, size_t *pos, const char **ret)
{
        const char *s, *why;
        uint8_t n;
        int k;

        if (*pos >= r->end)
                return reader_fail(r, R_PAST_END);
        n = r->m[(*pos)++];
        /* sd-bus reads the length and adds one for the NUL in a uint8_t; it refuses 255. */
        if (n == 255)
                return reader_fail(r, R_SIG_255);
        k = take_text(r, pos, n, &s);
        if (k < 0)
                return k;
        if (!dbus_signature_check(s, &why))
                return reader_fail(r, why);
        *ret = s;
        return 0;
}

/* Where a value of the type that starts with c is aligned. */
static size_t type_alignment(char c)
{
        switch (c) {
        case 'y':
        case 'g':
        case 'v':
                return 1;
        case 'n':
        case 'q':
                return 2;
        case 'x':
        case 't':
        case 'd':
        case '(':
        case '{':
                return 8;
        default:
                return 4; /* b i u h s o a */
        }
}

/* Walks the value of the complete type at *sig in an unknown field, checking it as its type says. */
static int skip_value(Reader *r, size_t *pos, const char *sig, unsigned depth)
{
        const uint8_t *p;
        const char *s;
        uint32_t n;
        int k;

        switch (*sig) {
        case 'y':
                return take(r, pos, 1, 1, &p);
        case 'n':
        case 'q':
                return take(r, pos, 2, 2, &p);
        case 'b':
                k = take_u32(r, pos, &n);
                return k < 0 ? k : n > 1 ? reader_fail(r, R_BOOLEAN) : 0;
        case 'i':
        case 'u':
        case 'h':
                return take(r, pos, 4, 4, &p);
        case 'x':
        case 't':
        case 'd':
                return take(r, pos, 8, 8, &p);
        case 's':
                k = take_string(r, pos, &s);
                return k < 0 ? k : dbus_string_is_utf8(s) ? 0 : reader_fail(r, R_UTF8);
        case 'o':
                k = take_string(r, pos, &s);
                return k < 0 ? k : dbus_object_path_is_valid(s) ? 0 : reader_fail(r, R_OBJECT_PATH);
        case 'g':
                return take_signature(r, pos, &s);
        case 'v':
                if (depth >= DEPTH_MAX)
                        return reader_fail(r, R_TOO_DEEP);
                k = take_signature(r, pos, &s);
                if (k < 0)
                        return k;
                if (!dbus_signature_is_single(s))
                        return reader_fail(r, R_NOT_SINGLE);
                return skip_value(r, pos, s, depth + 1);
        case 'a': {
                unsigned elements = 0;
                size_t start;

                if (depth >= DEPTH_MAX)
                        return reader_fail(r, R_TOO_DEEP);
                k = take_u32(r, pos, &n);
                if (k < 0)
                        return k;
                if (n > DBUS_ARRAY_SIZE_MAX)
                        return reader_fail(r, R_ARRAY_TOO_BIG);
                /* Padding to the first element's alignment follows the length even when there is
                 * none, and is not counted in it. */
                k = skip_padding(r, pos, type_alignment(sig[1]));
                if (k < 0)
                        return k;
                if (n > r->end - *pos)
                        return reader_fail(r, R_PAST_END);
                for (start = *pos; *pos < start + n; elements++) {
                        if (elements == 1)
                                return reader_fail(r, R_UNKNOWN_ARRAY);
                        k = skip_value(r, pos, sig + 1, depth + 1);
                        if (k < 0)
                                return k;
                }
                return *pos == start + n ? 0 : reader_fail(r, R_ARRAY_LENGTH);
        }
        case '(':
        case '{':
                /* message_skip_fields() in sd-bus 252 tests for 'r' and 'e', the type codes that
                 * never appear in a signature, and drops the message at '(' or '{'. */
                return reader_fail(r, R_UNKNOWN_STRUCT);
        default:
                return reader_fail(r, R_SIG_CODE); /* not reached: the signature was checked */
        }
}

int reader_field_next(Reader *r, size_t *pos, Field *ret)
{
        const FieldRule *rule;
        const char *sig;
        Field f = {};
        int k;

        k = skip_padding(r, pos, 8);
        if (k < 0)
                return k;
        if (*pos == r->end)
                return reader_fail(r, R_TRAILING);
        f.start = *pos;
        f.code = r->m[(*pos)++];
        k = take_signature(r, pos, &sig);
        if (k < 0)
                return k;
        if (f.code == 0)
                return reader_fail(r, R_CODE_INVALID);
        if (!dbus_signature_is_single(sig))
                return reader_fail(r, R_NOT_SINGLE);
        f.value = *pos;

        if (f.code >= _DBUS_FIELD_MAX) {
                k = skip_value(r, pos, sig, FIELD_VALUE_DEPTH);
                if (k < 0)
                        return k;
                f.end = *pos;
                *ret = f;
                return 0;
        }

        rule = &field_rules[f.code];
        if (sig[0] != rule->type || sig[1] != 0)
                return reader_fail(r, rule->wrong_type);
        switch (rule->type) {
        case 'u':
                k = take_u32(r, pos, &f.u32);
                if (k < 0)
                        return k;
                if (f.code == DBUS_FIELD_REPLY_SERIAL && f.u32 == 0)
                        return reader_fail(r, R_REPLY_SERIAL_ZERO);
                break;
        case 'g':
                k = take_signature(r, pos, &f.str);
                if (k < 0)
                        return k;
                break;
        default:
                k = take_string(r, pos, &f.str);
                if (k < 0)
                        return k;
                if (!rule->valid(f.str))
                        return reader_fail(r, rule->invalid);
        }
        f.end = *pos;
        *ret = f;
        return 0;
}
