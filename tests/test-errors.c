/* SPDX-License-Identifier: MIT */
/* test-errors.c: fhashd's error names and errnos, both ways, from the one table in protocol/errors.c,
 * as the daemon sets them and as clients (libfhash, through sd-bus) read them back */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "protocol/errors.h"

/* Every per-file errno reaches a result under the name of its class, and the name reads back as
 * the class's errno, whatever the sign given. */
static void test_file_errors(void **state)
{
        static const struct {
                int error;
                const char *name;
                int back;
        } cases[] = {
                { ENOENT, FHASH_ERROR_NOT_FOUND, -ENOENT },     { ENOTDIR, FHASH_ERROR_NOT_FOUND, -ENOENT },
                { ENXIO, FHASH_ERROR_NOT_FOUND, -ENOENT },      { ENODEV, FHASH_ERROR_NOT_FOUND, -ENOENT },
                { EACCES, FHASH_ERROR_ACCESS_DENIED, -EACCES }, { EPERM, FHASH_ERROR_ACCESS_DENIED, -EACCES },
                { EISDIR, FHASH_ERROR_NOT_REGULAR, -EISDIR },   { ESPIPE, FHASH_ERROR_NOT_REGULAR, -EISDIR },
                { EFBIG, FHASH_ERROR_TOO_LARGE, -EFBIG },       { ETIMEDOUT, FHASH_ERROR_TIMED_OUT, -ETIMEDOUT },
                { ECANCELED, FHASH_ERROR_CANCELLED, -ECANCELED }, { EIO, FHASH_ERROR_IO, -EIO },
                /* A stale NFS handle and a file system's checksum failure are I/O errors: never a change
                 * (Changed is ESTALE's name only as the engine's own verdict) nor a mismatch. */
                { ESTALE, FHASH_ERROR_IO, -EIO },               { EBADMSG, FHASH_ERROR_IO, -EIO },
                { ENOMEM, FHASH_ERROR_IO, -EIO },               { 0x7fff, FHASH_ERROR_IO, -EIO },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *name = fhash_error_from_errno(cases[i].error);

                assert_string_equal(name, cases[i].name);
                assert_string_equal(fhash_error_from_errno(-cases[i].error), cases[i].name);
                assert_int_equal(fhash_error_to_errno(name, strlen(name)), cases[i].back);
        }
}

/* A result's error is "<name>: <words>": the name is read from its first n bytes; a name that is not
 * ours (or a prefix of one) is -EIO. */
static void test_names(void **state)
{
        const char *e = FHASH_ERROR_MISMATCH ": expected 00, got 01";

        assert_int_equal(fhash_error_to_errno(e, strlen(FHASH_ERROR_MISMATCH)), -EBADMSG);
        assert_int_equal(fhash_error_to_errno(FHASH_ERROR_CHANGED, strlen(FHASH_ERROR_CHANGED)), -ESTALE);
        assert_int_equal(fhash_error_to_errno(FHASH_ERROR_BUSY, strlen(FHASH_ERROR_BUSY)), -EBUSY);
        assert_int_equal(fhash_error_to_errno(FHASH_ERROR_JOB_CLOSED, strlen(FHASH_ERROR_JOB_CLOSED)), -EPIPE);
        assert_int_equal(fhash_error_to_errno(FHASH_ERROR_RELEASED, strlen(FHASH_ERROR_RELEASED)), -ENODATA);
        assert_int_equal(fhash_error_to_errno(e, strlen(FHASH_ERROR_MISMATCH) - 1), -EIO);
        assert_int_equal(fhash_error_to_errno("org.example.Error.Other", 23), -EIO);
        assert_int_equal(fhash_error_to_errno(NULL, 0), -EIO);
}

/* Through sd-bus, with the map added as fhashd and libfhash add it: a name set on an error reads
 * back as its errno. */
static void test_bus_map(void **state)
{
        _cleanup_(sd_bus_error_free) sd_bus_error a = SD_BUS_ERROR_NULL, b = SD_BUS_ERROR_NULL;

        assert_ptr_equal(fhash_error_map(), fhash_error_map());
        assert_true(sd_bus_error_add_map(fhash_error_map()) >= 0);
        assert_int_equal(sd_bus_error_set(&a, FHASH_ERROR_BUSY, "over the quota"), -EBUSY);
        assert_int_equal(sd_bus_error_get_errno(&a), EBUSY);
        assert_int_equal(sd_bus_error_set(&b, FHASH_ERROR_TOO_LARGE, "too large"), -EFBIG);
        assert_true(sd_bus_error_has_name(&b, FHASH_ERROR_TOO_LARGE));
        assert_int_equal(sd_bus_error_get_errno(&b), EFBIG);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_file_errors),
                cmocka_unit_test(test_names),
                cmocka_unit_test(test_bus_map),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
