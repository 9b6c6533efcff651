/* SPDX-License-Identifier: MIT */
/* fuzz-dbus-message.c: the gate's header checks on arbitrary bytes, against sd-bus's own reading */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "basic/macro.h"
#include "daemon/dbus-message.h"
#include "daemon/test-dbus-oracle.h"

/*
 * An input is a byte giving how many fds come with the message (0-4, from its low bits), then the
 * message. Unless the byte's high bit is set, the body length in the fixed header is first made to
 * fit the input, so that most mutations reach the header fields rather than stop at the framing.
 * Whatever the gate takes must: be as long as its header says, point into the message for every
 * field, rewrite into a header that parses again with no fds and says the same but for UNIX_FDS,
 * 'h' and MEMBER, and be taken by sd-bus 252 (over a socket, with as many real fds) with the same
 * fields, both as it is and rewritten, keeping exactly its fds. sd-bus is asked unless
 * FHASH_FUZZ_NO_SD_BUS is set (the parser alone runs 5-7 times faster); FHASH_FUZZ_STATS=1 prints
 * how often each verdict came, at exit.
 */

/* Bytes that matter to a D-Bus header, for fuzz-driver.c's mutations. */
const char fuzz_interesting[] =
        "lB\0\1\2\3\4\5\6\7\10\11\12\377osgvuyhbnqixtda(){}/.:_-\xc3\xa9\xef\xbf\xbe";
const size_t fuzz_interesting_size = sizeof(fuzz_interesting) - 1;

static Oracle *oracle;
static int use_sd_bus = -1;

/* The verdicts and their counts, for FHASH_FUZZ_STATS. */
static struct {
        const char *why; /* NULL: taken */
        unsigned long n;
} stats[96];

static void count(const char *why)
{
        for (size_t i = 0; i < ELEMENTSOF(stats); i++)
                if (stats[i].why == why || stats[i].n == 0) {
                        stats[i].why = why;
                        stats[i].n++;
                        return;
                }
}

static void print_stats(void)
{
        for (size_t i = 0; i < ELEMENTSOF(stats) && stats[i].n; i++)
                fprintf(stderr, "%10lu %s\n", stats[i].n, stats[i].why ? stats[i].why : "(taken)");
}

#define REQUIRE(c)                                                                                          \
        do {                                                                                                \
                if (!(c)) {                                                                                 \
                        fprintf(stderr, "fuzz-dbus-message: %s:%d: %s\n", __FILE__, __LINE__, #c);          \
                        abort();                                                                            \
                }                                                                                           \
        } while (0)

static bool inside(const uint8_t *m, size_t len, const char *s)
{
        return !s || ((const uint8_t *)s >= m && (const uint8_t *)s + strlen(s) < m + len);
}

/* sd-bus takes m with n_fds fds and sees what h says. */
static void check_sd_bus(const uint8_t *m, size_t len, size_t n_fds, const DBusHeader *h)
{
        sd_bus_message *sm = NULL;
        unsigned leaked = 0;
        uint64_t cookie, reply;
        uint8_t type;
        int r;

        if (!use_sd_bus)
                return;
        r = oracle_verdict(oracle, m, len, n_fds, &sm, &leaked);
        if (r != 1) {
                fprintf(stderr, "fuzz-dbus-message: the gate takes a message sd-bus %s\n",
                        r == 0 ? "drops" : "closes the connection on");
                abort();
        }
        REQUIRE(leaked == 0);
        REQUIRE(sd_bus_message_get_type(sm, &type) >= 0 && type == h->type);
        REQUIRE(sd_bus_message_get_cookie(sm, &cookie) >= 0 && cookie == h->serial);
        r = sd_bus_message_get_reply_cookie(sm, &reply);
        REQUIRE(h->reply_serial ? r >= 0 && reply == h->reply_serial : r == -ENODATA);
        REQUIRE(streq_ptr(sd_bus_message_get_path(sm), h->path));
        REQUIRE(streq_ptr(sd_bus_message_get_interface(sm), h->interface));
        REQUIRE(streq_ptr(sd_bus_message_get_member(sm), h->member));
        REQUIRE(streq_ptr(sd_bus_message_get_destination(sm), h->destination));
        REQUIRE(streq_ptr(sd_bus_message_get_sender(sm), h->sender));
        REQUIRE(streq(sd_bus_message_get_signature(sm, 1), h->signature ? h->signature : ""));
        if (h->type == DBUS_MESSAGE_ERROR)
                REQUIRE(streq_ptr(sd_bus_message_get_error(sm)->name, h->error_name));
        REQUIRE(oracle_marker_copies(oracle) == n_fds);
        sd_bus_message_unref(sm);
        REQUIRE(oracle_marker_copies(oracle) == 0);
}

static void check_rewrite(const uint8_t *m, const DBusHeader *h, const char *new_member)
{
        size_t max = dbus_message_rewrite_max(h, new_member),
               body = 16 + ALIGN_TO((size_t)h->fields_size, 8);
        uint8_t *out = malloc(max + h->body_size);
        DBusHeader b;
        ssize_t n;

        REQUIRE(out);
        n = dbus_message_rewrite(m, h, new_member, DBUS_REWRITE_FDS_AS_INDEXES, out, max);
        if (new_member && !h->member) {
                REQUIRE(n == -EINVAL);
                free(out);
                return;
        }
        REQUIRE(n >= 16 && n % 8 == 0 && (size_t)n <= max);
        REQUIRE(dbus_message_rewrite(m, h, new_member, DBUS_REWRITE_FDS_AS_INDEXES, out, (size_t)n - 1) == -ENOBUFS);
        memcpy(out + n, m + body, h->body_size);
        REQUIRE(dbus_message_parse(out, (size_t)n + h->body_size, 0, &b, NULL) == 0);
        REQUIRE(b.type == h->type && b.flags == h->flags && b.serial == h->serial);
        REQUIRE(b.body_size == h->body_size && b.reply_serial == h->reply_serial && !b.has_unix_fds);
        REQUIRE(streq_ptr(b.path, h->path) && streq_ptr(b.interface, h->interface));
        REQUIRE(streq_ptr(b.member, new_member ? new_member : h->member));
        REQUIRE(streq_ptr(b.error_name, h->error_name) && streq_ptr(b.destination, h->destination));
        REQUIRE(streq_ptr(b.sender, h->sender) && !b.signature == !h->signature);
        if (h->signature) {
                REQUIRE(strlen(b.signature) == strlen(h->signature));
                for (size_t i = 0; h->signature[i]; i++)
                        REQUIRE(b.signature[i] == (h->signature[i] == 'h' ? 'u' : h->signature[i]));
        }
        check_sd_bus(out, (size_t)n + h->body_size, 0, &b);
        free(out);
}

/* Sets the fixed header's body length so that the message is len bytes, if it can be. */
static void fit_body(uint8_t *m, size_t len)
{
        uint32_t fields;
        size_t head;
        bool be;

        if (len < 16)
                return;
        be = m[0] == 'B';
        fields = be ? (uint32_t)m[12] << 24 | (uint32_t)m[13] << 16 | (uint32_t)m[14] << 8 | m[15]
                    : (uint32_t)m[15] << 24 | (uint32_t)m[14] << 16 | (uint32_t)m[13] << 8 | m[12];
        head = 16 + ALIGN_TO((size_t)fields, 8);
        if (head > len || len - head > UINT32_MAX)
                return;
        for (int i = 0; i < 4; i++)
                m[4 + (be ? 3 - i : i)] = (uint8_t)((len - head) >> (8 * i));
}

static void run(const uint8_t *m, size_t len, size_t n_fds)
{
        const char *why = NULL;
        size_t total;
        DBusHeader h;
        int r;

        r = dbus_message_parse(m, len, n_fds, &h, &why);
        count(r < 0 ? why : NULL);
        if (r < 0) {
                REQUIRE(r == -EBADMSG && why && *why);
                return;
        }
        REQUIRE(dbus_message_size(m, &total) == 0 && total == len && h.total == len);
        REQUIRE(inside(m, len, h.path) && inside(m, len, h.interface) && inside(m, len, h.member));
        REQUIRE(inside(m, len, h.error_name) && inside(m, len, h.destination) && inside(m, len, h.sender));
        REQUIRE(inside(m, len, h.signature));
        REQUIRE(!h.path || dbus_object_path_is_valid(h.path));
        REQUIRE(!h.interface || dbus_interface_name_is_valid(h.interface));
        REQUIRE(!h.member || dbus_member_name_is_valid(h.member));
        REQUIRE(h.unix_fds == n_fds && (!h.has_unix_fds || m[h.unix_fds_offset] == DBUS_FIELD_UNIX_FDS));

        check_sd_bus(m, len, n_fds, &h);
        check_rewrite(m, &h, NULL);
        check_rewrite(m, &h, "Renamed");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint8_t *m;

        if (use_sd_bus < 0) {
                use_sd_bus = !getenv("FHASH_FUZZ_NO_SD_BUS");
                if (use_sd_bus && oracle_new(&oracle) < 0) {
                        fprintf(stderr, "fuzz-dbus-message: no sd-bus to compare with\n");
                        abort();
                }
                if (getenv("FHASH_FUZZ_STATS"))
                        atexit(print_stats);
        }
        if (size < 1)
                return 0;
        /* An exact copy, so that ASan sees a read past the message's end. */
        m = malloc(size - 1 ? size - 1 : 1);
        REQUIRE(m);
        memcpy(m, data + 1, size - 1);
        if (!(data[0] & 0x80))
                fit_body(m, size - 1);
        run(m, size - 1, (data[0] & 0x7f) % 5);
        free(m);
        return 0;
}
