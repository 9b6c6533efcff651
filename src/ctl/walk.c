/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl/walk.h"

/* A directory being walked: its sorted names and the next one to look at. The stack of frames is
 * the path from a directory argument down to the directory being read; their (dev, ino) catch loops
 * made by --follow. */
typedef struct WalkFrame {
        DIR *dir;       /* kept open: children are examined relative to it, as the tree was when read */
        char *path;
        char **names;
        size_t n, i;
        dev_t dev;
        ino_t ino;
} WalkFrame;

struct Walk {
        const WalkOptions *options;
        char *const *args;
        size_t n_args, next_arg;
        WalkFrame *frames;
        size_t depth, alloc;
        dev_t top_dev;
        char *cur;      /* the path of the entry walk_next() returned last */
};

static void strv_free_n(char **v, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(v[i]);
        free(v);
}

static void frame_pop(Walk *w)
{
        WalkFrame *f = &w->frames[--w->depth];

        strv_free_n(f->names, f->n);
        free(f->path);
        if (f->dir)
                closedir(f->dir);
        *f = (WalkFrame){};
}

int walk_new(char *const *args, size_t n_args, const WalkOptions *options, Walk **ret)
{
        Walk *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        *w = (Walk){ .options = options, .args = args, .n_args = n_args };
        *ret = w;
        return 0;
}

Walk *walk_free(Walk *w)
{
        if (!w)
                return NULL;
        while (w->depth > 0)
                frame_pop(w);
        free(w->frames);
        free(w->cur);
        free(w);
        return NULL;
}

/* Hands out path (taken) as the current entry. Returns 1. */
static int emit(Walk *w, char *path, int error, const char *note, WalkEntry *ret)
{
        free(w->cur);
        w->cur = path;
        *ret = (WalkEntry){ .path = path, .error = error, .note = note };
        return 1;
}

static int emit_dup(Walk *w, const char *path, int error, const char *note, WalkEntry *ret)
{
        char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        return emit(w, p, error, note, ret);
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

/* Reads the directory dfd (taken) at path (taken) and pushes it as a frame, sorted. Returns 0 once
 * pushed, 1 with an error entry for path if it cannot be read, or -ENOMEM. */
static int enter(Walk *w, int dfd, char *path, const struct stat *st, WalkEntry *ret)
{
        /* path is freed by hand, not by _cleanup_: clang-tidy 14 does not see cleanup attributes. */
        char **names = NULL;
        size_t n = 0, alloc = 0;
        struct dirent *de;
        DIR *d;
        int r;

        if (w->depth == w->alloc) {
                size_t na = MAX(w->alloc * 2, (size_t)16);
                WalkFrame *nf = reallocarray(w->frames, na, sizeof(*nf));
                if (!nf) {
                        safe_close(dfd);
                        free(path);
                        return -ENOMEM;
                }
                w->frames = nf;
                w->alloc = na;
        }
        d = fdopendir(dfd);
        if (!d) {
                r = negative_errno();
                safe_close(dfd);
                return emit(w, path, r, NULL, ret);
        }
        errno = 0;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n == alloc) {
                        size_t na = MAX(alloc * 2, (size_t)32);
                        char **nn = reallocarray(names, na, sizeof(*nn));
                        if (!nn)
                                goto oom;
                        names = nn;
                        alloc = na;
                }
                names[n] = strdup(de->d_name);
                if (!names[n])
                        goto oom;
                n++;
        }
        if (errno != 0) {
                /* As a directory that cannot be opened: one error entry, none of its names. */
                r = negative_errno();
                strv_free_n(names, n);
                closedir(d);
                return emit(w, path, r, NULL, ret);
        }
        if (n > 0)
                qsort(names, n, sizeof(*names), cmp_names);
        w->frames[w->depth++] = (WalkFrame){ .dir = d, .path = path, .names = names, .n = n,
                                             .dev = st->st_dev, .ino = st->st_ino };
        return 0;

oom:
        strv_free_n(names, n);
        closedir(d);
        free(path);
        return -ENOMEM;
}

/* The next name of the top frame. Returns 1 with an entry, 0 if it gave none (excluded, or a
 * directory that was entered), or -ENOMEM. */
static int walk_child(Walk *w, WalkEntry *ret)
{
        const WalkOptions *o = w->options;
        WalkFrame *top = &w->frames[w->depth - 1];
        const char *name = top->names[top->i++];
        size_t pl = strlen(top->path);
        bool slash = pl > 0 && top->path[pl - 1] == '/';
        _cleanup_free_ char *path = NULL;
        int dfd = dirfd(top->dir);
        struct stat st;

        if (asprintf(&path, "%s%s%s", top->path, slash ? "" : "/", name) < 0)
                return -ENOMEM;
        if (excluded(o, name, path))
                return 0;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return emit(w, TAKE_PTR(path), negative_errno(), NULL, ret);
        if (S_ISLNK(st.st_mode)) {
                if (!o->follow)
                        return emit(w, TAKE_PTR(path), 0, "symbolic link not followed (use --follow)", ret);
                if (fstatat(dfd, name, &st, 0) < 0)
                        return emit(w, TAKE_PTR(path), 0, "dangling symbolic link", ret);
        }
        if (S_ISREG(st.st_mode))
                return emit(w, TAKE_PTR(path), 0, NULL, ret);
        if (!S_ISDIR(st.st_mode))
                return emit(w, TAKE_PTR(path), 0, "not a regular file", ret);
        if (o->one_file_system && st.st_dev != w->top_dev)
                return emit(w, TAKE_PTR(path), 0, "on another file system, not entered", ret);
        for (size_t k = 0; k < w->depth; k++)
                if (w->frames[k].dev == st.st_dev && w->frames[k].ino == st.st_ino)
                        return emit(w, TAKE_PTR(path), 0, "directory loop, not entered", ret);

        int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return emit(w, TAKE_PTR(path), negative_errno(), NULL, ret);
        return enter(w, fd, TAKE_PTR(path), &st, ret);
}

/* A command-line argument. Returns 1 with an entry, 0 if it gave none (a directory entered). */
static int walk_arg(Walk *w, const char *arg, WalkEntry *ret)
{
        struct stat st;
        char *p;
        int fd;

        if (!w->options->recursive || streq(arg, "-"))
                return emit_dup(w, arg, 0, NULL, ret);
        if (stat(arg, &st) < 0)
                return emit_dup(w, arg, negative_errno(), NULL, ret);
        if (!S_ISDIR(st.st_mode))
                return emit_dup(w, arg, 0, NULL, ret);

        w->top_dev = st.st_dev;
        fd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return emit_dup(w, arg, negative_errno(), NULL, ret);
        p = strdup(arg);
        if (!p) {
                safe_close(fd);
                return -ENOMEM;
        }
        return enter(w, fd, p, &st, ret);
}

int walk_next(Walk *w, WalkEntry *ret)
{
        int r;

        for (;;) {
                if (w->depth > 0) {
                        const WalkFrame *top = &w->frames[w->depth - 1];

                        if (top->i == top->n) {
                                frame_pop(w);
                                continue;
                        }
                        r = walk_child(w, ret);
                } else if (w->next_arg < w->n_args)
                        r = walk_arg(w, w->args[w->next_arg++], ret);
                else
                        return 0;
                if (r != 0)
                        return r;
        }
}

int walk_expand(char *const *args, size_t n_args, const WalkOptions *options, WalkList **ret)
{
        Walk *w = NULL;
        WalkList *l;
        size_t alloc = 0;
        int r;

        /* w and l are freed by hand: clang-tidy 14 does not see a _cleanup_ free. */
        r = walk_new(args, n_args, options, &w);
        if (r < 0)
                return r;
        l = calloc(1, sizeof(*l));
        if (!l) {
                walk_free(w);
                return -ENOMEM;
        }
        for (;;) {
                WalkEntry e;
                char *p;

                r = walk_next(w, &e);
                if (r == 0)
                        break;
                if (r > 0 && l->n_entries == alloc) {
                        size_t na = MAX(alloc * 2, (size_t)64);
                        WalkEntry *ne = reallocarray(l->entries, na, sizeof(*ne));
                        if (!ne)
                                r = -ENOMEM;
                        else {
                                l->entries = ne;
                                alloc = na;
                        }
                }
                p = r > 0 ? strdup(e.path) : NULL;
                if (!p) {
                        walk_list_free(l);
                        walk_free(w);
                        return r < 0 ? r : -ENOMEM;
                }
                e.path = p;
                l->entries[l->n_entries++] = e;
        }
        walk_free(w);
        *ret = l;
        return 0;
}

WalkList *walk_list_free(WalkList *l)
{
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n_entries; i++)
                free((char *)l->entries[i].path);
        free(l->entries);
        free(l);
        return NULL;
}
