/* SPDX-License-Identifier: MIT */
/* test-fd-screen.c: what each fd a caller sends is, judged without asking its file system */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "daemon/fd-screen.h"

static int tmp_file(struct stat *st, int flags)
{
        int fd = open("/tmp", O_TMPFILE | flags | O_CLOEXEC, 0600);

        assert_true(fd >= 0);
        assert_int_equal(fstat(fd, st), 0);
        return fd;
}

/* Files on a local file system, pipes, devices and memfds are kept, with what the gate needs to
 * know of each; a socket goes to the closer (its queue may hold fds). */
static void test_kinds(void **state)
{
        _cleanup_(fd_screen_freep) FdScreen *s = NULL;
        struct stat st;
        int f = -1, w, p[2], sp[2], null, mem;
        FdVerdict v;

        (void)state;
        assert_int_equal(fd_screen_new(&s), 0);
        fd_screen_refresh(s);
        f = tmp_file(&st, O_RDWR);
        w = open("/tmp", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
        assert_true(w >= 0);
        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
        null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        mem = memfd_create("screen", MFD_CLOEXEC);
        assert_true(null >= 0 && mem >= 0);

        fd_screen_judge(s, f, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        assert_false(v.closer);
        assert_true(S_ISREG(v.st.mode));
        assert_int_equal(v.flags & O_ACCMODE, O_RDWR);
        assert_int_equal(v.fs_class, FS_CLASS_LOCAL);

        fd_screen_judge(s, w, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        assert_int_equal(v.flags & O_ACCMODE, O_WRONLY);

        fd_screen_judge(s, p[0], &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        assert_true(S_ISFIFO(v.st.mode));

        fd_screen_judge(s, null, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        assert_true(S_ISCHR(v.st.mode));

        fd_screen_judge(s, mem, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        assert_true(S_ISREG(v.st.mode));

        fd_screen_judge(s, sp[0], &v);
        assert_int_equal(v.refusal, FD_REFUSAL_SOCKET);
        assert_true(v.closer);
        assert_string_equal(fd_refusal_to_string(v.refusal), "is a socket");

        /* What cannot be judged at all (a closed fd) is refused, never kept. */
        fd_screen_judge(s, 999999, &v);
        assert_int_not_equal(v.refusal, FD_REFUSAL_NONE);
        assert_int_equal(v.flags, -1);

        assert_null(fd_refusal_to_string(FD_REFUSAL_NONE));
        for (FdRefusal r = FD_REFUSAL_UNSEEN; r < _FD_REFUSAL_MAX; r++)
                assert_non_null(fd_refusal_to_string(r));
        close(f);
        close(w);
        close(p[0]);
        close(p[1]);
        close(sp[0]);
        close(sp[1]);
        close(null);
        close(mem);
}

/* The test hook refuses one file as one on a file system fhashd cannot tell; the verdict cached
 * for its mount does not hide it, nor does it spill onto other files of the mount. */
static void test_refused(void **state)
{
        _cleanup_(fd_screen_freep) FdScreen *s = NULL;
        struct stat bad_st, good_st;
        int bad, good;
        FdVerdict v;

        (void)state;
        assert_int_equal(fd_screen_new(&s), 0);
        bad = tmp_file(&bad_st, O_RDWR);
        good = tmp_file(&good_st, O_RDWR);
        fd_screen_refresh(s);
        fd_screen_judge(s, good, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        fd_screen_refuse_for_test(s, bad_st.st_dev, bad_st.st_ino);
        fd_screen_judge(s, bad, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_UNKNOWN);
        assert_true(v.closer);
        assert_non_null(strstr(fd_refusal_to_string(v.refusal), "cannot tell"));
        fd_screen_judge(s, good, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_NONE);
        fd_screen_judge(s, bad, &v);
        assert_int_equal(v.refusal, FD_REFUSAL_UNKNOWN);
        close(bad);
        close(good);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_kinds),
                cmocka_unit_test(test_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
