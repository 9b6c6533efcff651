/* SPDX-License-Identifier: MIT */
/* dbus-message-internal.h: what dbus-message.c, dbus-reader.c and dbus-names.c share */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "daemon/dbus-message.h"

/* The phrases dbus_message_parse() gives, one per rule (the rules are listed in dbus-message.c). */
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


static inline uint32_t get32(const uint8_t *p, bool big_endian)
{
        if (big_endian)
                return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline void put32(uint8_t *p, uint32_t v, bool big_endian)
{
        for (int i = 0; i < 4; i++)
                p[big_endian ? 3 - i : i] = (uint8_t)(v >> (8 * i));
}

/* dbus-names.c: the rules of strings, names and signatures. */
bool dbus_string_is_utf8(const char *s);        /* valid UTF-8, as sd-bus's utf8_is_valid() */
bool dbus_type_is_basic(char c);
/* A signature's characters, complete types and nesting; *why names the rule broken. */
bool dbus_signature_check(const char *s, const char **why);
/* Exactly one complete type, as a variant's signature must be. */
bool dbus_signature_is_single(const char *s);

/* dbus-reader.c: reading the header fields array, every value checked as it is read. */
/* A known field's type and the phrases for what is wrong with it. */
typedef struct FieldRule {
        char type;
        const char *wrong_type, *twice, *invalid;
        bool (*valid)(const char *s);
} FieldRule;

extern const FieldRule field_rules[_DBUS_FIELD_MAX];

typedef struct Reader {
        const uint8_t *m;
        size_t end;
        bool big_endian;
        const char *why;
} Reader;

/* One header field, read and checked as its code says. */
typedef struct Field {
        uint8_t code;
        size_t start, end; /* its code byte .. the end of its value (padding not included) */
        size_t value;      /* where its value starts */
        const char *str;   /* a known field's string-like value */
        uint32_t u32;      /* a known field's UINT32 value */
} Field;

/* Each returns 0, or -EBADMSG with r->why set. */
int reader_fail(Reader *r, const char *why);
/* The next field at *pos, after its padding. */
int reader_field_next(Reader *r, size_t *pos, Field *ret);
