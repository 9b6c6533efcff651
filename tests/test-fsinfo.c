/* SPDX-License-Identifier: MIT */
/* test-fsinfo.c: file system classes from real fds and from mountinfo type names */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/macro.h"
#include "io/fsinfo.h"

static void test_types(void **state)
{
        (void)state;
        assert_int_equal(fsinfo_class_of_type("ext4"), FS_CLASS_LOCAL);
        assert_int_equal(fsinfo_class_of_type("tmpfs"), FS_CLASS_LOCAL);
        assert_int_equal(fsinfo_class_of_type("proc"), FS_CLASS_PSEUDO);
        assert_int_equal(fsinfo_class_of_type("sysfs"), FS_CLASS_PSEUDO);
        assert_int_equal(fsinfo_class_of_type("debugfs"), FS_CLASS_PSEUDO);
        assert_int_equal(fsinfo_class_of_type("fuse"), FS_CLASS_FUSE);
        assert_int_equal(fsinfo_class_of_type("fuse.sshfs"), FS_CLASS_FUSE);
        assert_int_equal(fsinfo_class_of_type("fuseblk"), FS_CLASS_FUSE);
        assert_int_equal(fsinfo_class_of_type("fusectl"), FS_CLASS_PSEUDO);
        assert_int_equal(fsinfo_class_of_type("nfs4"), FS_CLASS_REMOTE);
        assert_int_equal(fsinfo_class_of_type("cifs"), FS_CLASS_REMOTE);
        assert_string_equal(fs_class_to_string(FS_CLASS_UNKNOWN), "unknown");
        assert_null(fs_class_to_string(_FS_CLASS_MAX));
}

static void check_fd(const char *path, FsClass want, const char *type)
{
        FsInfo fs;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0) {
                print_message("skipping %s: %m\n", path);
                return;
        }
        assert_int_equal(fsinfo_of_fd(fd, &fs), 0);
        close(fd);
        if (fs.class != want)
                fail_msg("%s: class %s (type %s), expected %s", path, fs_class_to_string(fs.class), fs.type,
                         fs_class_to_string(want));
        if (type)
                assert_string_equal(fs.type, type);
}

static void test_real_fds(void **state)
{
        char tmpl[] = "/dev/shm/fhash-fsinfo-XXXXXX";
        int pipefd[2];
        FsInfo fs;
        int fd;

        (void)state;
        check_fd("/proc/self/stat", FS_CLASS_PSEUDO, "proc");
        check_fd("/sys/kernel/uevent_seqnum", FS_CLASS_PSEUDO, "sysfs");
        check_fd("/dev/null", FS_CLASS_LOCAL, NULL);

        fd = mkstemp(tmpl);
        assert_true(fd >= 0);
        (void)unlink(tmpl);
        assert_int_equal(fsinfo_of_fd(fd, &fs), 0);
        assert_int_equal(fs.class, FS_CLASS_LOCAL);
        assert_string_equal(fs.type, "tmpfs");
        close(fd);

        /* A pipe lives on an internal mount that mountinfo does not list. */
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        assert_int_equal(fsinfo_of_fd(pipefd[0], &fs), 0);
        assert_int_equal(fs.class, FS_CLASS_UNKNOWN);
        close(pipefd[0]);
        close(pipefd[1]);

        assert_int_equal(fsinfo_of_fd(-1, &fs), -EBADF);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_types),
                cmocka_unit_test(test_real_fds),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
