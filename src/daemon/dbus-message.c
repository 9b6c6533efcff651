/* SPDX-License-Identifier: MIT */
/* dbus-message.c: framing, header checks and the fd-free header of a D-Bus message (see the .h) */
#include <errno.h>
#include <string.h>

#include "basic/macro.h"
#include "basic/utf8.h"
#include "daemon/dbus-message-internal.h"

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

                k = reader_field_next(&r, &pos, &f);
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

                if (reader_field_next(&r, &pos, &f) < 0)
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
