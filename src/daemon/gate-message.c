/* SPDX-License-Identifier: MIT */
/* gate-message.c: one message through a gate: validated, its fds judged and kept or closed, its header rewritten */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/closing.h"
#include "daemon/dbus-message.h"
#include "daemon/gate-internal.h"
#include "fhash/fhash-dbus.h"

/* Which hidden method a call is renamed to, if it is one that brings fds for a job (with the
 * arguments it takes: a call with others goes on as it is, and sd-bus says what it expected). */
static const char *gated_member(const DBusHeader *h)
{
        static const struct {
                const char *member, *interface, *signature, *gated;
        } gated[] = {
                { "HashFds", FHASH_MANAGER_INTERFACE, "ahsa{sv}", GATE_MEMBER_HASH_FDS },
                { "AddFds", FHASH_JOB_INTERFACE, "aha{sv}", GATE_MEMBER_ADD_FDS },
                { "HashNames", FHASH_MANAGER_INTERFACE, "ahayaysa{sv}", GATE_MEMBER_HASH_NAMES },
                { "AddNames", FHASH_JOB_INTERFACE, "ahayaya{sv}", GATE_MEMBER_ADD_NAMES },
        };

        if (h->type != DBUS_MESSAGE_METHOD_CALL || !h->member || !h->signature)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(gated); i++)
                if (streq(h->member, gated[i].member) && (!h->interface || streq(h->interface, gated[i].interface)) &&
                    streq(h->signature, gated[i].signature))
                        return gated[i].gated;
        return NULL;
}

int gate_sender_uid(Gate *g, const char *sender, uid_t *ret)
{
        uid_t uid = UID_UNKNOWN;
        int r;

        if (g->side == GATE_SERVER)
                uid = g->uid;
        else if (sender && g->ops.sender_uid) {
                r = g->ops.sender_uid(sender, &uid, g->userdata);
                if (r == -EAGAIN) {
                        g->uid_pending = true;
                        gate_wait(g);
                        return r;
                }
                if (r < 0)
                        uid = UID_UNKNOWN;
        }
        *ret = uid;
        return 0;
}

/* Judges the fds of the message h describes: the ones whose close could wait go to the closer, the
 * others into p (a gated call) or closed. Entries past what came say why nothing did. Returns what
 * closing_take() last said. */
static int gate_sort_fds(Gate *g, const DBusHeader *h, uid_t uid, Parcel *p)
{
        Context *c = g->context;
        FdBatch *b = g->msg_batch;
        int over = 0;

        if (b && b->n > 0)
                fd_screen_refresh(c->fd_screen);
        for (size_t i = 0; b && i < b->n; i++) {
                int fd = TAKE_FD(b->fds[i]);
                FdVerdict v;

                fd_screen_judge(c->fd_screen, fd, &v);
                if (v.closer)
                        over = closing_take(c->closing, uid, TAKE_FD(fd));
                else if (p && i < p->n) {
                        p->entries[i].fd = fd;
                        fd = -EBADF;
                }
                safe_close(fd);
                if (p && i < p->n) {
                        p->entries[i].verdict = v;
                        p->entries[i].info = (EngineFdInfo){ .stx = v.stx, .flags = v.flags };
                }
        }
        for (size_t i = b ? b->n : 0; p && i < p->n; i++)
                p->entries[i].verdict.refusal = b && b->left ? FD_REFUSAL_BUDGET : FD_REFUSAL_LOST;
        if (b)
                b->n = 0;
        return over;
}

/* Charges a parcel's kept fds to its uid; past the uid's room they are refused and closed. */
static void gate_charge_parcel(Gate *g, Parcel *p)
{
        User *u = NULL;
        size_t kept = 0;

        for (size_t i = 0; i < p->n; i++)
                kept += p->entries[i].fd >= 0;
        if (kept == 0)
                return;
        if (user_registry_ref(&g->context->registry.users, p->uid, &u) >= 0 && user_charge(u, &p->transit, kept) == 0) {
                user_unref(u);
                return;
        }
        user_unref(u);
        for (size_t i = 0; i < p->n; i++)
                if (p->entries[i].fd >= 0) {
                        p->entries[i].fd = safe_close(p->entries[i].fd);
                        p->entries[i].verdict.refusal = FD_REFUSAL_BUDGET;
                }
}

static int gate_rewrite(Gate *g, const DBusHeader *h, const char *member, unsigned flags)
{
        size_t need = dbus_message_rewrite_max(h, member);
        ssize_t n;

        if (need > g->hdr_cap) {
                uint8_t *b = realloc(g->hdr, need);

                if (!b)
                        return -ENOMEM;
                g->hdr = b;
                g->hdr_cap = need;
        }
        n = dbus_message_rewrite(g->buf, h, member, flags, g->hdr, g->hdr_cap);
        if (n < 0)
                return (int)n;
        g->hdr_len = (size_t)n;
        return 0;
}

/* Readies the whole message at buf[0] to go on: validated, its fds sorted, its header rewritten.
 * 1: it goes; 0: it was dropped (the bus); < 0: the connection was closed for it. */
int gate_prepare(Gate *g)
{
        _cleanup_(parcel_freep) Parcel *p = NULL;
        FdBatch *b = g->msg_batch;
        const char *why = NULL, *member;
        size_t n_fds = b ? b->n : 0;
        DBusHeader h;
        uid_t uid;
        int r, over;

        r = dbus_message_parse(g->buf, g->msg_total, b && (b->lost || b->left) ? DBUS_FDS_UNCHECKED : n_fds, &h, &why);
        if (r >= 0 && b && (b->lost || b->left) && h.unix_fds < n_fds) {
                r = -EBADMSG;
                why = "more fds than its UNIX_FDS field says";
        }
        if (r < 0) {
                r = gate_violation(g, why ? why : "a message that cannot be read");
                g->msg_batch = batch_free(g, g->msg_batch, gate_default_uid(g));
                return r;
        }
        /* The uid of fds, and of every call on the bus: its handler then finds it known, and no
         * handler waits for the bus driver (a round trip of 1.2 ms on average, 14 ms at most, for
         * each of 2,500 new clients under LOAD, 3 s of the loop's 20 when it waited). Before
         * anything else, so that the message is readied again as if new once the uid is known. */
        uid = UID_UNKNOWN;
        if (n_fds > 0 || h.unix_fds > 0 || (g->side == GATE_CLIENT && h.type == DBUS_MESSAGE_METHOD_CALL)) {
                r = gate_sender_uid(g, h.sender, &uid);
                if (r < 0)
                        return r;
                if (n_fds == 0 && h.unix_fds == 0)
                        uid = UID_UNKNOWN;
        }
        g->msg_head = h.total - h.body_size;
        member = gated_member(&h);
        if (h.member && strncmp(h.member, GATE_MEMBER_PREFIX, strlen(GATE_MEMBER_PREFIX)) == 0) {
                r = gate_violation(g, "a call of a method fhashd keeps for itself");
                if (r < 0)
                        return r;
                member = GATE_MEMBER_PREFIX "Refused"; /* no such method: UnknownMethod */
        }
        if (member && gated_member(&h) && h.unix_fds > 0) {
                r = parcel_new(g->side == GATE_CLIENT ? h.sender : NULL, h.serial, uid, h.unix_fds, &p);
                if (r < 0)
                        return r;
        }
        over = gate_sort_fds(g, &h, uid, p);
        g->msg_batch = batch_free(g, g->msg_batch, uid);
        if (over != 0 && g->side == GATE_SERVER)
                return gate_violation(g, "more fds whose close could wait for ever than its share");
        if (p)
                gate_charge_parcel(g, p);

        g->hdr_len = 0;
        if (h.has_unix_fds || member) {
                r = gate_rewrite(g, &h, member, gated_member(&h) ? DBUS_REWRITE_FDS_AS_INDEXES : 0);
                if (r < 0)
                        return r == -ENOMEM ? r : gate_violation(g, "a header that cannot be rewritten");
        }
        if (p) {
                p->end = g->inner_sent + (g->hdr_len > 0 ? g->hdr_len : g->msg_head) + h.body_size;
                LIST_APPEND_BY(next, prev, g->parcels, g->parcels_tail, p);
                g->n_parcels++;
                TAKE_PTR(p);
                (void)sd_event_source_set_enabled(g->post_source, SD_EVENT_ON);
        }
        g->msg_ready = true;
        g->msg_sent = 0;
        return 1;
}

