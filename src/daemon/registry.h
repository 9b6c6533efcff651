/* SPDX-License-Identifier: MIT */
/* registry.h: fhashd's jobs, owners and direct connections in hash maps, each charged to its uid */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "basic/hashmap.h"
#include "daemon/user.h"

/*
 * Shaped like dbus-broker's src/bus/reply.{c,h}: the registry knows where to find an object by its
 * key and what its uid holds, nothing of what the object does. Each object embeds its entry (the
 * key, the uid, a pointer back to the object), so that the registry never includes the object's
 * header and adding, finding and removing cost O(1):
 *
 *   jobs    by id (uint64_t), also listed per uid (User.jobs) and, while unfinished, in `active`
 *   owners  by name (a unique bus name, or a direct connection's name)
 *   peers   by their sd_bus *
 *   users   by uid (user.h), with what each holds
 *
 * An entry in the registry is charged to its uid: a job counts as one of USER_RESOURCE_JOBS until it
 * finishes, an owner as one USER_RESOURCE_OWNERS, a direct connection as one USER_RESOURCE_PEERS.
 * The registry_add_*() functions refuse with USER_E_QUOTA or USER_E_TOTAL (user.h) when the limit is
 * reached, and take nothing then. Removing an entry gives back everything it holds, whatever path
 * the object was freed on.
 */

typedef struct Job Job;
typedef struct Owner Owner;
typedef struct Peer Peer;

struct JobEntry {
        Job *job;            /* NULL while not in the registry */
        uint64_t id;
        User *user;          /* referenced */
        JobEntry *user_next, *user_prev;      /* User.jobs, newest first */
        JobEntry *active_next, *active_prev;  /* Registry.active while unfinished, newest first */
        bool active;
        UserCharge job_charge;   /* USER_RESOURCE_JOBS: 1 while unfinished */
        UserCharge file_charge;  /* USER_RESOURCE_FILES: inputs accepted and without a result yet */
        UserCharge fd_charge;    /* USER_RESOURCE_FDS: of those, the ones that hold a caller's fd */
        UserCharge mem_charge;   /* USER_RESOURCE_MEMORY: its results, names and expected digests */
        UT_hash_handle hh;
};

typedef struct OwnerEntry {
        Owner *owner;        /* NULL while not in the registry */
        const char *name;    /* the owner's */
        uid_t uid;
        UserCharge charge;   /* USER_RESOURCE_OWNERS: 1 */
        UT_hash_handle hh;
} OwnerEntry;

typedef struct PeerEntry {
        Peer *peer;          /* NULL while not in the registry */
        sd_bus *bus;         /* the key */
        const char *name;    /* the peer's: the Owner of its jobs */
        uid_t uid;           /* its opener's */
        UserCharge charge;   /* USER_RESOURCE_PEERS: 1 */
        UT_hash_handle hh;
} PeerEntry;

typedef struct Registry {
        UserRegistry users;
        JobEntry *jobs;      /* by id; uthash keeps them oldest first */
        JobEntry *active;    /* unfinished jobs, newest first */
        OwnerEntry *owners;  /* by name */
        PeerEntry *peers;    /* by bus */
        uint64_t next_job_id;
        uint64_t next_peer_id;
} Registry;

void registry_init(Registry *reg, const UserLimit limits[_USER_RESOURCE_MAX]);
/* Everything must have been removed; frees the tables. */
void registry_done(Registry *reg);

/* Gives j the next job id, charges one job to uid and lists it (also as active). 0, USER_E_QUOTA,
 * USER_E_TOTAL or -ENOMEM; on anything but 0, e is as it was. */
int registry_add_job(Registry *reg, JobEntry *e, Job *j, uid_t uid);
/* The job finished: gives back its job and files charges and takes it off the active list. It stays
 * findable until registry_remove_job(). Idempotent. */
void registry_job_finished(Registry *reg, JobEntry *e);
/* Unlists the job and gives back all it holds; a no-op for an entry that was never added. */
void registry_remove_job(Registry *reg, JobEntry *e);
Job *registry_find_job(Registry *reg, uint64_t id);
/* Unfinished jobs ("ActiveJobs"), and all jobs on the bus. */
uint32_t registry_n_active_jobs(const Registry *reg);
uint32_t registry_n_jobs(const Registry *reg);

/* The jobs uid may see, newest first: every job for root, its own for anyone else. The body of the
 * loop may not remove entries other than e. */
JobEntry *registry_first_job(Registry *reg, uid_t uid);
JobEntry *registry_next_job(const JobEntry *e, uid_t uid);
unsigned registry_n_jobs_of(Registry *reg, uid_t uid);
#define REGISTRY_FOREACH_JOB_OF(e, reg, uid)                                                              \
        for (JobEntry *e = registry_first_job((reg), (uid)); e; e = registry_next_job(e, (uid)))
/* The unfinished jobs, newest first; the body may remove e. */
#define REGISTRY_FOREACH_ACTIVE_JOB(e, next, reg)                                                         \
        for (JobEntry *e = (reg)->active, *next = e ? e->active_next : NULL; e;                            \
             e = next, next = e ? e->active_next : NULL)

/* Lists an owner under name (which must outlive the entry) and charges it to uid. 0, USER_E_QUOTA,
 * USER_E_TOTAL, -ENOMEM; -EEXIST if the name is taken. */
int registry_add_owner(Registry *reg, OwnerEntry *e, Owner *o, const char *name, uid_t uid);
void registry_remove_owner(Registry *reg, OwnerEntry *e);
OwnerEntry *registry_find_owner(Registry *reg, const char *name);
unsigned registry_n_owners(const Registry *reg);

/* Lists a direct connection under bus and charges it to uid; as registry_add_owner(). */
int registry_add_peer(Registry *reg, PeerEntry *e, Peer *p, sd_bus *bus, const char *name, uid_t uid);
void registry_remove_peer(Registry *reg, PeerEntry *e);
PeerEntry *registry_find_peer(Registry *reg, sd_bus *bus);
unsigned registry_n_peers(const Registry *reg);
