/* SPDX-License-Identifier: MIT */
/* test-output.c: fhashctl's line formats against what coreutils 9.1 prints */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pty.h>
#include <unistd.h>

#include <cmocka.h>

#include "hash/hash.h"
#include "ctl/macro.h"
#include "ctl/output.h"
#include "basic/time-util.h"
#include "ctl/progress.h"

static const char hex256[] = "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";

typedef struct Mem {
        char *buf;
        size_t size;
        FILE *f;
} Mem;

static void mem_open(Mem *m)
{
        *m = (Mem){};
        m->f = open_memstream(&m->buf, &m->size);
        assert_non_null(m->f);
}

/* Closes the stream and checks its bytes (which may hold NULs) against want. */
static void mem_check(Mem *m, const char *want, size_t want_len)
{
        assert_int_equal(fclose(m->f), 0);
        assert_int_equal(m->size, want_len);
        assert_memory_equal(m->buf, want, want_len);
        free(m->buf);
}
#define MEM_CHECK(m, lit) mem_check((m), (lit), sizeof(lit) - 1)

static void digest_line(OutputStyle style, bool zero, HashAlgo a, const char *name, const char *want,
                        size_t want_len)
{
        Mem m;

        mem_open(&m);
        assert_int_equal(output_write_digest(m.f, style, zero, hash_algo_to_string(a), name, hex256), 0);
        mem_check(&m, want, want_len);
}
#define DIGEST_LINE(style, zero, a, name, lit) digest_line(style, zero, a, name, lit, sizeof(lit) - 1)

static void test_untagged(void **state)
{
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "sp ace",
                    "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  sp ace\n");
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "-dash",
                    "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  -dash\n");
        /* Bytes that are not UTF-8 are written raw, as sha256sum does. */
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "bad\xffutf",
                    "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  bad\xffutf\n");
}

static void test_escaped(void **state)
{
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "new\nline",
                    "\\ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  new\\nline\n");
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "back\\slash",
                    "\\ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  back\\\\slash\n");
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "cr\rret",
                    "\\ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  cr\\rret\n");
        DIGEST_LINE(OUTPUT_TAGGED, false, HASH_SHA256, "b\\o\nth",
                    "\\SHA256 (b\\\\o\\nth) = ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb\n");
}

static void test_zero(void **state)
{
        /* -z: no escaping at all, NUL at the end. */
        DIGEST_LINE(OUTPUT_UNTAGGED, true, HASH_SHA256, "new\nline",
                    "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  new\nline\0");
        DIGEST_LINE(OUTPUT_TAGGED, true, HASH_SHA256, "a\\b",
                    "SHA256 (a\\b) = ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb\0");
}

static void test_tags(void **state)
{
        static const struct {
                HashAlgo a;
                const char *tag;
        } t[] = {
                { HASH_SHA256, "SHA256" },   { HASH_SHA512, "SHA512" }, { HASH_SHA1, "SHA1" },
                { HASH_MD5, "MD5" },         { HASH_BLAKE2B, "BLAKE2b" }, { HASH_BLAKE3, "BLAKE3" },
                { HASH_XXH3, "XXH3" },       { HASH_XXH128, "XXH128" }, { HASH_CRC32C, "CRC32C" },
                { HASH_SHA3_256, "SHA3-256" }, { HASH_SHA224, "SHA224" }, { HASH_SHA384, "SHA384" },
                { HASH_SHA3_384, "SHA3-384" }, { HASH_SHA3_512, "SHA3-512" }, { HASH_SM3, "SM3" },
                { HASH_BLAKE2S, "BLAKE2s" },   { HASH_XXH32, "XXH32" },       { HASH_XXH64, "XXH64" },
                { HASH_SHA3_224, "SHA3-224" }, { HASH_FSVERITY, "FSVERITY" },
                { HASH_FSVERITY_SHA512, "FSVERITY-SHA512" },
        };

        assert_int_equal(ELEMENTSOF(t), _HASH_ALGO_MAX);
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                assert_string_equal(hash_algo_tag(t[i].a), t[i].tag);
                assert_int_equal(hash_algo_from_tag(t[i].tag, strlen(t[i].tag)), t[i].a);
                /* Our table of lower-case names must agree with the engine's. */
                assert_string_equal(hash_algo_to_string(t[i].a), hash_algo_to_string(t[i].a));
                assert_int_equal(hash_algo_from_tag(hash_algo_to_string(t[i].a),
                                                      strlen(hash_algo_to_string(t[i].a))),
                                 t[i].a);
        }
        assert_null(hash_algo_tag(_HASH_ALGO_MAX));
        assert_null(hash_algo_tag(_HASH_ALGO_INVALID));
        assert_int_equal(hash_algo_from_tag("SHA2", 4), _HASH_ALGO_INVALID);
        assert_int_equal(hash_algo_from_tag("SHA256X", 6), HASH_SHA256); /* length-bounded */
        assert_int_equal(hash_algo_from_tag("XXH6", 4), _HASH_ALGO_INVALID);
        assert_int_equal(output_write_digest(stdout, OUTPUT_JSON, false, "sha256", "x", hex256), -EINVAL);
}

static void quote_is(const char *name, const char *want)
{
        _cleanup_free_ char *q = NULL;

        assert_int_equal(output_quote(name, &q), 0);
        assert_string_equal(q, want);
}

static void test_quote(void **state)
{
        /* Each expectation is what sha256sum 9.1 printed for a missing file of that name (C.UTF-8). */
        quote_is("plain", "plain");
        quote_is("-dash", "-dash");
        quote_is("x#", "x#");
        quote_is("a{", "a{");
        quote_is("é", "é");
        quote_is("", "''");
        quote_is("sp ace", "'sp ace'");
        quote_is("#x", "'#x'");
        quote_is("~a", "'~a'");
        quote_is("{", "'{'");
        quote_is("a=b", "'a=b'");
        quote_is("a:b,c@d+%", "'a:b,c@d+%'");
        quote_is("a\\b", "'a\\b'");
        quote_is("a'b", "\"a'b\"");
        quote_is("a'b c", "\"a'b c\"");
        quote_is("a'b$", "'a'\\''b$'");
        quote_is("a'b!", "'a'\\''b!'");
        quote_is("no\nsuch", "'no'$'\\n''such'");
        quote_is("\nx", "''$'\\n''x'");
        quote_is("x\xff", "'x'$'\\377'");
        quote_is("t\tb", "'t'$'\\t''b'");
        quote_is("a\n'b", "'a'$'\\n'\\''b'");
}

/* Check verdicts escape as digest lines do (the newest coreutils; 9.1 printed '\r' and '\\' raw there). */
static void test_check_name(void **state)
{
        Mem m;

        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "back\\slash"), 0);
        MEM_CHECK(&m, "\\back\\\\slash");
        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "cr\rret"), 0);
        MEM_CHECK(&m, "\\cr\\rret");
        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "b\\o\nth"), 0);
        MEM_CHECK(&m, "\\b\\\\o\\nth");
        /* Not on a terminal, other control characters stay raw, as coreutils writes them. */
        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "esc\x1b[2J"), 0);
        MEM_CHECK(&m, "esc\x1b[2J");
}

/* On a terminal no control character of a name is written raw: C0 and DEL, C1 (UTF-8 U+0080..U+009F)
 * and bytes that are not UTF-8 become \xHH in an escaped line; printable UTF-8 stays as it is. */
static void test_terminal_names(void **state)
{
        Mem m;

        output_set_terminal(true);
        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "esc\x1b]0;PWNED\a t\tab \x7f"), 0);
        MEM_CHECK(&m, "\\esc\\x1b]0;PWNED\\x07 t\\x09ab \\x7f");
        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "c1 \xc2\x9b bad \x9b\xff caf\xc3\xa9 \\ cr\r"), 0);
        MEM_CHECK(&m, "\\c1 \\xc2\\x9b bad \\x9b\\xff caf\xc3\xa9 \\\\ cr\\r");
        mem_open(&m);
        assert_int_equal(output_write_check_name(m.f, "caf\xc3\xa9 plain"), 0);
        MEM_CHECK(&m, "caf\xc3\xa9 plain");
        DIGEST_LINE(OUTPUT_UNTAGGED, false, HASH_SHA256, "e\x1b[2J",
                    "\\ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  e\\x1b[2J\n");
        DIGEST_LINE(OUTPUT_TAGGED, false, HASH_SHA256, "e\x1b",
                    "\\SHA256 (e\\x1b) = ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb\n");
        /* -z writes names raw, but not to a terminal. */
        DIGEST_LINE(OUTPUT_UNTAGGED, true, HASH_SHA256, "n\nl\x1b",
                    "\\ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  n\\nl\\x1b\0");
        output_set_terminal(false);
        DIGEST_LINE(OUTPUT_UNTAGGED, true, HASH_SHA256, "n\nl\x1b",
                    "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  n\nl\x1b\0");
}

static void test_json(void **state)
{
        Mem m;

        mem_open(&m);
        assert_int_equal(output_write_json_string(m.f, "a\"b\\c\n\r\t\x01 é \xff\xc3"), 0);
        MEM_CHECK(&m, "\"a\\\"b\\\\c\\n\\r\\t\\u0001 é \\udcff\\udcc3\"");

        /* Overlong encodings and encoded surrogates are not UTF-8: escaped byte by byte. */
        mem_open(&m);
        assert_int_equal(output_write_json_string(m.f, "\xc0\xaf\xed\xa0\x80"), 0);
        MEM_CHECK(&m, "\"\\udcc0\\udcaf\\udced\\udca0\\udc80\"");

        mem_open(&m);
        assert_int_equal(output_write_json_result(m.f, "f", "sha256", hex256, 1, NULL), 0);
        MEM_CHECK(&m, "{\"name\":\"f\",\"algorithm\":\"sha256\",\"digest\":"
                      "\"ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb\",\"size\":1,"
                      "\"error\":null}\n");

        mem_open(&m);
        assert_int_equal(output_write_json_result(m.f, "g", "blake3", NULL, 0, "No such file"), 0);
        MEM_CHECK(&m, "{\"name\":\"g\",\"algorithm\":\"blake3\",\"digest\":null,\"size\":null,"
                      "\"error\":\"No such file\"}\n");
}

/* Issue 16: a percentage only of totals that are known. */
static void test_progress_line(void **state)
{
        char buf[160];

        (void)state;
        progress_format(buf, sizeof(buf),
                        &(ProgressState){ .bytes_done = 512 << 20, .bytes_total = 1024 << 20, .files_done = 1,
                                          .files_total = 2, .rate = 256 << 20 },
                        2000000);
        assert_string_equal(buf, "[ 50%] 512.0 MiB / 1.0 GiB  1/2 files  256.0 MiB/s  ETA 0:02");
        /* A pipe: bytes past the total (0), which said "858.5 MiB / 0 B". */
        progress_format(buf, sizeof(buf),
                        &(ProgressState){ .bytes_done = 900 << 20, .files_total = 1, .rate = 300 << 20 }, 3000000);
        assert_string_equal(buf, "900.0 MiB  0 files  300.0 MiB/s");
        /* A walk still going: no percentage of a total that grows (it sat at 92-99%, ETA 0:00). */
        progress_format(buf, sizeof(buf),
                        &(ProgressState){ .bytes_done = 99 << 20, .bytes_total = 100 << 20, .files_done = 990,
                                          .files_total = 1000, .rate = 100 << 20, .open_ended = true },
                        1000000);
        assert_string_equal(buf, "99.0 MiB  990 files  100.0 MiB/s");
}

/* Issue 26: a line never wider than the terminal, fields dropped whole from the end. */
static void test_progress_fit(void **state)
{
        static const char full[] = "[ 42%] 1.2 GiB / 2.9 GiB  12/100 files  850.3 MiB/s  ETA 0:02";
        char buf[160];

        (void)state;
        for (unsigned cols = 1; cols < sizeof(full) + 2; cols++) {
                strcpy(buf, full);
                progress_fit(buf, cols);
                assert_true(strlen(buf) < cols || cols == 0);
                assert_memory_equal(buf, full, strlen(buf));
        }
#define FIT(cols, want) do { strcpy(buf, full); progress_fit(buf, cols); assert_string_equal(buf, want); } while (0)
        FIT(80, full);
        FIT(sizeof(full), full);
        FIT(sizeof(full) - 1, "[ 42%] 1.2 GiB / 2.9 GiB  12/100 files  850.3 MiB/s");
        FIT(40, "[ 42%] 1.2 GiB / 2.9 GiB  12/100 files");
        FIT(39, "[ 42%] 1.2 GiB / 2.9 GiB  12/100 files");
        FIT(38, "[ 42%] 1.2 GiB / 2.9 GiB");
        FIT(10, "[ 42%] 1.");
        FIT(0, full);
#undef FIT
}

/* Issue 26: on a terminal 40 columns wide the line is at most 39 characters, and its percentage does
 * not go down when the total grows (check learns the sizes as it opens the files). */
static void test_progress_terminal(void **state)
{
        struct winsize ws = { .ws_row = 24, .ws_col = 40 };
        int master, slave;
        Progress p;
        char buf[4096];
        ssize_t n;
        ProgressState st[] = {
                { .bytes_done = 94, .bytes_total = 100, .files_done = 1, .files_total = 9, .rate = 1 },
                { .bytes_done = 95, .bytes_total = 105, .files_done = 1, .files_total = 9, .rate = 1 },
                { .bytes_done = 99, .bytes_total = 100, .files_done = 1, .files_total = 9, .rate = 1 },
        };
        const char *want[] = { "\r[ 94%] 94 B / 100 B  1/9 files  1 B/s\033[K", "\r[ 94%] 95 B / 105 B  1/9 files  1 B/s\033[K",
                               "\r[ 99%] 99 B / 100 B  1/9 files  1 B/s\033[K" };

        (void)state;
        if (openpty(&master, &slave, NULL, NULL, &ws) < 0)
                skip();
        progress_init(&p, PROGRESS_ON, slave);
        assert_true(p.enabled);
        for (size_t i = 0; i < ELEMENTSOF(st); i++) {
                p.last_usec = 0; /* past the four-a-second limit */
                p.start_usec = now_usec() - 1000000;
                progress_update(&p, &st[i]);
                n = read(master, buf, sizeof(buf) - 1);
                assert_true(n > 0);
                buf[n] = '\0';
                assert_string_equal(buf, want[i]);
        }
        st[0].bytes_total = st[0].bytes_done = (uint64_t)1 << 40;
        st[0].files_total = 123456;
        p.last_usec = 0;
        progress_update(&p, &st[0]);
        n = read(master, buf, sizeof(buf) - 1);
        assert_true(n > 4);
        buf[n] = '\0';
        assert_true(strlen(buf) - strlen("\r\033[K") < 40);
        progress_clear(&p);
        close(slave);
        close(master);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_untagged), cmocka_unit_test(test_escaped),
                cmocka_unit_test(test_zero),     cmocka_unit_test(test_tags),
                cmocka_unit_test(test_quote),    cmocka_unit_test(test_check_name),
                cmocka_unit_test(test_terminal_names),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_progress_line),
                cmocka_unit_test(test_progress_fit),
                cmocka_unit_test(test_progress_terminal),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
