/* SPDX-License-Identifier: MIT */
/* test-dbus-message-unknown.c: unknown header fields, walked as sd-bus walks them or refused */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "daemon/test-dbus-cases.h"

/*
 * Header fields of codes the specification does not define: the gate walks their values as the
 * specification says and sd-bus 252 does, and refuses what sd-bus would read otherwise (an array
 * of more than one element, structs and dict entries) or what no walker should have to follow
 * (values nested more than 64 deep). The cases and their checks are test-dbus-cases.h's.
 */

/* ---- the cases ---- */

static void c_unknown_basic(Msg *m)
{
        /* Unknown codes, each with a type sd-bus walks the way the specification does. */
        base_call(m, 0);
        field(m, 10, "y");
        buf_u8(&m->h, 0xff);
        field(m, 11, "b");
        buf_u32(&m->h, 1);
        field(m, 12, "n");
        buf_uint(&m->h, 0x8000, 2);
        field(m, 13, "q");
        buf_uint(&m->h, 0xffff, 2);
        field(m, 14, "i");
        buf_u32(&m->h, 0x80000000u);
        field(m, 15, "x");
        buf_uint(&m->h, 1, 8);
        field(m, 16, "t");
        buf_uint(&m->h, UINT64_MAX, 8);
        field(m, 17, "d");
        buf_uint(&m->h, 0x3ff0000000000000u, 8);
        field(m, 18, "h");
        buf_u32(&m->h, 7);
        field(m, 255, "s");
        buf_str(&m->h, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbd");
        field(m, 19, "o");
        buf_str(&m->h, "/a/b_1");
        field(m, 20, "g");
        buf_sig(&m->h, "a{sv}(ii)");
        field(m, 10, "u"); /* unknown codes may repeat */
        buf_u32(&m->h, 3);
}
static void c_unknown_containers(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "v"); /* a variant holding a variant holding an array of one int */
        buf_sig(&m->h, "v");
        buf_sig(&m->h, "ai");
        buf_u32(&m->h, 4);
        buf_u32(&m->h, 42);
        field(m, 11, "as"); /* one element: its length, "ab", its NUL */
        buf_u32(&m->h, 7);
        buf_str(&m->h, "ab");
        field(m, 12, "at"); /* empty, with the padding to 8 after the length */
        buf_u32(&m->h, 0);
        buf_pad(&m->h, 8);
        field(m, 13, "a(ii)"); /* empty arrays of structs and dict entries: nothing to walk */
        buf_u32(&m->h, 0);
        buf_pad(&m->h, 8);
        field(m, 14, "a{sv}");
        buf_u32(&m->h, 0);
        buf_pad(&m->h, 8);
        field(m, 15, "aay"); /* one array of one byte */
        buf_u32(&m->h, 5);
        buf_u32(&m->h, 1);
        buf_u8(&m->h, 7);
        field(m, 16, "an");
        buf_u32(&m->h, 2);
        buf_uint(&m->h, 0xfffe, 2);
}
static void nested_variants(Msg *m, int n)
{
        base_call(m, 0);
        field(m, 10, "v");
        for (int i = 1; i < n; i++)
                buf_sig(&m->h, "v");
        buf_sig(&m->h, "y");
        buf_u8(&m->h, 1);
}
/* variants nested variants, holding arrays nested arrays of one element each, around a byte. */
static void nested_arrays(Msg *m, int variants, int arrays)
{
        char sig[64];

        base_call(m, 0);
        field(m, 10, "v");
        for (int i = 1; i < variants; i++)
                buf_sig(&m->h, "v");
        memset(sig, 'a', (size_t)arrays);
        strcpy(sig + arrays, "y");
        buf_sig(&m->h, sig);
        for (int level = arrays; level > 0; level--)
                buf_u32(&m->h, (uint32_t)(4 * (level - 1) + 1));
        buf_u8(&m->h, 7);
}
static void c_depth_64_arrays(Msg *m)
{
        /* 29 variants (depths 3 to 31), 32 arrays (32 to 63), the byte at 64. */
        nested_arrays(m, 29, 32);
}
static void c_depth_65_arrays(Msg *m)
{
        nested_arrays(m, 30, 32);
}
static void c_depth_64(Msg *m)
{
        /* A header field's value is three deep (the fields array, its struct, the variant): 61
         * variants put the byte inside them at depth 64. */
        nested_variants(m, 61);
}
/* Unknown fields */
static void c_boolean_2(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "b");
        buf_u32(&m->h, 2);
}
static void c_array_too_big(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "ay");
        buf_u32(&m->h, (uint32_t)DBUS_ARRAY_SIZE_MAX + 1);
        buf_u8(&m->h, 1);
}
static void c_array_length(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "au");
        buf_u32(&m->h, 2); /* 2 bytes, but its one element takes 4 */
        buf_u32(&m->h, 0);
}
static void c_array_two(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "ay");
        buf_u32(&m->h, 2);
        buf_u8(&m->h, 1);
        buf_u8(&m->h, 2);
}
static void c_array_zeros(Msg *m)
{
        /* sd-bus reads the first byte, then takes the zeros after it for the padding before the
         * next field. */
        size_t start;

        base_call(m, NO(MEMBER));
        field(m, 10, "ay");
        buf_u32(&m->h, 0);
        start = m->h.n;
        buf_u8(&m->h, 1);
        buf_pad(&m->h, 8);
        patch_u32(&m->h, start - 4, (uint32_t)(m->h.n - start));
        field_str(m, MEMBER, 's', "HashFds");
}
static void c_struct(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "(yy)");
        buf_pad(&m->h, 8);
        buf_u8(&m->h, 1);
        buf_u8(&m->h, 2);
}
static void c_dict_entry(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "a{yy}");
        buf_u32(&m->h, 2);
        buf_pad(&m->h, 8);
        buf_u8(&m->h, 1);
        buf_u8(&m->h, 2);
}
static void c_struct_in_variant(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "v");
        buf_sig(&m->h, "(s)");
        buf_pad(&m->h, 8);
        buf_str(&m->h, "x");
}
static void c_variant_two_types(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "v");
        buf_sig(&m->h, "yy");
        buf_u8(&m->h, 1);
        buf_u8(&m->h, 2);
}
static void c_unknown_path(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "o");
        buf_str(&m->h, "/a/");
}
static void c_unknown_signature(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "g");
        buf_sig(&m->h, "a");
}
static void c_depth_65(Msg *m)
{
        nested_variants(m, 62);
}
static void c_depth_100000(Msg *m)
{
        /* sd-bus 252's message_skip_fields() recurses once per variant without a bound: this
         * 300 KB message (about 66,000 variants or more) overflows an 8 MiB stack and kills the
         * process that reads it. Not sent to sd-bus here, for that reason. */
        nested_variants(m, 100000);
}
static void c_empty_array_padding(Msg *m)
{
        base_call(m, 0);
        field(m, 10, "at");
        buf_u32(&m->h, 0);
        m->h.fill = 1;
        buf_pad(&m->h, 8);
}

static const Case cases[] = {
        { "unknown fields of basic types", c_unknown_basic, NULL, SD_TAKES },
        { "unknown fields of containers sd-bus walks right", c_unknown_containers, NULL, SD_TAKES },
        { "values 64 deep", c_depth_64, NULL, SD_TAKES },
        { "values 64 deep in arrays", c_depth_64_arrays, NULL, SD_TAKES },
        /* unknown fields */
        { "BOOLEAN 2", c_boolean_2, "a BOOLEAN that is neither 0 nor 1", SD_TAKES },
        { "array over 64 MiB", c_array_too_big, "an array longer than 64 MiB", SD_REFUSES },
        { "array length inside an element", c_array_length,
         "an array whose elements do not end at its length", SD_TAKES },
        { "array of two bytes", c_array_two, "an array of more than one element in an unknown header field",
         SD_REFUSES },
        { "array of a byte and zeros", c_array_zeros,
         "an array of more than one element in an unknown header field", SD_TAKES },
        { "struct", c_struct, "a struct or dict entry in an unknown header field", SD_REFUSES },
        { "dict entry", c_dict_entry, "a struct or dict entry in an unknown header field", SD_REFUSES },
        { "struct in a variant", c_struct_in_variant, "a struct or dict entry in an unknown header field",
         SD_REFUSES },
        { "variant of two types inside", c_variant_two_types,
         "a variant whose signature is not one complete type", SD_TAKES },
        { "object path in an unknown field", c_unknown_path, "an object path that is not valid",
          SD_REFUSES },
        { "signature in an unknown field", c_unknown_signature, "a signature with an array of nothing",
         SD_REFUSES },
        { "values 65 deep", c_depth_65, "values nested more than 64 deep", SD_TAKES },
        { "values 65 deep in arrays", c_depth_65_arrays, "values nested more than 64 deep", SD_TAKES },
        { "variants 100,000 deep", c_depth_100000, "values nested more than 64 deep", SD_NOT_ASKED },
        { "padding of an empty array", c_empty_array_padding, "alignment padding that is not zero",
         SD_REFUSES },
};

static void test_cases(void **state)
{
        run_cases(cases, ELEMENTSOF(cases));
}

/* What an unknown field's array hides from a walker that reads all of it, sd-bus 252 reads as header
 * fields: here an INTERFACE that the gate, without its rule against such arrays, would not see. */
static void test_sd_bus_misreads_arrays(void **state)
{
        static const char iface[] = "org.evil.Iface";
        sd_bus_message *sm = NULL;
        const char *why = NULL;
        Msg m = {};
        DBusHeader h;
        uint8_t *b;
        size_t len, start;

        current = "array hiding a field";
        base_call(&m, NO(INTERFACE) | NO(SIGNATURE) | NO(UNIX_FDS));
        field(&m, 10, "ay");
        buf_u32(&m.h, 0); /* the length, written below */
        start = m.h.n;
        /* The first element, which sd-bus skips; then, 8-aligned, the bytes of an INTERFACE field. */
        buf_u8(&m.h, 1);
        buf_pad(&m.h, 8);
        buf_u8(&m.h, INTERFACE);
        buf_sig(&m.h, "s");
        buf_str(&m.h, iface);
        patch_u32(&m.h, start - 4, (uint32_t)(m.h.n - start));
        b = msg_finish(&m, &len);

        assert_int_equal(dbus_message_parse(b, len, 0, &h, &why), -EBADMSG);
        assert_string_equal(why, "an array of more than one element in an unknown header field");
        assert_int_equal(oracle_verdict(oracle, b, len, 0, &sm, NULL), 1);
        assert_string_equal(sd_bus_message_get_interface(sm), iface);
        print_message("# sd-bus 252 reads INTERFACE %s out of an unknown field's byte array\n",
                      sd_bus_message_get_interface(sm));
        sd_bus_message_unref(sm);
        free(b);
        msg_free(&m);
}

int main(int argc, char *argv[])
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_cases),
                cmocka_unit_test(test_sd_bus_misreads_arrays),
        };

        if (argc == 3 && streq(argv[1], "--corpus"))
                return write_corpus(argv[2], "unknown", cases, ELEMENTSOF(cases));
        return cmocka_run_group_tests(tests, test_oracle_setup, test_oracle_teardown);
}
