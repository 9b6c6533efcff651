/* SPDX-License-Identifier: MIT */
/* dbus-message.c: framing, header checks and the fd-free header of a D-Bus message (see the .h) */
#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/utf8.h"
#include "daemon/dbus-message.h"

/*
 * The rules, each with the phrase dbus_message_parse() gives for it, and who makes it: S the
 * D-Bus specification (0.36), B sd-bus 252 (bus-message.c message_from_header() and
 * message_parse_fields(), bus-socket.c, bus-internal.c, bus-signature.c, basic/utf8.c). Where only
 * S makes a rule, sd-bus would take the message and fhashd refuses what the specification does not
 * allow; where only B does, sd-bus would drop it, with its fds, and the gate must refuse it first.
 *
 * Fixed header
 *   byte order 'l' or 'B'                        S B   R_BYTE_ORDER
 *   total size < 128 MiB                         S B   R_TOO_BIG (S allows exactly 128 MiB, B not)
 *   len == 16 + ALIGN8(fields) + body            S B   R_SHORT, R_LENGTH
 *   type not 0                                   S B   R_TYPE_INVALID
 *   type 1..4                                    -     R_TYPE_UNKNOWN (S: ignore it; B hands it
 *                                                      to filters; fhashd has no use for one)
 *   version 1                                    S     R_VERSION (B also takes 2)
 *   serial not 0                                 S B   R_SERIAL
 *   fields array at most 64 MiB                  S     R_FIELDS_TOO_BIG
 * Header fields, a(yv): every value inside the fields array
 *   padding zero, each field 8-aligned           S B   R_PADDING
 *   nothing past the array's length              S B   R_PAST_END
 *   the array ends with a field, not padding     S B   R_TRAILING
 *   field code not 0                             S B   R_CODE_INVALID
 *   the variant's signature: one complete type   S     R_NOT_SINGLE (B walks a list)
 *   a known code only with its type              S B   field_rules[].wrong_type
 *   a known code at most once                    S B   field_rules[].twice
 *   PATH a valid object path, at most 64 KiB     S B   (B makes the limit)  field_rules[].invalid
 *   INTERFACE, ERROR_NAME valid interface names  S B
 *   MEMBER a valid member name                   S B   (B lets it start with a digit, S not)
 *   DESTINATION, SENDER valid bus names          S B
 *   SIGNATURE a valid signature                  S B   (see signatures)
 *   REPLY_SERIAL not 0                           B     R_REPLY_SERIAL_ZERO
 *   UNIX_FDS equal to the fds that came          S B   R_FDS_*; UNIX_FDS 0 is refused although
 *                                                      both allow it: no sender writes it
 * Strings, object paths, signatures (known fields and inside unknown ones)
 *   length in bounds, NUL-terminated             S B   R_PAST_END, R_NOT_TERMINATED
 *   no NUL inside                                S B   R_NUL_INSIDE
 *   strict UTF-8: no overlong forms, surrogates  S B   R_UTF8 (B also refuses the noncharacters
 *   or code points past U+10FFFF                       U+FDD0..U+FDEF and U+xFFFE/U+xFFFF; S
 *                                                      allows them since 0.21)
 *   a signature shorter than 255 bytes           B     R_SIG_255 (S allows 255)
 * Signatures
 *   type codes only, arrays of a complete type,  S B   R_SIG_*
 *   structs not empty and closed, dict entries
 *   only as an array's element with a basic key
 *   and one value, at most 32 nested arrays and
 *   32 nested structs and dict entries           S B   (B counts dict entries with structs)
 *   a dict entry also not at the top             S     (B takes one there)
 * Unknown fields: the value walked as its type says (sd-bus 252's message_skip_fields())
 *   BOOLEAN 0 or 1                               S     R_BOOLEAN
 *   arrays at most 64 MiB                        S B   R_ARRAY_TOO_BIG
 *   an array inside the fields array, its        S     R_PAST_END, R_ARRAY_LENGTH (B reads the
 *   elements ending exactly at its length              first element and never the length)
 *   at most 64 nested containers (a(yv) included) S    R_TOO_DEEP (B recurses once a level
 *                                                      without a bound: ~66,000 variants in a
 *                                                      200 KB message overflow an 8 MiB stack)
 *   no struct or dict entry to walk              B     R_UNKNOWN_STRUCT: B drops the message
 *   no array of more than one element            B     R_UNKNOWN_ARRAY: B reads only the first
 *                                                      element and takes the rest of the array
 *                                                      for header fields, which can give sd-bus
 *                                                      a field the gate never saw
 * After the fields
 *   the padding to 8 bytes zero                  S     R_HEADER_PADDING
 *   no body without a SIGNATURE                  S     R_BODY_WITHOUT_SIGNATURE
 *   method call: PATH and MEMBER                 S B   R_CALL_*
 *   signal: PATH, INTERFACE and MEMBER           S B   R_SIGNAL_*
 *   error: ERROR_NAME and REPLY_SERIAL           S B   R_ERROR_*
 *   method return: REPLY_SERIAL                  S B   R_RETURN_NO_REPLY_SERIAL
 *   no REPLY_SERIAL on calls and signals         B     R_*_REPLY_SERIAL (S: ignore it)
 *   not claiming to be local                     S B   R_LOCAL_* (S reserves the path and the
 *                                                      interface; B also refuses the sender)
 */

#define R_SHORT "a message shorter than its fixed header"
#define R_BYTE_ORDER "a byte order that is neither 'l' nor 'B'"
#define R_TOO_BIG "a message of 128 MiB or more"
#define R_LENGTH "a message whose length is not what its header says"
#define R_TYPE_INVALID "message type 0 (INVALID)"
#define R_TYPE_UNKNOWN "an unknown message type"
#define R_VERSION "a protocol version other than 1"
#define R_SERIAL "serial 0"
#define R_FIELDS_TOO_BIG "a header fields array longer than 64 MiB"
#define R_PADDING "alignment padding that is not zero"
#define R_PAST_END "a header field that runs past the fields array"
#define R_TRAILING "a header fields array that ends in padding"
#define R_CODE_INVALID "header field code 0 (INVALID)"
#define R_NOT_SINGLE "a variant whose signature is not one complete type"
#define R_NUL_INSIDE "a string with a NUL byte inside"
#define R_NOT_TERMINATED "a string that is not NUL-terminated"
#define R_UTF8 "a string that is not valid UTF-8"
#define R_OBJECT_PATH "an object path that is not valid"
#define R_SIG_255 "a signature of 255 bytes"
#define R_SIG_CODE "a signature with a character that is not a type code"
#define R_SIG_ARRAY "a signature with an array of nothing"
#define R_SIG_STRUCT "a signature with a struct that is empty or not closed"
#define R_SIG_DICT_OUTSIDE "a signature with a dict entry outside an array"
#define R_SIG_DICT "a signature with a dict entry that is not a basic key and one value"
#define R_SIG_ARRAYS "a signature nesting more than 32 arrays"
#define R_SIG_STRUCTS "a signature nesting more than 32 structs and dict entries"
#define R_BOOLEAN "a BOOLEAN that is neither 0 nor 1"
#define R_ARRAY_TOO_BIG "an array longer than 64 MiB"
#define R_ARRAY_LENGTH "an array whose elements do not end at its length"
#define R_TOO_DEEP "values nested more than 64 deep"
#define R_UNKNOWN_STRUCT "a struct or dict entry in an unknown header field"
#define R_UNKNOWN_ARRAY "an array of more than one element in an unknown header field"
#define R_REPLY_SERIAL_ZERO "REPLY_SERIAL is 0"
#define R_FDS_ZERO "UNIX_FDS is 0"
#define R_FDS_MORE "UNIX_FDS says more fds than came with the message"
#define R_FDS_FEWER "UNIX_FDS says fewer fds than came with the message"
#define R_FDS_UNDECLARED "fds came with a message that has no UNIX_FDS field"
#define R_HEADER_PADDING "non-zero padding after the header fields"
#define R_BODY_WITHOUT_SIGNATURE "a body but no SIGNATURE field"
#define R_CALL_NO_PATH "a method call without PATH"
#define R_CALL_NO_MEMBER "a method call without MEMBER"
#define R_CALL_REPLY_SERIAL "a method call with REPLY_SERIAL"
#define R_SIGNAL_NO_PATH "a signal without PATH"
#define R_SIGNAL_NO_INTERFACE "a signal without INTERFACE"
#define R_SIGNAL_NO_MEMBER "a signal without MEMBER"
#define R_SIGNAL_REPLY_SERIAL "a signal with REPLY_SERIAL"
#define R_ERROR_NO_NAME "an error without ERROR_NAME"
#define R_ERROR_NO_REPLY_SERIAL "an error without REPLY_SERIAL"
#define R_RETURN_NO_REPLY_SERIAL "a method return without REPLY_SERIAL"
#define R_LOCAL_PATH "the reserved path /org/freedesktop/DBus/Local"
#define R_LOCAL_INTERFACE "the reserved interface org.freedesktop.DBus.Local"
#define R_LOCAL_SENDER "SENDER org.freedesktop.DBus.Local"

#define LOCAL_PATH "/org/freedesktop/DBus/Local"
#define LOCAL_NAME "org.freedesktop.DBus.Local"

/* sd-bus's limits where the specification has none (BUS_PATH_SIZE_MAX), and the shared one. */
#define OBJECT_PATH_MAX ((size_t)64 << 10)
#define NAME_MAX_LENGTH 255
/* The specification: 32 arrays and 32 structs in a signature; 64 containers in all. */
#define SIG_NEST_MAX 32
#define DEPTH_MAX 64
/* A header field's value sits in the fields array, a struct and a variant. */
#define FIELD_VALUE_DEPTH 3

typedef struct FieldRule {
        char type;
        const char *wrong_type, *twice, *invalid;
        bool (*valid)(const char *s);
} FieldRule;

static const FieldRule field_rules[_DBUS_FIELD_MAX] = {
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

static uint32_t get32(const uint8_t *p, bool big_endian)
{
        if (big_endian)
                return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static void put32(uint8_t *p, uint32_t v, bool big_endian)
{
        for (int i = 0; i < 4; i++)
                p[big_endian ? 3 - i : i] = (uint8_t)(v >> (8 * i));
}

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
static bool string_is_utf8(const char *s)
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

static bool is_basic(char c)
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

        if (is_basic(*s) || *s == 'v')
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
                if (!is_basic(s[1]) || s[2] == '}' || !s[2])
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
static bool sig_list_check(const char *s, const char **why)
{
        for (size_t n; *s; s += n) {
                n = sig_complete_type(s, 0, 0, false, why);
                if (!n)
                        return false;
        }
        return true;
}

/* Exactly one complete type, as a variant's signature must be. */
static bool sig_is_single(const char *s)
{
        const char *why;

        return *s && sig_complete_type(s, 0, 0, false, &why) == strlen(s);
}

/* Reads the header fields of one message: all positions are offsets into m, and nothing is read
 * at or past end (the end of the fields array). */
typedef struct Reader {
        const uint8_t *m;
        size_t end;
        bool big_endian;
        const char *why;
} Reader;

static int fail(Reader *r, const char *why)
{
        r->why = why;
        return -EBADMSG;
}

/* Moves *pos to a multiple of align, over padding that must be zero. */
static int skip_padding(Reader *r, size_t *pos, size_t align)
{
        size_t to = ALIGN_TO(*pos, align);

        if (to > r->end)
                return fail(r, R_PAST_END);
        for (size_t i = *pos; i < to; i++)
                if (r->m[i] != 0)
                        return fail(r, R_PADDING);
        *pos = to;
        return 0;
}

static int take(Reader *r, size_t *pos, size_t align, size_t n, const uint8_t **ret)
{
        int k = skip_padding(r, pos, align);

        if (k < 0)
                return k;
        if (n > r->end - *pos)
                return fail(r, R_PAST_END);
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
                return fail(r, R_PAST_END);
        if (memchr(s, 0, n))
                return fail(r, R_NUL_INSIDE);
        if (s[n] != 0)
                return fail(r, R_NOT_TERMINATED);
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
                return fail(r, R_PAST_END);
        n = r->m[(*pos)++];
        /* sd-bus reads the length and adds one for the NUL in a uint8_t; it refuses 255. */
        if (n == 255)
                return fail(r, R_SIG_255);
        k = take_text(r, pos, n, &s);
        if (k < 0)
                return k;
        if (!sig_list_check(s, &why))
                return fail(r, why);
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
                return k < 0 ? k : n > 1 ? fail(r, R_BOOLEAN) : 0;
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
                return k < 0 ? k : string_is_utf8(s) ? 0 : fail(r, R_UTF8);
        case 'o':
                k = take_string(r, pos, &s);
                return k < 0 ? k : dbus_object_path_is_valid(s) ? 0 : fail(r, R_OBJECT_PATH);
        case 'g':
                return take_signature(r, pos, &s);
        case 'v':
                if (depth >= DEPTH_MAX)
                        return fail(r, R_TOO_DEEP);
                k = take_signature(r, pos, &s);
                if (k < 0)
                        return k;
                if (!sig_is_single(s))
                        return fail(r, R_NOT_SINGLE);
                return skip_value(r, pos, s, depth + 1);
        case 'a': {
                unsigned elements = 0;
                size_t start;

                if (depth >= DEPTH_MAX)
                        return fail(r, R_TOO_DEEP);
                k = take_u32(r, pos, &n);
                if (k < 0)
                        return k;
                if (n > DBUS_ARRAY_SIZE_MAX)
                        return fail(r, R_ARRAY_TOO_BIG);
                /* Padding to the first element's alignment follows the length even when there is
                 * none, and is not counted in it. */
                k = skip_padding(r, pos, type_alignment(sig[1]));
                if (k < 0)
                        return k;
                if (n > r->end - *pos)
                        return fail(r, R_PAST_END);
                for (start = *pos; *pos < start + n; elements++) {
                        if (elements == 1)
                                return fail(r, R_UNKNOWN_ARRAY);
                        k = skip_value(r, pos, sig + 1, depth + 1);
                        if (k < 0)
                                return k;
                }
                return *pos == start + n ? 0 : fail(r, R_ARRAY_LENGTH);
        }
        case '(':
        case '{':
                /* message_skip_fields() in sd-bus 252 tests for 'r' and 'e', the type codes that
                 * never appear in a signature, and drops the message at '(' or '{'. */
                return fail(r, R_UNKNOWN_STRUCT);
        default:
                return fail(r, R_SIG_CODE); /* not reached: the signature was checked */
        }
}

/* One header field, read and checked as its code says. */
typedef struct Field {
        uint8_t code;
        size_t start, end; /* its code byte .. the end of its value (padding not included) */
        size_t value;      /* where its value starts */
        const char *str;   /* a known field's string-like value */
        uint32_t u32;      /* a known field's UINT32 value */
} Field;

static int field_next(Reader *r, size_t *pos, Field *ret)
{
        const FieldRule *rule;
        const char *sig;
        Field f = {};
        int k;

        k = skip_padding(r, pos, 8);
        if (k < 0)
                return k;
        if (*pos == r->end)
                return fail(r, R_TRAILING);
        f.start = *pos;
        f.code = r->m[(*pos)++];
        k = take_signature(r, pos, &sig);
        if (k < 0)
                return k;
        if (f.code == 0)
                return fail(r, R_CODE_INVALID);
        if (!sig_is_single(sig))
                return fail(r, R_NOT_SINGLE);
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
                return fail(r, rule->wrong_type);
        switch (rule->type) {
        case 'u':
                k = take_u32(r, pos, &f.u32);
                if (k < 0)
                        return k;
                if (f.code == DBUS_FIELD_REPLY_SERIAL && f.u32 == 0)
                        return fail(r, R_REPLY_SERIAL_ZERO);
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
                        return fail(r, rule->invalid);
        }
        f.end = *pos;
        *ret = f;
        return 0;
}

int dbus_message_size(const uint8_t head[DBUS_MESSAGE_FIXED_SIZE], size_t *ret_total)
{
        bool be = head[0] == 'B';
        uint64_t total;

        if (head[0] != 'l' && head[0] != 'B')
                return -EBADMSG;
        total = DBUS_MESSAGE_FIXED_SIZE + ALIGN_TO((uint64_t)get32(head + 12, be), 8) + get32(head + 4, be);
        if (total >= DBUS_MESSAGE_SIZE_MAX)
                return -EMSGSIZE;
        *ret_total = (size_t)total;
        return 0;
}

static int parse_fixed(const uint8_t *m, size_t len, DBusHeader *h, const char **why)
{
        size_t total;
        int k;

        if (len < DBUS_MESSAGE_FIXED_SIZE)
                return *why = R_SHORT, -EBADMSG;
        k = dbus_message_size(m, &total);
        if (k == -EMSGSIZE)
                return *why = R_TOO_BIG, -EBADMSG;
        if (k < 0)
                return *why = R_BYTE_ORDER, -EBADMSG;
        if (len != total)
                return *why = R_LENGTH, -EBADMSG;

        *h = (DBusHeader){
                .big_endian = m[0] == 'B',
                .type = m[1],
                .flags = m[2],
                .version = m[3],
                .body_size = get32(m + 4, m[0] == 'B'),
                .serial = get32(m + 8, m[0] == 'B'),
                .fields_size = get32(m + 12, m[0] == 'B'),
                .total = total,
        };
        if (h->type == 0)
                return *why = R_TYPE_INVALID, -EBADMSG;
        if (h->type > DBUS_MESSAGE_SIGNAL)
                return *why = R_TYPE_UNKNOWN, -EBADMSG;
        if (h->version != 1)
                return *why = R_VERSION, -EBADMSG;
        if (h->serial == 0)
                return *why = R_SERIAL, -EBADMSG;
        if (h->fields_size > DBUS_ARRAY_SIZE_MAX)
                return *why = R_FIELDS_TOO_BIG, -EBADMSG;
        return 0;
}

static const char *check_required(const DBusHeader *h)
{
        switch (h->type) {
        case DBUS_MESSAGE_METHOD_CALL:
                if (!h->path)
                        return R_CALL_NO_PATH;
                if (!h->member)
                        return R_CALL_NO_MEMBER;
                if (h->reply_serial)
                        return R_CALL_REPLY_SERIAL;
                break;
        case DBUS_MESSAGE_SIGNAL:
                if (!h->path)
                        return R_SIGNAL_NO_PATH;
                if (!h->interface)
                        return R_SIGNAL_NO_INTERFACE;
                if (!h->member)
                        return R_SIGNAL_NO_MEMBER;
                if (h->reply_serial)
                        return R_SIGNAL_REPLY_SERIAL;
                break;
        case DBUS_MESSAGE_ERROR:
                if (!h->error_name)
                        return R_ERROR_NO_NAME;
                if (!h->reply_serial)
                        return R_ERROR_NO_REPLY_SERIAL;
                break;
        default:
                if (!h->reply_serial)
                        return R_RETURN_NO_REPLY_SERIAL;
        }
        if (streq_ptr(h->path, LOCAL_PATH))
                return R_LOCAL_PATH;
        if (streq_ptr(h->interface, LOCAL_NAME))
                return R_LOCAL_INTERFACE;
        if (streq_ptr(h->sender, LOCAL_NAME))
                return R_LOCAL_SENDER;
        return NULL;
}

int dbus_message_parse(const uint8_t *m, size_t len, size_t n_fds, DBusHeader *ret, const char **ret_why)
{
        DBusHeader h;
        const char *why = NULL;
        Reader r;
        bool seen[_DBUS_FIELD_MAX] = {};
        size_t pos, body;
        int k;

        k = parse_fixed(m, len, &h, &why);
        if (k < 0)
                goto fail;

        r = (Reader){ .m = m, .end = DBUS_MESSAGE_FIXED_SIZE + h.fields_size, .big_endian = h.big_endian };
        for (pos = DBUS_MESSAGE_FIXED_SIZE; pos < r.end;) {
                Field f;

                k = field_next(&r, &pos, &f);
                if (k < 0) {
                        why = r.why;
                        goto fail;
                }
                if (f.code >= _DBUS_FIELD_MAX)
                        continue;
                if (seen[f.code]) {
                        why = field_rules[f.code].twice;
                        k = -EBADMSG;
                        goto fail;
                }
                seen[f.code] = true;
                switch ((DBusField)f.code) {
                case DBUS_FIELD_PATH:
                        h.path = f.str;
                        break;
                case DBUS_FIELD_INTERFACE:
                        h.interface = f.str;
                        break;
                case DBUS_FIELD_MEMBER:
                        h.member = f.str;
                        break;
                case DBUS_FIELD_ERROR_NAME:
                        h.error_name = f.str;
                        break;
                case DBUS_FIELD_REPLY_SERIAL:
                        h.reply_serial = f.u32;
                        break;
                case DBUS_FIELD_DESTINATION:
                        h.destination = f.str;
                        break;
                case DBUS_FIELD_SENDER:
                        h.sender = f.str;
                        break;
                case DBUS_FIELD_SIGNATURE:
                        h.signature = f.str;
                        break;
                case DBUS_FIELD_UNIX_FDS:
                        h.has_unix_fds = true;
                        h.unix_fds = f.u32;
                        h.unix_fds_offset = f.start;
                        break;
                default:
                        break;
                }
        }

        body = DBUS_MESSAGE_FIXED_SIZE + ALIGN_TO((size_t)h.fields_size, 8);
        for (pos = r.end; pos < body; pos++)
                if (m[pos] != 0) {
                        why = R_HEADER_PADDING;
                        k = -EBADMSG;
                        goto fail;
                }
        k = -EBADMSG;
        if (h.body_size > 0 && !h.signature)
                why = R_BODY_WITHOUT_SIGNATURE;
        else if (h.has_unix_fds && h.unix_fds == 0)
                why = R_FDS_ZERO;
        else if (n_fds != DBUS_FDS_UNCHECKED && h.unix_fds > n_fds)
                why = R_FDS_MORE;
        else if (n_fds != DBUS_FDS_UNCHECKED && h.unix_fds < n_fds)
                why = h.has_unix_fds ? R_FDS_FEWER : R_FDS_UNDECLARED;
        else
                why = check_required(&h);
        if (why)
                goto fail;

        *ret = h;
        return 0;
fail:
        if (ret_why)
                *ret_why = why;
        return k;
}

/* The rewritten header's fields after the fixed header, written to out unless it is NULL; returns
 * the header's length (with its padding), or -EBADMSG. */
static ssize_t rewrite_fields(const uint8_t *m, const DBusHeader *h, const char *new_member, unsigned flags,
                              uint8_t *out)
{
        Reader r = { .m = m, .end = DBUS_MESSAGE_FIXED_SIZE + h->fields_size, .big_endian = h->big_endian };
        size_t o = DBUS_MESSAGE_FIXED_SIZE;

        for (size_t pos = DBUS_MESSAGE_FIXED_SIZE; pos < r.end;) {
                size_t at = ALIGN_TO(o, 8), n;
                Field f;

                if (field_next(&r, &pos, &f) < 0)
                        return -EBADMSG;
                if (f.code == DBUS_FIELD_UNIX_FDS)
                        continue;
                if (f.code == DBUS_FIELD_MEMBER && new_member) {
                        size_t l = strlen(new_member);

                        n = 8 + l + 1;
                        if (out) {
                                memcpy(out + at, (const uint8_t[]){ DBUS_FIELD_MEMBER, 1, 's', 0 }, 4);
                                put32(out + at + 4, (uint32_t)l, h->big_endian);
                                memcpy(out + at + 8, new_member, l + 1);
                        }
                } else {
                        n = f.end - f.start;
                        if (out) {
                                memcpy(out + at, m + f.start, n);
                                /* The value is the signature's length byte, its text, its NUL. */
                                if (f.code == DBUS_FIELD_SIGNATURE && (flags & DBUS_REWRITE_FDS_AS_INDEXES))
                                        for (uint8_t *c = out + at + (f.value - f.start) + 1; *c; c++)
                                                if (*c == 'h')
                                                        *c = 'u';
                        }
                }
                if (out)
                        memset(out + o, 0, at - o);
                o = at + n;
        }
        if (out) {
                memcpy(out, m, 12);
                put32(out + 12, (uint32_t)(o - DBUS_MESSAGE_FIXED_SIZE), h->big_endian);
                memset(out + o, 0, ALIGN_TO(o, 8) - o);
        }
        return (ssize_t)ALIGN_TO(o, 8);
}

size_t dbus_message_rewrite_max(const DBusHeader *h, const char *new_member)
{
        /* Fields start at multiples of 8: leaving one out or copying one never takes more room than
         * it had; a new MEMBER takes its own at most. */
        return DBUS_MESSAGE_FIXED_SIZE + ALIGN_TO((size_t)h->fields_size, 8) +
               (new_member ? ALIGN_TO(8 + strlen(new_member) + 1, 8) : 0);
}

ssize_t dbus_message_rewrite(const uint8_t *m, const DBusHeader *h, const char *new_member, unsigned flags,
                             uint8_t *out, size_t out_size)
{
        ssize_t n;

        if (new_member && (!h->member || !dbus_member_name_is_valid(new_member)))
                return -EINVAL;
        if (m[0] != (h->big_endian ? 'B' : 'l') || get32(m + 12, h->big_endian) != h->fields_size)
                return -EBADMSG;
        n = rewrite_fields(m, h, new_member, flags, NULL);
        if (n < 0)
                return n;
        if ((size_t)n > out_size)
                return -ENOBUFS;
        return rewrite_fields(m, h, new_member, flags, out);
}
