/* SPDX-License-Identifier: MIT */
/* bus-connect.c: fhashd's connection to the bus, read through a gate (the bus driver's: bus-driver.c) */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/bus-connect.h"
#include "daemon/bus-driver.h"
#include "daemon/gate.h"

/* How long a connect() to a bus whose backlog is full may take. */
#define BUS_CONNECT_TIMEOUT_MS 5000

int bus_address_resolve(BusKind kind, const char *address, char **ret)
{
        const char *e;
        char *s;

        switch (kind) {
        case BUS_KIND_SYSTEM:
                e = getenv("DBUS_SYSTEM_BUS_ADDRESS");
                s = strdup(e && *e ? e : "unix:path=/run/dbus/system_bus_socket");
                break;
        case BUS_KIND_USER:
                e = getenv("DBUS_SESSION_BUS_ADDRESS");
                if (e && *e)
                        s = strdup(e);
                else if ((e = getenv("XDG_RUNTIME_DIR")) && *e) {
                        if (asprintf(&s, "unix:path=%s/bus", e) < 0)
                                s = NULL;
                } else
                        return -ENXIO;
                break;
        case BUS_KIND_ADDRESS:
                if (!address)
                        return -ENXIO;
                s = strdup(address);
                break;
        default:
                return -EINVAL;
        }
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int unhex(char c)
{
        return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Unescapes a value of an address ("%2f" and the like) into out (size bytes): its length, or
 * -EINVAL if it is not one, -ENAMETOOLONG. */
static int address_unescape(const char *v, size_t len, char *out, size_t size)
{
        size_t o = 0;

        for (size_t i = 0; i < len; i++) {
                char c = v[i];

                if (c == '%') {
                        if (i + 2 >= len || unhex(v[i + 1]) < 0 || unhex(v[i + 2]) < 0)
                                return -EINVAL;
                        c = (char)(unhex(v[i + 1]) << 4 | unhex(v[i + 2]));
                        i += 2;
                }
                if (o + 1 >= size)
                        return -ENAMETOOLONG;
                out[o++] = c;
        }
        out[o] = '\0';
        return (int)o;
}

/* One "unix:key=value,..." entry into a socket address. -EPROTONOSUPPORT for another transport. */
static int address_entry(const char *entry, size_t len, struct sockaddr_un *ret, socklen_t *ret_len)
{
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        const char *p = entry + 5, *end = entry + len;
        bool found = false;

        if (len < 5 || memcmp(entry, "unix:", 5) != 0)
                return -EPROTONOSUPPORT;
        while (p < end) {
                const char *comma = memchr(p, ',', (size_t)(end - p)), *eq;
                size_t n = (size_t)((comma ? comma : end) - p);
                int k;

                eq = memchr(p, '=', n);
                if (!eq)
                        return -EINVAL;
                if ((size_t)(eq - p) == 4 && memcmp(p, "path", 4) == 0) {
                        k = address_unescape(eq + 1, n - 5, sa.sun_path, sizeof(sa.sun_path));
                        if (k < 0)
                                return k;
                        *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)k + 1);
                        found = true;
                } else if ((size_t)(eq - p) == 8 && memcmp(p, "abstract", 8) == 0) {
                        k = address_unescape(eq + 1, n - 9, sa.sun_path + 1, sizeof(sa.sun_path) - 1);
                        if (k < 0)
                                return k;
                        *ret_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)k);
                        found = true;
                }
                p += n + (comma ? 1 : 0);
        }
        if (!found)
                return -EPROTONOSUPPORT; /* unix:dir=, unix:tmpdir=: addresses to listen on */
        *ret = sa;
        return 0;
}

static int connect_unix(const struct sockaddr_un *sa, socklen_t len, int *ret_fd)
{
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        int err = 0;

        if (fd < 0)
                return -errno;
        if (connect(fd, (const struct sockaddr *)sa, len) < 0) {
                struct pollfd p = { .fd = fd, .events = POLLOUT };
                socklen_t l = sizeof(err);

                if (errno != EAGAIN && errno != EINPROGRESS)
                        return -errno;
                /* The bus's backlog is full: it is taking connections, slowly. */
                if (poll(&p, 1, BUS_CONNECT_TIMEOUT_MS) <= 0)
                        return -ETIMEDOUT;
                if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &l) < 0)
                        return -errno;
                if (err != 0)
                        return -err;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int bus_address_connect(const char *address, int *ret_fd)
{
        const char *p = address;
        int r = -EPROTONOSUPPORT;

        while (*p) {
                size_t n = strcspn(p, ";");
                struct sockaddr_un sa;
                socklen_t len = 0;
                int k = address_entry(p, n, &sa, &len);

                if (k >= 0) {
                        k = connect_unix(&sa, len, ret_fd);
                        if (k >= 0)
                                return 0;
                }
                if (k != -EPROTONOSUPPORT || r == -EPROTONOSUPPORT)
                        r = k;
                p += n + (p[n] == ';');
        }
        return r;
}


int bus_connect(Context *c, const char *address, const GateOps *ops, void *userdata)
{
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = NULL;
        _cleanup_close_ int sock = -EBADF;
        int pair[2] = { -EBADF, -EBADF }, r;

        c->bus_address = strdup(address);
        if (!c->bus_address)
                return -ENOMEM;
        r = bus_address_connect(address, &sock);
        if (r < 0)
                return r;
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, pair) < 0)
                return -errno;
        r = sd_bus_new(&bus);
        if (r < 0) {
                safe_close(pair[0]);
                safe_close(pair[1]);
                return r;
        }
        /* sd-bus reads pair[0] and writes to the bus; the gate reads the bus and writes pair[1]. */
        r = gate_new(c, GATE_CLIENT, 0, sock, pair[1], pair[0], ops, userdata, &c->bus_gate);
        if (r < 0) {
                safe_close(pair[0]);
                return r;
        }
        r = sd_bus_set_fd(bus, pair[0], sock);
        if (r < 0) {
                safe_close(pair[0]);
                return r;
        }
        TAKE_FD(sock);
        (void)sd_bus_set_description(bus, "fhashd");
        r = sd_bus_set_bus_client(bus, true);
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, true);
        if (r >= 0)
                r = sd_bus_start(bus);
        /* Without the bus nobody can reach us or hear about jobs: leave (with a failure status, so
         * that a service manager notices) instead of hashing for no one. */
        if (r >= 0)
                r = sd_bus_set_exit_on_disconnect(bus, true);
        if (r >= 0)
                r = sd_bus_attach_event(bus, c->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        c->bus = TAKE_PTR(bus);
        return bus_driver_open(c);
}


void bus_disconnect(Context *c)
{
        if (c->bus) {
                (void)sd_bus_flush(c->bus);
                c->bus = sd_bus_flush_close_unref(c->bus);
        }
        c->bus_gate = gate_free(c->bus_gate);
        bus_driver_close(c);
        c->bus_address = mfree(c->bus_address);
}
