/* SPDX-License-Identifier: MIT */
/* bus-driver.c: what the bus driver says of a sender (its uid, its credentials), asked on a
 * connection of its own and kept */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/hashmap.h"
#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/bus-driver.h"
#include "daemon/gate.h"

/* How long a question to the bus driver may take. */
#define BUS_DRIVER_TIMEOUT_USEC (UINT64_C(5) * 1000 * 1000)
/* Senders whose uid is kept; past this many the list starts again (a unique name is asked for once
 * per job in the normal case, and the answer is cheap to get again). The entries live in one block
 * allocated once: made one by one, an entry per new client in a burst of them sat among the burst's
 * freed memory and kept its pages resident after it (32 users' load left 8 MiB of heap that
 * malloc_trim() could not give back, nine tenths of it free). A name longer than an entry holds is
 * not kept (unique names are ":1.N"). */
#define SENDER_UIDS_MAX 4096u
#define SENDER_NAME_MAX 32u

struct SenderUid {
        char name[SENDER_NAME_MAX];
        uid_t uid;
        UT_hash_handle hh;
};

struct SenderUids {
        struct SenderUid *table;  /* uthash's head */
        struct SenderUid *slab;   /* SENDER_UIDS_MAX entries */
        unsigned n_used;
        /* The question bus_driver_uid_async() has out (one at a time: the bus gate waits for it). */
        sd_bus_slot *query;
        char query_name[SENDER_NAME_MAX];
        /* The last question's answer, also when it could not be kept in the table (no memory): the
         * gate asks again for it at once, and must not ask the driver again. */
        char answer_name[SENDER_NAME_MAX];
        uid_t answer_uid;
        /* The last question that failed (mostly: the sender left before it was asked). The gate is
         * told so, and so is the handler of the call after it, in bus_driver_uid(), which then does not
         * ask the driver again and wait: a client that calls and leaves at once costs no blocking
         * round trip. The handler's look lets it go, so that a later call of that sender is asked
         * about anew. */
        char failed_name[SENDER_NAME_MAX];
        int failed_error;
};

int bus_driver_open(Context *c)
{
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        int r;

        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        (void)sd_bus_set_description(bus, "fhashd-driver");
        r = sd_bus_set_address(bus, c->bus_address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, true);
        /* No fds, ever: dbus-daemon then refuses to deliver a message that carries some. */
        if (r >= 0)
                r = sd_bus_negotiate_fds(bus, false);
        if (r >= 0)
                r = sd_bus_set_method_call_timeout(bus, BUS_DRIVER_TIMEOUT_USEC);
        if (r >= 0)
                r = sd_bus_start(bus);
        /* Read as any connection is (what others send it is answered or dropped), never the loop's
         * end when it goes: it is opened again when next needed. */
        if (r >= 0)
                r = sd_bus_attach_event(bus, c->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        c->driver = TAKE_PTR(bus);
        return 0;
}

/* A question out to the driver ends unanswered (the driver connection goes): the gate waiting for it
 * goes on, its sender's uid unknown. */
static void sender_uids_abort_query(Context *c)
{
        struct SenderUids *u = c->sender_uids;

        if (!u || !u->query)
                return;
        u->query = sd_bus_slot_unref(u->query);
        memcpy(u->failed_name, u->query_name, sizeof(u->failed_name));
        u->failed_error = -ECONNRESET;
        if (c->bus_gate)
                gate_sender_uid_known(c->bus_gate);
}

static void sender_uids_free(Context *c)
{
        struct SenderUids *u = c->sender_uids;

        if (!u)
                return;
        u->query = sd_bus_slot_unref(u->query);
        HASH_CLEAR(hh, u->table);
        free(u->slab);
        c->sender_uids = mfree(u);
}

static struct SenderUids *sender_uids_get(Context *c)
{
        struct SenderUids *u = c->sender_uids;

        if (u)
                return u;
        u = calloc(1, sizeof(*u));
        if (!u)
                return NULL;
        u->slab = calloc(SENDER_UIDS_MAX, sizeof(*u->slab));
        if (!u->slab)
                return mfree(u);
        c->sender_uids = u;
        return u;
}

static struct SenderUid *sender_uids_find(Context *c, const char *sender)
{
        struct SenderUid *s = NULL;

        if (c->sender_uids)
                HASH_FIND_STR(c->sender_uids->table, sender, s);
        return s;
}

/* Keeps sender's uid, if there is room for it (nothing is lost when there is not). */
static void sender_uids_add(Context *c, const char *sender, uid_t uid)
{
        struct SenderUids *u;
        struct SenderUid *s;
        size_t len = strlen(sender);

        if (len >= SENDER_NAME_MAX || !(u = sender_uids_get(c)))
                return;
        if (u->n_used >= SENDER_UIDS_MAX) {
                HASH_CLEAR(hh, u->table);
                u->n_used = 0;
        }
        s = &u->slab[u->n_used];
        memcpy(s->name, sender, len + 1);
        s->uid = uid;
        HASH_ADD(hh, u->table, name, len, s);
        if (HASH_ADD_RESULT(s) >= 0)
                u->n_used++;
}

/* c->driver, opened again if it went. */
static int driver_get(Context *c)
{
        if (c->driver && sd_bus_is_open(c->driver) > 0)
                return 0;
        sender_uids_abort_query(c);
        c->driver = sd_bus_flush_close_unref(c->driver);
        return bus_driver_open(c);
}

/* GetConnectionCredentials' answer: the uid (-ENODATA without one) and the groups (dbus-daemon's:
 * the primary group and the supplementary ones, SO_PEERCRED and SO_PEERGROUPS, as the kernel gave
 * them when the caller connected); *ret_groups is 0 with them, -ENODATA when the bus does not say
 * them, -E2BIG past ENGINE_CREDS_GROUPS_MAX (the uid stands either way). */
static int read_creds(sd_bus_message *reply, EngineCreds *ret, int *ret_groups)
{
        EngineCreds creds = {};
        bool have_uid = false;
        int r, groups = -ENODATA;

        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "{sv}");
        while (r > 0 && (r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_DICT_ENTRY, "sv")) > 0) {
                const char *key;
                uint32_t v;

                r = sd_bus_message_read_basic(reply, SD_BUS_TYPE_STRING, &key);
                if (r >= 0 && streq(key, "UnixUserID")) {
                        r = sd_bus_message_read(reply, "v", "u", &v);
                        creds.uid = (uid_t)v;
                        have_uid = r > 0;
                } else if (r >= 0 && streq(key, "UnixGroupIDs")) {
                        r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_VARIANT, "au");
                        if (r > 0)
                                r = sd_bus_message_enter_container(reply, SD_BUS_TYPE_ARRAY, "u");
                        groups = 0;
                        while (r > 0 && (r = sd_bus_message_read_basic(reply, SD_BUS_TYPE_UINT32, &v)) > 0) {
                                if (creds.n_groups == ENGINE_CREDS_GROUPS_MAX)
                                        groups = -E2BIG;
                                else
                                        creds.groups[creds.n_groups++] = (gid_t)v;
                        }
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                        if (groups == 0 && creds.n_groups == 0)
                                groups = -ENODATA;
                } else if (r >= 0)
                        r = sd_bus_message_skip(reply, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
                if (r >= 0)
                        r = 1;
        }
        if (r < 0)
                return r;
        if (!have_uid)
                return -ENODATA;
        *ret = creds;
        *ret_groups = groups;
        return 0;
}

/* The senders' credentials, as the driver said them: a few, the latest first to go. */
#define SENDER_CREDS_MAX 16

struct SenderCreds {
        struct {
                char *sender;
                EngineCreds creds;
        } items[SENDER_CREDS_MAX];
        unsigned next;
};

static void sender_creds_free(Context *c)
{
        if (!c->sender_creds)
                return;
        for (unsigned i = 0; i < SENDER_CREDS_MAX; i++)
                free(c->sender_creds->items[i].sender);
        c->sender_creds = mfree(c->sender_creds);
}

static const EngineCreds *sender_creds_find(Context *c, const char *sender, uid_t uid)
{
        if (c->sender_creds)
                for (unsigned i = 0; i < SENDER_CREDS_MAX; i++)
                        if (c->sender_creds->items[i].sender && streq(c->sender_creds->items[i].sender, sender) &&
                            c->sender_creds->items[i].creds.uid == uid)
                                return &c->sender_creds->items[i].creds;
        return NULL;
}

/* Keeps sender's credentials, in place of the oldest kept (nothing is lost when there is no memory:
 * they are asked again). */
static void sender_creds_add(Context *c, const char *sender, const EngineCreds *creds)
{
        struct SenderCreds *s;
        unsigned i;
        char *copy;

        if (sender_creds_find(c, sender, creds->uid))
                return;
        if (!c->sender_creds)
                c->sender_creds = calloc(1, sizeof(struct SenderCreds));
        copy = c->sender_creds ? strdup(sender) : NULL;
        if (!copy)
                return;
        s = c->sender_creds;
        i = s->next++ % SENDER_CREDS_MAX;
        free(s->items[i].sender);
        s->items[i].sender = copy;
        s->items[i].creds = *creds;
}

/* Keeps what the driver said of sender: its uid, and its credentials when it said the groups. */
static void sender_keep(Context *c, const char *sender, const EngineCreds *creds, int groups)
{
        sender_uids_add(c, sender, creds->uid);
        if (groups == 0)
                sender_creds_add(c, sender, creds); /* for HashNames: bus_driver_creds() */
}

/* Asks the driver for sender's credentials, waiting, and keeps the answer (read_creds()'s). */
static int ask_creds(Context *c, const char *sender, EngineCreds *ret, int *ret_groups)
{
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = driver_get(c);
        if (r < 0)
                return r;
        r = sd_bus_call_method(c->driver, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "GetConnectionCredentials", &error, &reply, "s", sender);
        if (r >= 0)
                r = read_creds(reply, ret, ret_groups);
        if (r >= 0)
                sender_keep(c, sender, ret, *ret_groups);
        return r;
}

static int on_uid_answer(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
        Context *c = userdata;
        struct SenderUids *u = c->sender_uids;
        EngineCreds creds = {};
        int r, groups = -ENODATA;

        u->query = sd_bus_slot_unref(u->query);
        if (sd_bus_message_is_method_error(reply, NULL))
                r = sd_bus_message_get_errno(reply) > 0 ? -sd_bus_message_get_errno(reply) : -EIO;
        else
                r = read_creds(reply, &creds, &groups);
        if (r < 0) {
                memcpy(u->failed_name, u->query_name, sizeof(u->failed_name));
                u->failed_error = r;
        } else {
                sender_keep(c, u->query_name, &creds, groups);
                memcpy(u->answer_name, u->query_name, sizeof(u->answer_name));
                u->answer_uid = creds.uid;
        }
        if (c->bus_gate)
                gate_sender_uid_known(c->bus_gate);
        return 0;
}

int bus_driver_uid_async(Context *c, const char *sender, uid_t *ret)
{
        struct SenderUids *u;
        struct SenderUid *s;
        size_t len;
        int r;

        if (!sender)
                return -ENXIO;
        len = strlen(sender);
        if (len >= SENDER_NAME_MAX)
                return bus_driver_uid(c, sender, ret); /* never kept, so never asked without waiting */
        s = sender_uids_find(c, sender);
        if (s) {
                *ret = s->uid;
                return 0;
        }
        u = sender_uids_get(c);
        if (!u)
                return -ENOMEM;
        if (streq(u->answer_name, sender)) {
                *ret = u->answer_uid;
                return 0;
        }
        if (u->failed_error < 0 && streq(u->failed_name, sender))
                return u->failed_error;
        if (u->query)
                return -EAGAIN; /* another sender's: this one is asked once that is answered */
        r = driver_get(c);
        if (r < 0)
                return r;
        r = sd_bus_call_method_async(c->driver, &u->query, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                     "org.freedesktop.DBus", "GetConnectionCredentials", on_uid_answer, c, "s", sender);
        if (r < 0)
                return r;
        memcpy(u->query_name, sender, len + 1);
        return -EAGAIN;
}

int bus_driver_uid(Context *c, const char *sender, uid_t *ret)
{
        struct SenderUid *s;
        EngineCreds creds = {};
        int r, groups;

        if (!sender)
                return -ENXIO;
        s = sender_uids_find(c, sender);
        if (s) {
                *ret = s->uid;
                return 0;
        }
        if (c->sender_uids && c->sender_uids->failed_error < 0 && streq(c->sender_uids->failed_name, sender)) {
                r = c->sender_uids->failed_error;
                c->sender_uids->failed_error = 0;
                return r;
        }
        r = ask_creds(c, sender, &creds, &groups);
        if (r < 0)
                return r;
        *ret = creds.uid;
        return 0;
}

int bus_driver_creds(Context *c, const char *sender, uid_t uid, EngineCreds *ret)
{
        const EngineCreds *kept;
        EngineCreds creds = {};
        int r, groups = -ENODATA;

        if (!sender)
                return -ENXIO;
        kept = sender_creds_find(c, sender, uid);
        if (kept) {
                *ret = *kept;
                return 0;
        }
        /* Not kept (the gate's question was answered for another sender's sake, or long ago): asked
         * now, waiting. */
        r = ask_creds(c, sender, &creds, &groups);
        if (r < 0)
                return r;
        /* A bus that does not say the groups (or a uid other than the one the caller's calls are
         * charged to) gives nothing to open with. */
        if (groups < 0)
                return groups;
        if (creds.uid != uid)
                return -ENODATA;
        *ret = creds;
        return 0;
}

void bus_driver_close(Context *c)
{
        sender_uids_free(c);
        sender_creds_free(c);
        c->driver = sd_bus_flush_close_unref(c->driver);
}
