/* SPDX-License-Identifier: MIT */
/* test-libfhash-api.c: libfhash's algorithm table by name and its bus helpers, as a program sees them:
 * the public header and libfhash.so, nothing else of the tree */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <fhash/fhash-dbus.h>
#include <fhash/fhash.h>

/* Every name has a size, a tag that reads back as the same name (the very string of the table) at
 * its default length, and no length when it takes none. */
static void test_every_algorithm(void **state)
{
        const char *const *names = fhash_algorithms();
        size_t n = 0;

        for (; names[n]; n++) {
                const char *name = names[n];
                unsigned bits = 1;
                char tag[32];

                assert_true(fhash_algorithm_digest_size(name, 0) > 0);
                assert_true(fhash_algorithm_digest_size(name, 0) <= FHASH_DIGEST_MAX);
                assert_true(fhash_algorithm_digest_max(name) >= fhash_algorithm_digest_size(name, 0));
                assert_non_null(fhash_algorithm_tag(name, 0, tag, sizeof(tag)));
                assert_ptr_equal(fhash_algorithm_from_tag(tag, strlen(tag), &bits), name);
                assert_int_equal(bits, 0);
                assert_ptr_equal(fhash_algorithm_from_tag(name, strlen(name), NULL), name);
                if (!(fhash_algorithm_features(name) & FHASH_ALGORITHM_LENGTH)) {
                        assert_int_equal(fhash_algorithm_digest_max(name), fhash_algorithm_digest_size(name, 0));
                        assert_int_equal(fhash_algorithm_digest_size(name, 8), 0);
                        assert_null(fhash_algorithm_tag(name, 8, tag, sizeof(tag)));
                }
        }
        assert_true(n >= 21);
}

static void test_sizes(void **state)
{
        assert_int_equal(fhash_algorithm_digest_size("sha256", 0), 32);
        assert_int_equal(fhash_algorithm_digest_size("xxh3", 0), 8);
        assert_int_equal(fhash_algorithm_digest_size("crc32c", 0), 4);
        assert_int_equal(fhash_algorithm_digest_size("blake2b", 0), 64);
        assert_int_equal(fhash_algorithm_digest_size("blake2b", 256), 32);
        assert_int_equal(fhash_algorithm_digest_size("blake2s", 8), 1);
        assert_int_equal(fhash_algorithm_digest_size("blake3", 512), 64);
        /* Not whole bytes, past the maximum, a fixed size, nothing of ours. */
        assert_int_equal(fhash_algorithm_digest_size("blake2b", 260), 0);
        assert_int_equal(fhash_algorithm_digest_size("blake2b", 520), 0);
        assert_int_equal(fhash_algorithm_digest_size("blake2s", 264), 0);
        assert_int_equal(fhash_algorithm_digest_size("sha256", 256), 0);
        assert_int_equal(fhash_algorithm_digest_size("sha257", 0), 0);
        assert_int_equal(fhash_algorithm_digest_size("SHA256", 0), 0);
        assert_int_equal(fhash_algorithm_digest_size(NULL, 0), 0);

        assert_int_equal(fhash_algorithm_digest_max("blake2b"), 64);
        assert_int_equal(fhash_algorithm_digest_max("blake2s"), 32);
        assert_int_equal(fhash_algorithm_digest_max("blake3"), FHASH_DIGEST_MAX);
        assert_int_equal(fhash_algorithm_digest_max("md5"), 16);
        assert_int_equal(fhash_algorithm_digest_max("nope"), 0);
        assert_int_equal(fhash_algorithm_digest_max(NULL), 0);
}

static void test_features(void **state)
{
        assert_int_equal(fhash_algorithm_features("sha256"), 0);
        assert_int_equal(fhash_algorithm_features("blake2b"), FHASH_ALGORITHM_LENGTH);
        assert_int_equal(fhash_algorithm_features("blake3"),
                         FHASH_ALGORITHM_LENGTH | FHASH_ALGORITHM_KEY | FHASH_ALGORITHM_DERIVE_KEY);
        assert_int_equal(fhash_algorithm_features("fsverity"), FHASH_ALGORITHM_BLOCK_SIZE);
        assert_int_equal(fhash_algorithm_features("fsverity-sha512"), FHASH_ALGORITHM_BLOCK_SIZE);
        assert_int_equal(fhash_algorithm_features("xxh3"), FHASH_ALGORITHM_ALWAYS_TAGGED);
        assert_int_equal(fhash_algorithm_features("crc32c"), FHASH_ALGORITHM_ALWAYS_TAGGED);
        assert_int_equal(fhash_algorithm_features("xxh64"), 0);
        assert_int_equal(fhash_algorithm_features("nope"), 0);
        assert_int_equal(fhash_algorithm_features(NULL), 0);
}

/* The tags the reference tools write, and read back with the length they say. */
static void test_tags(void **state)
{
        char buf[32];
        unsigned bits = 7;

        assert_string_equal(fhash_algorithm_tag("sha256", 0, buf, sizeof(buf)), "SHA256");
        assert_string_equal(fhash_algorithm_tag("md5", 0, buf, sizeof(buf)), "MD5");
        assert_string_equal(fhash_algorithm_tag("xxh64", 0, buf, sizeof(buf)), "XXH64");
        assert_string_equal(fhash_algorithm_tag("sha3-256", 0, buf, sizeof(buf)), "SHA3-256");
        assert_string_equal(fhash_algorithm_tag("blake2b", 0, buf, sizeof(buf)), "BLAKE2b");
        assert_string_equal(fhash_algorithm_tag("blake2b", 512, buf, sizeof(buf)), "BLAKE2b");
        assert_string_equal(fhash_algorithm_tag("blake2b", 256, buf, sizeof(buf)), "BLAKE2b-256");
        assert_string_equal(fhash_algorithm_tag("blake3", 256, buf, sizeof(buf)), "BLAKE3");
        assert_null(fhash_algorithm_tag("blake2b", 256, buf, 11));  /* "BLAKE2b-256" and its NUL: 12 */
        assert_non_null(fhash_algorithm_tag("blake2b", 256, buf, 12));
        assert_null(fhash_algorithm_tag("nope", 0, buf, sizeof(buf)));

        assert_string_equal(fhash_algorithm_from_tag("BLAKE2b-256", 11, &bits), "blake2b");
        assert_int_equal(bits, 256);
        assert_string_equal(fhash_algorithm_from_tag("BLAKE2s-128", 11, &bits), "blake2s");
        assert_int_equal(bits, 128);
        /* Only the n bytes count: a line's tag before its " (name)". */
        assert_string_equal(fhash_algorithm_from_tag("SHA256 (file) = ab", 6, &bits), "sha256");
        assert_int_equal(bits, 0);
        assert_string_equal(fhash_algorithm_from_tag("SHA2-384", 8, NULL), "sha384");
        bits = 7;
        assert_null(fhash_algorithm_from_tag("BLAKE2b-260", 11, &bits));
        assert_null(fhash_algorithm_from_tag("BLAKE2b-0256", 12, &bits));
        assert_null(fhash_algorithm_from_tag("SHA256-128", 10, &bits));
        assert_null(fhash_algorithm_from_tag("SHA25", 5, &bits));
        assert_null(fhash_algorithm_from_tag(NULL, 0, &bits));
        assert_int_equal(bits, 7);  /* untouched on failure */
}

static void test_addresses(void **state)
{
        assert_int_equal(fhash_bus_address_is_valid("unix:path=/run/dbus/system_bus_socket"), 1);
        assert_int_equal(fhash_bus_address_is_valid("tcp:host=localhost,port=1;unix:abstract=x"), 1);
        assert_int_equal(fhash_bus_address_is_valid("/run/dbus/system_bus_socket"), 0);
        assert_int_equal(fhash_bus_address_is_valid("unix:"), 0);
        assert_int_equal(fhash_bus_address_is_valid(""), 0);
        assert_int_equal(fhash_bus_address_is_valid(NULL), 0);
}

/* No bus at the address: -ENOTCONN, libfhash's NotReachable, and not "no fhashd on it". */
static void test_bus_open_no_bus(void **state)
{
        char dir[] = "/tmp/test-libfhash-api-XXXXXX", address[128];
        fhash_client_options o = { .bus = FHASH_BUS_ADDRESS, .address = address };
        fhash_error e = {};
        sd_bus *bus = NULL;

        assert_non_null(mkdtemp(dir));
        (void)snprintf(address, sizeof(address), "unix:path=%s/none", dir);
        assert_int_equal(fhash_bus_open(&o, &bus, &e), -ENOTCONN);
        assert_null(bus);
        assert_int_equal(e.error, -ENOTCONN);
        assert_string_equal(e.name, FHASH_ERROR_NOT_REACHABLE);
        assert_non_null(strstr(e.message, dir));
        assert_int_equal(fhash_error_is_no_daemon(&e), 0);
        assert_int_equal(rmdir(dir), 0);
}

static void test_bus_open_bad_options(void **state)
{
        fhash_client_options o = { .bus = FHASH_BUS_ADDRESS, .address = "nowhere" };
        fhash_error e = {};
        sd_bus *bus = NULL;

        assert_int_equal(fhash_bus_open(&o, &bus, &e), -EINVAL);
        assert_non_null(strstr(e.message, "not a D-Bus address"));
        o = (fhash_client_options){ .flags = FHASH_CLIENT_LOCAL };
        assert_int_equal(fhash_bus_open(&o, &bus, &e), -EINVAL);
        o = (fhash_client_options){ .reserved[3] = 1 };
        assert_int_equal(fhash_bus_open(&o, &bus, &e), -EINVAL);
        assert_int_equal(fhash_bus_open(NULL, NULL, &e), -EINVAL);
        assert_null(bus);
}

/* The names a bus answers with when nothing on it is or starts fhashd, and not others. */
static void test_error_is_no_daemon(void **state)
{
        static const char *const yes[] = { "org.freedesktop.DBus.Error.ServiceUnknown",
                                           "org.freedesktop.DBus.Error.NameHasNoOwner",
                                           "org.freedesktop.DBus.Error.Spawn.ServiceNotFound" };
        static const char *const no[] = { FHASH_ERROR_NOT_REACHABLE, "org.freedesktop.DBus.Error.AccessDenied",
                                          FHASH_ERROR_BUSY, "" };
        fhash_error e = { .error = -ENOTCONN };

        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                (void)snprintf(e.name, sizeof(e.name), "%s", yes[i]);
                assert_int_equal(fhash_error_is_no_daemon(&e), 1);
        }
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
                (void)snprintf(e.name, sizeof(e.name), "%s", no[i]);
                assert_int_equal(fhash_error_is_no_daemon(&e), 0);
        }
        /* A name left over in an error that says nothing failed. */
        e = (fhash_error){ .name = "org.freedesktop.DBus.Error.ServiceUnknown" };
        assert_int_equal(fhash_error_is_no_daemon(&e), 0);
        assert_int_equal(fhash_error_is_no_daemon(NULL), 0);
}

/* Names as a program prints them: quoted for a diagnostic, a JSON string, what a terminal acts on. */
static void name_is(const char *name, fhash_name_style style, const char *want)
{
        char *got = NULL;

        assert_int_equal(fhash_name_format(name, style, &got), 0);
        assert_string_equal(got, want);
        free(got);
}

static void test_names(void **state)
{
        char *got = NULL;
        size_t n = 99;

        (void)state;
        name_is("plain", FHASH_NAME_QUOTE, "plain");
        name_is("sp ace", FHASH_NAME_QUOTE, "'sp ace'");
        name_is("a'b", FHASH_NAME_QUOTE, "\"a'b\"");
        name_is("no\nsuch", FHASH_NAME_QUOTE, "'no'$'\\n''such'");
        name_is("x\xff", FHASH_NAME_QUOTE, "'x'$'\\377'");
        name_is("plain", FHASH_NAME_JSON, "\"plain\"");
        name_is("é \"q\" \\ \n\t\x01", FHASH_NAME_JSON, "\"é \\\"q\\\" \\\\ \\n\\t\\u0001\"");
        name_is("x\xff\xc3", FHASH_NAME_JSON, "\"x\\udcff\\udcc3\"");
        assert_int_equal(fhash_name_format(NULL, FHASH_NAME_QUOTE, &got), -EINVAL);
        assert_int_equal(fhash_name_format("a", (fhash_name_style)7, &got), -EINVAL);
        assert_null(got);

        assert_int_equal(fhash_name_char("a\x1b", &n), 0);
        assert_int_equal(n, 1);
        assert_int_equal(fhash_name_char("é", &n), 0);
        assert_int_equal(n, 2);
        assert_int_equal(fhash_name_char("", &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(fhash_name_char(NULL, &n), 0);
        assert_int_equal(n, 0);
        assert_int_equal(fhash_name_char("\x1b[2J", &n), 1);
        assert_int_equal(n, 1);
        assert_int_equal(fhash_name_char("\x7f", &n), 1);
        assert_int_equal(n, 1);
        assert_int_equal(fhash_name_char("\xc2\x9b", &n), 1); /* U+009B, CSI as a C1 control */
        assert_int_equal(n, 2);
        assert_int_equal(fhash_name_char("\x9b", &n), 1);      /* alone: not UTF-8 */
        assert_int_equal(n, 1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_algorithm), cmocka_unit_test(test_sizes),
                cmocka_unit_test(test_features),        cmocka_unit_test(test_tags),
                cmocka_unit_test(test_addresses),       cmocka_unit_test(test_bus_open_no_bus),
                cmocka_unit_test(test_bus_open_bad_options), cmocka_unit_test(test_error_is_no_daemon),
                cmocka_unit_test(test_names),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
