/* SPDX-License-Identifier: MIT */
/* test-dbus-message-fds.c: UNIX_FDS and the fds that came, the rewrite, the messages that leaked fds */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/test-dbus-cases.h"

/*
 * What a message says of its fds and what the gate does with them: UNIX_FDS against the fds that
 * came with the message, signatures that hold handles, the rewrite that hands a message to sd-bus
 * without its fds (byte by byte), and the messages with which a fuzzer leaked fhashd's fds. The
 * cases and their checks are test-dbus-cases.h's.
 */

/* ---- the cases ---- */

static void c_return_fds(Msg *m)
{
        base_return(m, NO(SIGNATURE));
        field_sig(m, SIGNATURE, "a{sh}");
        field_u32(m, UNIX_FDS, 3);
        m->n_fds = 3;
        buf_u32(&m->body, 0); /* an empty dict: the fds are not the header's business */
        buf_pad(&m->body, 8);
}
static void c_fds_zero(Msg *m)
{
        base_call(m, NO(UNIX_FDS));
        field_u32(m, UNIX_FDS, 0);
}
static void c_fds_more(Msg *m)
{
        base_call(m, 0);
        m->n_fds = 1;
}
static void c_fds_fewer(Msg *m)
{
        base_call(m, 0);
        m->n_fds = 3;
}
static void c_fds_undeclared(Msg *m)
{
        base_call(m, NO(UNIX_FDS));
        m->n_fds = 1;
}

static const Case cases[] = {
        { "method return with fds", c_return_fds, NULL, SD_TAKES },
        { "UNIX_FDS 0", c_fds_zero, "UNIX_FDS is 0", SD_TAKES },
        { "UNIX_FDS 2, 1 fd", c_fds_more, "UNIX_FDS says more fds than came with the message", SD_REFUSES },
        { "UNIX_FDS 2, 3 fds", c_fds_fewer, "UNIX_FDS says fewer fds than came with the message",
          SD_REFUSES },
        { "no UNIX_FDS, 1 fd", c_fds_undeclared, "fds came with a message that has no UNIX_FDS field",
         SD_REFUSES },
};

static void test_signature_has_fds(void **state)
{
        assert_false(dbus_signature_has_fds(NULL));
        assert_false(dbus_signature_has_fds(""));
        assert_false(dbus_signature_has_fds("a{sv}s"));
        assert_true(dbus_signature_has_fds("h"));
        assert_true(dbus_signature_has_fds("a{sv}(ayh)"));
}

static void test_cases(void **state)
{
        run_cases(cases, ELEMENTSOF(cases));
}

/* The rewrite's own refusals, and what it writes, byte by byte, for a message with fds. */
static void test_rewrite(void **state)
{
        uint8_t out[512], expect[512];
        const char *why = NULL;
        DBusHeader h, h2;
        Msg m = {}, e = {};
        uint8_t *b, *eb;
        size_t len, elen;
        ssize_t n;

        current = "rewrite";
        for (int be = 0; be < 2; be++) {
                m.h.be = e.h.be = be;
                /* UNIX_FDS between two fields, a SIGNATURE with handles at several depths. */
                msg_start(&m, DBUS_MESSAGE_METHOD_CALL);
                field_str(&m, PATH, 'o', "/org/fhash/Hasher1");
                field_u32(&m, UNIX_FDS, 3);
                field_str(&m, MEMBER, 's', "HashFds");
                field_sig(&m, SIGNATURE, "ha{sh}(ih)");
                field(&m, 200, "h");
                buf_u32(&m.h, 1);
                buf_u32(&m.body, 0);
                b = msg_finish(&m, &len);
                assert_int_equal(dbus_message_parse(b, len, 3, &h, &why), 0);

                /* What it must write: the same fields but UNIX_FDS, h -> u in SIGNATURE only. */
                msg_start(&e, DBUS_MESSAGE_METHOD_CALL);
                field_str(&e, PATH, 'o', "/org/fhash/Hasher1");
                field_str(&e, MEMBER, 's', "HashFdsChecked");
                field_sig(&e, SIGNATURE, "ua{su}(iu)");
                field(&e, 200, "h");
                buf_u32(&e.h, 1);
                buf_u32(&e.body, 0);
                eb = msg_finish(&e, &elen);

                n = dbus_message_rewrite(b, &h, "HashFdsChecked", DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out));
                assert_int_equal(n, (ssize_t)(elen - 4));
                memcpy(expect, eb, elen - 4);
                assert_memory_equal(out, expect, (size_t)n);
                memcpy(out + n, b + len - 4, 4);
                assert_int_equal(dbus_message_parse(out, (size_t)n + 4, 0, &h2, &why), 0);
                assert_string_equal(h2.member, "HashFdsChecked");
                assert_string_equal(h2.signature, "ua{su}(iu)");
                /* Without DBUS_REWRITE_FDS_AS_INDEXES the signature stays: only UNIX_FDS goes. */
                n = dbus_message_rewrite(b, &h, NULL, 0, out, sizeof(out));
                assert_true(n > 0);
                memcpy(out + n, b + len - 4, 4);
                assert_int_equal(dbus_message_parse(out, (size_t)n + 4, 0, &h2, &why), 0);
                assert_string_equal(h2.member, "HashFds");
                assert_string_equal(h2.signature, "ha{sh}(ih)");
                assert_false(h2.has_unix_fds);

                /* A new member that is not one, or no MEMBER to replace. */
                assert_int_equal(dbus_message_rewrite(b, &h, "Hash.Fds", DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out)), -EINVAL);
                assert_int_equal(dbus_message_rewrite(b, &h, "", DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out)), -EINVAL);
                free(b);
                free(eb);
                base_return(&m, 0);
                b = msg_finish(&m, &len);
                assert_int_equal(dbus_message_parse(b, len, 0, &h, &why), 0);
                assert_int_equal(dbus_message_rewrite(b, &h, "Ping", DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out)), -EINVAL);
                /* Bytes that are not the message h describes: another byte order, a field changed. */
                b[0] = be ? 'l' : 'B';
                assert_int_equal(dbus_message_rewrite(b, &h, NULL, DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out)), -EBADMSG);
                b[0] = be ? 'B' : 'l';
                assert_int_equal(dbus_message_rewrite(b, &h, NULL, DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out)), 16 + 48);
                b[h.destination - (const char *)b] = '.';
                assert_int_equal(dbus_message_rewrite(b, &h, NULL, DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out)), -EBADMSG);
                free(b);
        }
        msg_free(&m);
        msg_free(&e);
}

/* The three messages with which the 2026-11-26 review's fuzzer leaked fhashd's fds (issue 24, N1):
 * each is refused, with the rule it breaks, whatever fds came with it. */
static void test_leaked_messages(void **state)
{
        static const struct {
                const char *file, *why;
        } leaks[] = {
                /* "org.fhash.Hasher1.Manager" with 0xae in place of its '.' */
                { "leakmsg-leak-1-0.pkl-0.bin", "INTERFACE is not a valid interface name" },
                /* INTERFACE's NUL overwritten with 0x10 */
                { "leakmsg-leak-1-3.pkl-1.bin", "a string that is not NUL-terminated" },
                /* PATH "//rg/fhash/Hasher1" */
                { "leakmsg-leak-1-3.pkl-4.bin", "PATH is not a valid object path" },
        };
        const char *dir = test_data_dir();
        char path[4608];

        for (size_t i = 0; i < ELEMENTSOF(leaks); i++) {
                size_t len;
                uint8_t *b;

                snprintf(path, sizeof(path), "%s/%s", dir, leaks[i].file);
                b = test_read_file(path, &len);
                for (size_t n_fds = 0; n_fds <= 4; n_fds++) {
                        const char *why = NULL;
                        DBusHeader h;

                        current = leaks[i].file;
                        assert_int_equal(dbus_message_parse(b, len, n_fds, &h, &why), -EBADMSG);
                        assert_string_equal(why, leaks[i].why);
                }
                /* sd-bus 252 drops each and keeps the fds that came with it: why the gate exists. */
                check_case(b, len, 1, leaks[i].why, SD_REFUSES);
                free(b);
        }
}

int main(int argc, char *argv[])
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_signature_has_fds),
                cmocka_unit_test(test_cases),
                cmocka_unit_test(test_rewrite),
                cmocka_unit_test(test_leaked_messages),
        };

        if (argc == 3 && streq(argv[1], "--corpus"))
                return write_corpus(argv[2], "fds", cases, ELEMENTSOF(cases));
        return cmocka_run_group_tests(tests, test_oracle_setup, test_oracle_teardown);
}
