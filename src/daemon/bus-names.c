/* SPDX-License-Identifier: MIT */
/* bus-names.c: HashNames' and AddNames' arguments: the caller's directories, the names beneath them,
 * and the credentials fhashd opens them with */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"
#include "basic/macro.h"
#include "daemon/bus-connect.h"
#include "daemon/bus-driver.h"
#include "daemon/bus-names.h"
#include "daemon/peer.h"
#include "fhash/fhash-dbus.h"

int bus_read_names(sd_bus_message *m, size_t n_dirs, NameRef **ret, size_t *ret_n, sd_bus_error *error)
{
        const uint8_t *dir_of;
        const char *blob, *end;
        size_t n_dir_of, size, n = 0;
        NameRef *names;
        int r;

        r = sd_bus_message_read_array(m, 'y', (const void **)&dir_of, &n_dir_of);
        if (r >= 0)
                r = sd_bus_message_read_array(m, 'y', (const void **)&blob, &size);
        if (r < 0)
                return r;
        if (n_dir_of == 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "names: no names given");
        if (n_dir_of > FHASH_MAX_NAMES_PER_CALL)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "names: more than %d names in one call",
                                         FHASH_MAX_NAMES_PER_CALL);
        if (size == 0 || blob[size - 1] != '\0')
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "names: each name must end with a NUL byte, the last one too");
        names = malloc(n_dir_of * sizeof(NameRef));
        if (!names)
                return -ENOMEM;
        end = blob + size;
        r = 0;
        for (const char *p = blob; r >= 0 && p < end; n++) {
                size_t l = strlen(p); /* the last byte is a NUL */

                if (n == n_dir_of)
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                              "names: more names than dir_of's %zu entries", n_dir_of);
                else if (dir_of[n] >= n_dirs)
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "dir_of[%zu]: directory %u of %zu given",
                                              n, (unsigned)dir_of[n], n_dirs);
                else if (l == 0 || p[0] == '/' || l >= PATH_MAX)
                        r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                              "names[%zu]: a name must be relative to its directory, not empty, "
                                              "and shorter than %d bytes",
                                              n, PATH_MAX);
                else
                        names[n] = (NameRef){ .dir = dir_of[n], .name = p };
                p += l + 1;
        }
        if (r >= 0 && n != n_dir_of)
                r = sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "names: %zu names for dir_of's %zu entries", n,
                                      n_dir_of);
        if (r < 0) {
                free(names);
                return r;
        }
        *ret = names;
        *ret_n = n;
        return 0;
}

int bus_check_names(Context *c, Parcel *p, const uint32_t idx[], size_t n_dirs, const NameRef *names, size_t n,
                    HashInput **ret, sd_bus_error *error)
{
        EngineDir *dirs[FHASH_MAX_FDS_PER_CALL] = {}, *borrowed[FHASH_MAX_FDS_PER_CALL];
        HashInput *inputs;
        int r = 0;

        for (size_t k = 0; k < n_dirs && r >= 0; k++) {
                const ParcelEntry *e = &p->entries[idx[k]];
                int fd;

                if (e->verdict.refusal != FD_REFUSAL_NONE || !S_ISDIR(e->verdict.stx.stx_mode) ||
                    e->verdict.fs_class != FS_CLASS_LOCAL) {
                        r = sd_bus_error_setf(error, FHASH_ERROR_ACCESS_DENIED,
                                              "dirs[%zu]: %s: fhashd opens names only in a directory on a local "
                                              "file system; pass the files' fds to HashFds instead",
                                              k, e->verdict.refusal != FD_REFUSAL_NONE
                                                         ? fd_refusal_to_string(e->verdict.refusal)
                                                 : !S_ISDIR(e->verdict.stx.stx_mode) ? "not a directory"
                                                                                     : "not a local file system");
                        break;
                }
                /* The same fd given twice is one directory twice. */
                for (size_t i = 0; !dirs[k] && i < k; i++)
                        if (idx[i] == idx[k])
                                dirs[k] = engine_dir_ref(dirs[i]);
                if (dirs[k])
                        continue;
                fd = parcel_take_fd(p, idx[k]);
                dirs[k] = engine_dir_new(fd);
                if (!dirs[k])
                        r = sd_bus_error_setf(error, FHASH_ERROR_BUSY, "dirs[%zu]: fhashd has no file descriptor left",
                                              k);
        }
        inputs = r >= 0 ? hash_inputs_new(n) : NULL;
        if (r >= 0 && !inputs)
                r = -ENOMEM;
        memcpy(borrowed, dirs, sizeof(borrowed));
        for (size_t i = 0; r >= 0 && i < n; i++) {
                uint32_t k = names[i].dir;

                inputs[i].path = names[i].name;
                inputs[i].dir = borrowed[k];
                /* The first name beneath a directory takes the call's reference to it, the others
                 * borrow it (the engine takes its own for each). */
                inputs[i].dir_ref = dirs[k] != NULL;
                dirs[k] = NULL;
        }
        for (size_t k = 0; k < n_dirs; k++)
                engine_dir_unref(dirs[k]);
        if (r < 0)
                return r;
        *ret = inputs;
        return 0;
}

EngineCreds *bus_opener_creds(Context *c, const char *opener, uid_t uid)
{
        EngineCreds creds, *p;

        if (uid == 0 || uid == c->uid || !engine_creds_supported() || bus_driver_creds(c, opener, uid, &creds) < 0)
                return NULL;
        p = malloc(sizeof(*p));
        if (p)
                *p = creds;
        return p;
}

int bus_caller_creds(Context *c, sd_bus_message *msg, uid_t uid, EngineCreds *ret, bool *ret_own,
                     sd_bus_error *error)
{
        sd_bus *bus = sd_bus_message_get_bus(msg);
        int r;

        *ret_own = uid == 0 || uid == c->uid;
        if (*ret_own)
                return 0;
        if (!engine_creds_supported())
                return sd_bus_error_set(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                        "fhashd cannot open files with another user's credentials (it lacks "
                                        "CAP_SETUID and CAP_SETGID); pass the files' fds to HashFds instead");
        if (bus != c->bus) {
                PeerEntry *e = registry_find_peer(&c->registry, bus);

                if (!e || !e->peer || !e->peer->creds)
                        return sd_bus_error_set(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                                "The bus did not say the groups of this connection's opener; pass "
                                                "the files' fds to HashFds instead");
                *ret = *e->peer->creds;
                return 0;
        }
        r = bus_driver_creds(c, sd_bus_message_get_sender(msg), uid, ret);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_NOT_SUPPORTED,
                                         "Cannot tell the caller's groups from the bus (%s); pass the files' fds to "
                                         "HashFds instead",
                                         strerror(-r));
        return 0;
}
