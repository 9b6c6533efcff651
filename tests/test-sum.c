/* SPDX-License-Identifier: MIT */
/* test-sum: cksum's CRCs and sum's BSD and System V sums: known answers, splits, the real tools */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "hash/sum.h"
#include "test-helpers.h"

static uint32_t sum_of(SumKind k, const void *data, size_t n)
{
        SumState s;

        sum_init(&s, k);
        sum_update(&s, data, n);
        return sum_value(&s);
}

/* The check value of the CRC catalogue ("123456789"), and what coreutils' tests/cksum expects of
 * the bytes 0..130 (cksum.sh: past the 128 bytes of a 4-fold PCLMUL step). */
static void test_crc(void **state)
{
        uint8_t bytes[131];

        for (size_t i = 0; i < sizeof(bytes); i++)
                bytes[i] = (uint8_t)i;
        /* POSIX: the length is part of the CRC, so "" is not 0. */
        assert_int_equal(sum_of(SUM_CRC, "", 0), 4294967295u);
        assert_int_equal(sum_of(SUM_CRC, "123456789", 9), 930766865u);
        assert_int_equal(sum_of(SUM_CRC, bytes, sizeof(bytes)), 3800919234u);
        assert_int_equal(sum_of(SUM_CRC32B, "", 0), 0);
        assert_int_equal(sum_of(SUM_CRC32B, "123456789", 9), 0xcbf43926u);
        assert_int_equal(sum_of(SUM_CRC32B, bytes, sizeof(bytes)), 3739179551u);
}

/* coreutils' tests/cksum/sum.pl and sum-sysv.sh. */
static void test_sums(void **state)
{
        _cleanup_free_ char *k = malloc(2048);
        _cleanup_free_ uint8_t *ff = malloc(65537);
        SumState s;

        assert_non_null(k);
        assert_non_null(ff);
        assert_int_equal(sum_of(SUM_BSD, "", 0), 0);
        assert_int_equal(sum_of(SUM_BSD, "abc", 3), 16556);
        assert_int_equal(sum_of(SUM_BSD, "message digest", 14), 26423);
        assert_int_equal(sum_of(SUM_SYSV, "abc", 3), 294);
        assert_int_equal(sum_of(SUM_SYSV, "message digest", 14), 1413);
        memset(k, 'a', 1024);
        assert_int_equal(sum_of(SUM_BSD, k, 1024), 65409);
        assert_int_equal(sum_of(SUM_SYSV, k, 1024), 33793);
        memset(k, 'b', 2048);
        assert_int_equal(sum_of(SUM_BSD, k, 2048), 65223);
        assert_int_equal(sum_of(SUM_SYSV, k, 2048), 4099);

        /* 2^32 / 255 bytes of 0xff and one more: the SysV sum's 32-bit total wraps. */
        memset(ff, 0xff, 65537);
        sum_init(&s, SUM_SYSV);
        for (int i = 0; i < 257; i++)
                sum_update(&s, ff, 65537);
        assert_int_equal(sum_value(&s), 65535);
        sum_update(&s, ff, 1);
        assert_int_equal(sum_value(&s), 254);
        assert_int_equal(s.size, 16843010u);
}

/* Fed in any pieces, the same value. */
static void test_splits(void **state)
{
        _cleanup_free_ uint8_t *data = malloc(100000);

        assert_non_null(data);
        th_fill_random(data, 100000, 7);
        for (SumKind k = 0; k < _SUM_KIND_MAX; k++) {
                uint32_t whole = sum_of(k, data, 100000);
                uint32_t seed = 11;

                for (int round = 0; round < 20; round++) {
                        SumState s;
                        size_t off = 0;

                        sum_init(&s, k);
                        while (off < 100000) {
                                seed = seed * 1103515245u + 12345u;
                                size_t n = MIN((size_t)(seed >> 16) % 5000, (size_t)100000 - off);
                                sum_update(&s, data + off, n);
                                off += n;
                        }
                        assert_int_equal(sum_value(&s), whole);
                }
        }
}

/* Against Debian's own cksum and sum, where they are installed. */
static void test_tools(void **state)
{
        static const struct {
                SumKind k;
                const char *tool;
        } tools[] = {
                { SUM_CRC, "cksum" },
                { SUM_BSD, "sum -r" },
                { SUM_SYSV, "sum -s" },
        };
        _cleanup_free_ char *dir = th_mkdtemp("test-sum");
        unsigned n = 0;

        assert_non_null(dir);
        if (!th_have_program("cksum") || !th_have_program("sum")) {
                th_rm_rf(dir);
                skip();
        }
        for (uint64_t size = 0; size < 300000; size = size * 3 + 7) {
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ uint8_t *data = malloc(size + 1);
                FILE *f;

                assert_non_null(data);
                assert_true(asprintf(&path, "%s/f%" PRIu64, dir, size) > 0);
                assert_int_equal(th_write_random_file(path, size, (uint32_t)size), 0);
                f = fopen(path, "re");
                assert_non_null(f);
                assert_int_equal(fread(data, 1, size, f), size);
                fclose(f);
                for (size_t t = 0; t < ELEMENTSOF(tools); t++) {
                        _cleanup_free_ char *want = th_run_first_word("%s < '%s'", tools[t].tool, path);
                        char got[16];

                        assert_non_null(want);
                        snprintf(got, sizeof(got), "%" PRIu32, sum_of(tools[t].k, data, size));
                        /* sum -r pads to five digits. */
                        assert_int_equal(strtoul(want, NULL, 10), strtoul(got, NULL, 10));
                        n++;
                }
        }
        th_rm_rf(dir);
        print_message("%u values compared with cksum and sum\n", n);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_crc),
                cmocka_unit_test(test_sums),
                cmocka_unit_test(test_splits),
                cmocka_unit_test(test_tools),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
