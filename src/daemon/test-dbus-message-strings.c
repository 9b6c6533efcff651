/* SPDX-License-Identifier: MIT */
/* test-dbus-message-strings.c: strings, UTF-8, signatures and names, in header fields and alone */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/test-dbus-cases.h"

/*
 * The values of a header as strings: NULs and terminators, UTF-8 (overlong forms, surrogates,
 * noncharacters), signatures (type codes, containers, nesting limits, lengths) and the names
 * each field holds (object paths, interfaces, members, errors, bus names), each rule as a header
 * field where sd-bus checks it too, and the name checks directly. The cases and their checks are
 * test-dbus-cases.h's.
 */

/* ---- the cases ---- */

static void c_sig_254(Msg *m)
{
        char s[255];

        memset(s, 'y', 254);
        s[254] = 0;
        base_call(m, NO(SIGNATURE) | NO(UNIX_FDS));
        field_sig(m, SIGNATURE, s);
        buf_raw(&m->body, s, 254); /* 254 bytes, which the header does not look at */
}
static void c_sig_nesting_32(Msg *m)
{
        /* 32 nested arrays, and 32 structs and dict entries inside them: the most allowed. */
        char s[256] = "";

        for (int i = 0; i < 16; i++)
                strcat(s, "a");
        for (int i = 0; i < 16; i++)
                strcat(s, "(");
        for (int i = 0; i < 16; i++)
                strcat(s, "a{s");
        strcat(s, "v");
        for (int i = 0; i < 16; i++)
                strcat(s, "}");
        for (int i = 0; i < 16; i++)
                strcat(s, ")");
        base_call(m, NO(SIGNATURE) | NO(UNIX_FDS));
        field_sig(m, SIGNATURE, s);
}
/* Strings */
static void c_nul_inside(Msg *m)
{
        base_call(m, NO(MEMBER));
        field(m, MEMBER, "s");
        buf_str_n(&m->h, "Hash\0Fds", 8);
}
static void c_not_terminated(Msg *m)
{
        base_call(m, NO(MEMBER));
        field(m, MEMBER, "s");
        buf_u32(&m->h, 7);
        buf_raw(&m->h, "HashFdsX", 8);
}
static void c_sig_not_terminated(Msg *m)
{
        base_call(m, NO(SIGNATURE) | NO(UNIX_FDS));
        field(m, SIGNATURE, "g");
        buf_u8(&m->h, 1);
        buf_raw(&m->h, "ss", 2);
}
static void unknown_string(Msg *m, const char *s)
{
        base_call(m, 0);
        field(m, 10, "s");
        buf_str(&m->h, s);
}
static void c_utf8_overlong(Msg *m)
{
        unknown_string(m, "a\xc0\xaf");
}
static void c_utf8_overlong3(Msg *m)
{
        unknown_string(m, "\xe0\x80\xaf");
}
static void c_utf8_surrogate(Msg *m)
{
        unknown_string(m, "\xed\xa0\x80");
}
static void c_utf8_past_10ffff(Msg *m)
{
        unknown_string(m, "\xf4\x90\x80\x80");
}
static void c_utf8_five_bytes(Msg *m)
{
        unknown_string(m, "\xf8\x88\x80\x80\x80");
}
static void c_utf8_truncated(Msg *m)
{
        unknown_string(m, "ab\xe2\x82");
}
static void c_utf8_continuation(Msg *m)
{
        unknown_string(m, "\x80");
}
static void c_utf8_fdd0(Msg *m)
{
        unknown_string(m, "\xef\xb7\x90");
}
static void c_utf8_fffe(Msg *m)
{
        unknown_string(m, "\xef\xbf\xbe");
}
static void c_utf8_1ffff(Msg *m)
{
        unknown_string(m, "\xf0\x9f\xbf\xbf");
}
static void c_sig_255(Msg *m)
{
        char s[256];

        memset(s, 'y', 255);
        s[255] = 0;
        base_call(m, NO(SIGNATURE) | NO(UNIX_FDS));
        field_sig(m, SIGNATURE, s);
}
/* Signatures */
static void signature(Msg *m, const char *s)
{
        base_call(m, NO(SIGNATURE) | NO(UNIX_FDS));
        field_sig(m, SIGNATURE, s);
}
static void c_sig_code(Msg *m)
{
        signature(m, "iz");
}
static void c_sig_code_r(Msg *m)
{
        signature(m, "r");
}
static void c_sig_close(Msg *m)
{
        signature(m, "i)");
}
static void c_sig_array(Msg *m)
{
        signature(m, "sa");
}
static void c_sig_empty_struct(Msg *m)
{
        signature(m, "()");
}
static void c_sig_open_struct(Msg *m)
{
        signature(m, "(ii");
}
static void c_sig_dict_top(Msg *m)
{
        signature(m, "{sv}");
}
static void c_sig_dict_struct(Msg *m)
{
        signature(m, "({sv})");
}
static void c_sig_dict_key(Msg *m)
{
        signature(m, "a{vs}");
}
static void c_sig_dict_one(Msg *m)
{
        signature(m, "a{s}");
}
static void c_sig_dict_three(Msg *m)
{
        signature(m, "a{sss}");
}
static void c_sig_arrays_33(Msg *m)
{
        char s[64];

        memset(s, 'a', 33);
        strcpy(s + 33, "i");
        signature(m, s);
}
static void c_sig_structs_33(Msg *m)
{
        char s[80];

        memset(s, '(', 33);
        s[33] = 'i';
        memset(s + 34, ')', 33);
        s[67] = 0;
        signature(m, s);
}
static void c_sig_structs_dicts_33(Msg *m)
{
        /* 17 structs around 16 dict entries: 33, which the specification allows (it counts only
         * parentheses) and sd-bus refuses (it counts both). */
        char s[256] = "";

        for (int i = 0; i < 17; i++)
                strcat(s, "(");
        for (int i = 0; i < 16; i++)
                strcat(s, "a{s");
        strcat(s, "v");
        for (int i = 0; i < 16; i++)
                strcat(s, "}");
        for (int i = 0; i < 17; i++)
                strcat(s, ")");
        signature(m, s);
}
static void c_variant_sig_invalid(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "a");
}

static const Case cases[] = {
        { "signature of 254 bytes", c_sig_254, NULL, SD_TAKES },
        { "signature nesting 32 arrays and 32 structs", c_sig_nesting_32, NULL, SD_TAKES },
        { "variant signature 'a'", c_variant_sig_invalid, "a signature with an array of nothing",
          SD_REFUSES },
        /* strings */
        { "NUL inside MEMBER", c_nul_inside, "a string with a NUL byte inside", SD_REFUSES },
        { "MEMBER not NUL-terminated", c_not_terminated, "a string that is not NUL-terminated", SD_REFUSES },
        { "SIGNATURE not NUL-terminated", c_sig_not_terminated, "a string that is not NUL-terminated",
         SD_REFUSES },
        { "UTF-8: overlong 2 bytes", c_utf8_overlong, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: overlong 3 bytes", c_utf8_overlong3, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: surrogate", c_utf8_surrogate, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: past U+10FFFF", c_utf8_past_10ffff, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: 5-byte form", c_utf8_five_bytes, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: truncated", c_utf8_truncated, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: lone continuation", c_utf8_continuation, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: U+FDD0", c_utf8_fdd0, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: U+FFFE", c_utf8_fffe, "a string that is not valid UTF-8", SD_REFUSES },
        { "UTF-8: U+1FFFF", c_utf8_1ffff, "a string that is not valid UTF-8", SD_REFUSES },
        { "signature of 255 bytes", c_sig_255, "a signature of 255 bytes", SD_REFUSES },
        /* signatures */
        { "signature: z", c_sig_code, "a signature with a character that is not a type code", SD_REFUSES },
        { "signature: r", c_sig_code_r, "a signature with a character that is not a type code", SD_REFUSES },
        { "signature: )", c_sig_close, "a signature with a character that is not a type code", SD_REFUSES },
        { "signature: array of nothing", c_sig_array, "a signature with an array of nothing", SD_REFUSES },
        { "signature: ()", c_sig_empty_struct, "a signature with a struct that is empty or not closed",
         SD_REFUSES },
        { "signature: (ii", c_sig_open_struct, "a signature with a struct that is empty or not closed",
         SD_REFUSES },
        { "signature: {sv}", c_sig_dict_top, "a signature with a dict entry outside an array", SD_TAKES },
        { "signature: ({sv})", c_sig_dict_struct, "a signature with a dict entry outside an array",
         SD_REFUSES },
        { "signature: a{vs}", c_sig_dict_key,
         "a signature with a dict entry that is not a basic key and one value", SD_REFUSES },
        { "signature: a{s}", c_sig_dict_one,
         "a signature with a dict entry that is not a basic key and one value", SD_REFUSES },
        { "signature: a{sss}", c_sig_dict_three,
         "a signature with a dict entry that is not a basic key and one value", SD_REFUSES },
        { "signature: 33 arrays", c_sig_arrays_33, "a signature nesting more than 32 arrays", SD_REFUSES },
        { "signature: 33 structs", c_sig_structs_33,
         "a signature nesting more than 32 structs and dict entries", SD_REFUSES },
        { "signature: 17 structs, 16 dict entries", c_sig_structs_dicts_33,
         "a signature nesting more than 32 structs and dict entries", SD_REFUSES },
};

static void test_cases(void **state)
{
        run_cases(cases, ELEMENTSOF(cases));
}

/* Names: each rule of each kind, as a header field (where sd-bus checks it too) and directly. */
static void test_names(void **state)
{
        static const struct {
                uint8_t code;
                const char *value;
                bool valid;
                SdVerdict sd; /* for the invalid ones */
        } names[] = {
                { PATH, "/org/fhash/Hasher1/job/_7", true, 0 },
                { PATH, "org/fhash", false, SD_REFUSES },
                { PATH, "/org//fhash", false, SD_REFUSES },
                { PATH, "/org/fhash/", false, SD_REFUSES },
                { PATH, "//", false, SD_REFUSES },
                { PATH, "", false, SD_REFUSES },
                { PATH, "/org/fh-ash", false, SD_REFUSES },
                { PATH, "/org/fh.ash", false, SD_REFUSES },
                { PATH, "/org/fh\xc3\xa9sh", false, SD_REFUSES },
                { INTERFACE, "a.b", true, 0 },
                { INTERFACE, "_a._1", true, 0 },
                { INTERFACE, "org", false, SD_REFUSES },
                { INTERFACE, "", false, SD_REFUSES },
                { INTERFACE, "org.1fhash", false, SD_REFUSES },
                { INTERFACE, "org..fhash", false, SD_REFUSES },
                { INTERFACE, ".org.fhash", false, SD_REFUSES },
                { INTERFACE, "org.fhash.", false, SD_REFUSES },
                { INTERFACE, "org.fh-ash", false, SD_REFUSES },
                { INTERFACE,
                 "org.fh\xae"
                 "ash",
                 false, SD_REFUSES },
                { INTERFACE, ":1.5", false, SD_REFUSES },
                { MEMBER, "_9", true, 0 },
                { MEMBER, "", false, SD_REFUSES },
                { MEMBER, "9Hash", false, SD_TAKES }, /* the specification: not a digit first */
                { MEMBER, "Hash.Fds", false, SD_REFUSES },
                { MEMBER, "Hash-Fds", false, SD_REFUSES },
                { MEMBER, "Hash Fds", false, SD_REFUSES },
                { ERROR_NAME, "org.fhash.Error.Busy", true, 0 },
                { ERROR_NAME, "Busy", false, SD_REFUSES },
                { ERROR_NAME, "org.fhash.Error.9", false, SD_REFUSES },
                { DESTINATION, ":1.42", true, 0 },
                { DESTINATION, ":1.1a-b_c", true, 0 },
                { DESTINATION, "org.fhash-1.Hasher_1", true, 0 },
                { DESTINATION, "-a.b", true, 0 },
                { DESTINATION, ":1", false, SD_REFUSES },
                { DESTINATION, ":", false, SD_REFUSES },
                { DESTINATION, ":.1", false, SD_REFUSES },
                { DESTINATION, "org", false, SD_REFUSES },
                { DESTINATION, "org.1fhash", false, SD_REFUSES },
                { DESTINATION, ".org.fhash", false, SD_REFUSES },
                { DESTINATION, "org..fhash", false, SD_REFUSES },
                { DESTINATION, "org.fh@sh", false, SD_REFUSES },
                { SENDER, ":1.5", true, 0 },
                { SENDER, "org.freedesktop.DBus", true, 0 },
                { SENDER, "1.5", false, SD_REFUSES },
        };
        static const char *want[] = {
                [PATH] = "PATH is not a valid object path",
                [INTERFACE] = "INTERFACE is not a valid interface name",
                [MEMBER] = "MEMBER is not a valid member name",
                [ERROR_NAME] = "ERROR_NAME is not a valid error name",
                [DESTINATION] = "DESTINATION is not a valid bus name",
                [SENDER] = "SENDER is not a valid bus name",
        };
        char name[128], longest[300];

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                for (int be = 0; be < 2; be++) {
                        uint8_t code = names[i].code;
                        Msg m = { .h.be = be };
                        uint8_t *b;
                        size_t len;

                        snprintf(name, sizeof(name), "%s \"%s\" (%s)", want[code], names[i].value,
                                 be ? "BE" : "LE");
                        current = name;
                        if (code == ERROR_NAME)
                                base_error(&m, NO(code));
                        else if (code == SENDER)
                                base_signal(&m, NO(code));
                        else
                                base_call(&m, NO(code));
                        field_str(&m, code, code == PATH ? 'o' : 's', names[i].value);
                        b = msg_finish(&m, &len);
                        check_case(b, len, m.n_fds, names[i].valid ? NULL : want[code], names[i].sd);
                        free(b);
                        msg_free(&m);
                }

        /* 255 bytes at most: the specification's and sd-bus's limit. */
        current = "name lengths";
        memset(longest, 'a', 255);
        longest[255] = 0;
        longest[100] = '.';
        assert_true(dbus_interface_name_is_valid(longest));
        assert_true(dbus_bus_name_is_valid(longest));
        longest[100] = 'a';
        assert_true(dbus_member_name_is_valid(longest));
        longest[0] = ':';
        longest[100] = '.';
        assert_true(dbus_bus_name_is_valid(longest));
        longest[255] = 'a';
        longest[256] = 0;
        assert_false(dbus_bus_name_is_valid(longest));
        longest[0] = 'a';
        assert_false(dbus_interface_name_is_valid(longest));
        assert_false(dbus_bus_name_is_valid(longest));
        longest[100] = 'a';
        assert_false(dbus_member_name_is_valid(longest));
        assert_false(dbus_object_path_is_valid(NULL));
        assert_false(dbus_member_name_is_valid(NULL));
        assert_false(dbus_interface_name_is_valid(NULL));
        assert_false(dbus_bus_name_is_valid(NULL));
        /* And as header fields, one byte over: both refuse. */
        for (int be = 0; be < 2; be++) {
                Msg m = { .h.be = be };
                uint8_t *b;
                size_t len;

                current = "MEMBER of 256 bytes";
                base_call(&m, NO(MEMBER));
                field_str(&m, MEMBER, 's', longest);
                b = msg_finish(&m, &len);
                check_case(b, len, m.n_fds, "MEMBER is not a valid member name", SD_REFUSES);
                free(b);
                current = "MEMBER of 255 bytes";
                longest[255] = 0;
                base_call(&m, NO(MEMBER));
                field_str(&m, MEMBER, 's', longest);
                b = msg_finish(&m, &len);
                check_case(b, len, m.n_fds, NULL, SD_TAKES);
                longest[255] = 'a';
                free(b);
                msg_free(&m);
        }
}

int main(int argc, char *argv[])
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cases),
                cmocka_unit_test(test_names),
        };

        if (argc == 3 && streq(argv[1], "--corpus"))
                return write_corpus(argv[2], "strings", cases, ELEMENTSOF(cases));
        return cmocka_run_group_tests(tests, test_oracle_setup, test_oracle_teardown);
}
