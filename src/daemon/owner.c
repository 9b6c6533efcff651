/* SPDX-License-Identifier: MIT */
/* owner.c: a client that owns jobs, tracked once however many jobs it has */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/owner.h"

static Owner *owner_free(Owner *o)
{
        if (!o)
                return NULL;
        registry_remove_owner(&o->context->registry, &o->entry);
        sd_bus_slot_unref(o->match);
        sd_bus_slot_unref(o->check);
        free(o->name);
        return mfree(o);
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

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Owner *o = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        /* A unique name never gets a new owner: any change is its end. */
        if (streq(name, o->name) && new_owner[0] == '\0')
                owner_gone(o);
        return 0;
}

/* GetNameOwner's answer: the client may have left before the match was in place. */
static int on_name_checked(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Owner *o = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);

        o->check = sd_bus_slot_unref(o->check);
        if (e && sd_bus_error_has_name(e, "org.freedesktop.DBus.Error.NameHasNoOwner"))
                owner_gone(o);
        else if (e)
                log_debug("Cannot tell whether %s is still connected: %s", o->name, e->message);
        return 0;
}

/* The AddMatch's reply. A failure is logged (the rule may be in place all the same: a reply that
 * came after the timeout), never the end of the connection; either way the name is checked now. */
static int on_match_installed(sd_bus_message *m, void *userdata, sd_bus_error *error)
{
        Owner *o = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(m);
        int r;

        if (e)
                log_warning("Failed to watch client %s for its disconnection: %s", o->name, e->message);
        o->check = sd_bus_slot_unref(o->check);
        r = sd_bus_call_method_async(o->bus, &o->check, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetNameOwner", on_name_checked, o, "s", o->name);
        if (r < 0)
                log_debug_errno(r, "Failed to check whether %s is still connected: %m", o->name);
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
                _cleanup_free_ char *match = NULL;

                if (asprintf(&match,
                             "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"
                             "interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='%s'",
                             name) < 0)
                        return -ENOMEM;
                r = sd_bus_add_match_async(c->bus, &o->match, match, on_name_owner_changed, on_match_installed, o);
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
