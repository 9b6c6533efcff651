/* SPDX-License-Identifier: MIT */
/* test-dbus-oracle.c: sd-bus's own verdict on raw D-Bus messages, read from a socket as fhashd reads */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/test-dbus-oracle.h"

#define RBUF_SIZE ((size_t)4 << 20)
#define RFDS_MAX 64
/* Long enough for sd-bus to read and parse a 64 MiB message on a slow sanitizer build. */
#define WAIT_TRIES 60

struct Oracle {
        sd_bus *bus;
        int fd;     /* our end of the socketpair, non-blocking */
        int marker; /* a memfd: its copies go with the messages */
        struct stat marker_st;
        sd_bus_message *got; /* what the filter saw, the sentinel aside */
        bool sentinel_seen;
        uint32_t serial; /* the next sentinel's */
        uint8_t *rbuf;   /* what sd-bus wrote that oracle_read() has not returned yet */
        size_t rlen;
        int rfds[RFDS_MAX];
        size_t n_rfds;
};

static int on_message(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Oracle *o = userdata;

        /* sd-bus's own Disconnected signal, when it closes the connection. */
        if (streq_ptr(sd_bus_message_get_path(m), "/org/freedesktop/DBus/Local"))
                return 0;
        if (streq_ptr(sd_bus_message_get_member(m), "OracleSentinel"))
                o->sentinel_seen = true;
        else if (!o->got)
                o->got = sd_bus_message_ref(m);
        return 1; /* handled: sd-bus sends no reply of its own */
}

/* Reads what sd-bus wrote to our end into rbuf, with its fds; 0 if there was nothing. */
static int pump(Oracle *o)
{
        union {
                struct cmsghdr align;
                uint8_t buf[CMSG_SPACE(sizeof(int) * RFDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = o->rbuf + o->rlen, .iov_len = RBUF_SIZE - o->rlen };
        struct msghdr mh = { .msg_iov = &iov,
                            .msg_iovlen = 1,
                            .msg_control = &control,
                            .msg_controllen = sizeof(control) };
        ssize_t n;

        if (iov.iov_len == 0)
                return -ENOBUFS;
        n = recvmsg(o->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EAGAIN ? 0 : -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        int fds[RFDS_MAX];

                        memcpy(fds, CMSG_DATA(c), k * sizeof(int));
                        for (size_t i = 0; i < k; i++) {
                                if (o->n_rfds < RFDS_MAX)
                                        o->rfds[o->n_rfds++] = fds[i];
                                else
                                        close(fds[i]);
                        }
                }
        o->rlen += (size_t)n;
        return n > 0;
}

/* Runs sd-bus until it has nothing to do, then waits for it or for our end for up to 100 ms. */
static int step(Oracle *o)
{
        struct pollfd p[2];
        int r;

        r = sd_bus_process(o->bus, NULL);
        if (r < 0)
                return r;
        if (sd_bus_is_open(o->bus) <= 0)
                return -ECONNRESET;
        if (r > 0)
                return 0;
        r = pump(o);
        if (r != 0)
                return r < 0 ? r : 0;
        p[0] = (struct pollfd){ .fd = sd_bus_get_fd(o->bus), .events = (short)sd_bus_get_events(o->bus) };
        p[1] = (struct pollfd){ .fd = o->fd, .events = POLLIN };
        if (poll(p, 2, 100) < 0)
                return -errno;
        return 0;
}

static int send_all(Oracle *o, const uint8_t *m, size_t len, size_t n_fds)
{
        union {
                struct cmsghdr align;
                uint8_t buf[CMSG_SPACE(sizeof(int) * ORACLE_FDS_MAX)];
        } control = {};
        size_t done = 0;

        if (n_fds > ORACLE_FDS_MAX)
                return -EINVAL;
        while (done < len || n_fds > 0) {
                struct iovec iov = { .iov_base = (void *)(m + done), .iov_len = len - done };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
                ssize_t n;
                int r;

                if (n_fds > 0) {
                        int fds[ORACLE_FDS_MAX];
                        struct cmsghdr *c;

                        for (size_t i = 0; i < n_fds; i++)
                                fds[i] = o->marker;
                        mh.msg_control = &control;
                        mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
                        c = CMSG_FIRSTHDR(&mh);
                        c->cmsg_level = SOL_SOCKET;
                        c->cmsg_type = SCM_RIGHTS;
                        c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
                        memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
                }
                n = sendmsg(o->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n >= 0) {
                        done += (size_t)n;
                        n_fds = 0;
                        continue;
                }
                if (errno != EAGAIN)
                        return -errno;
                /* The socket is full: let sd-bus read some. */
                r = step(o);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* A method call to /s, OracleSentinel, little-endian, with the given serial. */
static size_t sentinel(uint8_t b[64], uint32_t serial)
{
        static const uint8_t fields[] = {
                1,  1, 'o', 0, 2,   0,   0,   0,   '/', 's', 0,   0,   0,   0,   0,   0,   3,   1,   's', 0,
                14, 0, 0,   0, 'O', 'r', 'a', 'c', 'l', 'e', 'S', 'e', 'n', 't', 'i', 'n', 'e', 'l', 0,
        };

        memset(b, 0, 64);
        memcpy(b, (const uint8_t[]){ 'l', 1, 0, 1, 0, 0, 0, 0 }, 8);
        for (int i = 0; i < 4; i++)
                b[8 + i] = (uint8_t)(serial >> (8 * i));
        b[12] = sizeof(fields);
        memcpy(b + 16, fields, sizeof(fields));
        return 16 + ALIGN_TO(sizeof(fields), 8);
}

static void disconnect(Oracle *o)
{
        o->got = sd_bus_message_unref(o->got);
        o->bus = sd_bus_flush_close_unref(o->bus);
        if (o->fd >= 0)
                close(o->fd);
        o->fd = -EBADF;
        o->rlen = 0;
        for (size_t i = 0; i < o->n_rfds; i++)
                close(o->rfds[i]);
        o->n_rfds = 0;
}

static int connect_bus(Oracle *o)
{
        char auth[64];
        sd_id128_t id;
        int sp[2], r;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sp) < 0)
                return -errno;
        o->fd = sp[1];
        r = sd_bus_new(&o->bus);
        if (r < 0) {
                close(sp[0]);
                return r;
        }
        r = sd_bus_set_fd(o->bus, sp[0], sp[0]);
        if (r < 0) {
                close(sp[0]);
                return r;
        }
        r = sd_id128_randomize(&id);
        if (r >= 0)
                r = sd_bus_set_server(o->bus, 1, id);
        if (r >= 0)
                r = sd_bus_negotiate_fds(o->bus, 1);
        if (r >= 0)
                r = sd_bus_add_filter(o->bus, NULL, on_message, o);
        if (r >= 0)
                r = sd_bus_start(o->bus);
        if (r < 0)
                return r;

        /* The client's side of the handshake, as fhashd's clients write it: a NUL, then EXTERNAL
         * with our uid in hex-encoded decimal, fds, BEGIN. */
        {
                char uid[16], hex[33];
                size_t k = (size_t)snprintf(uid, sizeof(uid), "%u", (unsigned)getuid());

                for (size_t i = 0; i < k; i++)
                        snprintf(hex + 2 * i, 3, "%02x", (unsigned)(unsigned char)uid[i]);
                auth[0] = 0;
                r = snprintf(auth + 1, sizeof(auth) - 1,
                             "AUTH EXTERNAL %s\r\nNEGOTIATE_UNIX_FD\r\nBEGIN\r\n", hex);
        }
        r = send_all(o, (const uint8_t *)auth, (size_t)r + 1, 0);
        if (r < 0)
                return r;
        for (int i = 0; i < WAIT_TRIES * 10; i++) {
                const char *agree = "AGREE_UNIX_FD\r\n";

                if (o->rlen >= strlen(agree) && memmem(o->rbuf, o->rlen, agree, strlen(agree))) {
                        o->rlen = 0;
                        return 0;
                }
                r = step(o);
                if (r < 0)
                        return r;
        }
        return -ETIMEDOUT;
}

int oracle_new(Oracle **ret)
{
        Oracle *o = calloc(1, sizeof(*o));
        int r;

        if (!o)
                return -ENOMEM;
        o->fd = -EBADF;
        o->serial = 0x40000000;
        o->rbuf = malloc(RBUF_SIZE);
        o->marker = memfd_create("oracle-marker", MFD_CLOEXEC);
        if (!o->rbuf || o->marker < 0 || fstat(o->marker, &o->marker_st) < 0) {
                r = o->rbuf ? -errno : -ENOMEM;
                oracle_free(o);
                return r;
        }
        r = connect_bus(o);
        if (r < 0) {
                oracle_free(o);
                return r;
        }
        *ret = o;
        return 0;
}

Oracle *oracle_free(Oracle *o)
{
        if (!o)
                return NULL;
        disconnect(o);
        if (o->marker >= 0)
                close(o->marker);
        free(o->rbuf);
        free(o);
        return NULL;
}

sd_bus *oracle_bus(Oracle *o)
{
        return o->bus;
}

/* Counts the copies of the marker open in this process, and closes them if close_them. */
static unsigned marker_copies(Oracle *o, bool close_them)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        unsigned n = 0;

        if (!d)
                return 0;
        while ((e = readdir(d))) {
                int fd = (int)strtol(e->d_name, NULL, 10);
                struct stat st;

                if (e->d_name[0] == '.' || fd == o->marker || fd == dirfd(d) || fstat(fd, &st) < 0)
                        continue;
                if (st.st_dev != o->marker_st.st_dev || st.st_ino != o->marker_st.st_ino)
                        continue;
                n++;
                if (close_them)
                        close(fd);
        }
        closedir(d);
        return n;
}

unsigned oracle_marker_copies(Oracle *o)
{
        return marker_copies(o, false);
}

int oracle_verdict(Oracle *o, const uint8_t *m, size_t len, size_t n_fds, sd_bus_message **ret,
                   unsigned *ret_leaked)
{
        uint8_t s[64];
        unsigned copies;
        int r;

        if (!o->bus) {
                r = connect_bus(o);
                if (r < 0)
                        return r;
        }
        o->got = sd_bus_message_unref(o->got);
        o->sentinel_seen = false;
        r = send_all(o, m, len, n_fds);
        if (r >= 0)
                r = send_all(o, s, sentinel(s, o->serial++), 0);
        for (int i = 0; r >= 0 && !o->sentinel_seen; i++) {
                if (i >= WAIT_TRIES * 10)
                        return -ETIMEDOUT;
                r = step(o);
        }
        if (r < 0) {
                /* sd-bus ended the connection (an invalid header it cannot frame, a write to a closed
                 * socket): the message was not taken, and its fds are gone with the bus or leaked. */
                disconnect(o);
                if (ret_leaked)
                        *ret_leaked = marker_copies(o, true);
                else
                        (void)marker_copies(o, true);
                *ret = NULL;
                return -ECONNRESET;
        }
        copies = marker_copies(o, false);
        if (o->got) {
                if (ret_leaked)
                        *ret_leaked = copies > n_fds ? copies - (unsigned)n_fds : 0;
                *ret = TAKE_PTR(o->got);
                return 1;
        }
        if (ret_leaked)
                *ret_leaked = copies;
        (void)marker_copies(o, true);
        *ret = NULL;
        return 0;
}

int oracle_read(Oracle *o, uint8_t *buf, size_t size, size_t *ret_len, int *fds, size_t max_fds,
                size_t *ret_n_fds)
{
        int r;

        for (int i = 0; i < WAIT_TRIES * 10; i++) {
                if (o->rlen >= 16 && (o->rbuf[0] == 'l' || o->rbuf[0] == 'B')) {
                        bool be = o->rbuf[0] == 'B';
                        uint32_t body = 0, fields = 0;
                        size_t total;

                        for (int k = 0; k < 4; k++) {
                                body |= (uint32_t)o->rbuf[4 + (be ? 3 - k : k)] << (8 * k);
                                fields |= (uint32_t)o->rbuf[12 + (be ? 3 - k : k)] << (8 * k);
                        }
                        total = 16 + ALIGN_TO((size_t)fields, 8) + body;
                        if (total > size || o->n_rfds > max_fds)
                                return -EMSGSIZE;
                        if (o->rlen >= total) {
                                memcpy(buf, o->rbuf, total);
                                memmove(o->rbuf, o->rbuf + total, o->rlen - total);
                                o->rlen -= total;
                                memcpy(fds, o->rfds, o->n_rfds * sizeof(int));
                                *ret_n_fds = o->n_rfds;
                                o->n_rfds = 0;
                                *ret_len = total;
                                return 0;
                        }
                }
                r = sd_bus_flush(o->bus);
                if (r < 0)
                        return r;
                r = step(o);
                if (r < 0)
                        return r;
        }
        return -ETIMEDOUT;
}
