/* SPDX-License-Identifier: MIT */
/* test-config.c: fhashd.conf parsing: defaults, every key, sizes, ranges, drop-ins, error messages */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

/* Spelled with its directory: a bare "config.h" is the build's generated header (it comes first in
 * the include path). */
#include "daemon/config.h"
#include "basic/macro.h"
#include "test-helpers.h"

static char *dir;

static int setup(void **state)
{
        dir = th_mkdtemp("config");
        return 0;
}

static int teardown(void **state)
{
        th_rm_rf(dir);
        free(dir);
        dir = NULL;
        return 0;
}

/* Writes text to dir/name (creating parent "conf.d" if needed) and returns the path (malloc'd). */
static char *write_file(const char *name, const char *text)
{
        char *p;
        FILE *f;

        assert_true(asprintf(&p, "%s/%s", dir, name) > 0);
        if (strchr(name, '/')) {
                _cleanup_free_ char *d = strdup(p);
                assert_non_null(d);
                *strrchr(d, '/') = '\0';
                (void)mkdir(d, 0755);
        }
        f = fopen(p, "we");
        assert_non_null(f);
        assert_int_equal(fputs(text, f) >= 0, 1);
        assert_int_equal(fclose(f), 0);
        return p;
}

static void assert_config_equal(const FhashConfig *a, const FhashConfig *b)
{
        assert_int_equal(a->workers, b->workers);
        assert_int_equal(a->buffer_size, b->buffer_size);
        assert_int_equal(a->buffers, b->buffers);
        assert_int_equal(a->max_open_files, b->max_open_files);
        assert_int_equal(a->idle_exit_sec, b->idle_exit_sec);
        assert_int_equal(a->keep_finished_sec, b->keep_finished_sec);
        assert_int_equal(a->max_paths_per_call, b->max_paths_per_call);
        assert_int_equal(a->max_jobs_per_uid, b->max_jobs_per_uid);
        assert_int_equal(a->max_queued_files_per_uid, b->max_queued_files_per_uid);
        assert_int_equal(a->max_memory_per_uid, b->max_memory_per_uid);
        assert_int_equal(a->max_file_size, b->max_file_size);
        assert_int_equal(a->io_mode, b->io_mode);
}

/* Loads a one-file config and expects failure with exactly "<path>:<expected>". */
static void expect_file_error(const char *text, const char *expected)
{
        _cleanup_free_ char *p = write_file("bad.conf", text);
        _cleanup_free_ char *err = NULL, *want = NULL;
        FhashConfig c = config_defaults(), d = config_defaults();

        assert_int_equal(config_load_file(&c, p, &err), -EINVAL);
        assert_non_null(err);
        assert_true(asprintf(&want, "%s:%s", p, expected) > 0);
        assert_string_equal(err, want);
        /* A failed load leaves the config as it was. */
        assert_config_equal(&c, &d);
}

static void test_defaults(void **state)
{
        FhashConfig c;

        memset(&c, 0xaa, sizeof(c));
        config_init_defaults(&c);
        assert_int_equal(c.workers, 0);
        assert_int_equal(c.buffer_size, 1024 * 1024);
        assert_int_equal(c.buffers, 0);
        assert_int_equal(c.max_open_files, 64);
        assert_int_equal(c.idle_exit_sec, 30);
        assert_int_equal(c.keep_finished_sec, 60);
        assert_int_equal(c.max_paths_per_call, 100000);
        assert_int_equal(c.max_jobs_per_uid, 64);
        assert_int_equal(c.max_queued_files_per_uid, 1000000);
        assert_int_equal(c.max_memory_per_uid, UINT64_C(256) << 20);
        assert_int_equal(c.max_file_size, 0);
        assert_int_equal(c.io_mode, IO_MODE_AUTO);
}

static void test_missing_file(void **state)
{
        _cleanup_free_ char *p = NULL, *d = NULL, *err = NULL;
        FhashConfig c = config_defaults(), def = config_defaults();

        assert_true(asprintf(&p, "%s/nope.conf", dir) > 0);
        assert_true(asprintf(&d, "%s/nope.conf.d", dir) > 0);
        assert_int_equal(config_load_file(&c, p, &err), 0);
        assert_null(err);
        assert_int_equal(config_load(&c, p, d, &err), 0);
        assert_null(err);
        assert_int_equal(config_load(&c, NULL, NULL, &err), 0);
        assert_config_equal(&c, &def);
}

static void test_every_key(void **state)
{
        _cleanup_free_ char *p = write_file("all.conf",
                                            "# a comment\n"
                                            "; another comment\n"
                                            "\n"
                                            "[Daemon]\n"
                                            "Workers=3\n"
                                            "BufferSize=256K\n"
                                            "Buffers=32\n"
                                            "MaxOpenFiles=128\n"
                                            "IdleExitSec=0\n"
                                            "KeepFinishedSec=5\n"
                                            "MaxPathsPerCall=10\n"
                                            "MaxJobsPerUID=7\n"
                                            "MaxQueuedFilesPerUID=999\n"
                                            "MaxMemoryPerUID=64M\n"
                                            "MaxFileSize=2G\n"
                                            "IOMode=pread\n");
        _cleanup_free_ char *err = NULL;
        FhashConfig c = config_defaults();
        const FhashConfig want = {
                .workers = 3,
                .buffer_size = 256 * 1024,
                .buffers = 32,
                .max_open_files = 128,
                .idle_exit_sec = 0,
                .keep_finished_sec = 5,
                .max_paths_per_call = 10,
                .max_jobs_per_uid = 7,
                .max_queued_files_per_uid = 999,
                .max_memory_per_uid = UINT64_C(64) << 20,
                .max_file_size = UINT64_C(2) << 30,
                .io_mode = IO_MODE_PREAD,
        };
        EngineConfig e;

        assert_int_equal(config_load_file(&c, p, &err), 1);
        assert_null(err);
        assert_config_equal(&c, &want);

        config_to_engine_config(&c, &e);
        assert_int_equal(e.workers, 3);
        assert_int_equal(e.buffer_size, 256 * 1024);
        assert_int_equal(e.buffers, 32);
        assert_int_equal(e.max_open, 128);
        assert_int_equal(e.io_mode, IO_MODE_PREAD);
        assert_false(e.no_pin);
}

static void test_io_modes(void **state)
{
        static const struct {
                const char *s;
                IoMode m;
        } modes[] = {
                { "auto", IO_MODE_AUTO },
                { "uring-registered", IO_MODE_URING_REGISTERED },
                { "uring", IO_MODE_URING },
                { "pread", IO_MODE_PREAD },
        };
        FhashConfig c = config_defaults();

        for (size_t i = 0; i < ELEMENTSOF(modes); i++) {
                c.io_mode = modes[(i + 1) % ELEMENTSOF(modes)].m;
                assert_int_equal(config_set(&c, "IOMode", modes[i].s, NULL), 0);
                assert_int_equal(c.io_mode, modes[i].m);
        }
}

static void test_whitespace_crlf_and_sections(void **state)
{
        _cleanup_free_ char *p = write_file("ws.conf",
                                            "  [ Daemon ]  \r\n"
                                            "\tWorkers =  5 \r\n"
                                            "   # indented comment\n"
                                            "[Daemon]\n"
                                            "BufferSize=\t1m\n"
                                            "Workers=6"); /* no final newline */
        FhashConfig c = config_defaults();

        assert_int_equal(config_load_file(&c, p, NULL), 1);
        assert_int_equal(c.workers, 6);
        assert_int_equal(c.buffer_size, 1 << 20);
}

static void test_size_suffixes(void **state)
{
        static const struct {
                const char *s;
                uint64_t v;
        } sizes[] = {
                { "0", 0 },
                { "1", 1 },
                { "4096", 4096 },
                { "1K", 1024 },
                { "1k", 1024 },
                { "3M", UINT64_C(3) << 20 },
                { "3m", UINT64_C(3) << 20 },
                { "5G", UINT64_C(5) << 30 },
                { "7T", UINT64_C(7) << 40 },
                { "16777215T", UINT64_C(16777215) << 40 },
                { "18446744073709551615", UINT64_MAX },
        };
        FhashConfig c = config_defaults();

        for (size_t i = 0; i < ELEMENTSOF(sizes); i++) {
                _cleanup_free_ char *err = NULL;
                assert_int_equal(config_set(&c, "MaxFileSize", sizes[i].s, &err), 0);
                assert_null(err);
                assert_int_equal(c.max_file_size, sizes[i].v);
        }

        static const char *const bad[] = { "12Q", "1KB", "1KiB", "K", "-1", "+1", "0x10", "1.5M", "1 K", " 1" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *err = NULL, *want = NULL;
                c.max_file_size = 42;
                assert_int_equal(config_set(&c, "MaxFileSize", bad[i], &err), -EINVAL);
                assert_true(asprintf(&want, "MaxFileSize=%s: invalid size", bad[i]) > 0);
                assert_string_equal(err, want);
                assert_int_equal(c.max_file_size, 42);
        }
}

static void test_overflow_and_ranges(void **state)
{
        static const struct {
                const char *key, *value, *msg;
        } cases[] = {
                { "MaxFileSize", "18446744073709551616", "MaxFileSize=18446744073709551616: out of range (0..18446744073709551615)" },
                { "MaxFileSize", "99999999999999999999999", "MaxFileSize=99999999999999999999999: out of range (0..18446744073709551615)" },
                { "MaxFileSize", "16777216T", "MaxFileSize=16777216T: out of range (0..18446744073709551615)" },
                { "MaxMemoryPerUID", "17179869184G", "MaxMemoryPerUID=17179869184G: out of range (0..18446744073709551615)" },
                { "Workers", "4294967296", "Workers=4294967296: out of range (0..1024)" },
                { "Workers", "1025", "Workers=1025: out of range (0..1024)" },
                { "BufferSize", "4095", "BufferSize=4095: out of range (4096..268435456)" },
                { "BufferSize", "257M", "BufferSize=257M: out of range (4096..268435456)" },
                { "Buffers", "16385", "Buffers=16385: out of range (0..16384)" },
                { "MaxOpenFiles", "0", "MaxOpenFiles=0: out of range (1..65536)" },
                { "MaxPathsPerCall", "0", "MaxPathsPerCall=0: out of range (1..10000000)" },
                { "MaxJobsPerUID", "4294967296", "MaxJobsPerUID=4294967296: out of range (0..4294967295)" },
                { "MaxQueuedFilesPerUID", "4294967296", "MaxQueuedFilesPerUID=4294967296: out of range (0..4294967295)" },
                { "IdleExitSec", "4294967296", "IdleExitSec=4294967296: out of range (0..4294967295)" },
                { "KeepFinishedSec", "-1", "KeepFinishedSec=-1: invalid number" },
                { "Workers", "4K", "Workers=4K: invalid number" },
                { "Workers", "two", "Workers=two: invalid number" },
                { "IOMode", "fast", "IOMode=fast: invalid I/O mode (auto, uring-registered, uring, pread)" },
                { "IOMode", "AUTO", "IOMode=AUTO: invalid I/O mode (auto, uring-registered, uring, pread)" },
        };
        FhashConfig c = config_defaults(), def = config_defaults();

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *err = NULL;
                assert_int_equal(config_set(&c, cases[i].key, cases[i].value, &err), -EINVAL);
                assert_non_null(err);
                assert_string_equal(err, cases[i].msg);
                assert_config_equal(&c, &def);
        }

        /* The edges themselves are accepted. */
        assert_int_equal(config_set(&c, "Workers", "1024", NULL), 0);
        assert_int_equal(c.workers, 1024);
        assert_int_equal(config_set(&c, "BufferSize", "256M", NULL), 0);
        assert_int_equal(c.buffer_size, 256 << 20);
        assert_int_equal(config_set(&c, "BufferSize", "4K", NULL), 0);
        assert_int_equal(c.buffer_size, 4096);
        assert_int_equal(config_set(&c, "IdleExitSec", "4294967295", NULL), 0);
        assert_int_equal(c.idle_exit_sec, 4294967295u);
}

static void test_set_and_reset(void **state)
{
        _cleanup_free_ char *err = NULL;
        FhashConfig c = config_defaults();

        assert_int_equal(config_set(&c, "Workers", "9", &err), 0);
        assert_int_equal(c.workers, 9);
        assert_int_equal(config_set(&c, "Workers", "", &err), 0);
        assert_int_equal(c.workers, 0);
        assert_int_equal(config_set(&c, "BufferSize", "", &err), 0);
        assert_int_equal(c.buffer_size, 1 << 20);
        c.io_mode = IO_MODE_PREAD;
        assert_int_equal(config_set(&c, "IOMode", "", &err), 0);
        assert_int_equal(c.io_mode, IO_MODE_AUTO);
        assert_null(err);

        assert_int_equal(config_set(&c, "Wrokers", "9", &err), -ENOENT);
        assert_string_equal(err, "Wrokers=9: unknown key");
        /* Keys are case-sensitive. */
        free(err);
        err = NULL;
        assert_int_equal(config_set(&c, "workers", "9", &err), -ENOENT);
        assert_string_equal(err, "workers=9: unknown key");
}

static void test_error_messages(void **state)
{
        expect_file_error("[Daemon]\n"
                          "# comment\n"
                          "\n"
                          "; comment\n"
                          "Workers=2\n"
                          "Buffers=8\n"
                          "BufferSize=12Q\n",
                          "7: BufferSize=12Q: invalid size");
        expect_file_error("[Daemon]\nFrobnicate=yes\n", "2: Frobnicate=yes: unknown key");
        expect_file_error("[Daemon]\nWorkers=1\nthis is not a key value line\n",
                          "3: this is not a key value line: not a Key=Value line");
        expect_file_error("[Daemon]\n=5\n", "2: =5: not a Key=Value line");
        expect_file_error("[Daemon]\n  = 5\n", "2: = 5: not a Key=Value line");
        expect_file_error("Workers=2\n[Daemon]\n", "1: Workers=2: key outside the [Daemon] section");
        expect_file_error("[Daemon]\nWorkers=2\n[Engine]\nWorkers=3\n", "3: [Engine]: unknown section");
        expect_file_error("\n[Daemon\n", "2: [Daemon: malformed section header");
        expect_file_error("[Daemon]\nMaxOpenFiles = 0 \n", "2: MaxOpenFiles=0: out of range (1..65536)");
        expect_file_error("[Daemon]\nWorkers=4 # four\n", "2: Workers=4 # four: invalid number");
        expect_file_error("[Daemon]\nIOMode=mmap\n",
                          "2: IOMode=mmap: invalid I/O mode (auto, uring-registered, uring, pread)");
}

static void test_nul_byte(void **state)
{
        _cleanup_free_ char *p = NULL, *err = NULL, *want = NULL;
        FhashConfig c = config_defaults();
        FILE *f;

        assert_true(asprintf(&p, "%s/nul.conf", dir) > 0);
        f = fopen(p, "we");
        assert_non_null(f);
        assert_int_equal(fwrite("[Daemon]\nWorkers=2\0x\n", 1, 21, f), 21);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(config_load_file(&c, p, &err), -EINVAL);
        assert_true(asprintf(&want, "%s:2: line contains a NUL byte", p) > 0);
        assert_string_equal(err, want);
}

static void test_unreadable(void **state)
{
        _cleanup_free_ char *err = NULL, *want = NULL;
        FhashConfig c = config_defaults();

        /* A directory opens but cannot be read: the error names the file and says why. */
        assert_int_equal(config_load_file(&c, dir, &err), -EISDIR);
        assert_true(asprintf(&want, "%s: %s", dir, strerror(EISDIR)) > 0);
        assert_string_equal(err, want);
        /* ret_error may be NULL. */
        assert_int_equal(config_load_file(&c, dir, NULL), -EISDIR);
}

static void test_dropin_order(void **state)
{
        _cleanup_free_ char *main_path = write_file("fhashd.conf", "[Daemon]\nWorkers=2\nBuffers=16\nIdleExitSec=5\n");
        _cleanup_free_ char *d = NULL, *err = NULL;
        FhashConfig c = config_defaults();

        free(write_file("fhashd.conf.d/20-b.conf", "[Daemon]\nWorkers=4\nBufferSize=2M\n"));
        free(write_file("fhashd.conf.d/10-a.conf", "[Daemon]\nWorkers=3\nMaxOpenFiles=9\n"));
        free(write_file("fhashd.conf.d/30-c.conf", "[Daemon]\nIdleExitSec=\n"));  /* back to default */
        free(write_file("fhashd.conf.d/9-late.conf", "[Daemon]\nMaxOpenFiles=11\n")); /* '9' > '3' */
        free(write_file("fhashd.conf.d/99-ignored.conf.bak", "garbage\n"));
        free(write_file("fhashd.conf.d/.hidden.conf", "garbage\n"));
        free(write_file("fhashd.conf.d/README", "garbage\n"));
        assert_true(asprintf(&d, "%s/fhashd.conf.d", dir) > 0);
        {
                /* A directory named *.conf is not a drop-in. */
                _cleanup_free_ char *sub = NULL;
                assert_true(asprintf(&sub, "%s/50-dir.conf", d) > 0);
                assert_int_equal(mkdir(sub, 0755), 0);
        }

        assert_int_equal(config_load(&c, main_path, d, &err), 5);
        assert_null(err);
        assert_int_equal(c.workers, 4);
        assert_int_equal(c.buffer_size, 2 << 20);
        assert_int_equal(c.buffers, 16);
        assert_int_equal(c.max_open_files, 11);
        assert_int_equal(c.idle_exit_sec, 30);

        /* Drop-ins without a main file. */
        c = config_defaults();
        assert_int_equal(config_load(&c, NULL, d, &err), 4);
        assert_int_equal(c.workers, 4);
        assert_int_equal(c.buffers, 0);
}

static void test_dropin_error_is_atomic(void **state)
{
        _cleanup_free_ char *main_path = write_file("fhashd.conf", "[Daemon]\nWorkers=2\n");
        _cleanup_free_ char *bad = write_file("fhashd.conf.d/50-bad.conf", "[Daemon]\n\nBuffers=lots\n");
        _cleanup_free_ char *d = NULL, *err = NULL, *want = NULL;
        FhashConfig c = config_defaults(), def = config_defaults();

        free(write_file("fhashd.conf.d/10-ok.conf", "[Daemon]\nWorkers=3\n"));
        assert_true(asprintf(&d, "%s/fhashd.conf.d", dir) > 0);
        assert_int_equal(config_load(&c, main_path, d, &err), -EINVAL);
        assert_true(asprintf(&want, "%s:3: Buffers=lots: invalid number", bad) > 0);
        assert_string_equal(err, want);
        /* Nothing of the good files before the bad one was applied. */
        assert_config_equal(&c, &def);
}

static void test_dropin_dir_is_file(void **state)
{
        _cleanup_free_ char *f = write_file("notadir", "x\n");
        _cleanup_free_ char *err = NULL, *want = NULL;
        FhashConfig c = config_defaults();

        assert_int_equal(config_load(&c, NULL, f, &err), -ENOTDIR);
        assert_true(asprintf(&want, "%s: %s", f, strerror(ENOTDIR)) > 0);
        assert_string_equal(err, want);
}

static void test_shipped_file(void **state)
{
        /* The shipped fhashd.conf has every key commented out with its default: uncommenting every
         * "#Key=Value" line must parse and give exactly the built-in defaults. */
        const char *src = getenv("FHASH_SOURCE_ROOT");
        _cleanup_free_ char *in = NULL, *out = NULL, *cmd = NULL, *err = NULL;
        FhashConfig c = config_defaults(), def = config_defaults();
        unsigned n_keys = 0;
        char line[512];
        FILE *fi, *fo;

        if (!src)
                skip();
        assert_true(asprintf(&in, "%s/systemd/fhashd.conf", src) > 0);
        assert_true(asprintf(&out, "%s/uncommented.conf", dir) > 0);
        fi = fopen(in, "re");
        assert_non_null(fi);
        fo = fopen(out, "we");
        assert_non_null(fo);
        while (fgets(line, sizeof(line), fi)) {
                /* "#Key=Value" (no blank after '#') is a setting; "# text" is prose. */
                if (line[0] == '#' && line[1] >= 'A' && line[1] <= 'Z' && strchr(line, '=')) {
                        fputs(line + 1, fo);
                        n_keys++;
                } else
                        fputs(line, fo);
        }
        fclose(fi);
        assert_int_equal(fclose(fo), 0);
        assert_int_equal(n_keys, _CONFIG_KEY_MAX); /* every key of the table, once */

        c.workers = 77;
        c.io_mode = IO_MODE_PREAD;
        c.max_file_size = 1;
        assert_int_equal(config_load_file(&c, in, &err), 1); /* all commented: changes nothing */
        assert_int_equal(c.workers, 77);
        assert_int_equal(config_load_file(&c, out, &err), 1);
        assert_null(err);
        assert_config_equal(&c, &def);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_defaults),
                cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_every_key, setup, teardown),
                cmocka_unit_test(test_io_modes),
                cmocka_unit_test_setup_teardown(test_whitespace_crlf_and_sections, setup, teardown),
                cmocka_unit_test(test_size_suffixes),
                cmocka_unit_test(test_overflow_and_ranges),
                cmocka_unit_test(test_set_and_reset),
                cmocka_unit_test_setup_teardown(test_error_messages, setup, teardown),
                cmocka_unit_test_setup_teardown(test_nul_byte, setup, teardown),
                cmocka_unit_test_setup_teardown(test_unreadable, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropin_order, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropin_error_is_atomic, setup, teardown),
                cmocka_unit_test_setup_teardown(test_dropin_dir_is_file, setup, teardown),
                cmocka_unit_test_setup_teardown(test_shipped_file, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
