/* SPDX-License-Identifier: MIT */
/* test-fsinfo.c: file system classes from real fds and from mountinfo type names */
#include <fcntl.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
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

        /* A pipe lives on an internal mount that mountinfo does not list: statfs says pipefs,
         * where it may (fusectl lists FUSE connections, or there is no FUSE). */
        assert_int_equal(pipe2(pipefd, O_CLOEXEC), 0);
        assert_int_equal(fsinfo_of_fd(pipefd[0], &fs), 0);
        if (fs.class != FS_CLASS_UNKNOWN) {
                assert_int_equal(fs.class, FS_CLASS_LOCAL);
                assert_string_equal(fs.type, "0x50495045"); /* PIPEFS_MAGIC */
        }
        close(pipefd[0]);
        close(pipefd[1]);

        assert_int_equal(fsinfo_of_fd(-1, &fs), -EBADF);
}

/* The table gives what fsinfo_of_fd() gives, and sees a mount made after it was read. */
static void test_table(void **state)
{
        char dir[] = "/tmp/fhash-fsinfo-mnt-XXXXXX";
        _cleanup_free_ char *file = NULL;
        bool own_ns;
        FsTable *t = NULL;
        FsInfo a, b;
        int fd;

        (void)state;
        /* Opened in the namespace we start in, as a caller of fhashd opens its files. */
        int outside = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        assert_true(outside >= 0);
        /* A mount namespace of our own (root only), opened before the table: a table reads the
         * mount table of the namespace it was made in. */
        own_ns = unshare(CLONE_NEWNS) >= 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) >= 0;
        assert_int_equal(fs_table_new(&t), 0);
        if (own_ns) {
                /* Its mount id is the other namespace's; its file system is found by its device
                 * (fhashd under its unit has a namespace of its own, and every caller's fd is so). */
                FsStat st;
                uint64_t inside_id;

                assert_int_equal(fs_table_lookup(t, outside, &a), 0);
                assert_int_equal(a.class, FS_CLASS_LOCAL);
                assert_string_equal(a.type, "tmpfs");
                fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                assert_true(fd >= 0);
                assert_int_equal(fsinfo_stat(fd, &st), 0);
                inside_id = st.mount_id;
                assert_int_equal(fsinfo_stat(outside, &st), 0);
                assert_true(st.mount_id != inside_id);
                close(fd);
        }
        close(outside);

        /* A memfd's file system, which mountinfo does not list, is known. */
        fd = memfd_create("fhash-test", MFD_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fs_table_lookup(t, fd, &a), 0);
        assert_int_equal(a.class, FS_CLASS_LOCAL);
        close(fd);
        fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
        assert_true(fd >= 0);
        assert_int_equal(fs_table_lookup(t, fd, &a), 0);
        assert_int_equal(fsinfo_of_fd(fd, &b), 0);
        assert_int_equal(a.class, FS_CLASS_PSEUDO);
        assert_string_equal(a.type, b.type);
        close(fd);
        if (!own_ns) {
                print_message("skipping the new-mount part: %m\n");
                fs_table_free(t);
                return;
        }

        /* Mounted after the table was read: the next lookup reads it again. */
        assert_non_null(mkdtemp(dir));
        assert_int_equal(mount("fhash-test", dir, "ramfs", 0, NULL), 0);
        assert_true(asprintf(&file, "%s/f", dir) > 0);
        fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(fs_table_lookup(t, fd, &a), 0);
        assert_int_equal(a.class, FS_CLASS_LOCAL);
        assert_string_equal(a.type, "ramfs");
        close(fd);
        assert_int_equal(umount2(dir, MNT_DETACH), 0);
        (void)rmdir(dir);
        fs_table_free(t);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_types),
                cmocka_unit_test(test_real_fds),
                cmocka_unit_test(test_table),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
