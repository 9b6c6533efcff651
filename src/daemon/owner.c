/* SPDX-License-Identifier: MIT */
/* owner.c: a client that owns jobs, tracked once however many jobs it has */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "basic/macro.h"
#include "daemon/owner.h"

static Owner *owner_free(Owner *o)
{
        if (!o)
                return NULL;
        registry_remove_owner(&o->context->registry, &o->entry);
        sd_bus_track_unref(o->track);
        free(o->name);
        free(o);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(Owner *, owner_free);

/* The client left: each holder lets go of it (a job cancels what still runs), then it is freed. */
static void owner_gone(Owner *o)
{
        Context *c = o->context;

        while (o->refs) {
                OwnerRef *ref = o->refs;

                LIST_REMOVE(o->refs, ref);
                ref->owner = NULL;
                ref->gone(ref);
        }
        owner_free(o);
        context_clients_changed(c);
}

static int on_owner_gone(sd_bus_track *t, void *userdata)
{
        /* sd-bus holds a reference on the track while this handler runs. */
        owner_gone(userdata);
        return 0;
}

void owner_disconnected(Context *c, const char *name)
{
        OwnerEntry *e = registry_find_owner(&c->registry, name);

        if (e)
                owner_gone(e->owner);
}

int owner_acquire(Context *c, sd_bus *bus, const char *name, uid_t uid, OwnerRef *ref)
{
        _cleanup_(owner_freep) Owner *o = NULL;
        OwnerEntry *e;
        int r;

        e = registry_find_owner(&c->registry, name);
        if (e) {
                LIST_PREPEND(e->owner->refs, ref);
                ref->owner = e->owner;
                return 0;
        }

        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;
        o->context = c;
        o->bus = bus;
        o->name = strdup(name);
        if (!o->name)
                /* o is _cleanup_(owner_freep), which neither tool follows here (see manager_new()). */
                // NOLINTNEXTLINE(clang-analyzer-unix.Malloc)
                return -ENOMEM; // cppcheck-suppress memleak
        r = registry_add_owner(&c->registry, &o->entry, o, o->name, uid);
        if (r != 0)
                return r;
        if (bus == c->bus) {
                r = sd_bus_track_new(c->bus, &o->track, on_owner_gone, o);
                if (r < 0)
                        return r;
                r = sd_bus_track_add_name(o->track, name);
                if (r < 0)
                        return r;
        }
        LIST_PREPEND(o->refs, ref);
        ref->owner = TAKE_PTR(o);
        return 0;
}

void owner_release(OwnerRef *ref)
{
        Owner *o = ref->owner;

        if (!o)
                return;
        LIST_REMOVE(o->refs, ref);
        ref->owner = NULL;
        if (!o->refs) {
                Context *c = o->context;

                owner_free(o);
                context_clients_changed(c);
        }
}
