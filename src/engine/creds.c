/* SPDX-License-Identifier: MIT */
/* creds.c: a caller's directory (EngineDir) and credentials (EngineCreds) for the names fhashd opens
 * for it: one io_uring personality per caller on each shard's ring */
#include <errno.h>
#include <linux/capability.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/engine-internal.h"
#include "basic/log.h"

struct EngineDir {
        _Atomic unsigned n_ref;
        int fd;
};

EngineDir *engine_dir_new(int fd)
{
        EngineDir *d;

        if (fd < 0)
                return NULL;
        d = malloc(sizeof(*d));
        if (!d) {
                (void)close(fd);
                return NULL;
        }
        atomic_init(&d->n_ref, 1);
        d->fd = fd;
        return d;
}

EngineDir *engine_dir_ref(EngineDir *d)
{
        if (d)
                atomic_fetch_add_explicit(&d->n_ref, 1, memory_order_relaxed);
        return d;
}

EngineDir *engine_dir_unref(EngineDir *d)
{
        if (d && atomic_fetch_sub_explicit(&d->n_ref, 1, memory_order_acq_rel) == 1) {
                /* A directory on a local file system (fhashd's gate checked): its close waits on nothing. */
                (void)close(d->fd);
                free(d);
        }
        return NULL;
}

int engine_dir_fd(const EngineDir *d)
{
        return d ? d->fd : -EBADF;
}

/* How many personalities a shard keeps registered: one per caller hashing at once, and a few more. */
#define SHARD_PERSONALITIES_MAX 32u

static bool creds_equal(const EngineCreds *a, const EngineCreds *b)
{
        return a->uid == b->uid && a->n_groups == b->n_groups &&
               memcmp(a->groups, b->groups, a->n_groups * sizeof(gid_t)) == 0;
}

/* The thread's credentials to go back to. */
typedef struct SavedCreds {
        struct __user_cap_header_struct cap_header;
        struct __user_cap_data_struct caps[2];
        int n_groups;
        gid_t groups[ENGINE_CREDS_GROUPS_MAX];
        uid_t fsuid;
        gid_t fsgid;
} SavedCreds;

/* setfsuid() and setfsgid() say the old value, never an error: the new one is read back. */
static int set_fsuid(uid_t uid)
{
        (void)syscall(SYS_setfsuid, uid);
        return (uid_t)syscall(SYS_setfsuid, (uid_t)-1) == uid ? 0 : -EPERM;
}

static int set_fsgid(gid_t gid)
{
        (void)syscall(SYS_setfsgid, gid);
        return (gid_t)syscall(SYS_setfsgid, (gid_t)-1) == gid ? 0 : -EPERM;
}

bool engine_creds_supported(void)
{
        static int supported = -1;

        if (supported < 0) {
                uid_t uid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
                gid_t gid = (gid_t)syscall(SYS_setfsgid, (gid_t)-1);

                supported = set_fsuid(65534) >= 0 && set_fsgid(65534) >= 0;
                (void)set_fsuid(uid);
                (void)set_fsgid(gid);
        }
        return supported;
}

/* Back to what the thread was; a thread that cannot go back must not go on (it would open every
 * later file with a caller's rights, or hash with them): nothing here can fail once the switch
 * succeeded, but if it did, the process ends. */
static void creds_restore(const SavedCreds *s)
{
        struct __user_cap_header_struct h = s->cap_header;

        if (syscall(SYS_capset, &h, s->caps) < 0 || set_fsuid(s->fsuid) < 0 || set_fsgid(s->fsgid) < 0 ||
            syscall(SYS_setgroups, (size_t)s->n_groups, s->groups) < 0) {
                log_error("A shard could not take back its own credentials: %m. Exiting.");
                abort();
        }
}

/* Registers c as a personality of s's ring: this thread only (raw system calls: glibc's setgroups()
 * would change every thread), and back at once. */
static int personality_register(Shard *s, const EngineCreds *c)
{
        struct __user_cap_data_struct none[2] = {};
        SavedCreds saved = { .cap_header = { .version = _LINUX_CAPABILITY_VERSION_3 } };
        int id, r;

        if (c->n_groups == 0 || c->n_groups > ENGINE_CREDS_GROUPS_MAX)
                return -EINVAL;
        saved.n_groups = (int)syscall(SYS_getgroups, ENGINE_CREDS_GROUPS_MAX, saved.groups);
        if (saved.n_groups < 0)
                return -errno; /* more groups than it can keep (EINVAL): not switched at all */
        if (syscall(SYS_capget, &saved.cap_header, saved.caps) < 0)
                return -errno;
        saved.fsuid = (uid_t)syscall(SYS_setfsuid, (uid_t)-1);
        saved.fsgid = (gid_t)syscall(SYS_setfsgid, (gid_t)-1);

        for (int i = 0; i < 2; i++) {
                none[i].permitted = saved.caps[i].permitted;
                none[i].inheritable = saved.caps[i].inheritable;
        }
        r = syscall(SYS_setgroups, (size_t)c->n_groups, c->groups) < 0 ? -errno : 0;
        if (r >= 0)
                r = set_fsgid(c->groups[0]);
        if (r >= 0)
                r = set_fsuid(c->uid);
        if (r >= 0) {
                struct __user_cap_header_struct h = saved.cap_header;
                /* No capability either: CAP_DAC_* go with a non-zero fsuid, the rest go here. */
                r = syscall(SYS_capset, &h, none) < 0 ? -errno : 0;
        }
        id = r >= 0 ? ioring_register_personality(s->ring) : r;
        creds_restore(&saved);
        return id;
}

int shard_personality(Shard *s, const EngineCreds *c)
{
        struct ShardPersonality *p, *oldest = NULL;
        int id;

        for (unsigned i = 0; i < s->n_personalities; i++) {
                p = &s->personalities[i];
                if (creds_equal(&p->creds, c)) {
                        p->used = ++s->personality_clock;
                        return p->id;
                }
                if (!oldest || p->used < oldest->used)
                        oldest = p;
        }
        if (!s->personalities) {
                s->personalities = calloc(SHARD_PERSONALITIES_MAX, sizeof(*s->personalities));
                if (!s->personalities)
                        return -ENOMEM;
        }
        id = personality_register(s, c);
        if (id < 0)
                return id;
        if (s->n_personalities < SHARD_PERSONALITIES_MAX)
                p = &s->personalities[s->n_personalities++];
        else {
                /* An open prepared with the old one takes its credentials when submitted: submit first. */
                (void)ioring_submit(s->ring, false);
                (void)ioring_unregister_personality(s->ring, oldest->id);
                p = oldest;
        }
        p->creds = *c;
        p->id = id;
        p->used = ++s->personality_clock;
        return id;
}

void shard_personalities_free(Shard *s)
{
        /* The ring's own end unregisters them. */
        s->personalities = mfree(s->personalities);
        s->n_personalities = 0;
}
