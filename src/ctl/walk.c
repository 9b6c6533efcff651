/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "walk.h"

typedef struct Walker {
        const WalkOptions *options;
        WalkList *list;
        size_t alloc;
        dev_t top_dev;
} Walker;

/* The directories from the top down to the one being read, to catch loops made by --follow. */
typedef struct Ancestor {
        const struct Ancestor *parent;
        dev_t dev;
        ino_t ino;
} Ancestor;

static int push(Walker *w, const char *path, int error, const char *note)
{
        WalkList *l = w->list;
        char *p;

        if (l->n_entries == w->alloc) {
                size_t na = MAX(w->alloc * 2, (size_t)64);
                WalkEntry *ne = reallocarray(l->entries, na, sizeof(*ne));
                if (!ne)
                        return -ENOMEM;
                l->entries = ne;
                w->alloc = na;
        }
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        l->entries[l->n_entries++] = (WalkEntry){ .path = p, .error = error, .note = note };
        return 0;
}

static bool excluded(const WalkOptions *o, const char *base, const char *path)
{
        for (size_t i = 0; i < o->n_excludes; i++)
                if (fnmatch(o->excludes[i], base, 0) == 0 || fnmatch(o->excludes[i], path, FNM_PATHNAME) == 0)
                        return true;
        return false;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_free_n(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static int walk_dir(Walker *w, int dfd, const char *path, const Ancestor *up);

static int walk_child(Walker *w, int dfd, const char *name, const char *path, const Ancestor *up)
{
        const WalkOptions *o = w->options;
        struct stat st;

        if (excluded(o, name, path))
                return 0;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return push(w, path, negative_errno(), NULL);
        if (S_ISLNK(st.st_mode)) {
                if (!o->follow)
                        return push(w, path, 0, "symbolic link not followed (use --follow)");
                if (fstatat(dfd, name, &st, 0) < 0)
                        return push(w, path, 0, "dangling symbolic link");
        }
        if (S_ISREG(st.st_mode))
                return push(w, path, 0, NULL);
        if (!S_ISDIR(st.st_mode))
                return push(w, path, 0, "not a regular file");
        if (o->one_file_system && st.st_dev != w->top_dev)
                return push(w, path, 0, "on another file system, not entered");
        for (const Ancestor *a = up; a; a = a->parent)
                if (a->dev == st.st_dev && a->ino == st.st_ino)
                        return push(w, path, 0, "directory loop, not entered");

        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return push(w, path, negative_errno(), NULL);
        Ancestor me = { .parent = up, .dev = st.st_dev, .ino = st.st_ino };
        return walk_dir(w, TAKE_FD(fd), path, &me);
}

/* Takes ownership of dfd. */
static int walk_dir(Walker *w, int dfd, const char *path, const Ancestor *up)
{
        char **names = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;
        DIR *d;
        int r = 0;

        d = fdopendir(dfd);
        if (!d) {
                r = negative_errno();
                safe_close(dfd);
                return push(w, path, r, NULL);
        }
        errno = 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n == alloc) {
                        size_t na = MAX(alloc * 2, (size_t)32);
                        char **nn = reallocarray(names, na, sizeof(*nn));
                        if (!nn) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        names = nn;
                        alloc = na;
                }
                names[n] = strdup(de->d_name);
                if (!names[n]) {
                        r = -ENOMEM;
                        goto finish;
                }
                n++;
        }
        if (errno != 0) {
                r = push(w, path, negative_errno(), NULL);
                goto finish;
        }
        if (n > 0)
                qsort(names, n, sizeof(*names), cmp_names);

        for (size_t i = 0; i < n && r >= 0; i++) {
                _cleanup_free_ char *child = NULL;
                size_t pl = strlen(path);
                bool slash = pl > 0 && path[pl - 1] == '/';

                if (asprintf(&child, "%s%s%s", path, slash ? "" : "/", names[i]) < 0) {
                        r = -ENOMEM;
                        break;
                }
                r = walk_child(w, dirfd(d), names[i], child, up);
        }

finish:
        strv_free_n(names, n);
        closedir(d);
        return r;
}

static int walk_arg(Walker *w, const char *arg)
{
        struct stat st;
        int fd;

        if (!w->options->recursive || streq(arg, "-"))
                return push(w, arg, 0, NULL);
        if (stat(arg, &st) < 0)
                return push(w, arg, negative_errno(), NULL);
        if (!S_ISDIR(st.st_mode))
                return push(w, arg, 0, NULL);

        w->top_dev = st.st_dev;
        fd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return push(w, arg, negative_errno(), NULL);
        Ancestor top = { .dev = st.st_dev, .ino = st.st_ino };
        return walk_dir(w, fd, arg, &top);
}

int walk_expand(char *const *args, size_t n_args, const WalkOptions *options, WalkList **ret)
{
        Walker w = { .options = options };
        WalkList *l;
        int r;

        l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        w.list = l;
        for (size_t i = 0; i < n_args; i++) {
                r = walk_arg(&w, args[i]);
                if (r < 0) {
                        /* By hand: clang-tidy 14 does not see a _cleanup_ free. */
                        walk_list_free(l);
                        return r;
                }
        }
        *ret = l;
        return 0;
}

WalkList *walk_list_free(WalkList *l)
{
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_entries; i++)
                free(l->entries[i].path);
        free(l->entries);
        free(l);
        return NULL;
}
