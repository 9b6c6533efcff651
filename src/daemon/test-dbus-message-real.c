/* SPDX-License-Identifier: MIT */
/* test-dbus-message-real.c: messages made by sd-bus, GDBus and dbus-daemon, taken as they are */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/test-dbus-cases.h"

/*
 * Messages that real implementations wrote, each through every check a message the gate takes must
 * pass (check_valid(): parsed, its fds counted, rewritten, and taken by sd-bus as the gate read
 * it): sd-bus's own, written to the oracle's socket, and GDBus's and dbus-daemon's, kept in
 * tests/data/dbus-message.
 */

/* Messages made by sd-bus itself: it writes them to the socket, the test reads them as the gate
 * would, with their fds. */
static void test_made_by_sd_bus(void **state)
{
        sd_bus *bus = oracle_bus(oracle);
        sd_bus_message *m = NULL, *call = NULL, *reply = NULL;
        uint8_t *buf = malloc(1 << 20);
        int fds[16], null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        size_t len, n_fds;
        uint64_t cookie;

        assert_non_null(buf);
        assert_true(null >= 0);

        current = "sd-bus method call with fds";
        assert_true(sd_bus_message_new_method_call(bus, &m, "org.fhash.Hasher1", "/org/fhash/Hasher1",
                                                   "org.fhash.Hasher1.Manager", "HashFds") >= 0);
        assert_true(sd_bus_message_append(m, "ahsa{sv}", 2, null, null, "sha256", 2, "strategy", "s", "mmap",
                                          "max-size", "t", UINT64_C(1) << 40) >= 0);
        assert_true(sd_bus_send(bus, m, &cookie) >= 0);
        m = sd_bus_message_unref(m);
        assert_int_equal(oracle_read(oracle, buf, 1 << 20, &len, fds, 16, &n_fds), 0);
        assert_int_equal(n_fds, 2);
        check_valid(oracle, buf, len, n_fds);
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);
        /* The same call as sd-bus takes it, to answer. */
        assert_int_equal(oracle_verdict(oracle, buf, len, 0, &call, NULL), 0); /* no fds: dropped */
        {
                DBusHeader h;
                uint8_t out[4096];
                ssize_t n;

                assert_int_equal(dbus_message_parse(buf, len, 2, &h, NULL), 0);
                n = dbus_message_rewrite(buf, &h, NULL, DBUS_REWRITE_FDS_AS_INDEXES, out, sizeof(out));
                assert_true(n > 0);
                memcpy(out + n, buf + 16 + ALIGN_TO((size_t)h.fields_size, 8), h.body_size);
                assert_int_equal(oracle_verdict(oracle, out, (size_t)n + h.body_size, 0, &call, NULL), 1);
        }

        current = "sd-bus method call, no reply expected, handles deep in containers";
        assert_true(sd_bus_message_new_method_call(bus, &m, NULL, "/", "org.fhash.Test", "Deep") >= 0);
        assert_true(sd_bus_message_set_expect_reply(m, 0) >= 0);
        assert_true(sd_bus_message_set_auto_start(m, 0) >= 0);
        assert_true(sd_bus_message_append(m, "a(ih)v", 1, 5, null, "h", null) >= 0);
        assert_true(sd_bus_send(bus, m, NULL) >= 0);
        m = sd_bus_message_unref(m);
        assert_int_equal(oracle_read(oracle, buf, 1 << 20, &len, fds, 16, &n_fds), 0);
        assert_int_equal(n_fds, 2);
        check_valid(oracle, buf, len, n_fds);
        for (size_t i = 0; i < n_fds; i++)
                close(fds[i]);

        current = "sd-bus method return";
        assert_true(sd_bus_message_new_method_return(call, &reply) >= 0);
        assert_true(sd_bus_message_append(reply, "o", "/org/fhash/Hasher1/job/7") >= 0);
        assert_true(sd_bus_send(bus, reply, NULL) >= 0);
        reply = sd_bus_message_unref(reply);
        assert_int_equal(oracle_read(oracle, buf, 1 << 20, &len, fds, 16, &n_fds), 0);
        check_valid(oracle, buf, len, n_fds);

        current = "sd-bus error";
        assert_true(sd_bus_message_new_method_errorf(call, &reply, "org.fhash.Error.Busy", "busy: %d", 3) >=
                    0);
        assert_true(sd_bus_send(bus, reply, NULL) >= 0);
        reply = sd_bus_message_unref(reply);
        assert_int_equal(oracle_read(oracle, buf, 1 << 20, &len, fds, 16, &n_fds), 0);
        check_valid(oracle, buf, len, n_fds);

        current = "sd-bus signal";
        assert_true(sd_bus_message_new_signal(bus, &m, "/org/fhash/Hasher1/job/7", "org.fhash.Hasher1.Job",
                                              "FilesHashed") >= 0);
        assert_true(sd_bus_message_append(m, "a(usay)b", 1, 0, "h\xc3\xa9llo", 2, 1, 2, 1) >= 0);
        assert_true(sd_bus_send(bus, m, NULL) >= 0);
        m = sd_bus_message_unref(m);
        assert_int_equal(oracle_read(oracle, buf, 1 << 20, &len, fds, 16, &n_fds), 0);
        check_valid(oracle, buf, len, n_fds);

        sd_bus_message_unref(call);
        close(null);
        free(buf);
}

/* Messages made by GDBus and by dbus-daemon (tests/data/dbus-message/generate.py). */
static void test_made_by_others(void **state)
{
        const char *dir = test_data_dir();
        struct dirent **list = NULL;
        int n = scandir(dir, &list, NULL, alphasort), checked = 0;
        char path[4608];

        assert_true(n > 0);
        for (int i = 0; i < n; i++) {
                const char *name = list[i]->d_name, *f;
                size_t len, n_fds = 0;
                uint8_t *b;

                if ((strncmp(name, "gdbus-", 6) != 0 && strncmp(name, "dbus-daemon-", 12) != 0) ||
                    !strstr(name, ".bin")) {
                        free(list[i]);
                        continue;
                }
                f = strstr(name, "-fds");
                if (f)
                        n_fds = strtoul(f + 4, NULL, 10);
                snprintf(path, sizeof(path), "%s/%s", dir, name);
                current = name;
                b = test_read_file(path, &len);
                check_valid(oracle, b, len, n_fds);
                free(b);
                free(list[i]);
                checked++;
        }
        free(list);
        assert_true(checked >= 15);
}

int main(int argc, char *argv[])
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_made_by_sd_bus),
                cmocka_unit_test(test_made_by_others),
        };

        return cmocka_run_group_tests(tests, test_oracle_setup, test_oracle_teardown);
}
