/* SPDX-License-Identifier: MIT */
/* user.c: per-uid accounting: what each uid holds, charged when taken, released when given back */
#include <assert.h>
#include <stdlib.h>

#include "basic/string-table.h"
#include "daemon/user.h"

static const char *const user_resource_table[_USER_RESOURCE_MAX] = {
        [USER_RESOURCE_JOBS] = "jobs",   [USER_RESOURCE_FILES] = "files", [USER_RESOURCE_OWNERS] = "owners",
        [USER_RESOURCE_PEERS] = "peers", [USER_RESOURCE_FDS] = "fds",
        [USER_RESOURCE_MEMORY] = "bytes of job data", [USER_RESOURCE_TRANSIT] = "fds on their way in",
        [USER_RESOURCE_CLOSING] = "fds waiting to be closed",
};

DEFINE_STRING_TABLE_LOOKUP(user_resource, UserResource, user_resource_table, _USER_RESOURCE_MAX,
                           _USER_RESOURCE_INVALID)

void user_registry_init(UserRegistry *ur, const UserLimit limits[_USER_RESOURCE_MAX])
{
        *ur = (UserRegistry){};
        for (size_t r = 0; r < _USER_RESOURCE_MAX; r++)
                ur->limits[r] = limits[r];
}

void user_registry_done(UserRegistry *ur)
{
        User *u, *tmp;

        HASH_ITER(hh, ur->users, u, tmp) {
                HASH_DEL(ur->users, u); // NOLINT(clang-analyzer-unix.Malloc): HASH_ITER keeps the next entry before u is freed
                free(u);
        }
}

User *user_registry_find(UserRegistry *ur, uid_t uid)
{
        User *u = NULL;

        HASH_FIND(hh, ur->users, &uid, sizeof(uid), u);
        return u;
}

int user_registry_ref(UserRegistry *ur, uid_t uid, User **ret)
{
        User *u = user_registry_find(ur, uid);

        if (!u) {
                u = calloc(1, sizeof(*u));
                if (!u)
                        return -ENOMEM;
                u->registry = ur;
                u->uid = uid;
                HASH_ADD(hh, ur->users, uid, sizeof(u->uid), u);
                if (HASH_ADD_RESULT(u) < 0) {
                        free(u);
                        return -ENOMEM;
                }
        }
        u->n_refs++;
        *ret = u;
        return 0;
}

User *user_unref(User *u)
{
        if (!u)
                return NULL;
        assert(u->n_refs > 0);
        if (--u->n_refs > 0)
                return NULL;
        /* Every charge holds a reference, so nothing can be charged any more. */
        HASH_DEL(u->registry->users, u);
        free(u);
        return NULL;
}

uint64_t user_used(const User *u, UserResource r)
{
        return u ? u->used[r] : 0;
}

static int user_check_one(UserRegistry *ur, uid_t uid, uint64_t used, UserResource r, uint64_t n)
{
        const UserLimit *l = &ur->limits[r];
        uint64_t total = l->total;

        if (l->per_uid > 0 && (n > l->per_uid || used > l->per_uid - n))
                return USER_E_QUOTA;
        if (total > 0) {
                if (uid != 0)
                        total = l->reserve < total ? total - l->reserve : 0;
                if (n > total || ur->total[r] > total - n)
                        return USER_E_TOTAL;
        }
        return 0;
}

uint64_t user_room(UserRegistry *ur, uid_t uid, UserResource r)
{
        const UserLimit *l = &ur->limits[r];
        uint64_t used = user_used(user_registry_find(ur, uid), r), room = UINT64_MAX, total = l->total;

        if (l->per_uid > 0)
                room = used < l->per_uid ? l->per_uid - used : 0;
        if (total > 0) {
                if (uid != 0)
                        total = l->reserve < total ? total - l->reserve : 0;
                room = MIN(room, ur->total[r] < total ? total - ur->total[r] : 0);
        }
        return room;
}

int user_check(UserRegistry *ur, uid_t uid, UserResource r, uint64_t n)
{
        return user_check_one(ur, uid, user_used(user_registry_find(ur, uid), r), r, n);
}

static void user_charge_take(User *u, UserCharge *c, uint64_t n)
{
        UserRegistry *ur = u->registry;

        if (!c->user) {
                c->user = u;
                u->n_refs++;
        }
        c->amount += n;
        u->used[c->resource] += n;
        ur->total[c->resource] += n;
}

int user_charge(User *u, UserCharge *c, uint64_t n)
{
        int r;

        assert(!c->user || c->user == u);
        r = user_check_one(u->registry, u->uid, u->used[c->resource], c->resource, n);
        if (r != 0)
                return r;
        user_charge_take(u, c, n);
        return 0;
}

void user_charge_force(User *u, UserCharge *c, uint64_t n)
{
        assert(!c->user || c->user == u);
        user_charge_take(u, c, n);
}

void user_charge_release(UserCharge *c, uint64_t n)
{
        User *u = c->user;

        if (!u)
                return;
        n = MIN(n, c->amount);
        c->amount -= n;
        assert(u->used[c->resource] >= n && u->registry->total[c->resource] >= n);
        u->used[c->resource] -= n;
        u->registry->total[c->resource] -= n;
}

void user_charge_deinit(UserCharge *c)
{
        user_charge_release(c, c->amount);
        c->user = user_unref(c->user);
}
