/* SPDX-License-Identifier: MIT */
/* bus-names.c: files sent to fhashd by name (HashNames, AddNames): a few directory fds and the names
 * beneath them, instead of an fd per file */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "client/bus-names.h"
#include "client/feed.h"

/* Where the name starts in path (after its last '/'). */
static const char *base_of(const char *path)
{
        const char *slash = strrchr(path, '/');

        return slash ? slash + 1 : path;
}

bool bus_names_eligible(const char *path)
{
        const char *base;

        if (!path || streq(path, "-"))
                return false;
        base = base_of(path);
        /* Names go as bytes, as file names are: one that is not UTF-8 goes by name too. */
        return *base && !streq(base, ".") && !streq(base, "..") && strlen(base) <= FHASH_NAME_MAX;
}

void name_dirs_init(NameDirs *d)
{
        *d = (NameDirs){};
        for (size_t k = 0; k < FHASH_MAX_FDS_PER_CALL; k++)
                d->fds[k] = -EBADF;
}

void name_dirs_done(NameDirs *d)
{
        for (unsigned k = 0; k < d->n; k++)
                d->fds[k] = safe_close(d->fds[k]);
        d->n = 0;
}

void dir_cache_init(DirCache *c)
{
        *c = (DirCache){ .fd = -EBADF };
}

void dir_cache_done(DirCache *c)
{
        c->path = mfree(c->path);
        c->fd = safe_close(c->fd);
}

/* The directory of path, as opened last or now: its generation in *ret_gen. */
static int dir_get(DirCache *c, const char *path, uint64_t *ret_gen)
{
        const char *base = base_of(path);
        size_t len = base == path ? 1 : MAX((size_t)(base - path - 1), (size_t)1);
        const char *dir = base == path ? "." : path;
        char *copy;
        int fd;

        if (c->path && c->path_len == len && memcmp(c->path, dir, len) == 0) {
                *ret_gen = c->gen;
                return 0;
        }
        copy = strndup(dir, len);
        if (!copy)
                return -ENOMEM;
        /* O_PATH: no read permission needed, only the search permission the name's lookup needs,
         * and nothing of the directory's file system is asked. */
        fd = open(copy, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                free(copy);
                return -errno;
        }
        free(c->path);
        safe_close(c->fd);
        c->path = copy;
        c->path_len = len;
        c->fd = fd;
        *ret_gen = ++c->gen;
        return 0;
}

int bus_names_add(DirCache *c, NameDirs *d, size_t k, const char *path)
{
        uint64_t gen = 0;
        unsigned i;
        int r;

        r = dir_get(c, path, &gen);
        if (r < 0)
                return r;
        if (gen == c->refused_gen)
                return -EPERM;
        for (i = 0; i < d->n; i++)
                if (d->gen[i] == gen)
                        break;
        if (i == d->n) {
                if (i == FHASH_MAX_FDS_PER_CALL)
                        return 0;
                d->fds[i] = fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
                if (d->fds[i] < 0)
                        return -errno;
                d->gen[i] = gen;
                d->n++;
        }
        d->dir_of[k] = (uint8_t)i;
        return 1;
}

int bus_names_append(sd_bus_message *m, const NameDirs *d, const Feed *f, const size_t *idx, size_t n)
{
        int r;

        r = sd_bus_message_open_container(m, SD_BUS_TYPE_ARRAY, "h");
        for (unsigned k = 0; r >= 0 && k < d->n; k++)
                r = sd_bus_message_append(m, "h", d->fds[k]); /* sd-bus dups it */
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', d->dir_of, n);
        if (r < 0)
                return r;
        /* The names, each with its NUL, one after the other: one "ay" the bus copies whole. */
        const char *base[BUS_CALL_INPUTS_MAX];
        size_t size = 0, len[BUS_CALL_INPUTS_MAX];
        char *p;

        assert(n <= BUS_CALL_INPUTS_MAX);
        for (size_t k = 0; k < n; k++) {
                base[k] = base_of(feed_input(f, idx[k])->path);
                len[k] = strlen(base[k]) + 1;
                size += len[k];
        }
        r = sd_bus_message_append_array_space(m, 'y', size, (void **)&p);
        for (size_t k = 0; r >= 0 && k < n; k++) {
                memcpy(p, base[k], len[k]);
                p += len[k];
        }
        return r;
}

bool bus_names_error_disables(const sd_bus_error *e)
{
        return sd_bus_error_has_names(e, SD_BUS_ERROR_NOT_SUPPORTED, SD_BUS_ERROR_UNKNOWN_METHOD,
                                      SD_BUS_ERROR_UNKNOWN_INTERFACE, SD_BUS_ERROR_UNKNOWN_OBJECT,
                                      SD_BUS_ERROR_ACCESS_DENIED);
}

void dir_cache_refused(DirCache *c, const NameDirs *d)
{
        if (d->n == 1)
                c->refused_gen = d->gen[0];
}
