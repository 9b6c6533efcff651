/* SPDX-License-Identifier: MIT */
/* gate-read.c: a gate's reads: the fds that come with them, taken only as far as their uid has room */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "basic/macro.h"
#include "daemon/closing.h"
#include "daemon/dbus-message.h"
#include "daemon/gate-internal.h"
#include "fhash/fhash-dbus.h"

/* The SENDER of the message that starts at m, whose first len bytes are in (NULL if its fields are
 * not all in, or not as dbus-daemon writes them: the caller then takes the fds as usual). */
static const char *peek_sender(const uint8_t *m, size_t len)
{
        bool le = m[0] == 'l';
        uint32_t fields;
        size_t p = DBUS_MESSAGE_FIXED_SIZE, end;

        if (len < DBUS_MESSAGE_FIXED_SIZE)
                return NULL;
        memcpy(&fields, m + 12, 4);
        fields = le ? le32toh(fields) : be32toh(fields);
        end = DBUS_MESSAGE_FIXED_SIZE + (size_t)fields;
        if (fields > DBUS_ARRAY_SIZE_MAX || end > len)
                return NULL;
        while (p + 4 <= end) {
                uint8_t code = m[p], sig = m[p + 2];
                uint32_t l;

                if (m[p + 1] != 1 || m[p + 3] != 0)
                        return NULL;
                p += 4;
                if (sig == 'y') {
                        p += 1;
                } else if (sig == 'g') {
                        if (p >= end)
                                return NULL;
                        p += (size_t)m[p] + 2;
                } else if (sig == 'u' || sig == 's' || sig == 'o') {
                        p = ALIGN_TO(p, 4);
                        if (p + 4 > end)
                                return NULL;
                        memcpy(&l, m + p, 4);
                        l = le ? le32toh(l) : be32toh(l);
                        if (sig == 'u') {
                                p += 4;
                        } else {
                                if (l >= end - p - 4 || m[p + 4 + l] != 0)
                                        return NULL;
                                if (code == 7 && sig == 's')
                                        return (const char *)m + p + 4;
                                p += 4 + (size_t)l + 1;
                        }
                } else
                        return NULL;
                p = ALIGN_TO(p, 8);
        }
        return NULL;
}

/* The start of the last message that starts within [from, to) of the stream, if its first bytes are
 * in buf by then (to - base bytes of it are), or NULL. */
static const uint8_t *gate_owner(Gate *g, uint64_t from, uint64_t to)
{
        size_t at = 0, last = SIZE_MAX, upto = (size_t)(to - g->base);

        while (at < upto) {
                size_t total;

                if (g->base + at >= from)
                        last = at;
                if (upto - at < DBUS_MESSAGE_FIXED_SIZE || dbus_message_size(g->buf + at, &total) < 0)
                        break;
                at += total;
        }
        return last == SIZE_MAX ? NULL : g->buf + last;
}

/* How many fds the gate takes in one read of uid's: none past its share of closes, else what it may
 * still have on their way in, at most what one sendmsg() carries. */
size_t gate_room(Gate *g, uid_t uid)
{
        Context *c = g->context;

        if (closing_check(c->closing, uid, 1) != 0)
                return 0;
        return (size_t)MIN((uint64_t)GATE_FDS_MAX, user_room(&c->registry.users, uid, USER_RESOURCE_TRANSIT));
}

/* Budgets are tight, on the bus: the fds that come next are looked at before they are taken. The
 * bytes are peeked first (MSG_PEEK without room for fds installs none); if fds come with them, the
 * read takes as many as the sender's uid has room for (a legitimate call brings at most
 * FHASH_MAX_FDS_PER_CALL) and leaves the rest, or all, to the kernel. Returns the room, and in
 * *ret_len how much the read may take (0: as usual); SIZE_MAX while the sender's uid is being found
 * out (nothing is read until it is known). */
static size_t gate_look(Gate *g, size_t *ret_len)
{
        struct iovec iov = { .iov_base = g->buf + g->len, .iov_len = g->cap - g->len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        const uint8_t *owner;
        const char *sender;
        size_t room;
        uid_t uid;
        ssize_t n;

        *ret_len = 0;
        n = recvmsg(g->outer_fd, &mh, MSG_PEEK | MSG_DONTWAIT);
        if (n <= 0 || !(mh.msg_flags & MSG_CTRUNC))
                return GATE_FDS_MAX;
        owner = gate_owner(g, g->base + g->len, g->base + g->len + (uint64_t)n);
        sender = owner ? peek_sender(owner, (size_t)(g->buf + g->len + n - owner)) : NULL;
        if (!sender)
                return GATE_FDS_MAX;
        if (gate_sender_uid(g, sender, &uid) < 0)
                return SIZE_MAX; /* read again once the uid is known */
        room = gate_room(g, uid);
        *ret_len = (size_t)n;
        return room < FHASH_MAX_FDS_PER_CALL ? 0 : room;
}

/* Reads once, taking at most room fds (the rest stay with the kernel, which drops them without
 * installing them: those inputs fail Busy). Returns the bytes read (their fds in a new batch), 0 at
 * the end, -EAGAIN, -EPROTO after a violation, -errno. */
ssize_t gate_read(Gate *g)
{
        union {
                struct cmsghdr h;
                uint8_t buf[CMSG_SPACE(sizeof(int) * GATE_FDS_MAX)];
        } control;
        struct iovec iov = { .iov_base = g->buf + g->len, .iov_len = g->cap - g->len };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control };
        size_t room = GATE_FDS_MAX, len = 0;
        FdBatch *b = NULL;
        ssize_t n;

        if (g->authenticated && g->side == GATE_SERVER)
                room = gate_room(g, g->uid);
        else if (g->authenticated && (closing_tight(g->context->closing) ||
                                      user_room(&g->context->registry.users, UID_UNKNOWN, USER_RESOURCE_TRANSIT) <
                                              GATE_FDS_MAX))
                room = gate_look(g, &len);
        if (room == SIZE_MAX)
                return -EAGAIN;
        if (len > 0)
                iov.iov_len = len;
        mh.msg_controllen = room > 0 ? CMSG_SPACE(sizeof(int) * room) : 0;
        n = recvmsg(g->outer_fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0)
                return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
                size_t k;

                if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                        continue;
                k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
                if (!b)
                        b = batch_new(g);
                for (size_t i = 0; i < k; i++) {
                        int fd;

                        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                        if (b && b->n < GATE_FDS_MAX)
                                b->fds[b->n++] = fd;
                        else
                                (void)gate_dispose(g, gate_default_uid(g), &fd, 1);
                }
        }
        if (!b && (mh.msg_flags & MSG_CTRUNC))
                b = batch_new(g);
        if (b && (mh.msg_flags & MSG_CTRUNC)) {
                /* Left on purpose (no room for that uid), or the table was full. */
                b->left = room < GATE_FDS_MAX;
                b->lost = !b->left;
        }
        if (n == 0) {
                batch_free(g, b, gate_default_uid(g));
                return 0;
        }
        if (b) {
                if (g->n_batches == GATE_BATCHES_MAX) {
                        batch_free(g, b, gate_default_uid(g));
                        g->len += (size_t)n;
                        return gate_violation(g, "fds before the earlier ones found their message") < 0 ? -EPROTO : n;
                }
                b->from = g->base + g->len;
                b->to = b->from + (uint64_t)n;
                g->batches[g->n_batches++] = b;
        }
        g->len += (size_t)n;
        return n;
}

