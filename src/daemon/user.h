/* SPDX-License-Identifier: MIT */
/* user.h: per-uid accounting: what each uid holds, charged when taken, released when given back */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "basic/string-table.h"
#include "basic/hashmap.h"
#include "basic/macro.h"

/*
 * After dbus-broker's src/util/user.{c,h}: every resource a caller can make fhashd hold is counted
 * against the caller's uid when it is taken and given back when it ends, so that a quota check is
 * a comparison, never a walk over jobs or connections. A resource is one value of UserResource and
 * one line of limits; a new kind of resource (fds, bytes of names, streams, retained results) is a
 * new value and a new limit, not new code.
 *
 * A UserCharge is embedded in whatever holds the resource (a job, an owner, a direct connection). It
 * remembers how much it holds, so that whoever frees the holder gives back exactly that much with
 * user_charge_deinit(), on every path, without counting again.
 */

typedef enum UserResource {
        USER_RESOURCE_JOBS,    /* unfinished jobs */
        USER_RESOURCE_FILES,   /* inputs of unfinished jobs without a result yet */
        USER_RESOURCE_OWNERS,  /* clients tracked because they own jobs (owner.h) */
        USER_RESOURCE_PEERS,   /* direct connections (peer.h) */
        USER_RESOURCE_FDS,     /* callers' fds held for inputs without a result yet (H3) */
        USER_RESOURCE_MEMORY,  /* bytes of results, names and expected digests jobs hold (H5) */
        USER_RESOURCE_TRANSIT, /* fds a gate received and no handler has taken yet (gate.h) */
        USER_RESOURCE_CLOSING, /* fds waiting for the closer, or in its children's close (closing.h) */
        _USER_RESOURCE_MAX,
        _USER_RESOURCE_INVALID = -EINVAL,
} UserResource;

DECLARE_STRING_TABLE_LOOKUP(user_resource, UserResource);

typedef struct UserLimit {
        uint64_t per_uid;  /* what one uid may hold; 0 = no limit */
        uint64_t total;    /* what all uids together may hold; 0 = no limit */
        /* Of total, what only root may take: other uids together get total - reserve, so that they
         * can never lock root out. 0 = none. */
        uint64_t reserve;
} UserLimit;

/* The named outcomes of user_check() and user_charge(): the charge was refused, nothing changed. */
enum {
        USER_E_QUOTA = 1,  /* the uid's own limit (per_uid) */
        USER_E_TOTAL,      /* the daemon-wide limit (total, or total - reserve for uids other than 0) */
};

typedef struct User User;
typedef struct UserRegistry UserRegistry;
/* The registry's entry of a job (registry.h); a User lists its uid's jobs. */
typedef struct JobEntry JobEntry;

struct UserRegistry {
        User *users;  /* by uid */
        UserLimit limits[_USER_RESOURCE_MAX];
        uint64_t total[_USER_RESOURCE_MAX];  /* what all users hold */
};

struct User {
        UserRegistry *registry;
        uid_t uid;
        unsigned n_refs;
        uint64_t used[_USER_RESOURCE_MAX];
        /* This uid's jobs, newest first, for ListJobs and the node enumerator; kept by registry.c. */
        JobEntry *jobs;
        unsigned n_jobs;
        UT_hash_handle hh;
};

typedef struct UserCharge {
        User *user;  /* holds a reference while bound; NULL before the first charge */
        UserResource resource;
        uint64_t amount;
} UserCharge;

#define USER_CHARGE_INIT(r) ((UserCharge){ .resource = (r) })

void user_registry_init(UserRegistry *ur, const UserLimit limits[_USER_RESOURCE_MAX]);
/* Frees what is left (nothing, once every holder was freed: the unit tests check that). */
void user_registry_done(UserRegistry *ur);

/* The User of uid, made on first use, with one more reference. -ENOMEM. */
int user_registry_ref(UserRegistry *ur, uid_t uid, User **ret);
/* The User of uid if something holds it, without a reference; NULL otherwise. */
User *user_registry_find(UserRegistry *ur, uid_t uid);
/* Drops a reference; the last one frees the User. Takes NULL, returns NULL. */
User *user_unref(User *u);

/* What u holds of r; 0 for NULL. */
uint64_t user_used(const User *u, UserResource r);

/* Whether uid may take n more of r: 0, USER_E_QUOTA or USER_E_TOTAL. Takes nothing. */
int user_check(UserRegistry *ur, uid_t uid, UserResource r, uint64_t n);
/* How many more of r uid may take now (UINT64_MAX without limits). */
uint64_t user_room(UserRegistry *ur, uid_t uid, UserResource r);
/* Takes n more of c's resource for u into c (binding c to u on its first charge): 0, or
 * USER_E_QUOTA / USER_E_TOTAL with nothing taken. c must not be bound to another User. */
int user_charge(User *u, UserCharge *c, uint64_t n);
/* Takes n more even past the limits: for what fhashd already holds and cannot give back (an fd
 * received that only the closer may close). user_check() then says the uid is over. */
void user_charge_force(User *u, UserCharge *c, uint64_t n);
/* Gives back n of what c holds (at most what it holds); c stays bound. */
void user_charge_release(UserCharge *c, uint64_t n);
/* Gives back everything c holds and lets go of its User; c can be charged again. Takes an unbound
 * charge. */
void user_charge_deinit(UserCharge *c);
