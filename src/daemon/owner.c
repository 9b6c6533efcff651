/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/bus-util.h"
#include "daemon/job.h"
#include "basic/macro.h"
#include "daemon/manager.h"
#include "daemon/owner.h"
#include "daemon/peer.h"

static void owner_free(Owner *o)
{
        Manager *m = o->manager;

        LIST_REMOVE(m->owners, o);
        m->n_owners--;
        sd_bus_track_unref(o->track);
        free(o->name);
        free(o);
}

static Owner *owner_find(Manager *m, const char *name)
{
        for (Owner *o = m->owners; o; o = o->next)
                if (streq(o->name, name))
                        return o;
        return NULL;
}

/* The client left: each of its jobs lets go of it (cancelling what still runs), then it is freed. */
static void owner_gone(Owner *o)
{
        Manager *m = o->manager;

        for (Job *j = m->jobs, *next; j; j = next) {
                next = j->next;
                if (j->owner_ref == o)
                        job_owner_gone(j);
        }
        owner_free(o);
        manager_check_idle(m);
}

static int on_owner_gone(sd_bus_track *t, void *userdata)
{
        /* sd-bus holds a reference on the track while this handler runs. */
        owner_gone(userdata);
        return 0;
}

void owner_disconnected(Manager *m, const char *name)
{
        Owner *o = owner_find(m, name);

        if (o)
                owner_gone(o);
}

int owner_acquire(Manager *m, sd_bus *bus, const char *name, uid_t uid, Owner **ret)
{
        Owner *o;
        int r;

        for (o = m->owners; o; o = o->next)
                if (streq(o->name, name)) {
                        o->n_jobs++;
                        *ret = o;
                        return 0;
                }

        if (m->n_owners >= OWNERS_MAX)
                return -EBUSY;
        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->manager = m;
        o->bus = bus;
        o->uid = uid;
        o->name = strdup(name);
        if (!o->name) {
                free(o);
                return -ENOMEM;
        }
        r = 0;
        if (bus == m->bus) {
                r = sd_bus_track_new(m->bus, &o->track, on_owner_gone, o);
                if (r >= 0)
                        r = sd_bus_track_add_name(o->track, name);
        }
        if (r < 0) {
                sd_bus_track_unref(o->track);
                free(o->name);
                free(o);
                return r;
        }
        o->n_jobs = 1;
        LIST_PREPEND(m->owners, o);
        m->n_owners++;
        *ret = o;
        return 0;
}

int owner_sender_uid(Manager *m, sd_bus_message *msg, uid_t *ret)
{
        const char *sender = sd_bus_message_get_sender(msg);
        sd_bus *bus = sd_bus_message_get_bus(msg);

        /* Never the socket's credentials on a direct connection: they are fhashd's own. */
        if (bus != m->bus) {
                Peer *p = peer_from_bus(m, bus);

                if (!p)
                        return -ENXIO;
                *ret = p->uid;
                return 0;
        }

        for (Owner *o = sender ? m->owners : NULL; o; o = o->next)
                if (streq(o->name, sender)) {
                        *ret = o->uid;
                        return 0;
                }
        return bus_query_sender_uid(msg, ret);
}

const char *owner_caller_name(Manager *m, sd_bus_message *msg)
{
        sd_bus *bus = sd_bus_message_get_bus(msg);
        Peer *p;

        if (bus == m->bus)
                return sd_bus_message_get_sender(msg);
        p = peer_from_bus(m, bus);
        return p ? p->name : NULL;
}

void owner_release(Owner *o)
{
        if (o && --o->n_jobs == 0)
                owner_free(o);
}
