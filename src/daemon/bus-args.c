/* SPDX-License-Identifier: MIT */
/* bus-args.c: what the method handlers read from a call: caller, fds, paths (bus-options.c: the rest) */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/macro.h"
#include "basic/strv.h"
#include "daemon/bus-args.h"
#include "daemon/bus-connect.h"
#include "daemon/bus-driver.h"
#include "daemon/gate.h"
#include "daemon/peer.h"
#include "fhash/fhash-dbus.h"

int bus_caller_uid(Context *c, sd_bus_message *msg, uid_t *ret)
{
        const char *sender = sd_bus_message_get_sender(msg);
        sd_bus *bus = sd_bus_message_get_bus(msg);
        OwnerEntry *o;

        if (bus != c->bus) {
                PeerEntry *p = registry_find_peer(&c->registry, bus);

                if (!p)
                        return -ENXIO;
                *ret = p->uid;
                return 0;
        }
        o = sender ? registry_find_owner(&c->registry, sender) : NULL;
        if (o) {
                *ret = o->uid;
                return 0;
        }
        return bus_driver_uid(c, sender, ret);
}

int bus_read_caller_uid(Context *c, sd_bus_message *msg, uid_t *ret, sd_bus_error *error)
{
        int r;

        r = bus_caller_uid(c, msg, ret);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Cannot determine the caller's uid: %m");
        return 0;
}

const char *bus_caller_name(Context *c, sd_bus_message *msg)
{
        sd_bus *bus = sd_bus_message_get_bus(msg);
        PeerEntry *p;

        if (bus == c->bus)
                return sd_bus_message_get_sender(msg);
        p = registry_find_peer(&c->registry, bus);
        return p ? p->name : NULL;
}

int bus_check_accepting(Context *c, sd_bus_error *error)
{
        if (c->shutting_down)
                return sd_bus_error_set(error, FHASH_ERROR_BUSY, "fhashd is shutting down.");
        return 0;
}

int bus_error_quota(Context *c, uid_t uid, UserResource r, int outcome, size_t n, sd_bus_error *error)
{
        UserRegistry *ur = &c->registry.users;
        const UserLimit *l = &ur->limits[r];
        uint64_t used = user_used(user_registry_find(ur, uid), r);

        if (outcome == USER_E_TOTAL)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "fhashd holds %" PRIu64 " %s in all, %zu more exceed the limit of %" PRIu64 ".",
                                         ur->total[r], user_resource_to_string(r), n, l->total);
        if (r == USER_RESOURCE_JOBS)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u already has %" PRIu64 " unfinished jobs (limit %" PRIu64 ").",
                                         (unsigned)uid, used, l->per_uid);
        if (r == USER_RESOURCE_MEMORY)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u's jobs hold %" PRIu64 " bytes of results and names, the limit is %" PRIu64
                                         " (MaxMemoryPerUID): Release() finished jobs or wait for them to expire.",
                                         (unsigned)uid, used, l->per_uid);
        if (r == USER_RESOURCE_FDS)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u holds %" PRIu64 " fds for inputs without a result, %zu more exceed "
                                         "the limit of %" PRIu64 ".", (unsigned)uid, used, n, l->per_uid);
        if (r == USER_RESOURCE_OWNERS)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u already has %" PRIu64 " connections with jobs (limit %" PRIu64 ").",
                                         (unsigned)uid, used, l->per_uid);
        if (r == USER_RESOURCE_FILES)
                return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                         "uid %u has %" PRIu64 " unfinished files, %zu more exceed the limit of %" PRIu64 ".",
                                         (unsigned)uid, used, n, l->per_uid);
        return sd_bus_error_setf(error, FHASH_ERROR_BUSY, "uid %u holds %" PRIu64 " %s, %zu more exceed the limit of %" PRIu64 ".",
                                 (unsigned)uid, used, user_resource_to_string(r), n, l->per_uid);
}

/* Reads an "as" of at most max strings of at most max_len bytes each, in time linear in what it
 * reads, and stops at the first entry too many: sd_bus_message_read_strv() appends through
 * strv_extend(), which walks the vector each time, so 200,000 empty names held the event loop for
 * 12 s. An empty array gives an empty vector, never NULL: callers must see "0 entries", not "no
 * option", or names=[] for 3 inputs would pass unnoticed. -E2BIG (and no error set) at entry
 * max + 1; what names the argument in the error for a string too long. */
int bus_read_strv_bounded(sd_bus_message *m, const char *what, size_t max, size_t max_len, char ***ret,
                          sd_bus_error *error)
{
        _cleanup_strv_free_ char **v = NULL;
        size_t n = 0, n_alloc = 0;
        int r;

        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "s");
        if (r < 0)
                return r;
        for (;;) {
                const char *s;
                size_t len;

                r = sd_bus_message_read_basic(m, SD_BUS_TYPE_STRING, &s);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (n >= max)
                        return -E2BIG;
                len = strnlen(s, max_len + 1);
                if (len > max_len)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "%s[%zu]: longer than %zu bytes", what, n, max_len);
                if (n + 2 > n_alloc) {
                        size_t a = MAX((size_t)8, 2 * n_alloc);
                        char **nv = reallocarray(v, a, sizeof(char *));

                        if (!nv)
                                return -ENOMEM;
                        v = nv;
                        n_alloc = a;
                }
                v[n] = strndup(s, len);
                if (!v[n])
                        return -ENOMEM;
                v[++n] = NULL;
        }
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        if (!v) {
                v = calloc(1, sizeof(char *));
                if (!v)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

int bus_read_paths(sd_bus_message *m, size_t max, char ***ret, sd_bus_error *error)
{
        _cleanup_strv_free_ char **paths = NULL;
        size_t n;
        int r;

        r = bus_read_strv_bounded(m, "paths", max, PATH_MAX - 1, &paths, error);
        if (r == -E2BIG)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "paths: %zu paths or more, at most %zu per call",
                                         max + 1, max);
        if (r < 0)
                return r;
        n = strv_length(paths);
        if (n == 0 || !paths)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "paths: no paths given");
        for (size_t i = 0; i < n; i++)
                if (paths[i][0] != '/')
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "paths[%zu]: \"%.*s\" is not an absolute path", i,
                                                 bus_echo_len(paths[i], 256), paths[i]);
        *ret = TAKE_PTR(paths);
        return 0;
}

/* n inputs without an fd, path or error yet. */
HashInput *hash_inputs_new(size_t n)
{
        HashInput *inputs = calloc(n, sizeof(HashInput));

        for (size_t i = 0; inputs && i < n; i++)
                inputs[i].fd = -EBADF;
        return inputs;
}

int hash_inputs_from_paths(char **paths, size_t n, HashInput **ret)
{
        HashInput *inputs = hash_inputs_new(n);

        if (!inputs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                inputs[i].path = paths[i];
        *ret = inputs;
        return 0;
}

int bus_echo_len(const char *s, size_t max)
{
        size_t n = strnlen(s, max + 1);

        if (n > max) {
                n = max;
                while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
                        n--;
        }
        return (int)n;
}

void hash_inputs_free(HashInput *inputs, size_t n)
{
        for (size_t i = 0; inputs && i < n; i++) {
                safe_close(inputs[i].fd);
                if (inputs[i].dir_ref)
                        engine_dir_unref(inputs[i].dir);
        }
        free(inputs);
}

static Gate *bus_gate_of(Context *c, sd_bus *bus)
{
        PeerEntry *e;

        if (bus == c->bus)
                return c->bus_gate;
        e = registry_find_peer(&c->registry, bus);
        return e && e->peer ? e->peer->gate : NULL;
}

int bus_read_fds(Context *c, sd_bus_message *m, Parcel **ret_parcel, uint32_t ret_idx[], size_t *ret_n,
                 sd_bus_error *error)
{
        Gate *g = bus_gate_of(c, sd_bus_message_get_bus(m));
        uint64_t cookie = 0;
        size_t n = 0;
        int r;

        *ret_parcel = NULL;
        if (g && sd_bus_message_get_cookie(m, &cookie) >= 0)
                *ret_parcel = gate_take_parcel(g, sd_bus_message_get_sender(m), (uint32_t)cookie);
        r = sd_bus_message_enter_container(m, SD_BUS_TYPE_ARRAY, "u");
        if (r < 0)
                return r;
        for (uint32_t i; (r = sd_bus_message_read_basic(m, SD_BUS_TYPE_UINT32, &i)) > 0; n++)
                /* Counted to the end (a few ns each: the error names the number), never stored. */
                if (n < FHASH_MAX_FDS_PER_CALL)
                        ret_idx[n] = i;
        if (r >= 0)
                r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        if (n == 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "fds: no file descriptors given");
        if (n > FHASH_MAX_FDS_PER_CALL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "fds: %zu file descriptors, at most %d per call", n, FHASH_MAX_FDS_PER_CALL);
        for (size_t i = 0; i < n; i++)
                if (!*ret_parcel || ret_idx[i] >= (*ret_parcel)->n)
                        /* As sd-bus says of an "h" past the message's fds. */
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INCONSISTENT_MESSAGE,
                                                 "fds[%zu]: the call came with %zu file descriptors, not %" PRIu32, i,
                                                 *ret_parcel ? (*ret_parcel)->n : 0, ret_idx[i] + 1);
        *ret_n = n;
        return 0;
}

/* A regular file's file system, for an unprivileged caller's fd: refused (a per-file AccessDenied)
 * where fhashd would read it with more than the caller's rights or where it may never answer;
 * marked untrusted where it may hang but is allowed. */
static void check_file_system(HashInput *in, FsClass class, bool privileged)
{
        if (class == FS_CLASS_FUSE || class == FS_CLASS_REMOTE || class == FS_CLASS_UNKNOWN)
                in->flags |= ENGINE_INPUT_UNTRUSTED_FS;
        if (privileged)
                return;
        if (class == FS_CLASS_PSEUDO) {
                /* Their permission checks run at read time, against fhashd's credentials: nobody
                 * could read root's /proc/PID/wchan through fhashd. */
                in->error_name = FHASH_ERROR_ACCESS_DENIED;
                in->error_message = "a file on a pseudo file system (procfs, sysfs, ...) is read with fhashd's "
                                    "credentials: only root may hash it through fhashd";
        } else if (class == FS_CLASS_FUSE) {
                /* Whoever mounted it, its server may be someone else's process (M3: root's mount,
                 * nobody's server): one that reads a request and never answers holds the reading
                 * thread in an uninterruptible wait, and fhashd could then never exit. */
                in->error_name = FHASH_ERROR_ACCESS_DENIED;
                in->error_message = "on a FUSE file system: its server could hold fhashd for ever; hash it "
                                    "in-process (fhashctl --local)";
        } else if (class == FS_CLASS_UNKNOWN) {
                in->error_name = FHASH_ERROR_ACCESS_DENIED;
                in->error_message = "on a file system fhashd cannot tell without asking it (a mount it does not "
                                    "see, or one stacked on such mounts)";
        }
}

/* An input refused at the gate: why, as a per-file error. */
static void check_refusal(HashInput *in, FdRefusal refusal)
{
        in->error_message = fd_refusal_to_string(refusal);
        in->error_name = refusal == FD_REFUSAL_SOCKET                                 ? FHASH_ERROR_NOT_REGULAR
                         : refusal == FD_REFUSAL_BUDGET || refusal == FD_REFUSAL_LOST ? FHASH_ERROR_BUSY
                                                                                      : FHASH_ERROR_ACCESS_DENIED;
}

static int bus_check_fd(HashInput *in, size_t i, const ParcelEntry *e, bool allow_streams, bool privileged,
                        sd_bus_error *error)
{
        const FdVerdict *v = &e->verdict;
        uint32_t mode = v->st.mode;

        if (v->refusal != FD_REFUSAL_NONE) {
                check_refusal(in, v->refusal);
                return 0;
        }
        if (v->flags < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "fds[%zu]: not a usable fd", i);
        if (v->flags & O_PATH)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "fds[%zu]: an O_PATH fd cannot be read", i);
        if ((v->flags & O_ACCMODE) != O_RDONLY && (v->flags & O_ACCMODE) != O_RDWR)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "fds[%zu]: not open for reading", i);

        if (S_ISDIR(mode)) {
                in->error_name = FHASH_ERROR_NOT_REGULAR;
                in->error_message = "is a directory";
        } else if (S_ISFIFO(mode) || S_ISCHR(mode) || S_ISBLK(mode)) {
                /* A stream has no size to stop at: /dev/zero would keep a worker busy forever. */
                if (!allow_streams) {
                        in->error_name = FHASH_ERROR_NOT_REGULAR;
                        in->error_message = "pipes and devices are hashed only with the \"max-size\" option";
                }
        } else if (!S_ISREG(mode)) {
                in->error_name = FHASH_ERROR_NOT_REGULAR;
                in->error_message = "not a regular file";
        } else
                check_file_system(in, v->fs_class, privileged);
        return 0;
}

int bus_check_fds(Context *c, Parcel *p, const uint32_t idx[], size_t n, bool allow_streams, bool privileged,
                  HashInput **ret, sd_bus_error *error)
{
        HashInput *inputs = hash_inputs_new(n);
        int r;

        if (!inputs)
                return -ENOMEM;
        *ret = inputs;
        for (size_t i = 0; i < n; i++) {
                r = bus_check_fd(&inputs[i], i, &p->entries[idx[i]], allow_streams, privileged, error);
                if (r < 0)
                        return r;
                if (inputs[i].error_name)
                        continue;
                /* The parcel's fd is the input's now. Never reopened by path: the caller's open() is
                 * the permission check. The same fd given twice is two inputs. */
                inputs[i].fd = parcel_take_fd(p, idx[i]);
                inputs[i].info = &p->entries[idx[i]].info;
                for (size_t k = 0; inputs[i].fd < 0 && k < i; k++)
                        if (idx[k] == idx[i] && inputs[k].fd >= 0)
                                inputs[i].fd = fcntl(inputs[k].fd, F_DUPFD_CLOEXEC, 3);
                if (inputs[i].fd < 0)
                        return sd_bus_error_setf(error, FHASH_ERROR_BUSY,
                                                 "fds[%zu]: fhashd has no file descriptor left", i);
        }
        return 0;
}
