/* SPDX-License-Identifier: MIT */
/* closing.c: fds only the closer may close, queued by uid: a fair share of its children, bounded */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "basic/hashmap.h"
#include "basic/log.h"
#include "daemon/closing.h"
#include "io/closer.h"

/* One uid's fds: queued (not given to the closer yet) and in its children. */
typedef struct ClosingUser {
        uid_t uid;
        UserCharge charge;      /* USER_RESOURCE_CLOSING: queued + in children */
        int *queue;             /* a ring of fds */
        size_t head, n_queued, n_alloc;
        unsigned n_children;
        bool in_turn;           /* in the round of uids waiting for a child */
        struct ClosingUser *turn_next;
        UT_hash_handle hh;
} ClosingUser;

struct Closing {
        UserRegistry *users;
        Closer *closer;
        ClosingUser *by_uid;
        ClosingUser *turn_head, *turn_tail; /* uids with queued fds and a child to spare, in turn */
        uint64_t n_queued;                  /* fds waiting for a child, of every uid */
        sd_event_source *report_source, *death_source;
};

int closing_new(UserRegistry *users, Closing **ret)
{
        Closing *q;
        int r;

        q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->users = users;
        r = closer_new(&q->closer);
        if (r < 0) {
                free(q);
                return r;
        }
        *ret = q;
        return 0;
}

static ClosingUser *closing_user_free(Closing *q, ClosingUser *u)
{
        if (!u)
                return NULL;
        HASH_DEL(q->by_uid, u);
        user_charge_deinit(&u->charge);
        free(u->queue);
        return mfree(u);
}

Closing *closing_free(Closing *q)
{
        ClosingUser *u, *tmp;

        if (!q)
                return NULL;
        sd_event_source_disable_unref(q->report_source);
        sd_event_source_disable_unref(q->death_source);
        closer_free(q->closer);
        /* uthash.h is a system header, which cppcheck is not given. */
        // cppcheck-suppress unknownMacro
        HASH_ITER(hh, q->by_uid, u, tmp)
                closing_user_free(q, u); // NOLINT(clang-analyzer-unix.Malloc): HASH_ITER keeps the next entry
        return mfree(q);
}

int closing_closer_pid(const Closing *q)
{
        return closer_pid(q->closer);
}

bool closing_tight(const Closing *q)
{
        return q->n_queued > 0;
}

uint64_t closing_held(Closing *q, uid_t uid)
{
        return user_used(user_registry_find(q->users, uid), USER_RESOURCE_CLOSING);
}

uint64_t closing_held_total(const Closing *q)
{
        return q->users->total[USER_RESOURCE_CLOSING];
}

int closing_check(Closing *q, uid_t uid, uint64_t n)
{
        return user_check(q->users, uid, USER_RESOURCE_CLOSING, n);
}

static void turn_push(Closing *q, ClosingUser *u)
{
        if (u->in_turn || u->n_queued == 0 || u->n_children >= CLOSING_CHILDREN_PER_UID)
                return;
        u->in_turn = true;
        u->turn_next = NULL;
        if (q->turn_tail)
                q->turn_tail->turn_next = u;
        else
                q->turn_head = u;
        q->turn_tail = u;
}

static ClosingUser *turn_pop(Closing *q)
{
        ClosingUser *u = q->turn_head;

        if (!u)
                return NULL;
        q->turn_head = u->turn_next;
        if (!q->turn_head)
                q->turn_tail = NULL;
        u->in_turn = false;
        u->turn_next = NULL;
        return u;
}

static int queue_push(Closing *q, ClosingUser *u, int fd, bool front)
{
        if (u->n_queued == u->n_alloc) {
                size_t a = MAX((size_t)16, 2 * u->n_alloc);
                int *nq = malloc(a * sizeof(int));

                if (!nq)
                        return -ENOMEM;
                for (size_t i = 0; i < u->n_queued; i++)
                        nq[i] = u->queue[(u->head + i) % u->n_alloc];
                free(u->queue);
                u->queue = nq;
                u->head = 0;
                u->n_alloc = a;
        }
        if (front) {
                u->head = (u->head + u->n_alloc - 1) % u->n_alloc;
                u->queue[u->head] = fd;
        } else
                u->queue[(u->head + u->n_queued) % u->n_alloc] = fd;
        u->n_queued++;
        q->n_queued++;
        return 0;
}

static int queue_pop(Closing *q, ClosingUser *u)
{
        int fd = u->queue[u->head];

        u->head = (u->head + 1) % u->n_alloc;
        u->n_queued--;
        q->n_queued--;
        return fd;
}

/* Gives the closer as many closes as it has children for, one uid at a time in turn. */
static void closing_pump(Closing *q)
{
        ClosingUser *u;

        while (closer_in_flight(q->closer) < CLOSER_CHILDREN_MAX && (u = turn_pop(q))) {
                int fd = queue_pop(q, u), r;

                r = closer_submit(q->closer, fd, u->uid);
                if (r < 0) {
                        /* Not told: the closer is being made again. The fd waits at the front. */
                        (void)queue_push(q, u, fd, true); /* the slot it was popped from is free */
                        turn_push(q, u);
                        if (r != -EBUSY)
                                log_warning_errno(r, "Could not hand an fd to the closer: %m");
                        return;
                }
                u->n_children++;
                turn_push(q, u);
        }
}

static void on_closed(uint64_t tag, bool closed, int fd, void *userdata)
{
        Closing *q = userdata;
        uid_t uid = (uid_t)tag;
        ClosingUser *u = NULL;

        HASH_FIND(hh, q->by_uid, &uid, sizeof(uid), u);
        if (!u)
                return;
        if (u->n_children > 0)
                u->n_children--;
        if (closed)
                user_charge_release(&u->charge, 1);
        else if (queue_push(q, u, fd, true) < 0)
                log_warning("An fd the closer gave back stays open: no memory to queue it.");
        turn_push(q, u);
        if (u->n_queued == 0 && u->n_children == 0)
                closing_user_free(q, u);
}

static int closing_dispatch(Closing *q)
{
        int r = closer_dispatch(q->closer, on_closed, q);

        if (r < 0)
                log_warning_errno(r, "The closer is gone and could not be made again: %m");
        closing_pump(q);
        return 0;
}

static int on_closer_event(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
        return closing_dispatch(userdata);
}

int closing_attach_event(Closing *q, sd_event *event)
{
        int r;

        r = sd_event_add_io(event, &q->report_source, closer_get_report_fd(q->closer), EPOLLIN, on_closer_event, q);
        if (r < 0)
                return r;
        if (closer_get_pidfd(q->closer) >= 0) {
                r = sd_event_add_io(event, &q->death_source, closer_get_pidfd(q->closer), EPOLLIN, on_closer_event, q);
                if (r < 0)
                        return r;
        }
        return 0;
}

int closing_take(Closing *q, uid_t uid, int fd)
{
        ClosingUser *u = NULL;
        User *owner;
        int r;

        HASH_FIND(hh, q->by_uid, &uid, sizeof(uid), u);
        if (!u) {
                u = calloc(1, sizeof(*u));
                if (!u)
                        goto nomem;
                u->uid = uid;
                u->charge = USER_CHARGE_INIT(USER_RESOURCE_CLOSING);
                HASH_ADD(hh, q->by_uid, uid, sizeof(u->uid), u);
                if (HASH_ADD_RESULT(u) < 0) {
                        free(u);
                        goto nomem;
                }
        }
        if (!u->charge.user) {
                r = user_registry_ref(q->users, uid, &owner);
                if (r < 0)
                        goto nomem_user;
                user_charge_force(owner, &u->charge, 1);
                user_unref(owner); /* the charge holds its own reference */
        } else
                user_charge_force(u->charge.user, &u->charge, 1);
        if (queue_push(q, u, fd, false) < 0) {
                user_charge_release(&u->charge, 1);
                goto nomem_user;
        }
        turn_push(q, u);
        closing_pump(q);
        return closing_check(q, uid, 1);

nomem_user:
        if (u->n_queued == 0 && u->n_children == 0)
                closing_user_free(q, u);
nomem:
        /* Only the closer may close it, and it cannot be queued: it stays open, in the table. */
        log_warning("An fd waiting for the closer stays open: no memory to queue it.");
        return USER_E_TOTAL;
}
