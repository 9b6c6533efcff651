/* SPDX-License-Identifier: MIT */
/* test-walk.c: -r order, symlinks, non-regular files, --exclude and loops on a real tree; the walk is
 * incremental */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl/macro.h"
#include "test-helpers.h"
#include "ctl/walk.h"

static char *root;

static void mkfile(const char *rel)
{
        _cleanup_free_ char *p = NULL;

        assert_true(asprintf(&p, "%s/%s", root, rel) > 0);
        assert_int_equal(th_write_random_file(p, 10, 1), 0);
}

static void mkdir_rel(const char *rel)
{
        _cleanup_free_ char *p = NULL;

        assert_true(asprintf(&p, "%s/%s", root, rel) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
}

static int setup(void **state)
{
        _cleanup_free_ char *p = NULL;

        root = th_mkdtemp("walk");
        mkfile("b");
        mkfile("a");
        mkfile("B");
        mkdir_rel("d");
        mkfile("d/z");
        mkdir_rel("d/sub");
        mkfile("d/sub/x.o");
        mkfile("d/sub/y");
        mkdir_rel("skipme");
        mkfile("skipme/f");
        if (asprintf(&p, "%s/fifo", root) < 0 || mkfifo(p, 0644) < 0)
                return -1;
        free(p);
        if (asprintf(&p, "%s/link-a", root) < 0 || symlink("a", p) < 0)
                return -1;
        free(p);
        if (asprintf(&p, "%s/d/sub/loop", root) < 0 || symlink("..", p) < 0)
                return -1;
        free(p);
        if (asprintf(&p, "%s/dangling", root) < 0 || symlink("nowhere", p) < 0)
                return -1;
        return 0;
}

static int teardown(void **state)
{
        th_rm_rf(root);
        free(root);
        return 0;
}

/* Compares the list with want: "path" for a file to hash, "!path" for a noted skip, "-path" for an error. */
static void list_is(const WalkList *l, const char *const *want, size_t n)
{
        size_t rl = strlen(root) + 1;

        for (size_t i = 0; i < l->n_entries; i++)
                fprintf(stderr, "# %zu: %s error=%d note=%s\n", i, l->entries[i].path, l->entries[i].error,
                        l->entries[i].note ?: "");
        assert_int_equal(l->n_entries, n);
        for (size_t i = 0; i < n; i++) {
                const WalkEntry *e = &l->entries[i];
                const char *w = want[i];
                char kind = *w == '!' || *w == '-' ? *w++ : ' ';

                assert_true(strncmp(e->path, root, rl - 1) == 0);
                assert_string_equal(e->path + rl, w);
                assert_int_equal(kind == '!', e->note != NULL);
                assert_int_equal(kind == '-', e->error < 0);
        }
}

static void test_recursive(void **state)
{
        _cleanup_(walk_list_freep) WalkList *l = NULL;
        WalkOptions o = { .recursive = true };
        char *args[] = { root };
        static const char *const expect[] = {
                "B", "a", "b", "!d/sub/loop", "d/sub/x.o", "d/sub/y", "d/z", "!dangling", "!fifo",
                "!link-a", "skipme/f",
        };

        /* Symlinks are noted, not followed; each directory sorted bytewise ('B' < 'a', 'd' < 'dangling'),
         * depth first. */
        assert_int_equal(walk_expand(args, 1, &o, &l), 0);
        list_is(l, expect, ELEMENTSOF(expect));
}

static void test_follow_exclude(void **state)
{
        _cleanup_(walk_list_freep) WalkList *l = NULL;
        char glob_o[] = "*.o", glob_skip[] = "skipme";
        char *excludes[] = { glob_o, glob_skip };
        WalkOptions o = { .recursive = true, .follow = true, .excludes = excludes, .n_excludes = 2 };
        char *args[] = { root };
        static const char *const expect[] = {
                "B", "a", "b", "!d/sub/loop", "d/sub/y", "d/z", "!dangling", "!fifo", "link-a",
        };

        assert_int_equal(walk_expand(args, 1, &o, &l), 0);
        /* --follow hashes link-a, refuses to loop through d/sub/loop -> d. */
        list_is(l, expect, ELEMENTSOF(expect));
}

static void test_args_kept(void **state)
{
        _cleanup_(walk_list_freep) WalkList *l = NULL, *l2 = NULL;
        _cleanup_free_ char *missing = NULL, *dir = NULL;
        WalkOptions plain = {}, rec = { .recursive = true };

        assert_true(asprintf(&missing, "%s/missing", root) > 0);
        assert_true(asprintf(&dir, "%s/d/", root) > 0);
        char dash[] = "-";
        char *args[] = { missing, dash, dir };

        /* Without -r nothing is examined: the hasher reports what is wrong, in the order given. */
        assert_int_equal(walk_expand(args, 3, &plain, &l), 0);
        assert_int_equal(l->n_entries, 3);
        assert_string_equal(l->entries[0].path, missing);
        assert_int_equal(l->entries[0].error, 0);
        assert_string_equal(l->entries[1].path, "-");
        assert_string_equal(l->entries[2].path, dir);

        assert_int_equal(walk_expand(args, 3, &rec, &l2), 0);
        assert_int_equal(l2->n_entries, 6);
        assert_int_equal(l2->entries[0].error, -ENOENT);
        assert_string_equal(l2->entries[1].path, "-");
        /* A trailing slash does not double. */
        assert_true(strstr(l2->entries[2].path, "/d/sub/loop") && !strstr(l2->entries[2].path, "//"));
        assert_non_null(l2->entries[2].note);
}

/* walk_next() gives what walk_expand() gives, entry by entry. */
static void test_next_same_as_expand(void **state)
{
        _cleanup_(walk_list_freep) WalkList *l = NULL;
        _cleanup_(walk_freep) Walk *w = NULL;
        WalkOptions o = { .recursive = true, .follow = true };
        char dash[] = "-";
        char *args[] = { root, dash, root };
        WalkEntry e;
        size_t i = 0;
        int r;

        assert_int_equal(walk_expand(args, 3, &o, &l), 0);
        assert_int_equal(walk_new(args, 3, &o, &w), 0);
        while ((r = walk_next(w, &e)) > 0) {
                assert_true(i < l->n_entries);
                assert_string_equal(e.path, l->entries[i].path);
                assert_int_equal(e.error, l->entries[i].error);
                assert_ptr_equal(e.note, l->entries[i].note);
                i++;
        }
        assert_int_equal(r, 0);
        assert_int_equal(i, l->n_entries);
        /* Over means over. */
        assert_int_equal(walk_next(w, &e), 0);
}

/* The walk reads a directory only when it gets there: what changes in a directory further on before
 * then is what the walk sees, so the first files can be hashed while the rest is not even read. */
static void test_incremental(void **state)
{
        _cleanup_free_ char *top = th_mkdtemp("walk-inc"), *p = NULL;
        _cleanup_(walk_freep) Walk *w = NULL;
        WalkOptions o = { .recursive = true };
        char *args[] = { top };
        WalkEntry e;

        assert_non_null(top);
        assert_true(asprintf(&p, "%s/a", top) > 0);
        assert_int_equal(th_write_random_file(p, 1, 1), 0);
        free(p);
        assert_true(asprintf(&p, "%s/m", top) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
        free(p);
        assert_true(asprintf(&p, "%s/z", top) > 0);
        assert_int_equal(mkdir(p, 0755), 0);
        free(p);

        assert_int_equal(walk_new(args, 1, &o, &w), 0);
        assert_int_equal(walk_next(w, &e), 1);
        assert_true(strstr(e.path, "/a") != NULL);

        /* After the first entry: a file in m/, and z/ goes away. */
        assert_true(asprintf(&p, "%s/m/new", top) > 0);
        assert_int_equal(th_write_random_file(p, 1, 2), 0);
        free(p);
        assert_true(asprintf(&p, "%s/z", top) > 0);
        assert_int_equal(rmdir(p), 0);

        assert_int_equal(walk_next(w, &e), 1);
        assert_true(strstr(e.path, "/m/new") != NULL);
        assert_int_equal(e.error, 0);
        /* z/ was listed with the top directory, but is gone: an error entry, as an unreadable file. */
        assert_int_equal(walk_next(w, &e), 1);
        assert_string_equal(e.path, p);
        assert_int_equal(e.error, -ENOENT);
        assert_int_equal(walk_next(w, &e), 0);
        th_rm_rf(top);
}

/* A deep tree holds one open directory per level, not one per directory seen, and frees them all. */
static void test_deep(void **state)
{
        _cleanup_free_ char *top = th_mkdtemp("walk-deep");
        _cleanup_(walk_freep) Walk *w = NULL;
        WalkOptions o = { .recursive = true };
        char *args[] = { top };
        char path[8192];
        size_t n = 0, pl;
        int fds_before, r;
        WalkEntry e;

        assert_non_null(top);
        pl = (size_t)snprintf(path, sizeof(path), "%s", top);
        for (int depth = 0; depth < 100; depth++) {
                for (int k = 0; k < 3; k++) {
                        char f[8300];
                        snprintf(f, sizeof(f), "%s/f%d", path, k);
                        assert_int_equal(th_write_random_file(f, 1, (uint32_t)k), 0);
                }
                pl += (size_t)snprintf(path + pl, sizeof(path) - pl, "/d");
                assert_int_equal(mkdir(path, 0755), 0);
        }
        fds_before = th_count_fds();
        assert_int_equal(walk_new(args, 1, &o, &w), 0);
        while ((r = walk_next(w, &e)) > 0) {
                assert_int_equal(e.error, 0);
                assert_true(th_count_fds() <= fds_before + 101);
                n++;
        }
        assert_int_equal(r, 0);
        assert_int_equal(n, 300);
        /* Every directory closed once the walk is over. */
        assert_int_equal(th_count_fds(), fds_before);
        th_rm_rf(top);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_recursive),
                cmocka_unit_test(test_follow_exclude),
                cmocka_unit_test(test_args_kept),
                cmocka_unit_test(test_next_same_as_expand),
                cmocka_unit_test(test_incremental),
                cmocka_unit_test(test_deep),
        };

        return cmocka_run_group_tests(tests, setup, teardown);
}
