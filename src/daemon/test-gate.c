/* SPDX-License-Identifier: MIT */
/* test-gate.c: a direct connection's gate with a real sd-bus behind it: what sd-bus gets, what the
 * gate keeps, what it closes, and when it closes the connection */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/closing.h"
#include "daemon/config.h"
#include "daemon/fd-screen.h"
#include "daemon/gate.h"
#include "daemon/registry.h"
#include "fhash/fhash-dbus.h"

#define CLIENT_UID 4242

static const char *strempty(const char *s)
{
        return s ? s : "";
}

typedef struct Seen {
        char member[64];
        char signature[64];
        uint64_t cookie;
        unsigned n;
        bool take;        /* the filter takes the call's parcel, as a handler does */
        Parcel *parcel;
} Seen;

typedef struct Fixture {
        Context c;
        sd_bus *server;   /* fhashd's end, as peer.c makes it */
        Gate *gate;
        int client;       /* the client's socket, spoken by hand */
        Seen seen;
        char violation[256];
        int file;         /* a file whose fds the client sends */
        struct stat file_st;
} Fixture;

/* How many of this process's fds are open on the file with st's device and inode. */
static int count_open(const struct stat *st)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        int n = 0;

        assert_non_null(d);
        while ((e = readdir(d))) {
                struct stat s;

                if (e->d_name[0] == '.' || fstat((int)strtol(e->d_name, NULL, 10), &s) < 0)
                        continue;
                if (s.st_dev == st->st_dev && s.st_ino == st->st_ino)
                        n++;
        }
        closedir(d);
        return n;
}

static void run_until(Fixture *f, bool (*cond)(Fixture *f), int ms)
{
        for (int i = 0; i < ms && !cond(f); i++)
                (void)sd_event_run(f->c.event, 1000);
}

static bool seen_one(Fixture *f)
{
        return f->seen.n > 0;
}

static bool violated(Fixture *f)
{
        return f->violation[0] != '\0';
}

static int on_message(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Fixture *f = userdata;
        uint8_t type = 0;

        if (sd_bus_message_get_type(m, &type) < 0 || type != SD_BUS_MESSAGE_METHOD_CALL)
                return 0;
        f->seen.n++;
        (void)snprintf(f->seen.member, sizeof(f->seen.member), "%s", strempty(sd_bus_message_get_member(m)));
        (void)snprintf(f->seen.signature, sizeof(f->seen.signature), "%s",
                       strempty(sd_bus_message_get_signature(m, true)));
        assert_int_equal(sd_bus_message_get_cookie(m, &f->seen.cookie), 0);
        if (f->seen.take)
                f->seen.parcel = gate_take_parcel(f->gate, NULL, (uint32_t)f->seen.cookie);
        return 1;
}

static void on_violation(Gate *g, const char *what, void *userdata)
{
        Fixture *f = userdata;

        (void)snprintf(f->violation, sizeof(f->violation), "%s", what);
}

static const GateOps ops = { .violation = on_violation };

static int fixture_setup(void **state)
{
        UserLimit limits[_USER_RESOURCE_MAX] = {};
        Fixture *f = calloc(1, sizeof(*f));
        int pair[2], inner[2];
        sd_id128_t id;
        char buf[256];
        ssize_t n;

        assert_non_null(f);
        config_fd_limits(4096, 64, limits);
        registry_init(&f->c.registry, limits);
        assert_int_equal(sd_event_new(&f->c.event), 0);
        assert_int_equal(closing_new(&f->c.registry.users, &f->c.closing), 0);
        assert_int_equal(closing_attach_event(f->c.closing, f->c.event), 0);
        assert_int_equal(fd_screen_new(&f->c.fd_screen), 0);

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, inner), 0);
        assert_int_equal(gate_new(&f->c, GATE_SERVER, CLIENT_UID, pair[0], inner[1], inner[0], &ops, f, &f->gate), 0);
        assert_int_equal(sd_bus_new(&f->server), 0);
        assert_int_equal(sd_bus_set_fd(f->server, inner[0], pair[0]), 0);
        assert_int_equal(sd_id128_randomize(&id), 0);
        assert_int_equal(sd_bus_set_server(f->server, 1, id), 0);
        assert_int_equal(sd_bus_set_anonymous(f->server, 1), 0);
        assert_int_equal(sd_bus_negotiate_fds(f->server, 1), 0);
        assert_int_equal(sd_bus_add_filter(f->server, NULL, on_message, f), 0);
        assert_int_equal(sd_bus_start(f->server), 0);
        assert_int_equal(sd_bus_attach_event(f->server, f->c.event, 0), 0);
        f->client = pair[1];

        /* The handshake, by hand; sd-bus answers through the client's socket directly. */
        (void)snprintf(buf, sizeof(buf), "%cAUTH ANONYMOUS\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n", 0);
        assert_int_equal(write(f->client, buf, 1 + strlen(buf + 1)), (ssize_t)(1 + strlen(buf + 1)));
        for (int i = 0; i < 1000 && sd_bus_is_ready(f->server) <= 0; i++)
                (void)sd_event_run(f->c.event, 1000);
        assert_true(sd_bus_is_ready(f->server) > 0);
        n = recv(f->client, buf, sizeof(buf) - 1, MSG_DONTWAIT);
        assert_true(n > 0);
        buf[n] = 0;
        assert_non_null(strstr(buf, "AGREE_UNIX_FD"));

        f->file = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        assert_true(f->file >= 0);
        assert_int_equal(write(f->file, "gate", 4), 4);
        assert_int_equal(fstat(f->file, &f->file_st), 0);
        *state = f;
        return 0;
}

static int fixture_teardown(void **state)
{
        Fixture *f = *state;

        parcel_free(f->seen.parcel);
        sd_bus_close_unref(f->server);
        gate_free(f->gate);
        fd_screen_free(f->c.fd_screen);
        closing_free(f->c.closing);
        sd_event_unref(f->c.event);
        registry_done(&f->c.registry);
        close(f->client);
        close(f->file);
        free(f);
        return 0;
}

/* A message as a client writes it, little-endian: type 1 (a call), its fields, its body. */
typedef struct Msg {
        uint8_t b[1024];
        size_t len;
} Msg;

static void put32(uint8_t *p, uint32_t v)
{
        memcpy(p, &v, 4);
}

static void field_string(Msg *m, uint8_t code, char type, const char *v)
{
        size_t l = strlen(v);

        m->len = ALIGN_TO(m->len, 8);
        m->b[m->len] = code;
        m->b[m->len + 1] = 1;
        m->b[m->len + 2] = (uint8_t)type;
        m->b[m->len + 3] = 0;
        if (type == 'g') {
                m->b[m->len + 4] = (uint8_t)l;
                memcpy(m->b + m->len + 5, v, l + 1);
                m->len += 5 + l + 1;
                return;
        }
        put32(m->b + m->len + 4, (uint32_t)l);
        memcpy(m->b + m->len + 8, v, l + 1);
        m->len += 8 + l + 1;
}

static void field_u32(Msg *m, uint8_t code, uint32_t v)
{
        m->len = ALIGN_TO(m->len, 8);
        memcpy(m->b + m->len, (const uint8_t[]){ code, 1, 'u', 0 }, 4);
        put32(m->b + m->len + 4, v);
        m->len += 8;
}

/* A call of member at path/iface with signature sig, UNIX_FDS n_fds (if > 0), and body. */
static void build_call(Msg *m, uint32_t serial, const char *path, const char *iface, const char *member,
                       const char *sig, uint32_t n_fds, const void *body, size_t body_len)
{
        size_t fields;

        memset(m, 0, sizeof(*m));
        memcpy(m->b, (const uint8_t[]){ 'l', 1, 0, 1 }, 4);
        put32(m->b + 4, (uint32_t)body_len);
        put32(m->b + 8, serial);
        m->len = 16;
        field_string(m, 1, 'o', path);
        if (iface)
                field_string(m, 2, 's', iface);
        field_string(m, 3, 's', member);
        if (sig)
                field_string(m, 8, 'g', sig);
        if (n_fds)
                field_u32(m, 9, n_fds);
        fields = m->len - 16;
        put32(m->b + 12, (uint32_t)fields);
        m->len = ALIGN_TO(m->len, 8);
        if (body_len > 0)
                memcpy(m->b + m->len, body, body_len);
        m->len += body_len;
}

static void send_with_fds(Fixture *f, const Msg *m, const int *fds, size_t n)
{
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * 16)];
        } control = {};
        struct iovec iov = { .iov_base = (void *)m->b, .iov_len = m->len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (n > 0) {
                struct cmsghdr *c;

                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * n);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * n);
                memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
        }
        assert_int_equal(sendmsg(f->client, &mh, MSG_NOSIGNAL), (ssize_t)m->len);
}

/* HashFds(ah fds, s algorithm, a{sv} options)'s body with these indexes. */
static size_t hash_fds_body(uint8_t *b, const uint32_t *idx, size_t n)
{
        size_t l = 0;

        put32(b, (uint32_t)(4 * n));
        for (size_t i = 0; i < n; i++)
                put32(b + 4 + 4 * i, idx[i]);
        l = 4 + 4 * n;
        put32(b + l, 6);
        memcpy(b + l + 4, "sha256", 7);
        l = ALIGN_TO(l + 11, 4);
        put32(b + l, 0); /* an empty a{sv} */
        return ALIGN_TO(l + 4, 8);
}

/* HashFds reaches sd-bus renamed, its "ah" an "au", with no fds; the gate keeps them in a parcel,
 * each with what the screen said, which the handler takes by the call's serial. */
static void test_gated_call(void **state)
{
        Fixture *f = *state;
        uint8_t body[64];
        uint32_t idx[] = { 1, 0, 1 };
        int fds[2] = { f->file, f->file };
        Msg m;

        f->seen.take = true;
        build_call(&m, 7, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "HashFds", "ahsa{sv}", 2, body,
                   hash_fds_body(body, idx, 3));
        send_with_fds(f, &m, fds, 2);
        run_until(f, seen_one, 2000);
        assert_string_equal(f->seen.member, GATE_MEMBER_HASH_FDS);
        assert_string_equal(f->seen.signature, "ausa{sv}");
        assert_int_equal(f->seen.cookie, 7);
        assert_non_null(f->seen.parcel);
        assert_int_equal(f->seen.parcel->n, 2);
        assert_int_equal(f->seen.parcel->uid, CLIENT_UID);
        for (size_t i = 0; i < 2; i++) {
                struct stat st;

                assert_int_equal(f->seen.parcel->entries[i].verdict.refusal, FD_REFUSAL_NONE);
                assert_int_equal(fstat(f->seen.parcel->entries[i].fd, &st), 0);
                assert_true(st.st_ino == f->file_st.st_ino);
                assert_int_equal(f->seen.parcel->entries[i].info.stx.stx_size, 4);
        }
        /* Ours, our two copies, and the gate has nothing left: a parcel taken is the handler's. */
        assert_int_equal(count_open(&f->file_st), 3);
        assert_int_equal(gate_parcels(f->gate, NULL), 0);
        assert_int_equal(user_used(user_registry_find(&f->c.registry.users, CLIENT_UID), USER_RESOURCE_TRANSIT), 2);
        f->seen.parcel = parcel_free(f->seen.parcel);
        assert_int_equal(count_open(&f->file_st), 1);
        assert_null(user_registry_find(&f->c.registry.users, CLIENT_UID));
        assert_false(violated(f));
}

/* A call nobody takes the parcel of (as a call to a job that does not exist): forgotten once sd-bus
 * has read it, its fds closed and its charge given back. */
static void test_parcel_swept(void **state)
{
        Fixture *f = *state;
        uint8_t body[16] = {};
        Msg m;

        /* AddFds(ah fds = [0], a{sv} options = {}): the empty array's padding to 8 is in the body. */
        put32(body, 4);
        put32(body + 4, 0);
        put32(body + 8, 0);
        build_call(&m, 8, "/org/fhash/Hasher1/job/999", FHASH_JOB_INTERFACE, "AddFds", "aha{sv}", 1, body, 16);
        send_with_fds(f, &m, &f->file, 1);
        run_until(f, seen_one, 2000);
        assert_string_equal(f->seen.member, GATE_MEMBER_ADD_FDS);
        for (int i = 0; i < 100 && gate_parcels(f->gate, NULL) > 0; i++)
                (void)sd_event_run(f->c.event, 10000);
        assert_int_equal(gate_parcels(f->gate, NULL), 0);
        assert_int_equal(count_open(&f->file_st), 1);
        assert_null(user_registry_find(&f->c.registry.users, CLIENT_UID));
}

/* Any other message's fds are closed by the gate, and sd-bus gets it without them. */
static void test_other_fds_closed(void **state)
{
        Fixture *f = *state;
        int fds[3] = { f->file, f->file, f->file };
        Msg m;

        build_call(&m, 9, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping", NULL, 3, NULL, 0);
        send_with_fds(f, &m, fds, 3);
        run_until(f, seen_one, 2000);
        assert_string_equal(f->seen.member, "Ping");
        assert_int_equal(count_open(&f->file_st), 1);
        assert_false(violated(f));
}

/* An fd the screen refuses goes to the closer, never into the parcel: the entry says why. */
static void test_refused_to_closer(void **state)
{
        Fixture *f = *state;
        struct stat bad_st;
        uint8_t body[64];
        uint32_t idx[] = { 0, 1 };
        int bad = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600), fds[2];
        Msg m;

        assert_true(bad >= 0);
        assert_int_equal(fstat(bad, &bad_st), 0);
        fd_screen_refuse_for_test(f->c.fd_screen, bad_st.st_dev, bad_st.st_ino);
        fds[0] = bad;
        fds[1] = f->file;
        f->seen.take = true;
        build_call(&m, 10, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, "HashFds", "ahsa{sv}", 2, body,
                   hash_fds_body(body, idx, 2));
        send_with_fds(f, &m, fds, 2);
        run_until(f, seen_one, 2000);
        assert_non_null(f->seen.parcel);
        assert_int_equal(f->seen.parcel->entries[0].verdict.refusal, FD_REFUSAL_UNKNOWN);
        assert_int_equal(f->seen.parcel->entries[0].fd, -EBADF);
        assert_int_equal(f->seen.parcel->entries[1].verdict.refusal, FD_REFUSAL_NONE);
        /* The closer's child closed the copy we received, in another process. */
        for (int i = 0; i < 500 && count_open(&bad_st) > 1; i++)
                (void)sd_event_run(f->c.event, 10000);
        assert_int_equal(count_open(&bad_st), 1);
        for (int i = 0; i < 500 && closing_held_total(f->c.closing) > 0; i++)
                (void)sd_event_run(f->c.event, 10000);
        assert_int_equal(closing_held_total(f->c.closing), 0);
        close(bad);
}

/* What closes the connection, each with its fds closed: fds the header does not declare, fds in the
 * handshake (another fixture would be needed: covered by test-daemon-direct), a header sd-bus would
 * refuse, and a call of a method the gate keeps for itself. */
static void check_violation(Fixture *f, const Msg *m, size_t n_fds, const char *what)
{
        int fds[4] = { f->file, f->file, f->file, f->file };

        send_with_fds(f, m, fds, n_fds);
        run_until(f, violated, 2000);
        assert_non_null(strstr(f->violation, what));
        assert_int_equal(f->seen.n, 0);
        assert_int_equal(count_open(&f->file_st), 1);
}

static void test_undeclared_fds(void **state)
{
        Fixture *f = *state;
        Msg m;

        build_call(&m, 11, FHASH_MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping", NULL, 2, NULL, 0);
        check_violation(f, &m, 3, "UNIX_FDS");
}

static void test_bad_path(void **state)
{
        Fixture *f = *state;
        Msg m;

        /* Issue 24, N1: a byte that is not UTF-8 in the path; sd-bus drops such a message and keeps
         * its fds for good. */
        build_call(&m, 12, "/org/fhash/Hasher\xc3", "org.freedesktop.DBus.Peer", "Ping", NULL, 4, NULL, 0);
        check_violation(f, &m, 4, "PATH");
}

static void test_hidden_member(void **state)
{
        Fixture *f = *state;
        uint8_t body[64];
        uint32_t idx[] = { 0 };
        Msg m;

        build_call(&m, 13, FHASH_MANAGER_PATH, FHASH_MANAGER_INTERFACE, GATE_MEMBER_HASH_FDS, "ausa{sv}", 0, body,
                   hash_fds_body(body, idx, 1));
        check_violation(f, &m, 0, "keeps for itself");
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_gated_call, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_parcel_swept, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_other_fds_closed, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_refused_to_closer, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_undeclared_fds, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_bad_path, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_hidden_member, fixture_setup, fixture_teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
