/* SPDX-License-Identifier: MIT */
/* peer-gate.c: what a direct client sends reaches sd-bus only as whole messages with the fds they declare */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/macro.h"
#include "daemon/peer-gate.h"

/* The kernel passes at most this many fds in one message (SCM_MAX_FD). */
#define GATE_FDS_MAX 253
#define GATE_READ_CHUNK ((size_t)64 << 10)
/* A buffer grown past this for one message shrinks back once it went on. */
#define GATE_KEEP_MAX ((size_t)1 << 20)

struct PeerGate {
        sd_event_source *in_source;   /* the client's socket is readable */
        sd_event_source *out_source;  /* inner_fd is writable again, while a message waits for it */
        sd_event_source *ready_source; /* a post source: sd-bus may be past the handshake now */
        int client_fd;                /* our dup of the client's socket: we read, sd-bus writes */
        int inner_fd;                 /* our end of the pair sd-bus reads */
        PeerGateViolation violation;
        PeerGateReady ready;
        void *userdata;
        bool authenticated;           /* BEGIN was passed on */
        bool closed;                  /* nothing more is read: end of input, or a violation */

        uint8_t *buf;                 /* read, not passed on yet */
        size_t len, cap;
        uint64_t base;                /* the stream offset of buf[0] */
        size_t auth_scan;             /* handshake: where the next line starts */

        /* The fds of the last read that brought some, until the message they belong to is framed,
         * and the stream offsets that read covered. */
        int pending[GATE_FDS_MAX];
        size_t n_pending;
        uint64_t pending_from, pending_to;

        /* The message at buf[0], once its fixed header is in. */
        size_t msg_total;             /* 0: not framed yet */
        bool msg_checked;             /* its UNIX_FDS matched */
        size_t msg_sent;              /* of msg_total, already passed on */
        int msg_fds[GATE_FDS_MAX];
        size_t n_msg_fds;
};

static void close_fds(int *fds, size_t *n)
{
        for (size_t i = 0; i < *n; i++)
                safe_close(fds[i]);
        *n = 0;
}

PeerGate *peer_gate_free(PeerGate *g)
{
        if (!g)
                return NULL;
        sd_event_source_disable_unref(g->in_source);
        sd_event_source_disable_unref(g->out_source);
        sd_event_source_disable_unref(g->ready_source);
        close_fds(g->pending, &g->n_pending);
        close_fds(g->msg_fds, &g->n_msg_fds);
        safe_close(g->client_fd);
        safe_close(g->inner_fd);
        free(g->buf);
        return mfree(g);
}

void peer_gate_shutdown(PeerGate *g)
{
        (void)shutdown(g->client_fd, SHUT_RDWR);
        (void)shutdown(g->inner_fd, SHUT_RDWR);
}

/* Stops reading for good; the end reaches sd-bus as the end of its input. */
static void gate_close(PeerGate *g)
{
        g->closed = true;
        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(g->out_source, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(g->ready_source, SD_EVENT_OFF);
        (void)shutdown(g->inner_fd, SHUT_WR);
}

/* What the client sent cannot be passed on: its fds are closed now and the connection ends. */
static void gate_fail(PeerGate *g, const char *what)
{
        close_fds(g->pending, &g->n_pending);
        close_fds(g->msg_fds, &g->n_msg_fds);
        gate_close(g);
        peer_gate_shutdown(g);
        if (g->violation)
                g->violation(what, g->userdata);
}

static void gate_consume(PeerGate *g, size_t n)
{
        memmove(g->buf, g->buf + n, g->len - n);
        g->len -= n;
        g->base += n;
}

static int gate_reserve(PeerGate *g, size_t want)
{
        uint8_t *b;
        size_t cap;

        if (g->cap - g->len >= want)
                return 0;
        cap = MAX(g->len + want, 2 * g->cap);
        b = realloc(g->buf, cap);
        if (!b)
                return -ENOMEM;
        g->buf = b;
        g->cap = cap;
        return 0;
}

static uint32_t read32(const uint8_t *p, bool le)
{
        return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
                  : (uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 | (uint32_t)p[0] << 24;
}

/* The UNIX_FDS header field (code 9, "u") of the message m, 0 if it has none. The fields are an
 * array of (byte code, variant) structs, each 8-aligned, of the basic types D-Bus defines for
 * them. -EBADMSG if they cannot be read so. */
static int header_unix_fds(const uint8_t *m, size_t fields_end, bool le, uint32_t *ret)
{
        size_t p = 16;

        *ret = 0;
        while (p < fields_end) {
                uint8_t code, sig;
                size_t l;

                p = ALIGN_TO(p, 8);
                if (p >= fields_end)
                        break;
                if (p + 4 > fields_end || m[p + 1] != 1 || m[p + 3] != 0)
                        return -EBADMSG;
                code = m[p];
                sig = m[p + 2];
                p += 4;
                switch (sig) {
                case 'u':
                case 's':
                case 'o':
                        p = ALIGN_TO(p, 4);
                        if (p + 4 > fields_end)
                                return -EBADMSG;
                        l = read32(m + p, le);
                        if (sig == 'u') {
                                if (code == 9)
                                        *ret = (uint32_t)l;
                                p += 4;
                        } else if (l > fields_end - p - 4 - 1)
                                return -EBADMSG;
                        else
                                p += 4 + l + 1;
                        break;
                case 'g':
                        if (p + 1 > fields_end || (size_t)m[p] + 2 > fields_end - p)
                                return -EBADMSG;
                        p += (size_t)m[p] + 2;
                        break;
                case 'y':
                        p += 1;
                        break;
                default:
                        return -EBADMSG;
                }
        }
        return p <= fields_end ? 0 : -EBADMSG;
}

/* Frames the message at buf[0] from its fixed header and gives it the pending fds if it is the
 * last message that starts within the read that brought them. */
static int gate_frame(PeerGate *g)
{
        const uint8_t *m = g->buf;
        bool le = m[0] == 'l';
        uint64_t fields, body, total, start = g->base;

        if (m[0] != 'l' && m[0] != 'B')
                return -EBADMSG;
        body = read32(m + 4, le);
        fields = read32(m + 12, le);
        total = 16 + ALIGN_TO(fields, 8) + body;
        if (total > PEER_GATE_MESSAGE_MAX)
                return -EMSGSIZE;
        g->msg_total = (size_t)total;
        g->msg_checked = false;
        g->msg_sent = 0;
        if (g->n_pending > 0) {
                if (start >= g->pending_to)
                        return -EBADMSG; /* no message started where they came */
                if (start >= g->pending_from && start + total >= g->pending_to) {
                        memcpy(g->msg_fds, g->pending, g->n_pending * sizeof(int));
                        g->n_msg_fds = g->n_pending;
                        g->n_pending = 0;
                }
        }
        return 0;
}

/* Passes on what is left of the message at buf[0]: 0 once all of it went, -EAGAIN while inner_fd is
 * full, or -errno. Its fds go with its first bytes, and ours are closed once they are on their way. */
static int gate_send(PeerGate *g)
{
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * GATE_FDS_MAX)];
        } control = {};
        struct iovec iov = { .iov_base = g->buf + g->msg_sent, .iov_len = g->msg_total - g->msg_sent };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t n;

        if (g->n_msg_fds > 0) {
                struct cmsghdr *c;

                mh.msg_control = &control;
                mh.msg_controllen = CMSG_SPACE(sizeof(int) * g->n_msg_fds);
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int) * g->n_msg_fds);
                memcpy(CMSG_DATA(c), g->msg_fds, sizeof(int) * g->n_msg_fds);
        }
        n = sendmsg(g->inner_fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : -errno;
        close_fds(g->msg_fds, &g->n_msg_fds);
        g->msg_sent += (size_t)n;
        return g->msg_sent < g->msg_total ? -EAGAIN : 0;
}

/* Handshake lines go on as they complete; the one that says BEGIN is the last. Returns true if a
 * line went on. */
static bool gate_auth_line(PeerGate *g)
{
        const uint8_t *crlf;
        size_t end;

        /* The client's first byte is a NUL, before any line. */
        if (g->base == 0 && g->auth_scan == 0 && g->len > 0 && g->buf[0] == '\0')
                g->auth_scan = 1;
        if (g->auth_scan >= g->len)
                return false;
        crlf = memmem(g->buf + g->auth_scan, g->len - g->auth_scan, "\r\n", 2);
        if (!crlf) {
                if (g->len > PEER_GATE_AUTH_MAX)
                        gate_fail(g, "a handshake line without end");
                return false;
        }
        end = (size_t)(crlf - g->buf) + 2;
        if (end - g->auth_scan == 7 && memcmp(g->buf + g->auth_scan, "BEGIN\r\n", 7) == 0)
                g->authenticated = true;
        if (send(g->inner_fd, g->buf, end, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)end) {
                gate_close(g); /* sd-bus went away, or a handshake that fills 8 MB */
                return false;
        }
        gate_consume(g, end);
        g->auth_scan = 0;
        return true;
}

/* Passes on every whole message that is in; stops to wait for more input or for inner_fd. */
static void gate_process(PeerGate *g)
{
        while (!g->closed) {
                int r;

                if (!g->authenticated) {
                        if (gate_auth_line(g))
                                continue;
                        /* Everything read so far is handshake: BEGIN is not in yet. */
                        if (!g->closed && g->n_pending > 0)
                                gate_fail(g, "fds during the handshake");
                        return;
                }
                if (g->msg_total == 0) {
                        if (g->len < 16)
                                return;
                        r = gate_frame(g);
                        if (r < 0) {
                                gate_fail(g, r == -EMSGSIZE ? "a message larger than 128 MiB"
                                                            : "fds that came with no message, or a bad header");
                                return;
                        }
                }
                if (g->len < g->msg_total) {
                        if (gate_reserve(g, g->msg_total - g->len) < 0)
                                gate_fail(g, "a message fhashd has no memory for");
                        return;
                }
                if (!g->msg_checked) {
                        uint32_t declared;
                        uint64_t fields_end = 16 + (uint64_t)read32(g->buf + 12, g->buf[0] == 'l');

                        if (header_unix_fds(g->buf, (size_t)fields_end, g->buf[0] == 'l', &declared) < 0) {
                                gate_fail(g, "a message header that cannot be read");
                                return;
                        }
                        if (declared != g->n_msg_fds) {
                                gate_fail(g, "a message whose fds do not match its UNIX_FDS header field");
                                return;
                        }
                        g->msg_checked = true;
                }
                /* sd-bus closes the connection on fds in a read during its handshake, and its read
                 * may take BEGIN and the next message together: fds wait until it is past BEGIN. */
                if (g->n_msg_fds > 0 && g->msg_sent == 0 && g->ready && !g->ready(g->userdata)) {
                        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_OFF);
                        (void)sd_event_source_set_enabled(g->ready_source, SD_EVENT_ONESHOT);
                        return;
                }
                r = gate_send(g);
                if (r == -EAGAIN) {
                        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_OFF);
                        (void)sd_event_source_set_enabled(g->out_source, SD_EVENT_ONESHOT);
                        return;
                }
                if (r < 0) {
                        gate_close(g); /* sd-bus's end is gone */
                        return;
                }
                gate_consume(g, g->msg_total);
                g->msg_total = 0;
                /* A big message (a refused one of 62 MB, H2) must not leave its buffer behind for
                 * as long as the connection lives. */
                if (g->cap > GATE_KEEP_MAX && g->len <= GATE_READ_CHUNK) {
                        uint8_t *b = realloc(g->buf, GATE_READ_CHUNK);

                        if (b) {
                                g->buf = b;
                                g->cap = GATE_READ_CHUNK;
                        }
                }
        }
}

static int on_client(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        PeerGate *g = userdata;
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * GATE_FDS_MAX)];
        } control;
        struct iovec iov;
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof(control) };
        int fds[GATE_FDS_MAX];
        size_t n_fds = 0;
        ssize_t n;

        if (g->closed)
                return 0;
        if (gate_reserve(g, GATE_READ_CHUNK) < 0) {
                gate_fail(g, "input fhashd has no memory for");
                return 0;
        }
        iov = (struct iovec){ .iov_base = g->buf + g->len, .iov_len = g->cap - g->len };
        n = recvmsg(g->client_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
                return 0;
        for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                        const int *p = (const int *)(void *)CMSG_DATA(c);

                        for (size_t i = 0; i < k; i++) {
                                if (n_fds < GATE_FDS_MAX)
                                        fds[n_fds++] = p[i];
                                else
                                        safe_close(p[i]);
                        }
                }
        if (n <= 0) {
                close_fds(fds, &n_fds);
                gate_close(g);
                return 0;
        }
        if (n_fds > 0 || (mh.msg_flags & MSG_CTRUNC)) {
                /* Fds in a read that also ends the handshake belong to what follows BEGIN: whether any
                 * handshake line came with them is known once the lines are passed on. */
                const char *bad = mh.msg_flags & MSG_CTRUNC ? "more fds than one message may carry"
                                  : g->n_pending > 0       ? "fds before the earlier ones found their message"
                                                           : NULL;
                if (bad) {
                        close_fds(fds, &n_fds);
                        g->len += (size_t)n;
                        gate_fail(g, bad);
                        return 0;
                }
                memcpy(g->pending, fds, n_fds * sizeof(int));
                g->n_pending = n_fds;
                g->pending_from = g->base + g->len;
                g->pending_to = g->pending_from + (uint64_t)n;
        }
        g->len += (size_t)n;
        gate_process(g);
        return 0;
}

/* Runs after sd-bus had its turn: if it is past the handshake, the message with fds goes on. */
static int on_ready_check(sd_event_source *s, void *userdata)
{
        PeerGate *g = userdata;

        if (g->closed)
                return 0;
        if (g->ready && !g->ready(g->userdata)) {
                (void)sd_event_source_set_enabled(g->ready_source, SD_EVENT_ONESHOT);
                return 0;
        }
        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_ON);
        gate_process(g);
        return 0;
}

static int on_inner_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        PeerGate *g = userdata;

        if (g->closed)
                return 0;
        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_ON);
        gate_process(g);
        return 0;
}

int peer_gate_new(sd_event *event, int client_fd, int inner_fd, PeerGateViolation violation,
                  PeerGateReady ready, void *userdata, PeerGate **ret)
{
        PeerGate *g;
        int r;

        /* A fail label rather than _cleanup_: see manager_new(). */
        g = calloc(1, sizeof(*g));
        if (!g) {
                safe_close(inner_fd);
                return -ENOMEM;
        }
        g->inner_fd = inner_fd;
        g->violation = violation;
        g->ready = ready;
        g->userdata = userdata;
        g->client_fd = fcntl(client_fd, F_DUPFD_CLOEXEC, 3);
        if (g->client_fd < 0) {
                r = -errno;
                goto fail;
        }
        r = sd_event_add_io(event, &g->in_source, g->client_fd, EPOLLIN, on_client, g);
        if (r >= 0)
                r = sd_event_add_io(event, &g->out_source, g->inner_fd, EPOLLOUT, on_inner_writable, g);
        if (r >= 0)
                r = sd_event_source_set_enabled(g->out_source, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_add_post(event, &g->ready_source, on_ready_check, g);
        if (r >= 0)
                r = sd_event_source_set_enabled(g->ready_source, SD_EVENT_OFF);
        if (r < 0)
                goto fail;
        *ret = g;
        return 0;
fail:
        peer_gate_free(g);
        return r;
}
