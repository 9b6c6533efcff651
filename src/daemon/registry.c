/* SPDX-License-Identifier: MIT */
/* registry.c: fhashd's jobs, owners and direct connections in hash maps, each charged to its uid */
#include <string.h>

#include "daemon/registry.h"

void registry_init(Registry *reg, const UserLimit limits[_USER_RESOURCE_MAX])
{
        *reg = (Registry){ .next_job_id = 1, .next_peer_id = 1 };
        user_registry_init(&reg->users, limits);
}

void registry_done(Registry *reg)
{
        /* The objects own their entries: only the tables are ours. */
        HASH_CLEAR(hh, reg->jobs);
        HASH_CLEAR(hh, reg->owners);
        HASH_CLEAR(hh, reg->peers);
        reg->active = NULL;
        user_registry_done(&reg->users);
}

/* Takes a reference on uid's User and charges one of r to it: the start of every add below. */
static int registry_charge(Registry *reg, uid_t uid, UserCharge *c, UserResource r, User **ret_user)
{
        User *u;
        int k;

        k = user_registry_ref(&reg->users, uid, &u);
        if (k < 0)
                return k;
        *c = USER_CHARGE_INIT(r);
        k = user_charge(u, c, 1);
        if (k != 0) {
                user_unref(u);
                return k;
        }
        *ret_user = u;
        return 0;
}

/* One of uid's r for an owner or a connection: the charge keeps the User's reference. */
static int registry_charge_entry(Registry *reg, uid_t uid, UserCharge *c, UserResource r)
{
        User *u = NULL;
        int k = registry_charge(reg, uid, c, r, &u);

        if (k == 0)
                user_unref(u);
        return k;
}

/* After HASH_ADD*(): 0 if the entry is listed, else its charge goes back and -ENOMEM. */
static int registry_listed(int add_result, UserCharge *c)
{
        if (add_result >= 0)
                return 0;
        user_charge_deinit(c);
        return -ENOMEM;
}

int registry_add_job(Registry *reg, JobEntry *e, Job *j, uid_t uid)
{
        User *u = NULL;
        int r;

        r = registry_charge(reg, uid, &e->job_charge, USER_RESOURCE_JOBS, &u);
        if (r != 0)
                return r;
        e->id = reg->next_job_id;
        HASH_ADD(hh, reg->jobs, id, sizeof(e->id), e);
        if (HASH_ADD_RESULT(e) < 0) {
                user_charge_deinit(&e->job_charge);
                user_unref(u);
                return -ENOMEM;
        }
        reg->next_job_id++;
        e->job = j;
        e->user = u;
        e->file_charge = USER_CHARGE_INIT(USER_RESOURCE_FILES);
        e->fd_charge = USER_CHARGE_INIT(USER_RESOURCE_FDS);
        e->mem_charge = USER_CHARGE_INIT(USER_RESOURCE_MEMORY);
        LIST_PREPEND_BY(user_next, user_prev, u->jobs, e);
        u->n_jobs++;
        LIST_PREPEND_BY(active_next, active_prev, reg->active, e);
        e->active = true;
        return 0;
}

void registry_job_finished(Registry *reg, JobEntry *e)
{
        if (!e->active)
                return;
        LIST_REMOVE_BY(active_next, active_prev, reg->active, e);
        e->active = false;
        user_charge_deinit(&e->job_charge);
        user_charge_deinit(&e->file_charge);
        user_charge_deinit(&e->fd_charge);
}

void registry_remove_job(Registry *reg, JobEntry *e)
{
        if (!e->job)
                return;
        registry_job_finished(reg, e);
        HASH_DEL(reg->jobs, e);
        LIST_REMOVE_BY(user_next, user_prev, e->user->jobs, e);
        e->user->n_jobs--;
        /* A finished job's results are held until it goes. */
        user_charge_deinit(&e->mem_charge);
        e->user = user_unref(e->user);
        e->job = NULL;
}

Job *registry_find_job(Registry *reg, uint64_t id)
{
        JobEntry *e = NULL;

        HASH_FIND(hh, reg->jobs, &id, sizeof(id), e);
        return e ? e->job : NULL;
}

JobEntry *registry_first_job(Registry *reg, uid_t uid)
{
        User *u;

        if (uid == 0)
                /* uthash keeps insertion order: the newest is the table's tail. */
                return reg->jobs ? ELMT_FROM_HH(reg->jobs->hh.tbl, reg->jobs->hh.tbl->tail) : NULL;
        u = user_registry_find(&reg->users, uid);
        return u ? u->jobs : NULL;
}

JobEntry *registry_next_job(const JobEntry *e, uid_t uid)
{
        return uid == 0 ? e->hh.prev : e->user_next;
}

unsigned registry_n_jobs_of(Registry *reg, uid_t uid)
{
        User *u;

        if (uid == 0)
                return registry_n_jobs(reg);
        u = user_registry_find(&reg->users, uid);
        return u ? u->n_jobs : 0;
}

uint32_t registry_n_active_jobs(const Registry *reg)
{
        return (uint32_t)reg->users.total[USER_RESOURCE_JOBS];
}

uint32_t registry_n_jobs(const Registry *reg)
{
        return HASH_COUNT(reg->jobs);
}

int registry_add_owner(Registry *reg, OwnerEntry *e, Owner *o, const char *name, uid_t uid)
{
        int r;

        if (registry_find_owner(reg, name))
                return -EEXIST;
        r = registry_charge_entry(reg, uid, &e->charge, USER_RESOURCE_OWNERS);
        if (r != 0)
                return r;
        e->name = name;
        e->uid = uid;
        HASH_ADD_KEYPTR(hh, reg->owners, e->name, strlen(e->name), e);
        r = registry_listed(HASH_ADD_RESULT(e), &e->charge);
        if (r == 0)
                e->owner = o;
        return r;
}

void registry_remove_owner(Registry *reg, OwnerEntry *e)
{
        if (!e->owner)
                return;
        HASH_DEL(reg->owners, e);
        user_charge_deinit(&e->charge);
        e->owner = NULL;
}

OwnerEntry *registry_find_owner(Registry *reg, const char *name)
{
        OwnerEntry *e = NULL;

        HASH_FIND(hh, reg->owners, name, strlen(name), e);
        return e;
}

unsigned registry_n_owners(const Registry *reg)
{
        return HASH_COUNT(reg->owners);
}

int registry_add_peer(Registry *reg, PeerEntry *e, Peer *p, sd_bus *bus, const char *name, uid_t uid)
{
        int r;

        if (registry_find_peer(reg, bus))
                return -EEXIST;
        r = registry_charge_entry(reg, uid, &e->charge, USER_RESOURCE_PEERS);
        if (r != 0)
                return r;
        e->bus = bus;
        e->name = name;
        e->uid = uid;
        HASH_ADD_PTR(reg->peers, bus, e);
        r = registry_listed(HASH_ADD_RESULT(e), &e->charge);
        if (r == 0)
                e->peer = p;
        return r;
}

void registry_remove_peer(Registry *reg, PeerEntry *e)
{
        if (e->peer) {
                HASH_DEL(reg->peers, e);
                user_charge_deinit(&e->charge);
                e->peer = NULL;
        }
}

PeerEntry *registry_find_peer(Registry *reg, sd_bus *bus)
{
        PeerEntry *e = NULL;

        HASH_FIND_PTR(reg->peers, &bus, e);
        return e;
}

unsigned registry_n_peers(const Registry *reg)
{
        return HASH_COUNT(reg->peers);
}
