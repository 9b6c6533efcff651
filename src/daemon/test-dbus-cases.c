/* SPDX-License-Identifier: MIT */
/* test-dbus-cases.c: the checks each message of the dbus-message tests goes through, sd-bus's verdicts */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "basic/macro.h"
#include "daemon/test-dbus-cases.h"

/* sd-bus 252 loses the array of fds of each message it drops: bus_socket_read_message() allocates it,
 * bus_socket_make_message() forgets it on -EBADMSG, on the same path that leaks the fds themselves
 * (issue 24, N1), which these tests take on purpose. LeakSanitizer ignores what libsystemd allocates. */
_public_ const char *__lsan_default_suppressions(void);
_public_ const char *__lsan_default_suppressions(void)
{
        return "leak:libsystemd.so.0\n";
}

const char *current;
Oracle *oracle;

int test_oracle_setup(void **state)
{
        return oracle_new(&oracle) < 0 ? -1 : 0;
}

int test_oracle_teardown(void **state)
{
        oracle = oracle_free(oracle);
        return 0;
}

/* ---- what every message the gate takes must also be ---- */

static bool inside(const uint8_t *m, size_t len, const char *s)
{
        return !s || ((const uint8_t *)s >= m && (const uint8_t *)s + strlen(s) < m + len);
}

/* sd-bus saw the message as h describes it. */
static void check_sd_same(const DBusHeader *h, sd_bus_message *sm)
{
        uint64_t cookie, reply;
        uint8_t type;
        int r;

        CHECK(sd_bus_message_get_type(sm, &type) >= 0 && type == h->type);
        CHECK(sd_bus_message_get_cookie(sm, &cookie) >= 0 && cookie == h->serial);
        r = sd_bus_message_get_reply_cookie(sm, &reply);
        CHECK(h->reply_serial ? r >= 0 && reply == h->reply_serial : r == -ENODATA);
        CHECK(streq_ptr(sd_bus_message_get_path(sm), h->path));
        CHECK(streq_ptr(sd_bus_message_get_interface(sm), h->interface));
        CHECK(streq_ptr(sd_bus_message_get_member(sm), h->member));
        CHECK(streq_ptr(sd_bus_message_get_destination(sm), h->destination));
        CHECK(streq_ptr(sd_bus_message_get_sender(sm), h->sender));
        CHECK(streq(sd_bus_message_get_signature(sm, 1), h->signature ? h->signature : ""));
        if (h->type == DBUS_MESSAGE_ERROR)
                CHECK(streq_ptr(sd_bus_message_get_error(sm)->name, h->error_name));
        if (h->type == DBUS_MESSAGE_METHOD_CALL) {
                CHECK(sd_bus_message_get_expect_reply(sm) == !(h->flags & DBUS_FLAG_NO_REPLY_EXPECTED));
                CHECK(sd_bus_message_get_auto_start(sm) == !(h->flags & DBUS_FLAG_NO_AUTO_START));
        }
}

/* sd-bus takes m with n_fds fds, sees it as h says, and holds exactly those fds. */
static void check_sd_takes(Oracle *o, const uint8_t *m, size_t len, size_t n_fds, const DBusHeader *h)
{
        sd_bus_message *sm = NULL;
        unsigned leaked = 99;

        CHECK(oracle_verdict(o, m, len, n_fds, &sm, &leaked) == 1);
        CHECK(leaked == 0);
        check_sd_same(h, sm);
        CHECK(oracle_marker_copies(o) == n_fds);
        sd_bus_message_unref(sm);
        CHECK(oracle_marker_copies(o) == 0);
}

static bool same_str(const char *a, const char *b)
{
        return streq_ptr(a, b);
}

/* The rewritten header b says what a said, but for UNIX_FDS, 'h' in SIGNATURE and MEMBER. */
static void check_rewritten(const DBusHeader *a, const DBusHeader *b, const char *new_member)
{
        CHECK(a->big_endian == b->big_endian && a->type == b->type && a->flags == b->flags);
        CHECK(a->serial == b->serial && a->body_size == b->body_size && a->reply_serial == b->reply_serial);
        CHECK(same_str(a->path, b->path) && same_str(a->interface, b->interface));
        CHECK(same_str(a->error_name, b->error_name) && same_str(a->destination, b->destination));
        CHECK(same_str(a->sender, b->sender));
        CHECK(same_str(new_member ? new_member : a->member, b->member));
        CHECK(!b->has_unix_fds && b->unix_fds == 0);
        CHECK(!a->signature == !b->signature);
        if (a->signature && b->signature) {
                CHECK(strlen(a->signature) == strlen(b->signature));
                for (size_t i = 0; a->signature[i]; i++)
                        CHECK(b->signature[i] == (a->signature[i] == 'h' ? 'u' : a->signature[i]));
                CHECK(!dbus_signature_has_fds(b->signature));
        }
}

/* Rewrites m, checks the result parses with no fds as what m said, and that sd-bus takes it. */
static void check_rewrite(Oracle *o, const uint8_t *m, const DBusHeader *h, const char *new_member)
{
        size_t max = dbus_message_rewrite_max(h, new_member),
               body = 16 + ALIGN_TO((size_t)h->fields_size, 8);
        uint8_t *out = malloc(max + h->body_size), *small;
        DBusHeader h2;
        const char *why = NULL;
        ssize_t n;

        assert_non_null(out);
        n = dbus_message_rewrite(m, h, new_member, DBUS_REWRITE_FDS_AS_INDEXES, out, max);
        CHECK(n >= 16 && n % 8 == 0 && (size_t)n <= max);
        /* Too small by one byte: refused, and nothing written. */
        small = malloc((size_t)n);
        assert_non_null(small);
        memset(small, 0xaa, (size_t)n);
        CHECK(dbus_message_rewrite(m, h, new_member, DBUS_REWRITE_FDS_AS_INDEXES, small, (size_t)n - 1) == -ENOBUFS);
        for (ssize_t i = 0; i < n; i++)
                CHECK(small[i] == 0xaa);
        free(small);

        memcpy(out + n, m + body, h->body_size);
        CHECK(dbus_message_parse(out, (size_t)n + h->body_size, 0, &h2, &why) == 0);
        if (why)
                print_error("%s: rewritten: %s\n", current, why);
        check_rewritten(h, &h2, new_member);
        CHECK(memcmp(out + n, m + body, h->body_size) == 0);
        if (o)
                check_sd_takes(o, out, (size_t)n + h->body_size, 0, &h2);
        free(out);
}

void check_valid(Oracle *o, const uint8_t *m, size_t len, size_t n_fds)
{
        const char *why = NULL;
        DBusHeader h;
        size_t total;

        CHECK(dbus_message_size(m, &total) == 0 && total == len);
        if (dbus_message_parse(m, len, n_fds, &h, &why) < 0) {
                print_error("%s: refused: %s\n", current, why);
                fail();
        }
        CHECK(h.total == len && h.version == 1 && h.serial != 0);
        CHECK(inside(m, len, h.path) && inside(m, len, h.interface) && inside(m, len, h.member));
        CHECK(inside(m, len, h.error_name) && inside(m, len, h.destination) && inside(m, len, h.sender));
        CHECK(inside(m, len, h.signature));
        CHECK(h.unix_fds == n_fds && (h.has_unix_fds || n_fds == 0));
        if (h.has_unix_fds)
                CHECK(h.unix_fds_offset % 8 == 0 && m[h.unix_fds_offset] == DBUS_FIELD_UNIX_FDS);
        /* Any other count of fds is refused. */
        CHECK(dbus_message_parse(m, len, n_fds + 1, &h, NULL) == -EBADMSG);
        if (n_fds > 0)
                CHECK(dbus_message_parse(m, len, n_fds - 1, &h, NULL) == -EBADMSG);
        CHECK(dbus_message_parse(m, len, n_fds, &h, NULL) == 0);

        if (o)
                check_sd_takes(o, m, len, n_fds, &h);
        check_rewrite(o, m, &h, NULL);
        if (h.member) {
                check_rewrite(o, m, &h, "Renamed_2");
                check_rewrite(o, m, &h, "X");
                check_rewrite(
                        o, m, &h,
                        "AVeryLongMemberName_AVeryLongMemberName_AVeryLongMemberName_AVeryLongMemberName_"
                        "AVeryLongMemberName_AVeryLongMemberName_AVeryLongMemberName_AVeryLongMemberName_"
                        "AVeryLongMemberName_AVeryLongMemberName_AVeryLongMemberName_AVeryLongMemberNa");
        }
}

static const char *sd_name(int verdict)
{
        return verdict > 0 ? "takes it" : verdict == 0 ? "drops it" : "closes the connection";
}

void check_case(const uint8_t *m, size_t len, size_t n_fds, const char *want_why, SdVerdict sd)
{
        const char *why = NULL;
        sd_bus_message *sm = NULL;
        unsigned leaked = 0;
        DBusHeader h;
        int r;

        if (!want_why) {
                check_valid(oracle, m, len, n_fds);
                return;
        }
        r = dbus_message_parse(m, len, n_fds, &h, &why);
        if (r != -EBADMSG || !streq_ptr(why, want_why)) {
                print_error("%s: want \"%s\", got %d \"%s\"\n", current, want_why, r, why ? why : "(none)");
                fail();
        }
        if (sd == SD_NOT_ASKED)
                return;
        r = oracle_verdict(oracle, m, len, n_fds, &sm, &leaked);
        print_message("# %-50s gate: %s; sd-bus 252 %s%s\n", current, why, sd_name(r),
                      r <= 0 && leaked ? " and leaks its fds" : "");
        CHECK(sd == SD_TAKES ? r == 1 : r <= 0);
        sd_bus_message_unref(sm);
        CHECK(oracle_marker_copies(oracle) == 0);
}

void run_cases(const Case *cases, size_t n)
{
        char name[160];

        for (size_t i = 0; i < n; i++)
                for (int be = 0; be < 2; be++) {
                        Msg m = { .h.be = be };
                        uint8_t *b;
                        size_t len;

                        snprintf(name, sizeof(name), "%s (%s)", cases[i].name,
                                 be ? "big-endian" : "little-endian");
                        current = name;
                        cases[i].build(&m);
                        b = msg_finish(&m, &len);
                        check_case(b, len, m.n_fds, cases[i].why, cases[i].sd);
                        free(b);
                        msg_free(&m);
                }
}

int write_corpus(const char *dir, const char *kind, const Case *cases, size_t n)
{
        char path[4608];

        for (size_t i = 0; i < n; i++) {
                Msg m = { .h.be = i % 2 };
                uint8_t *b, n_fds;
                size_t len;
                FILE *f;
                bool ok;

                if (cases[i].sd == SD_NOT_ASKED)
                        continue;
                cases[i].build(&m);
                b = msg_finish(&m, &len);
                /* fuzz-dbus-message's -max_len: the paths of 64 KiB are too long to seed it. */
                if (len > 65536) {
                        free(b);
                        msg_free(&m);
                        continue;
                }
                snprintf(path, sizeof(path), "%s/case-%s-%02zu", dir, kind, i);
                n_fds = (uint8_t)m.n_fds;
                f = fopen(path, "we");
                ok = f && fwrite(&n_fds, 1, 1, f) == 1 && fwrite(b, 1, len, f) == len;
                if (f && fclose(f) != 0)
                        ok = false;
                free(b);
                msg_free(&m);
                if (!ok) {
                        fprintf(stderr, "%s: %m\n", path);
                        return 1;
                }
        }
        return 0;
}

uint8_t *test_read_file(const char *path, size_t *ret_len)
{
        FILE *f = fopen(path, "rbe");
        uint8_t *b = malloc(1 << 16);
        size_t n;

        assert_non_null(f);
        assert_non_null(b);
        n = fread(b, 1, 1 << 16, f);
        assert_true(n > 0 && n < 1 << 16);
        fclose(f);
        *ret_len = n;
        return b;
}

const char *test_data_dir(void)
{
        static char dir[4096];
        const char *root = getenv("FHASH_SOURCE_ROOT");

        if (!root) {
                print_message("FHASH_SOURCE_ROOT is not set (meson test sets it): no test data\n");
                skip();
        }
        snprintf(dir, sizeof(dir), "%s/tests/data/dbus-message", root);
        return dir;
}
