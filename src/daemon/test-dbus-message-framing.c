/* SPDX-License-Identifier: MIT */
/* test-dbus-message-framing.c: the fixed header, the fields array, the fields each type needs */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/test-dbus-cases.h"

/*
 * The framing of a message and of its header: the fixed header (byte order, type, version,
 * serial, lengths), the fields array as a walker reads it (padding, values cut short, field code
 * 0), each known field's type and count, and what each message type must and must not carry.
 * The cases and their checks are test-dbus-cases.h's.
 */

/* ---- the cases ---- */

static void c_call(Msg *m)
{
        base_call(m, 0);
}
static void c_call_minimal(Msg *m)
{
        base_call(m, NO(INTERFACE) | NO(DESTINATION) | NO(SIGNATURE) | NO(UNIX_FDS));
}
static void c_call_flags(Msg *m)
{
        base_call(m, 0);
        m->flags = 0xff; /* the three defined and five unknown, which are ignored */
}
static void c_return(Msg *m)
{
        base_return(m, 0);
}
static void c_return_minimal(Msg *m)
{
        base_return(m, NO(DESTINATION) | NO(SENDER) | NO(SIGNATURE));
}
static void c_error(Msg *m)
{
        base_error(m, 0);
}
static void c_signal(Msg *m)
{
        base_signal(m, 0);
}
static void c_signal_bus(Msg *m)
{
        base_signal(m, NO(SENDER));
        field_str(m, SENDER, 's', "org.freedesktop.DBus");
        field_str(m, DESTINATION, 's', ":1.42");
}
static void c_root_path(Msg *m)
{
        base_call(m, NO(PATH));
        field_str(m, PATH, 'o', "/");
}
/* Fixed header */
static void c_short(Msg *m)
{
        base_call(m, 0);
        m->fields_size = 0;
        m->cut = 15; /* the fixed header but its last byte */
}
static void c_byte_order(Msg *m)
{
        base_call(m, 0);
        m->byte_order = 'X';
}
static void c_too_big(Msg *m)
{
        base_call(m, 0);
        m->body_delta = (int64_t)DBUS_MESSAGE_SIZE_MAX - 16 - ALIGN_TO(m->h.n - 16, 8) - m->body.n;
}
static void c_length(Msg *m)
{
        base_call(m, 0);
        m->body_delta = 1;
}
static void c_type_0(Msg *m)
{
        base_call(m, 0);
        m->type = 0;
}
static void c_type_5(Msg *m)
{
        base_call(m, 0);
        m->type = 5;
}
static void c_version_0(Msg *m)
{
        base_call(m, 0);
        m->version = 0;
}
static void c_version_2(Msg *m)
{
        base_call(m, 0);
        m->version = 2;
}
static void c_serial_0(Msg *m)
{
        base_call(m, 0);
        m->serial = 0;
}
/* Fields array */
static void c_padding_between(Msg *m)
{
        base_call(m, NO(MEMBER) | NO(UNIX_FDS));
        m->h.fill = 0x20; /* after the SIGNATURE before it, which ends 1 byte past a multiple of 8 */
        field_str(m, MEMBER, 's', "HashFds");
}
static void c_padding_in_value(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "t");
        m->h.fill = 1;
        buf_uint(&m->h, 5, 8);
}
static void c_past_end(Msg *m)
{
        base_call(m, NO(MEMBER));
        field(m, MEMBER, "s");
        buf_u32(&m->h, 100); /* 100 bytes of text that are not there */
        buf_raw(&m->h, "HashFds", 8);
}
static void c_field_code_last(Msg *m)
{
        base_call(m, 0);
        buf_u8(&m->h, 10); /* a field's code, and the array ends */
}
static void c_value_cut(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "u");
        buf_raw(&m->h, "\1\0", 2); /* half a UINT32 */
}
static void c_padding_cut(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "t"); /* the array ends before the padding to 8 that a UINT64 needs */
}
static void c_array_cut(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "ay");
        buf_u32(&m->h, 100);
        buf_u8(&m->h, 1);
}
static void c_trailing(Msg *m)
{
        base_call(m, NO(UNIX_FDS));
        m->trailing_pad = true; /* SIGNATURE, last, ends 1 byte past a multiple of 8 */
}
static void c_code_0(Msg *m)
{
        base_call(m, 0);
        field(m, 0, "u");
        buf_u32(&m->h, 0);
}
static void c_not_single(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "uu");
        buf_u32(&m->h, 1);
        buf_u32(&m->h, 2);
}
static void c_not_single_empty(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "");
}
static void c_path_too_long(Msg *m)
{
        /* sd-bus refuses an object path longer than 64 KiB; the specification sets no limit. */
        size_t n = ((size_t)64 << 10) + 1;
        char *p = malloc(n + 1);

        assert_non_null(p);
        p[0] = '/';
        memset(p + 1, 'a', n - 1);
        p[n] = 0;
        base_call(m, NO(PATH));
        field_str(m, PATH, 'o', p);
        free(p);
}
static void c_path_64k(Msg *m)
{
        size_t n = (size_t)64 << 10;
        char *p = malloc(n + 1);

        assert_non_null(p);
        p[0] = '/';
        memset(p + 1, 'a', n - 1);
        p[n] = 0;
        base_call(m, NO(PATH));
        field_str(m, PATH, 'o', p);
        free(p);
}
static void c_reply_serial_0(Msg *m)
{
        base_return(m, NO(REPLY_SERIAL));
        field_u32(m, REPLY_SERIAL, 0);
}
/* After the fields */
static void c_header_padding(Msg *m)
{
        base_call(m, NO(UNIX_FDS)); /* SIGNATURE last: 7 bytes of padding */
        m->header_fill = 1;
}
static void c_body_without_signature(Msg *m)
{
        base_call(m, NO(SIGNATURE) | NO(UNIX_FDS));
        buf_u32(&m->body, 1);
}
static void c_call_no_path(Msg *m)
{
        base_call(m, NO(PATH));
}
static void c_call_no_member(Msg *m)
{
        base_call(m, NO(MEMBER));
}
static void c_call_reply_serial(Msg *m)
{
        base_call(m, 0);
        field_u32(m, REPLY_SERIAL, 3);
}
static void c_signal_no_path(Msg *m)
{
        base_signal(m, NO(PATH));
}
static void c_signal_no_interface(Msg *m)
{
        base_signal(m, NO(INTERFACE));
}
static void c_signal_no_member(Msg *m)
{
        base_signal(m, NO(MEMBER));
}
static void c_signal_reply_serial(Msg *m)
{
        base_signal(m, 0);
        field_u32(m, REPLY_SERIAL, 3);
}
static void c_error_no_name(Msg *m)
{
        base_error(m, NO(ERROR_NAME));
}
static void c_error_no_reply_serial(Msg *m)
{
        base_error(m, NO(REPLY_SERIAL));
}
static void c_return_no_reply_serial(Msg *m)
{
        base_return(m, NO(REPLY_SERIAL));
}
static void c_local_path(Msg *m)
{
        base_call(m, NO(PATH));
        field_str(m, PATH, 'o', "/org/freedesktop/DBus/Local");
}
static void c_local_interface(Msg *m)
{
        base_signal(m, NO(INTERFACE));
        field_str(m, INTERFACE, 's', "org.freedesktop.DBus.Local");
}
static void c_local_sender(Msg *m)
{
        base_return(m, NO(SENDER));
        field_str(m, SENDER, 's', "org.freedesktop.DBus.Local");
}

static const Case cases[] = {
        /* valid */
        { "method call", c_call, NULL, SD_TAKES },
        { "method call, PATH and MEMBER only", c_call_minimal, NULL, SD_TAKES },
        { "method call, every flag", c_call_flags, NULL, SD_TAKES },
        { "method return", c_return, NULL, SD_TAKES },
        { "method return, REPLY_SERIAL only", c_return_minimal, NULL, SD_TAKES },
        { "error", c_error, NULL, SD_TAKES },
        { "signal", c_signal, NULL, SD_TAKES },
        { "signal from the bus", c_signal_bus, NULL, SD_TAKES },
        { "path /", c_root_path, NULL, SD_TAKES },
        { "object path of 64 KiB", c_path_64k, NULL, SD_TAKES },
        /* fixed header */
        { "shorter than the fixed header", c_short, "a message shorter than its fixed header",
          SD_NOT_ASKED },
        { "byte order X", c_byte_order, "a byte order that is neither 'l' nor 'B'", SD_NOT_ASKED },
        { "128 MiB", c_too_big, "a message of 128 MiB or more", SD_NOT_ASKED },
        { "body length one more", c_length, "a message whose length is not what its header says",
         SD_NOT_ASKED },
        { "type 0", c_type_0, "message type 0 (INVALID)", SD_REFUSES },
        { "type 5", c_type_5, "an unknown message type", SD_TAKES },
        { "version 0", c_version_0, "a protocol version other than 1", SD_REFUSES },
        { "version 2", c_version_2, "a protocol version other than 1", SD_TAKES },
        { "serial 0", c_serial_0, "serial 0", SD_REFUSES },
        /* fields array */
        { "padding between fields", c_padding_between, "alignment padding that is not zero", SD_REFUSES },
        { "padding inside a value", c_padding_in_value, "alignment padding that is not zero", SD_REFUSES },
        { "string past the fields", c_past_end, "a header field that runs past the fields array",
          SD_REFUSES },
        { "a field code and nothing more", c_field_code_last, "a header field that runs past the fields array",
          SD_REFUSES },
        { "half a UINT32", c_value_cut, "a header field that runs past the fields array", SD_REFUSES },
        { "padding past the fields", c_padding_cut, "a header field that runs past the fields array", SD_REFUSES },
        /* sd-bus reads the first element only, and never the length. */
        { "array past the fields", c_array_cut, "a header field that runs past the fields array", SD_TAKES },
        { "fields array ending in padding", c_trailing, "a header fields array that ends in padding",
         SD_REFUSES },
        { "field code 0", c_code_0, "header field code 0 (INVALID)", SD_REFUSES },
        { "variant of two types", c_not_single, "a variant whose signature is not one complete type",
         SD_TAKES },
        { "variant of no type", c_not_single_empty, "a variant whose signature is not one complete type",
         SD_TAKES },
        { "object path over 64 KiB", c_path_too_long, "PATH is not a valid object path", SD_REFUSES },
        { "REPLY_SERIAL 0", c_reply_serial_0, "REPLY_SERIAL is 0", SD_REFUSES },
        /* after the fields */
        { "padding after the fields", c_header_padding, "non-zero padding after the header fields",
          SD_TAKES },
        { "body without SIGNATURE", c_body_without_signature, "a body but no SIGNATURE field", SD_TAKES },
        { "method call without PATH", c_call_no_path, "a method call without PATH", SD_REFUSES },
        { "method call without MEMBER", c_call_no_member, "a method call without MEMBER", SD_REFUSES },
        { "method call with REPLY_SERIAL", c_call_reply_serial, "a method call with REPLY_SERIAL",
         SD_REFUSES },
        { "signal without PATH", c_signal_no_path, "a signal without PATH", SD_REFUSES },
        { "signal without INTERFACE", c_signal_no_interface, "a signal without INTERFACE", SD_REFUSES },
        { "signal without MEMBER", c_signal_no_member, "a signal without MEMBER", SD_REFUSES },
        { "signal with REPLY_SERIAL", c_signal_reply_serial, "a signal with REPLY_SERIAL", SD_REFUSES },
        { "error without ERROR_NAME", c_error_no_name, "an error without ERROR_NAME", SD_REFUSES },
        { "error without REPLY_SERIAL", c_error_no_reply_serial, "an error without REPLY_SERIAL",
          SD_REFUSES },
        { "method return without REPLY_SERIAL", c_return_no_reply_serial,
         "a method return without REPLY_SERIAL", SD_REFUSES },
        { "local path", c_local_path, "the reserved path /org/freedesktop/DBus/Local", SD_REFUSES },
        { "local interface", c_local_interface, "the reserved interface org.freedesktop.DBus.Local",
         SD_REFUSES },
        { "local sender", c_local_sender, "SENDER org.freedesktop.DBus.Local", SD_REFUSES },
};

static void test_size(void **state)
{
        uint8_t head[16] = { 'l', 1, 0, 1, 5, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0 };
        size_t total = 0;

        assert_int_equal(dbus_message_size(head, &total), 0);
        assert_int_equal(total, 16 + 16 + 5);
        memcpy(head, (const uint8_t[]){ 'B', 1, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1, 0, 0, 0, 8 }, 16);
        assert_int_equal(dbus_message_size(head, &total), 0);
        assert_int_equal(total, 16 + 8 + 5);
        head[0] = 'b';
        assert_int_equal(dbus_message_size(head, &total), -EBADMSG);
        /* 128 MiB - 1 is the largest, 128 MiB and sums past 4 GiB are refused. */
        memcpy(head, (const uint8_t[]){ 'l', 1, 0, 1, 0xef, 0xff, 0xff, 0x07, 1, 0, 0, 0, 0, 0, 0, 0 }, 16);
        assert_int_equal(dbus_message_size(head, &total), 0);
        assert_int_equal(total, DBUS_MESSAGE_SIZE_MAX - 1);
        head[4] = 0xf0;
        assert_int_equal(dbus_message_size(head, &total), -EMSGSIZE);
        memset(head + 4, 0xff, 4);
        memset(head + 12, 0xff, 4);
        total = 7;
        assert_int_equal(dbus_message_size(head, &total), -EMSGSIZE);
        assert_int_equal(total, 7);
}

static void test_cases(void **state)
{
        run_cases(cases, ELEMENTSOF(cases));
}

/* Every known field with a type other than its own, and twice. */
static void test_known_fields(void **state)
{
        static const struct {
                uint8_t code;
                const char *name;
        } known[] = {
                { PATH, "PATH" },
                { INTERFACE, "INTERFACE" },
                { MEMBER, "MEMBER" },
                { ERROR_NAME, "ERROR_NAME" },
                { REPLY_SERIAL, "REPLY_SERIAL" },
                { DESTINATION, "DESTINATION" },
                { SENDER, "SENDER" },
                { SIGNATURE, "SIGNATURE" },
                { UNIX_FDS, "UNIX_FDS" },
        };
        static const char *type_names[] = {
                ['o'] = "OBJECT_PATH", ['s'] = "STRING", ['u'] = "UINT32", ['g'] = "SIGNATURE" };
        static const char types[] = "xosssussgu"; /* by code */
        char name[128], want[128];

        for (size_t i = 0; i < ELEMENTSOF(known); i++)
                for (int be = 0; be < 2; be++) {
                        uint8_t code = known[i].code;
                        char type = types[code];
                        Msg m = { .h.be = be };
                        uint8_t *b;
                        size_t len;

                        /* The value as a string-like type that is not its own, or as a UINT32. */
                        snprintf(name, sizeof(name), "%s of the wrong type (%s)", known[i].name,
                                 be ? "BE" : "LE");
                        current = name;
                        base_call(&m, NO(code) | NO(SIGNATURE) | NO(UNIX_FDS));
                        if (type == 'u')
                                field_str(&m, code, 's', "x");
                        else if (type == 'o')
                                field_str(&m, code, 's', "/x");
                        else if (type == 'g')
                                field_str(&m, code, 's', "s");
                        else
                                field_str(&m, code, 'o', "/x");
                        b = msg_finish(&m, &len);
                        snprintf(want, sizeof(want), "%s is not of type %s", known[i].name,
                                 type_names[(int)type]);
                        check_case(b, len, m.n_fds, want, SD_REFUSES);
                        free(b);

                        /* Twice: a valid message with the field added again, the same value. */
                        snprintf(name, sizeof(name), "%s twice (%s)", known[i].name, be ? "BE" : "LE");
                        current = name;
                        switch (code) {
                        case ERROR_NAME:
                                base_error(&m, NO(SIGNATURE));
                                field_str(&m, ERROR_NAME, 's', "org.fhash.Error.Busy");
                                break;
                        case REPLY_SERIAL:
                                base_return(&m, NO(SIGNATURE));
                                field_u32(&m, REPLY_SERIAL, 7);
                                break;
                        case SENDER:
                                base_signal(&m, NO(SIGNATURE));
                                field_str(&m, SENDER, 's', ":1.5");
                                break;
                        case SIGNATURE:
                                base_signal(&m, NO(SIGNATURE));
                                field_sig(&m, SIGNATURE, "");
                                field_sig(&m, SIGNATURE, "");
                                break;
                        case UNIX_FDS:
                                base_call(&m, 0);
                                field_u32(&m, UNIX_FDS, 2);
                                break;
                        default:
                                base_call(&m, 0);
                                field_str(&m, code, types[code],
                                          code == PATH        ? "/org/fhash/Hasher1"
                                          : code == INTERFACE ? "org.fhash.Hasher1.Manager"
                                          : code == MEMBER    ? "HashFds"
                                                              : "org.fhash.Hasher1");
                        }
                        b = msg_finish(&m, &len);
                        snprintf(want, sizeof(want), "%s appears twice", known[i].name);
                        check_case(b, len, m.n_fds, want, SD_REFUSES);
                        free(b);
                        msg_free(&m);
                }
}

/* A fields array longer than 64 MiB: refused before it is walked (the message is 64 MiB). */
static void test_fields_too_big(void **state)
{
        size_t fields = DBUS_ARRAY_SIZE_MAX + 8, len = 16 + fields;
        uint8_t *m = calloc(1, len);
        const char *why = NULL;
        DBusHeader h;

        current = "fields array over 64 MiB";
        assert_non_null(m);
        memcpy(m, (const uint8_t[]){ 'l', 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0 }, 12);
        for (int i = 0; i < 4; i++)
                m[12 + i] = (uint8_t)(fields >> (8 * i));
        assert_int_equal(dbus_message_parse(m, len, 0, &h, &why), -EBADMSG);
        assert_string_equal(why, "a header fields array longer than 64 MiB");
        free(m);
}

int main(int argc, char *argv[])
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_size),
                cmocka_unit_test(test_cases),
                cmocka_unit_test(test_known_fields),
                cmocka_unit_test(test_fields_too_big),
        };

        if (argc == 3 && streq(argv[1], "--corpus"))
                return write_corpus(argv[2], "framing", cases, ELEMENTSOF(cases));
        return cmocka_run_group_tests(tests, test_oracle_setup, test_oracle_teardown);
}
