/* SPDX-License-Identifier: MIT */
/* test-protocol-bus.c: which --address fhashctl and libfhash take, and the words for a bus that is not
 * there */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "protocol/bus.h"

static void test_address(void **state)
{
        static const char *const good[] = {
                "unix:path=/run/dbus/system_bus_socket",
                "unix:path=/tmp/bus,guid=34a1583a34b153372a7f63cd6b0868c9",
                "unix:abstract=/tmp/dbus-XXXX",
                "unix:path=/tmp/with space",
                "unix:path=/tmp/%62us",
                "tcp:host=localhost,port=12345",
                "unixexec:path=/usr/bin/systemd-stdio-bridge,argv1=-M",
                "x-machine-unix:machine=.host",
                "unix:path=/nope;unix:path=/run/dbus/system_bus_socket",
                "unix:path=/a;",
        };
        static const char *const bad[] = {
                "", "garbage", "unix", "unix:", "unix:path", "unix:path=", "unix:guid=ab", "unix:path=/x,",
                "unix:=x", "tcp:port=1", "foo:bar=x", "unix:path=/x;garbage", "unix:path=/x%", "unix:path=/x%4",
                "unix:path=/x%zz", "unix:path=/a\nb", ";",
        };

        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(good); i++)
                if (!bus_address_is_valid(good[i]))
                        fail_msg("refused: \"%s\"", good[i]);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (bus_address_is_valid(bad[i]))
                        fail_msg("accepted: \"%s\"", bad[i]);
        assert_false(bus_address_is_valid(NULL));
}

/* Every message names the bus and where it was looked for; the session bus that is not configured says
 * so instead of "No medium found". */
static void test_explain(void **state)
{
        sd_bus_error e = SD_BUS_ERROR_NULL;
        char *s;

        (void)state;
        assert_int_equal(setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/sys", 1), 0);
        s = bus_explain_open_error(BUS_KIND_SYSTEM, NULL, -ENOENT, NULL);
        assert_string_equal(s, "no system bus at unix:path=/nonexistent/sys (No such file or directory)");
        free(s);

        assert_int_equal(unsetenv("DBUS_SESSION_BUS_ADDRESS"), 0);
        assert_int_equal(unsetenv("XDG_RUNTIME_DIR"), 0);
        s = bus_explain_open_error(BUS_KIND_USER, NULL, -ENOMEDIUM, NULL);
        assert_non_null(strstr(s, "no session bus"));
        assert_non_null(strstr(s, "DBUS_SESSION_BUS_ADDRESS"));
        assert_null(strstr(s, "medium"));
        free(s);
        assert_int_equal(setenv("XDG_RUNTIME_DIR", "/run/user/1234", 1), 0);
        s = bus_explain_open_error(BUS_KIND_USER, NULL, -ECONNREFUSED, NULL);
        assert_string_equal(s, "no session bus at unix:path=/run/user/1234/bus (Connection refused)");
        free(s);

        assert_int_equal(sd_bus_error_set(&e, SD_BUS_ERROR_SERVICE_UNKNOWN, "The name is not activatable"), -EHOSTUNREACH);
        assert_true(bus_error_is_no_fhashd(e.name));
        assert_false(bus_error_is_no_fhashd(SD_BUS_ERROR_ACCESS_DENIED));
        assert_false(bus_error_is_no_fhashd(NULL));
        s = bus_explain_open_error(BUS_KIND_ADDRESS, "unix:path=/x", -EHOSTUNREACH, &e);
        assert_string_equal(s, "fhashd is not on the bus at unix:path=/x (The name is not activatable)");
        free(s);
        sd_bus_error_free(&e);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_address),
                cmocka_unit_test(test_explain),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
