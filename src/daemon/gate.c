/* SPDX-License-Identifier: MIT */
/* gate.c: every socket that can bring a caller's fds is read here, and sd-bus gets its messages without them */
#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/closing.h"
#include "daemon/config.h"
#include "daemon/dbus-message.h"
#include "daemon/gate.h"
#include "fhash/fhash-dbus.h"

#include "daemon/gate-internal.h"

/* ---- fds ---- */

/* Closes fds that came with nothing we keep: each judged, the ones whose close could wait through
 * the closer, for uid. Returns what closing_take() last said (0 if nothing went there). */
int gate_dispose(Gate *g, uid_t uid, int *fds, size_t n)
{
        Context *c = g->context;
        int over = 0;

        if (n > 0)
                fd_screen_refresh(c->fd_screen);
        for (size_t i = 0; i < n; i++) {
                FdVerdict v;

                fd_screen_judge(c->fd_screen, fds[i], &v);
                if (v.closer)
                        over = closing_take(c->closing, uid, fds[i]);
                else
                        safe_close(fds[i]);
                fds[i] = -EBADF;
        }
        return over;
}

FdBatch *batch_new(Gate *g)
{
        FdBatch *b = g->n_spare > 0 ? g->spare[--g->n_spare] : malloc(sizeof(FdBatch));

        if (b) {
                /* Not the fds array: it is written before it is read. */
                b->from = b->to = 0;
                b->n = 0;
                b->lost = b->left = false;
        }
        return b;
}

FdBatch *batch_free(Gate *g, FdBatch *b, uid_t uid)
{
        if (!b)
                return NULL;
        (void)gate_dispose(g, uid, b->fds, b->n);
        if (g->n_spare < ELEMENTSOF(g->spare))
                g->spare[g->n_spare++] = b;
        else
                free(b);
        return NULL;
}

uid_t gate_default_uid(const Gate *g)
{
        return g->side == GATE_SERVER ? g->uid : UID_UNKNOWN;
}

static void gate_drop_fds(Gate *g)
{
        for (size_t i = 0; i < g->n_batches; i++)
                g->batches[i] = batch_free(g, g->batches[i], gate_default_uid(g));
        g->n_batches = 0;
        g->msg_batch = batch_free(g, g->msg_batch, gate_default_uid(g));
}

/* ---- lifetime ---- */

Gate *gate_free(Gate *g)
{
        Parcel *p;

        if (!g)
                return NULL;
        sd_event_source_disable_unref(g->in_source);
        sd_event_source_disable_unref(g->out_source);
        sd_event_source_disable_unref(g->post_source);
        gate_drop_fds(g);
        for (size_t i = 0; i < g->n_spare; i++)
                free(g->spare[i]);
        while ((p = g->parcels)) {
                LIST_REMOVE_TAIL_BY(next, prev, g->parcels, g->parcels_tail, p);
                parcel_free(p);
        }
        safe_close(g->outer_fd);
        safe_close(g->inner_fd);
        safe_close(g->sdbus_fd);
        free(g->buf);
        free(g->hdr);
        return mfree(g);
}

void gate_shutdown(Gate *g)
{
        (void)shutdown(g->outer_fd, SHUT_RDWR);
        (void)shutdown(g->inner_fd, SHUT_RDWR);
}

/* Stops reading for good; the end reaches sd-bus as the end of its input. */
static void gate_close(Gate *g)
{
        g->closed = true;
        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(g->out_source, SD_EVENT_OFF);
        (void)shutdown(g->inner_fd, SHUT_WR);
}

/* What the client sent cannot be passed on: its fds are disposed of now and the connection ends. On
 * the bus there is no such thing (dbus-daemon checked it): the message is dropped instead, and the
 * caller goes on. Returns -EPROTO after a violation, 0 on the bus. */
int gate_violation(Gate *g, const char *what)
{
        if (g->side == GATE_CLIENT) {
                log_debug("Dropped a message from the bus: %s.", what);
                return 0;
        }
        gate_drop_fds(g);
        gate_close(g);
        gate_shutdown(g);
        if (g->ops.violation)
                g->ops.violation(g, what, g->userdata);
        return -EPROTO;
}

/* ---- the stream ---- */

static void gate_consume(Gate *g, size_t n)
{
        memmove(g->buf, g->buf + n, g->len - n);
        g->len -= n;
        g->base += n;
}

static int gate_reserve(Gate *g, size_t want)
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

/* Handshake lines go on as they complete. A client's last one is its BEGIN; on the bus, the answer
 * to NEGOTIATE_UNIX_FD (sd-bus always asks) ends it. Returns true if a line went on. */
static bool gate_auth_line(Gate *g)
{
        const uint8_t *crlf, *line;
        size_t end, n;

        /* A client's first byte is a NUL, before any line. */
        if (g->side == GATE_SERVER && g->base == 0 && g->auth_scan == 0 && g->len > 0 && g->buf[0] == '\0')
                g->auth_scan = 1;
        if (g->auth_scan >= g->len)
                return false;
        line = g->buf + g->auth_scan;
        crlf = memmem(line, g->len - g->auth_scan, "\r\n", 2);
        if (!crlf) {
                if (g->len > GATE_AUTH_MAX)
                        (void)gate_violation(g, "a handshake line without end");
                return false;
        }
        end = (size_t)(crlf - g->buf) + 2;
        n = end - g->auth_scan;
        if (g->side == GATE_SERVER)
                g->authenticated = n == 7 && memcmp(line, "BEGIN\r\n", 7) == 0;
        else if (n >= 4 && memcmp(line, "OK ", 3) == 0)
                g->seen_ok = true;
        else if ((n == 15 && memcmp(line, "AGREE_UNIX_FD\r\n", 15) == 0) ||
                 (g->seen_ok && n >= 7 && memcmp(line, "ERROR", 5) == 0))
                g->authenticated = true;
        if (send(g->inner_fd, g->buf, end, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)end) {
                gate_close(g); /* sd-bus went away, or a handshake that fills 8 MB */
                return false;
        }
        g->inner_sent += end;
        gate_consume(g, end);
        g->auth_scan = 0;
        return true;
}

/* Frames the message at buf[0] and gives it the fds of the read it is the last to start in. */
static int gate_frame(Gate *g)
{
        uint64_t start = g->base;
        int r;

        r = dbus_message_size(g->buf, &g->msg_total);
        if (r < 0) {
                g->msg_total = 0;
                return gate_violation(g, r == -EMSGSIZE ? "a message of 128 MiB or more"
                                                        : "a message header that cannot be one");
        }
        while (g->n_batches > 0) {
                FdBatch *b = g->batches[0];

                if (b->from > start)
                        break; /* a later message's */
                if (b->to > start && start + g->msg_total < b->to)
                        break; /* another message starts after this one within that read */
                memmove(g->batches, g->batches + 1, --g->n_batches * sizeof(FdBatch *));
                if (b->to <= start || g->msg_batch) {
                        batch_free(g, b, gate_default_uid(g));
                        r = gate_violation(g, "fds that came with no message");
                        if (r < 0)
                                return r;
                        continue;
                }
                g->msg_batch = b;
        }
        return 0;
}

/* Passes on what is left of the ready message: 0 once all of it went, -EAGAIN while sd-bus's end is
 * full, or -errno. */
static int gate_send(Gate *g)
{
        struct iovec iov[2];
        size_t n_iov = 0, total, done = g->msg_sent;
        ssize_t n;

        if (g->hdr_len > 0) {
                if (done < g->hdr_len)
                        iov[n_iov++] = (struct iovec){ g->hdr + done, g->hdr_len - done };
                done = done > g->hdr_len ? done - g->hdr_len : 0;
                iov[n_iov++] = (struct iovec){ g->buf + g->msg_head + done, g->msg_total - g->msg_head - done };
                total = g->hdr_len + g->msg_total - g->msg_head;
        } else {
                iov[n_iov++] = (struct iovec){ g->buf + done, g->msg_total - done };
                total = g->msg_total;
        }
        n = writev(g->inner_fd, iov, (int)n_iov);
        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? -EAGAIN : -errno;
        g->msg_sent += (size_t)n;
        g->inner_sent += (size_t)n;
        return g->msg_sent < total ? -EAGAIN : 0;
}

/* Bytes passed to sd-bus that it has not read yet. */
static size_t gate_unread(Gate *g)
{
        int n = 0;

        if (ioctl(g->sdbus_fd, SIOCINQ, &n) < 0 || n < 0)
                return 0;
        return (size_t)n;
}

/* Whether to stop reading for now: a sender's uid is being found out, sd-bus is behind, or a direct
 * client's uid has no room for one more message's fds. Past its share of closes, a direct
 * connection is closed. */
static bool gate_must_wait(Gate *g)
{
        Context *c = g->context;

        if (g->uid_pending)
                return true;
        if (gate_unread(g) > GATE_UNREAD_MAX)
                return true;
        if (g->side != GATE_SERVER || !g->authenticated)
                return false;
        if (closing_check(c->closing, g->uid, 1) != 0) {
                (void)gate_violation(g, "fds whose close could wait for ever past its share");
                return true;
        }
        /* A legitimate call brings at most FHASH_MAX_FDS_PER_CALL: read when that many fit. */
        return gate_room(g, g->uid) < FHASH_MAX_FDS_PER_CALL;
}

void gate_wait(Gate *g)
{
        g->waiting = true;
        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_OFF);
        (void)sd_event_source_set_enabled(g->post_source, SD_EVENT_ON);
}

/* Passes on every whole message that is in; stops to wait for more input or for sd-bus. */
static void gate_process(Gate *g)
{
        while (!g->closed) {
                int r;

                if (!g->authenticated) {
                        if (gate_auth_line(g))
                                continue;
                        /* Everything read so far is handshake. */
                        if (!g->closed && g->n_batches > 0)
                                (void)gate_violation(g, "fds during the handshake");
                        gate_drop_fds(g);
                        return;
                }
                if (g->msg_total == 0) {
                        if (g->len < DBUS_MESSAGE_FIXED_SIZE)
                                return;
                        if (gate_frame(g) < 0)
                                return;
                        if (g->msg_total == 0) { /* dropped (the bus): the stream cannot go on */
                                gate_close(g);
                                return;
                        }
                }
                if (g->len < g->msg_total) {
                        if (gate_reserve(g, g->msg_total - g->len) < 0)
                                (void)gate_violation(g, "a message fhashd has no memory for");
                        return;
                }
                if (!g->msg_ready) {
                        r = gate_prepare(g);
                        if (r == -EAGAIN)
                                return; /* readied again once its sender's uid is known */
                        if (r < 0) {
                                if (r == -ENOMEM)
                                        (void)gate_violation(g, "a message fhashd has no memory for");
                                return;
                        }
                        if (r == 0) {
                                gate_consume(g, g->msg_total);
                                g->msg_total = 0;
                                continue;
                        }
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
                g->msg_ready = false;
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

static int on_outer(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Gate *g = userdata;
        ssize_t n;

        if (g->closed)
                return 0;
        if (g->authenticated && gate_must_wait(g)) {
                if (!g->closed)
                        gate_wait(g);
                return 0;
        }
        if (gate_reserve(g, GATE_READ_CHUNK) < 0) {
                (void)gate_violation(g, "input fhashd has no memory for");
                return 0;
        }
        n = gate_read(g);
        if (n == -EAGAIN || n == -EPROTO)
                return 0;
        if (n <= 0) {
                gate_drop_fds(g);
                gate_close(g);
                return 0;
        }
        gate_process(g);
        return 0;
}

static int on_inner_writable(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        Gate *g = userdata;

        if (g->closed)
                return 0;
        if (!g->waiting)
                (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_ON);
        gate_process(g);
        return 0;
}

/* After each turn of the loop in which something happened: parcels of calls sd-bus has read and no
 * handler took go, and a gate that waited reads again once it may. */
static int on_post(sd_event_source *s, void *userdata)
{
        Gate *g = userdata;
        uint64_t read_by_sdbus = g->inner_sent - gate_unread(g);
        Parcel *p;

        while ((p = g->parcels) && p->end <= read_by_sdbus) {
                LIST_REMOVE_TAIL_BY(next, prev, g->parcels, g->parcels_tail, p);
                g->n_parcels--;
                parcel_free(p);
        }
        if (g->waiting && !g->closed && !gate_must_wait(g)) {
                g->waiting = false;
                if (!g->closed) {
                        (void)sd_event_source_set_enabled(g->in_source, SD_EVENT_ON);
                        gate_process(g);
                }
        }
        if (!g->parcels && !g->waiting)
                (void)sd_event_source_set_enabled(g->post_source, SD_EVENT_OFF);
        return 0;
}

void gate_sender_uid_known(Gate *g)
{
        if (!g || !g->uid_pending)
                return;
        g->uid_pending = false;
        /* on_post() reads and passes on again after this turn of the loop (gate_wait() left it on). */
        (void)sd_event_source_set_enabled(g->post_source, SD_EVENT_ON);
}

Parcel *gate_take_parcel(Gate *g, const char *sender, uint32_t serial)
{
        for (Parcel *p = g->parcels; p; p = p->next)
                if (p->serial == serial && streq_ptr(p->sender, g->side == GATE_CLIENT ? sender : NULL)) {
                        LIST_REMOVE_TAIL_BY(next, prev, g->parcels, g->parcels_tail, p);
                        g->n_parcels--;
                        return p;
                }
        return NULL;
}

size_t gate_parcels(const Gate *g, uint64_t *ret_fds)
{
        uint64_t fds = 0;

        for (Parcel *p = g->parcels; p; p = p->next)
                fds += p->transit.amount;
        if (ret_fds)
                *ret_fds = fds;
        return g->n_parcels;
}

int gate_new(Context *c, GateSide side, uid_t uid, int outer_fd, int inner_fd, int sdbus_fd, const GateOps *ops,
             void *userdata, Gate **ret)
{
        Gate *g;
        int r;

        /* A fail label rather than _cleanup_: see manager_new(). */
        g = calloc(1, sizeof(*g));
        if (!g) {
                safe_close(inner_fd);
                return -ENOMEM;
        }
        g->context = c;
        g->side = side;
        g->uid = uid;
        g->ops = *ops;
        g->userdata = userdata;
        g->inner_fd = inner_fd;
        g->outer_fd = fcntl(outer_fd, F_DUPFD_CLOEXEC, 3);
        g->sdbus_fd = fcntl(sdbus_fd, F_DUPFD_CLOEXEC, 3);
        if (g->outer_fd < 0 || g->sdbus_fd < 0) {
                r = -errno;
                goto fail;
        }
        /* Room for a large message on its way to sd-bus (root may exceed rmem_max/wmem_max). */
        if (setsockopt(inner_fd, SOL_SOCKET, SO_SNDBUFFORCE, &(int){ 8 << 20 }, sizeof(int)) < 0)
                (void)setsockopt(inner_fd, SOL_SOCKET, SO_SNDBUF, &(int){ 8 << 20 }, sizeof(int));
        r = sd_event_add_io(c->event, &g->in_source, g->outer_fd, EPOLLIN, on_outer, g);
        if (r >= 0)
                r = sd_event_add_io(c->event, &g->out_source, g->inner_fd, EPOLLOUT, on_inner_writable, g);
        if (r >= 0)
                r = sd_event_source_set_enabled(g->out_source, SD_EVENT_OFF);
        if (r >= 0)
                r = sd_event_add_post(c->event, &g->post_source, on_post, g);
        if (r >= 0)
                r = sd_event_source_set_enabled(g->post_source, SD_EVENT_OFF);
        if (r < 0)
                goto fail;
        *ret = g;
        return 0;
fail:
        gate_free(g);
        return r;
}
