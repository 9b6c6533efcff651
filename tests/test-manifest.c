/* SPDX-License-Identifier: MIT */
/* test-manifest.c: the check-file parser on lines written by coreutils, b3sum and xxhsum */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl/macro.h"
#include "ctl/manifest-reader.h"
#include "test-helpers.h"

/* Algorithms are libfhash's names (ctl/algo.h): the same as strings, NULL for none. */
static bool algo_same(const char *a, const char *b)
{
        return a == b || algo_is(a, b);
}
#define assert_algo(a, b) assert_true(algo_same((a), (b)))

#define H64 "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb"
#define H128 H64 H64

static void entry_is(const char *line, const char *want_algo, const char *a, const char *name, const char *hex)
{
        ManifestEntry e = {};

        assert_int_equal(manifest_parse_line(line, strlen(line), want_algo, &e), 1);
        assert_algo(e.algo, a);
        assert_string_equal(e.name, name);
        assert_string_equal(e.hex, hex);
        free(e.name);
}

static void line_bad(const char *line, const char *want_algo)
{
        ManifestEntry e = {};

        assert_int_equal(manifest_parse_line(line, strlen(line), want_algo, &e), -EINVAL);
        assert_null(e.name);
}

static void test_untagged(void **state)
{
        entry_is(H64 "  sp ace", NULL, "sha256", "sp ace", H64);
        entry_is(H64 " *bin", NULL, "sha256", "bin", H64);
        entry_is(H64 " one space", NULL, "sha256", "one space", H64);
        entry_is(H64 "\tsp ace", NULL, "sha256", "sp ace", H64);
        entry_is(H64 "  -dash", NULL, "sha256", "-dash", H64);
        entry_is(H64 "   lead", NULL, "sha256", " lead", H64);
        entry_is("  " H64 "  indented", NULL, "sha256", "indented", H64);
        entry_is(H64 "  crlf\r", NULL, "sha256", "crlf", H64);
        entry_is(H64 "  bad\xffutf", NULL, "sha256", "bad\xffutf", H64);
        /* Upper case is accepted and normalised. */
        entry_is("CA978112CA1BBDCAFAC231B39A23DC4DA786EFF8147C4E72B9807785AFEE48BB  up", NULL,
                 "sha256", "up", H64);
        /* Length picks the algorithm unless -a is given. */
        entry_is(H128 "  big", NULL, "sha512", "big", H128);
        entry_is(H128 "  big", "blake2b", "blake2b", "big", H128);
        entry_is(H64 "  b3", "blake3", "blake3", "b3", H64);
        entry_is("0cc175b9c0f1b6a831c399e269772661  m", NULL, "md5", "m",
                 "0cc175b9c0f1b6a831c399e269772661");
        entry_is("a96faf705af16834e6c632b61e964e1f  x", "xxh128", "xxh128", "x",
                 "a96faf705af16834e6c632b61e964e1f");
        entry_is("86f7e437faa5a7fce15d1ddcb9eaeaea377667b8  s1", NULL, "sha1", "s1",
                 "86f7e437faa5a7fce15d1ddcb9eaeaea377667b8");
        /* 16 and 8 hex digits are xxhsum's default XXH64 and -H0's XXH32, as xxhsum -c reads them
         * (our XXH3 and CRC32C lines are tagged); -a says otherwise. */
        entry_is("e6c632b61e964e1f  x3", NULL, "xxh64", "x3", "e6c632b61e964e1f");
        entry_is("e6c632b61e964e1f  x3", "xxh3", "xxh3", "x3", "e6c632b61e964e1f");
        entry_is("e3069283  c", NULL, "xxh32", "c", "e3069283");
        entry_is("e3069283  c", "crc32c", "crc32c", "c", "e3069283");
        entry_is("23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7  s224", NULL, "sha224",
                 "s224", "23097d223405d8228642a477bda255b32aadbce4bda0b3f7e36c9da7");
        /* xxhsum 0.8.2 prefixes XXH3 digests. */
        entry_is("XXH3_e6c632b61e964e1f  x3", NULL, "xxh3", "x3", "e6c632b61e964e1f");
        line_bad("XXH3_e6c632b61e964e1f  x3", "sha256");
}

static void test_escaped(void **state)
{
        entry_is("\\" H64 "  new\\nline", NULL, "sha256", "new\nline", H64);
        entry_is("\\" H64 "  back\\\\slash", NULL, "sha256", "back\\slash", H64);
        entry_is("\\" H64 "  cr\\rret", NULL, "sha256", "cr\rret", H64);
        entry_is("\\SHA256 (b\\\\o\\nth) = " H64, NULL, "sha256", "b\\o\nth", H64);
        /* Without the leading backslash, backslashes are part of the name. */
        entry_is(H64 "  a\\nb", NULL, "sha256", "a\\nb", H64);
        line_bad("\\" H64 "  sp\\x ace", NULL);
        line_bad("\\" H64 "  trailing\\", NULL);
}

static void test_tagged(void **state)
{
        entry_is("SHA256 (sp ace) = " H64, NULL, "sha256", "sp ace", H64);
        entry_is("SHA256(sp ace)= " H64, NULL, "sha256", "sp ace", H64);
        entry_is("SHA256 (a) b) = " H64, NULL, "sha256", "a) b", H64);
        entry_is("BLAKE2b (x) = " H128, NULL, "blake2b", "x", H128);
        entry_is("BLAKE3 (x) = " H64, NULL, "blake3", "x", H64);
        entry_is("SHA3-256 (x) = " H64, NULL, "sha3-256", "x", H64);
        entry_is("XXH3 (sp ace) = e6c632b61e964e1f", NULL, "xxh3", "sp ace", "e6c632b61e964e1f");
        entry_is("XXH128 (sp ace) = a96faf705af16834e6c632b61e964e1f", NULL, "xxh128",
                 "sp ace", "a96faf705af16834e6c632b61e964e1f");
        entry_is("MD5 (m) = 0cc175b9c0f1b6a831c399e269772661\r", NULL, "md5", "m",
                 "0cc175b9c0f1b6a831c399e269772661");
        /* -a that disagrees with the tag: improperly formatted, as sha256sum -c on an MD5 line. */
        line_bad("MD5 (m) = 0cc175b9c0f1b6a831c399e269772661", "sha256");
        entry_is("MD5 (m) = 0cc175b9c0f1b6a831c399e269772661", "md5", "md5", "m",
                 "0cc175b9c0f1b6a831c399e269772661");
        line_bad("SHA256 (x) = " H128, NULL);  /* wrong length for the tag */
        line_bad("SHA256 (x) " H64, NULL);     /* no '=' */
        line_bad("SHA256 (x = " H64, NULL);    /* no ')' */
        line_bad("SHA256 () = " H64, NULL);    /* empty name */
        entry_is("XXH64 (x) = e6c632b61e964e1f", NULL, "xxh64", "x", "e6c632b61e964e1f");
        line_bad("XXH64 (x) = e6c632b61e964e1f00", NULL);  /* wrong length for the tag */
        /* b2sum --tag -l 256: the tag carries the length, the digest must have it. */
        entry_is("BLAKE2b-256 (x) = " H64, NULL, "blake2b", "x", H64);
        line_bad("BLAKE2b-256 (x) = " H128, NULL);
        line_bad("BLAKE3-256 (x) = " H64, NULL); /* no tool writes a BLAKE3 length */
}

static void test_bad(void **state)
{
        line_bad("garbage line", NULL);
        line_bad(H64, NULL);                /* no name */
        line_bad(H64 " ", NULL);            /* empty name */
        {
                /* The same where the line ends the buffer: nothing may be read past it (ASan; the
                 * fuzzer found such a read). */
                _cleanup_free_ char *exact = malloc(65);
                ManifestEntry e = {};

                assert_non_null(exact);
                memcpy(exact, H64 " ", 65);
                assert_int_equal(manifest_parse_line(exact, 65, NULL, &e), -EINVAL);
        }
        line_bad(H64 "x  name", NULL);      /* not hex */
        line_bad("abc  name", NULL);        /* no algorithm is 3 hex long */
        line_bad(H64 "  name", "sha512");              /* -a length mismatch */
        line_bad("\\", NULL);
        line_bad("\\\\", NULL);

        ManifestEntry e = {};
        static const char nul[] = H64 "  a\0b";
        assert_int_equal(manifest_parse_line(nul, sizeof(nul) - 1, NULL, &e), -EINVAL);
        assert_int_equal(manifest_parse_line("", 0, NULL, &e), 0);
        assert_int_equal(manifest_parse_line("  \t", 3, NULL, &e), 0);
        assert_int_equal(manifest_parse_line("# comment", 9, NULL, &e), 0);
        assert_int_equal(manifest_parse_line("\r", 1, NULL, &e), 0);
}

static void test_buffer(void **state)
{
        _cleanup_(manifest_freep) Manifest *m = NULL;
        static const char buf[] = "# made by hand\n"
                                  H64 "  one\n"
                                  "\n"
                                  "garbage\n"
                                  "MD5 (two) = 0cc175b9c0f1b6a831c399e269772661\r\n"
                                  "\\" H64 "  th\\nree\n"
                                  "also garbage\n"
                                  H64 "  last without newline";

        assert_int_equal(manifest_parse(buf, sizeof(buf) - 1, NULL, false, &m), 0);
        assert_int_equal(m->n_entries, 4);
        assert_string_equal(m->entries[0].name, "one");
        assert_int_equal(m->entries[0].line, 2);
        assert_string_equal(m->entries[1].name, "two");
        assert_algo(m->entries[1].algo, "md5");
        assert_int_equal(m->entries[1].line, 5);
        assert_string_equal(m->entries[2].name, "th\nree");
        assert_string_equal(m->entries[3].name, "last without newline");
        assert_int_equal(m->entries[3].line, 8);
        assert_int_equal(m->n_bad, 2);
        assert_int_equal(m->bad_lines[0], 4);
        assert_int_equal(m->bad_lines[1], 7);
}

/* BSD reversed lines ("md5 -r"): the first untagged line decides the form of the manifest, as
 * coreutils' md5sum-bsd.sh checks. */
static void test_reversed(void **state)
{
        _cleanup_(manifest_freep) Manifest *rev = NULL, *std = NULL, *lone = NULL;
        static const char reversed[] = H64 " a\n" H64 "  b\n" H64 " *c\n" H64 "  \n";
        static const char standard[] = H64 "  a\n" H64 " b\n" H64 " *c\n";

        assert_int_equal(manifest_parse(reversed, sizeof(reversed) - 1, NULL, false, &rev), 0);
        assert_int_equal(rev->n_entries, 4);
        assert_string_equal(rev->entries[0].name, "a");
        assert_string_equal(rev->entries[1].name, " b");
        assert_string_equal(rev->entries[2].name, "*c");
        assert_string_equal(rev->entries[3].name, " ");
        assert_int_equal(rev->n_bad, 0);

        /* Once standard, a reversed line is refused: a name cannot lose its leading blank. */
        assert_int_equal(manifest_parse(standard, sizeof(standard) - 1, NULL, false, &std), 0);
        assert_int_equal(std->n_entries, 2);
        assert_string_equal(std->entries[0].name, "a");
        assert_string_equal(std->entries[1].name, "c");
        assert_int_equal(std->n_bad, 1);
        assert_int_equal(std->bad_lines[0], 2);

        /* A line alone: the same rules. */
        entry_is(H64 " one", NULL, "sha256", "one", H64);
        entry_is(H64 "  ", NULL, "sha256", " ", H64);
        assert_int_equal(manifest_parse(H64 " x", 66, NULL, false, &lone), 0);
        assert_int_equal(lone->n_entries, 1);
}

/* What else the tools write: coreutils >= 9.8's SHA2- tags and --base64, xxhsum's little-endian
 * tags and its "stdin". */
static void test_other_writers(void **state)
{
        ManifestEntry e = {};
        static const char sha384[] = "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da"
                                     "274edebfe76f65fbd51ad2f14898b95b";

        entry_is("SHA2-384 (f) = 38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da"
                 "274edebfe76f65fbd51ad2f14898b95b", NULL, "sha384", "f", sha384);
        entry_is("SHA3-224 (f) = 6b4e03423667dbb73b6e15454f0eb1abd4597f9a1b078e3f5b5a6bc7", NULL,
                 "sha3-224", "f", "6b4e03423667dbb73b6e15454f0eb1abd4597f9a1b078e3f5b5a6bc7");
        /* cksum --base64 (cksum-base64.pl's values for an empty file). */
        entry_is("MD5 (f) = 1B2M2Y8AsgTpgAmY7PhCfg==", NULL, "md5", "f",
                 "d41d8cd98f00b204e9800998ecf8427e");
        entry_is("SHA1 (f) = 2jmj7l5rSw0yVb/vlWAYkK/YBwk=", NULL, "sha1", "f",
                 "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        line_bad("MD5 (f) = 1B2M2Y8AsgTpgAmY7PhCfg=", NULL);   /* padding cut */
        line_bad("MD5 (f) = 1B2M2Y8AsgTpgAmY7PhCf*==", NULL);  /* not base64 */
        /* xxhsum --tag --little-endian: the digest's bytes reversed. */
        entry_is("XXH64_LE (foo) = 3fbac459a800bf33", NULL, "xxh64", "foo", "33bf00a859c4ba3f");
        entry_is("XXH128_LE (foo) = 8a7d7e07645f6eab214145832ef9ae79", NULL, "xxh128", "foo",
                 "79aef92e83454121ab6e5f64077e7d8a");
        line_bad("SHA256_LE (f) = " H64, NULL);
        /* xxhsum names standard input "stdin"; in a line of another algorithm it is a file's name. */
        assert_int_equal(manifest_parse_line("33bf00a859c4ba3f  stdin", 23, NULL, &e), 1);
        assert_true(e.from_stdin);
        free(e.name);
        e = (ManifestEntry){};
        assert_int_equal(manifest_parse_line(H64 "  stdin", 71, NULL, &e), 1);
        assert_false(e.from_stdin);
        free(e.name);
}

static void test_buffer_zero(void **state)
{
        _cleanup_(manifest_freep) Manifest *m = NULL;
        static const char buf[] = H64 "  new\nline\0" H64 "  b";

        assert_int_equal(manifest_parse(buf, sizeof(buf) - 1, NULL, true, &m), 0);
        assert_int_equal(m->n_entries, 2);
        assert_string_equal(m->entries[0].name, "new\nline");
        assert_string_equal(m->entries[1].name, "b");
        assert_int_equal(m->n_bad, 0);
}

static void test_empty(void **state)
{
        _cleanup_(manifest_freep) Manifest *m = NULL;

        assert_int_equal(manifest_parse("", 0, NULL, false, &m), 0);
        assert_int_equal(m->n_entries, 0);
        assert_int_equal(m->n_bad, 0);
        m = manifest_free(m);

        /* Not NUL-terminated: the parser must stop at size. */
        char *raw = malloc(10);
        assert_non_null(raw);
        memcpy(raw, "abcdefghij", 10);
        assert_int_equal(manifest_parse(raw, 10, NULL, false, &m), 0);
        assert_int_equal(m->n_bad, 1);
        free(raw);
}

/* The manifest's name, where the tool that writes it has one. */
static void test_filenames(void **state)
{
        (void)state;
        assert_algo(manifest_algo_from_filename("MD5SUMS"), "md5");
        assert_algo(manifest_algo_from_filename("/var/lib/dpkg/info/bash.md5sums"), "md5");
        assert_algo(manifest_algo_from_filename("dir/SHA256SUMS"), "sha256");
        assert_algo(manifest_algo_from_filename("x.sha512"), "sha512");
        assert_algo(manifest_algo_from_filename("sums.b3"), "blake3");
        assert_algo(manifest_algo_from_filename("B2SUMS"), "blake2b");
        assert_algo(manifest_algo_from_filename("a.xxh128"), "xxh128");
        assert_algo(manifest_algo_from_filename("a.xxh64"), "xxh64");
        assert_algo(manifest_algo_from_filename("a.xxh3"), "xxh3");
        assert_algo(manifest_algo_from_filename("sums.txt"), NULL);
        assert_algo(manifest_algo_from_filename("-"), NULL);
}

/* A name's algorithm applies to untagged lines of its digest length only; tags win. */
static void test_hinted(void **state)
{
        static const char buf[] = "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85  a\n"
                                  "0cc175b9c0f1b6a831c399e269772661  m\n"
                                  "SHA256 (t) = 6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85\n";
        _cleanup_(manifest_freep) Manifest *m = NULL;

        (void)state;
        assert_int_equal(manifest_parse_with(buf, sizeof(buf) - 1,
                                             &(ManifestParseOptions){ .algo = NULL, .hint = "blake3" },
                                             &m),
                         0);
        assert_int_equal(m->n_entries, 3);
        assert_algo(m->entries[0].algo, "blake3");
        assert_false(m->entries[0].tagged);
        assert_algo(m->entries[1].algo, "md5");
        assert_algo(m->entries[2].algo, "sha256");
        assert_true(m->entries[2].tagged);
}

/* Digest lengths as b2sum -c reads them: from the tag, from -l, or from an untagged line of -a blake2b. */
static void test_lengths(void **state)
{
        static const char buf[] = "BLAKE2b-256 (a) = de9543b2ae1b2b87434a730727db17f5ac8b8c020b84a5cb8c5fbcc1423443ba\n"
                                  "BLAKE2s-128 (b) = 00112233445566778899aabbccddeeff\n"
                                  "BLAKE2b-12 (c) = 000\n"                   /* not a multiple of 8 bits */
                                  "BLAKE2b-256 (d) = 00\n"                   /* hex of another length */
                                  "SHA256-256 (e) = 00\n"                    /* sha256 takes no length */
                                  "BLAKE2b-512 (f) = " "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
                                  "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n"
                                  "00112233445566778899aabbccddeeff  g\n";
        _cleanup_(manifest_freep) Manifest *m = NULL;

        (void)state;
        assert_int_equal(manifest_parse(buf, sizeof(buf) - 1, NULL, false, &m), 0);
        assert_int_equal(m->n_entries, 4);
        assert_algo(m->entries[0].algo, "blake2b");
        assert_int_equal(m->entries[0].out_len, 32);
        assert_algo(m->entries[1].algo, "blake2s");
        assert_int_equal(m->entries[1].out_len, 16);
        assert_algo(m->entries[2].algo, "blake2b");
        assert_int_equal(m->entries[2].out_len, 0); /* BLAKE2b-512 is the default */
        assert_algo(m->entries[3].algo, "md5"); /* 32 untagged digits: md5, never blake2b-128 */
        assert_int_equal(m->entries[3].out_len, 0);
        assert_int_equal(m->n_bad, 3);
        m = manifest_free(m);

        /* -a blake2b: an untagged line's length is its own, with or without -l (b2sum -c). */
        assert_int_equal(manifest_parse_with(buf, sizeof(buf) - 1, &(ManifestParseOptions){ .algo = "blake2b",
                                                                                          .hint = NULL },
                                             &m),
                         0);
        assert_int_equal(m->n_entries, 3);
        assert_int_equal(m->entries[2].out_len, 16);
        assert_string_equal(m->entries[2].name, "g");
        m = manifest_free(m);
        assert_int_equal(manifest_parse_with(buf, sizeof(buf) - 1,
                                             &(ManifestParseOptions){ .algo = "blake2b", .hint = NULL,
                                                                      .length = 8 },
                                             &m),
                         0);
        assert_int_equal(m->n_entries, 3);
        assert_int_equal(m->entries[0].out_len, 32);
        assert_int_equal(m->entries[2].out_len, 16);
        m = manifest_free(m);

        /* BLAKE3 as b3sum --check: the default length, unless -l says otherwise. */
        static const char b3[] = "00112233445566778899aabbccddeeff  h\n";
        assert_int_equal(manifest_parse_with(b3, sizeof(b3) - 1, &(ManifestParseOptions){ .algo = "blake3",
                                                                                        .hint = NULL },
                                             &m),
                         0);
        assert_int_equal(m->n_entries, 0);
        m = manifest_free(m);
        assert_int_equal(manifest_parse_with(b3, sizeof(b3) - 1,
                                             &(ManifestParseOptions){ .algo = "blake3", .hint = NULL,
                                                                      .length = 16 },
                                             &m),
                         0);
        assert_int_equal(m->n_entries, 1);
        assert_int_equal(m->entries[0].out_len, 16);
}

/* The reader yields what manifest_parse_with() finds in the same bytes, a line at a time: entries and
 * bad lines in line order with their numbers, comments and blank lines skipped, a last line without
 * its terminator, NUL-terminated lines; a file it cannot read says why, and again. */
static void reader_is(const char *bytes, size_t n, bool zero)
{
        _cleanup_free_ char *dir = th_mkdtemp("manifest"), *path = NULL;
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(manifest_reader_freep) ManifestReader *r = NULL;
        ManifestParseOptions o = { .algo = NULL, .hint = "sha256", .zero = zero };
        size_t entries = 0, bad = 0;
        FILE *f;
        int k;

        assert_true(asprintf(&path, "%s/m", dir) > 0);
        f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(bytes, 1, n, f), n);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(manifest_parse_with(bytes, n, &o, &m), 0);
        assert_int_equal(manifest_reader_new(path, &o, &r), 0);
        for (;;) {
                ManifestEntry e;

                k = manifest_reader_next(r, &e);
                if (k == MANIFEST_READ_END)
                        break;
                if (k == MANIFEST_READ_BAD) {
                        assert_true(bad < m->n_bad);
                        assert_int_equal(e.line, m->bad_lines[bad++]);
                        continue;
                }
                assert_int_equal(k, MANIFEST_READ_ENTRY);
                assert_true(entries < m->n_entries);
                assert_string_equal(e.name, m->entries[entries].name);
                assert_string_equal(e.hex, m->entries[entries].hex);
                assert_algo(e.algo, m->entries[entries].algo);
                assert_int_equal(e.line, m->entries[entries++].line);
                free(e.name);
        }
        assert_int_equal(entries, m->n_entries);
        assert_int_equal(bad, m->n_bad);
        assert_int_equal(manifest_reader_next(r, &(ManifestEntry){}), MANIFEST_READ_END);
        th_rm_rf(dir);
}

static void test_reader(void **state)
{
        static const char lines[] = H64 "  a\n"
                                    "garbage\n"
                                    "\n"
                                    "# comment\n"
                                    "\\" H64 "  new\\nline\r\n"
                                    "MD5 (b) = 0cc175b9c0f1b6a831c399e269772661\n"
                                    "bad line\n" H64 "  no newline at the end";
        static const char nul[] = H64 "  x\0" "junk\0" H64 "  with\nnewline";
        _cleanup_(manifest_reader_freep) ManifestReader *r = NULL;
        ManifestEntry e;

        reader_is(lines, sizeof(lines) - 1, false);
        reader_is(nul, sizeof(nul) - 1, true);
        reader_is("", 0, false);

        assert_int_equal(manifest_reader_new("/nonexistent/m", &(ManifestParseOptions){}, &r), -ENOENT);
        assert_int_equal(manifest_reader_new("/", &(ManifestParseOptions){}, &r), 0);
        assert_int_equal(manifest_reader_next(r, &e), -EISDIR);
        assert_int_equal(manifest_reader_next(r, &e), -EISDIR);
}

/* mtree lines one at a time: escapes as libarchive writes and reads them, /set and /unset, the
 * classic form's directories and "..", digests in their order of preference, unsupported ones, and
 * what is improperly formatted. */
static void mtree_is(MtreeParser *p, const char *line, const char *want, int k, const char *name, const char *algo,
                     MtreeType type)
{
        char *n = NULL, hex[ALGO_HEX_MAX];
        const char *a = NULL;
        MtreeInfo info = {};

        assert_int_equal(mtree_parse_line(p, line, strlen(line), want, &n, &a, hex, &info), k);
        if (k != 1)
                return;
        assert_string_equal(n, name);
        assert_algo(a, algo);
        assert_int_equal(info.type, type);
        if (!algo)
                assert_string_equal(hex, "");
        else
                assert_int_equal(strlen(hex), 2 * algo_digest_size(algo));
        free(n);
        free(info.link);
}

static void test_mtree(void **state)
{
        MtreeParser *p = NULL;
        char *n = NULL, hex[ALGO_HEX_MAX];
        const char *a;
        MtreeInfo info = {};

        assert_true(mtree_detect("#mtree", 6));
        assert_true(mtree_detect("  /set type=file", 16));
        assert_true(mtree_detect("/unset all", 10));
        assert_false(mtree_detect(H64 "  /set", strlen(H64) + 6));
        assert_false(mtree_detect("/settle x", 9));
        assert_true(mtree_detect_filename("/x/.MTREE"));
        assert_true(mtree_detect_filename("tree.mtree"));
        assert_false(mtree_detect_filename("MTREE.txt"));

        assert_int_equal(mtree_parser_new(&p), 0);
        mtree_is(p, "#mtree", NULL, 0, NULL, NULL, 0);
        mtree_is(p, "   ", NULL, 0, NULL, NULL, 0);
        /* Escapes: octal (first digit 0-3), C's, \s; an unknown one is a literal backslash. */
        mtree_is(p, "./a\\040b\\012c\\377\\134 type=file", NULL, 1, "./a b\nc\377\\", NULL, MTREE_FILE);
        mtree_is(p, "./t\\st\\tu\\q", NULL, 1, "./t t\tu\\q", NULL, MTREE_FILE);
        mtree_is(p, "./nul\\000", NULL, -EINVAL, NULL, NULL, 0);
        /* Digests: sha256 first, -a picks another, md5 alone, rmd160 alone is unsupported. */
        mtree_is(p, "./f md5digest=0cc175b9c0f1b6a831c399e269772661 sha256digest=" H64, NULL, 1, "./f",
                 "sha256", MTREE_FILE);
        mtree_is(p, "./f md5=0cc175b9c0f1b6a831c399e269772661 sha256=" H64, "md5", 1, "./f", "md5", MTREE_FILE);
        mtree_is(p, "./f sha512digest=" H128, NULL, 1, "./f", "sha512", MTREE_FILE);
        static const char r160[] = "./r rmd160digest=1234 size=7 mode=0640", lnk[] = "./l type=link link=a\\040b";
        assert_int_equal(mtree_parse_line(p, r160, strlen(r160), NULL, &n, &a, hex, &info), 1);
        assert_string_equal(info.unsupported, "rmd160digest");
        assert_true(info.has_size && info.size == 7 && info.has_mode && info.mode == 0640);
        free(n);
        mtree_is(p, "./f sha256digest=abc", NULL, -EINVAL, NULL, NULL, 0);
        mtree_is(p, "./f type=door", NULL, -EINVAL, NULL, NULL, 0);
        mtree_is(p, "./f size=12x", NULL, -EINVAL, NULL, NULL, 0);
        mtree_is(p, "/frob x=1", NULL, -EINVAL, NULL, NULL, 0);
        /* A directory or link names no digest, whatever /set says. */
        mtree_is(p, "/set type=dir sha256digest=" H64, NULL, 0, NULL, NULL, 0);
        mtree_is(p, "./d", NULL, 1, "./d", NULL, MTREE_DIR);
        mtree_is(p, "./f type=file", NULL, 1, "./f", "sha256", MTREE_FILE);
        assert_int_equal(mtree_parse_line(p, lnk, strlen(lnk), NULL, &n, &a, hex, &info), 1);
        assert_string_equal(info.link, "a b");
        free(n);
        free(info.link);
        mtree_is(p, "/unset all", NULL, 0, NULL, NULL, 0);
        mtree_is(p, "./f", NULL, 1, "./f", NULL, MTREE_FILE);
        /* The classic form: names without '/' in the directory entered last; ".." goes up. */
        mtree_is(p, ". type=dir", NULL, 1, ".", NULL, MTREE_DIR);
        mtree_is(p, "usr type=dir", NULL, 1, "./usr", NULL, MTREE_DIR);
        mtree_is(p, "bin type=dir", NULL, 1, "./usr/bin", NULL, MTREE_DIR);
        mtree_is(p, "ls size=3", NULL, 1, "./usr/bin/ls", NULL, MTREE_FILE);
        mtree_is(p, "..", NULL, 0, NULL, NULL, 0);
        mtree_is(p, "lib type=dir", NULL, 1, "./usr/lib", NULL, MTREE_DIR);
        mtree_is(p, "..", NULL, 0, NULL, NULL, 0);
        mtree_is(p, "..", NULL, 0, NULL, NULL, 0);
        mtree_is(p, "..", NULL, 0, NULL, NULL, 0);
        mtree_is(p, "..", NULL, -EINVAL, NULL, NULL, 0);
        mtree_is(p, "./full/path type=dir", NULL, 1, "./full/path", NULL, MTREE_DIR);
        mtree_is(p, "x", NULL, 1, "x", NULL, MTREE_FILE);
        mtree_parser_free(p);
}

/* The reader on an mtree manifest: lines continued with '\\' joined (numbered by their first),
 * comments skipped, bad lines counted; the same bytes gzip-compressed read the same. */
static void test_mtree_reader(void **state)
{
        static const char m[] = "#mtree\n"
                                "/set type=file mode=644\n"
                                "./a\\040b     size=1 \\\n"
                                "                sha256digest=" H64 "\n"
                                "# a comment\n"
                                "./dir type=dir\n"
                                "./bad type=nonsense\n"
                                "./last md5digest=0cc175b9c0f1b6a831c399e269772661";
        _cleanup_free_ char *dir = th_mkdtemp("manifest-mtree");

        for (int gz = 0; gz < 2; gz++) {
                _cleanup_free_ char *path = NULL, *cmd = NULL;
                _cleanup_(manifest_reader_freep) ManifestReader *r = NULL;
                ManifestEntry e = {};
                FILE *f;

                assert_true(asprintf(&path, "%s/m%d", dir, gz) > 0);
                f = fopen(path, "w");
                assert_non_null(f);
                assert_int_equal(fwrite(m, 1, sizeof(m) - 1, f), sizeof(m) - 1);
                assert_int_equal(fclose(f), 0);
                if (gz) {
                        assert_true(asprintf(&cmd, "gzip -n < '%s' > '%s.gz' && mv '%s.gz' '%s'", path, path, path,
                                             path) > 0);
                        assert_int_equal(system(cmd), 0);
                }
                assert_int_equal(manifest_reader_new(path, &(ManifestParseOptions){ .algo = NULL,
                                                                                     .hint = NULL },
                                                     &r),
                                 0);
                assert_int_equal(manifest_reader_next(r, &e), MANIFEST_READ_ENTRY);
                assert_true(e.is_mtree);
                assert_string_equal(e.name, "./a b");
                assert_algo(e.algo, "sha256");
                assert_string_equal(e.hex, H64);
                assert_int_equal(e.line, 3);
                assert_true(e.mtree.has_mode && e.mtree.mode == 0644 && e.mtree.size == 1);
                manifest_entry_clear(&e);
                assert_int_equal(manifest_reader_next(r, &e), MANIFEST_READ_ENTRY);
                assert_string_equal(e.name, "./dir");
                assert_int_equal(e.mtree.type, MTREE_DIR);
                manifest_entry_clear(&e);
                assert_int_equal(manifest_reader_next(r, &e), MANIFEST_READ_BAD);
                assert_int_equal(e.line, 7);
                assert_int_equal(manifest_reader_next(r, &e), MANIFEST_READ_ENTRY);
                assert_algo(e.algo, "md5");
                manifest_entry_clear(&e);
                assert_int_equal(manifest_reader_next(r, &e), MANIFEST_READ_END);
        }
        th_rm_rf(dir);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_filenames),
                cmocka_unit_test(test_hinted),
                cmocka_unit_test(test_lengths),
                cmocka_unit_test(test_untagged), cmocka_unit_test(test_escaped),
                cmocka_unit_test(test_tagged),   cmocka_unit_test(test_bad),
                cmocka_unit_test(test_buffer),   cmocka_unit_test(test_buffer_zero),
                cmocka_unit_test(test_empty),    cmocka_unit_test(test_reader),
                cmocka_unit_test(test_reversed),
                cmocka_unit_test(test_other_writers),
                cmocka_unit_test(test_mtree),    cmocka_unit_test(test_mtree_reader),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
