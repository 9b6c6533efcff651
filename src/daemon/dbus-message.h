/* SPDX-License-Identifier: MIT */
/* dbus-message.h: D-Bus messages as bytes: framing, header checks as strict as sd-bus's, fd-free headers */
#pragma once

/*
 * fhashd's gate reads every socket that can carry a caller's fds itself, frames each message with
 * dbus_message_size(), checks it with dbus_message_parse(), keeps the fds, and hands sd-bus the
 * message with the header dbus_message_rewrite() writes: no UNIX_FDS field, no 'h' in its signature.
 * sd-bus 252 drops a message it finds invalid without closing the fds that came with it (issue 24,
 * N1), so the gate must refuse at least everything sd-bus refuses, and it must see each field
 * exactly as sd-bus will: where sd-bus misreads a header that the specification allows (unknown
 * fields holding a struct, a dict entry or an array of more than one element), the message is
 * refused too. Every rule is listed in dbus-message.c, with whether the specification, sd-bus or
 * both make it; the test-dbus-message-*.c tests break each one and check sd-bus's own verdict on a
 * socket.
 *
 * Pure: no I/O, no allocation, no sd-bus; m is only read. Offsets are from the message's first
 * byte, from which the specification measures alignment.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The fixed header: byte order, type, flags, version, body length, serial, the fields' length. */
#define DBUS_MESSAGE_FIXED_SIZE 16
/* sd-bus 252 drops the connection on a message whose header says this much or more
 * (BUS_MESSAGE_SIZE_MAX); the specification allows exactly 128 MiB, sd-bus does not. */
#define DBUS_MESSAGE_SIZE_MAX ((size_t)128 << 20)
/* The specification's largest array, the header's fields array included. */
#define DBUS_ARRAY_SIZE_MAX ((size_t)64 << 20)

typedef enum DBusMessageType {
        DBUS_MESSAGE_METHOD_CALL = 1,
        DBUS_MESSAGE_METHOD_RETURN = 2,
        DBUS_MESSAGE_ERROR = 3,
        DBUS_MESSAGE_SIGNAL = 4,
} DBusMessageType;

typedef enum DBusField {
        DBUS_FIELD_PATH = 1,
        DBUS_FIELD_INTERFACE = 2,
        DBUS_FIELD_MEMBER = 3,
        DBUS_FIELD_ERROR_NAME = 4,
        DBUS_FIELD_REPLY_SERIAL = 5,
        DBUS_FIELD_DESTINATION = 6,
        DBUS_FIELD_SENDER = 7,
        DBUS_FIELD_SIGNATURE = 8,
        DBUS_FIELD_UNIX_FDS = 9,
        _DBUS_FIELD_MAX,
} DBusField;

/* The message flags the specification defines (others are kept and ignored). */
#define DBUS_FLAG_NO_REPLY_EXPECTED 0x1
#define DBUS_FLAG_NO_AUTO_START 0x2
#define DBUS_FLAG_ALLOW_INTERACTIVE_AUTHORIZATION 0x4

typedef struct DBusHeader {
        bool big_endian;
        uint8_t type; /* DBusMessageType */
        uint8_t flags;
        uint8_t version; /* always 1 */
        uint32_t body_size, serial;
        uint32_t fields_size; /* the fields array's length, without the padding after it */
        size_t total;         /* DBUS_MESSAGE_FIXED_SIZE + ALIGN8(fields_size) + body_size */
        /* Into the message, NUL-terminated there; NULL if absent. */
        const char *path, *interface, *member, *error_name, *destination, *sender;
        const char *signature; /* NULL if absent: the body is then empty */
        uint32_t reply_serial; /* 0: absent */
        bool has_unix_fds;
        uint32_t unix_fds;      /* 0 if absent */
        size_t unix_fds_offset; /* where the UNIX_FDS field starts (8-aligned), if present */
} DBusHeader;

/* The message's total size from its first DBUS_MESSAGE_FIXED_SIZE bytes, for framing.
 * -EBADMSG: the byte order is neither 'l' nor 'B' (nothing else can be read then);
 * -EMSGSIZE: DBUS_MESSAGE_SIZE_MAX or more, where sd-bus would drop the connection.
 * Nothing else is checked: dbus_message_parse() does, once the whole message is in. */
int dbus_message_size(const uint8_t head[DBUS_MESSAGE_FIXED_SIZE], size_t *ret_total);

/* Checks the whole message m (len must be its total size) against every rule of the header, and
 * fills *ret with its fields (pointing into m). n_fds is how many fds came with it: a UNIX_FDS
 * field must say exactly that many; no field means none; a field saying 0 is refused (no sender
 * writes one). The body is not looked at, beyond its length and that it is empty when there is no
 * SIGNATURE. On failure returns -EBADMSG and sets *ret_why (if not NULL) to a static phrase naming
 * the rule, fit for a log line or a D-Bus error ("PATH is not a valid object path"); *ret is then
 * left as it was. */
int dbus_message_parse(const uint8_t *m, size_t len, size_t n_fds, DBusHeader *ret, const char **ret_why);
/* For dbus_message_parse()'s n_fds: not known (fewer came than were sent, and the caller says so
 * itself); the UNIX_FDS field is then not compared. */
#define DBUS_FDS_UNCHECKED ((size_t)-1)

/* Writes into out the fixed header and header fields of the message m that h describes (both as
 * dbus_message_parse() left them), changed so that sd-bus can take it with no fds: the UNIX_FDS
 * field left out, with DBUS_REWRITE_FDS_AS_INDEXES every 'h' of SIGNATURE turned into 'u' (a body
 * stays valid: both are a 4-byte aligned uint32, the fd's index), and MEMBER's value replaced by
 * new_member if not NULL. Every
 * other field, known or not, is copied byte for byte, in the same order and byte order, and the
 * fixed header keeps its type, flags, serial and body length. The result ends with the padding to
 * 8 bytes: the body, m + DBUS_MESSAGE_FIXED_SIZE + ALIGN8(h->fields_size), follows it unchanged.
 * Returns the header's length (a multiple of 8), -ENOBUFS if out_size is smaller (out is then
 * untouched; dbus_message_rewrite_max() is always enough), -EINVAL if new_member is not a valid
 * member name or the message has no MEMBER to replace, -EBADMSG if m does not parse as h says. */
ssize_t dbus_message_rewrite(const uint8_t *m, const DBusHeader *h, const char *new_member, unsigned flags,
                             uint8_t *out, size_t out_size);
/* dbus_message_rewrite() flags: every 'h' of SIGNATURE becomes a 'u' (for a handler that reads the
 * fds' indexes itself); without it the signature is kept. */
#define DBUS_REWRITE_FDS_AS_INDEXES 1u

/* How large out must be for dbus_message_rewrite(m, h, new_member, ...), at most. */
size_t dbus_message_rewrite_max(const DBusHeader *h, const char *new_member);

/* Whether the signature sig (NULL: none) has an fd ('h') anywhere. */
bool dbus_signature_has_fds(const char *sig);

/* The name checks the header uses, for callers that validate names of their own (a rewrite's new
 * member): the specification's rules, with sd-bus 252's limits where it has stricter ones. */
bool dbus_object_path_is_valid(const char *p);
bool dbus_interface_name_is_valid(const char *p); /* also error names */
bool dbus_member_name_is_valid(const char *p);
bool dbus_bus_name_is_valid(const char *p); /* unique (":1.5") or well-known */
