/* SPDX-License-Identifier: MIT */
/* fd-screen.c: what each fd a caller sends is, judged as the gate receives it, without asking its file system */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "daemon/fd-screen.h"

static const char *const fd_refusal_table[_FD_REFUSAL_MAX] = {
        [FD_REFUSAL_UNSEEN] = "on a FUSE file system that does not let fhashd look at it (mounted by another "
                              "user, or in a user namespace): closing it would wait on its server, which "
                              "could hold fhashd for ever; hash it in-process (fhashctl --local)",
        [FD_REFUSAL_FUSE] = "on a FUSE file system that root did not mount: closing it waits on its server, "
                            "which could hold fhashd for ever; hash it in-process (fhashctl --local)",
        [FD_REFUSAL_UNKNOWN] = "on a file system fhashd cannot tell without asking it (a mount it does not "
                               "see, or one stacked on such mounts), whose close could wait for ever; hash "
                               "it in-process (fhashctl --local)",
        [FD_REFUSAL_SOCKET] = "is a socket",
        [FD_REFUSAL_BUDGET] = "not taken in: the caller's uid holds too many file descriptors in fhashd "
                              "(waiting to be hashed or closed); try again when some are done",
        [FD_REFUSAL_LOST] = "lost on its way in: fhashd had no file descriptor left to receive it",
};

const char *fd_refusal_to_string(FdRefusal r)
{
        if ((int)r <= FD_REFUSAL_NONE || r >= _FD_REFUSAL_MAX)
                return NULL;
        return fd_refusal_table[r];
}

struct FdScreen {
        FsTable *table;
        bool table_ok;        /* the last refresh read the mount table */
        uint64_t test_dev, test_ino;
        /* The last verdict on a regular file or directory, by where it is: the fds of one message
         * are mostly on one file system. Forgotten when the mount table is read again. */
        bool last_valid;
        uint64_t last_mount_id;
        uint32_t last_major, last_minor;
        FdRefusal last_refusal;
        FsClass last_class;
};

int fd_screen_new(FdScreen **ret)
{
        FdScreen *s;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        r = fs_table_new(&s->table);
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

FdScreen *fd_screen_free(FdScreen *s)
{
        if (!s)
                return NULL;
        fs_table_free(s->table);
        return mfree(s);
}

void fd_screen_refuse_for_test(FdScreen *s, uint64_t dev, uint64_t ino)
{
        s->test_dev = dev;
        s->test_ino = ino;
        s->last_valid = false;
}

void fd_screen_refresh(FdScreen *s)
{
        int r = fs_table_refresh(s->table);

        /* A table that cannot be read leaves every file's file system unknown. */
        s->table_ok = r >= 0;
        if (r != 0)
                s->last_valid = false;
}

/* A regular file's or directory's file system, by the mount table as of the last refresh. */
static void judge_file_system(FdScreen *s, int fd, FdVerdict *v)
{
        FsInfo fs = {};

        if (s->test_ino != 0) {
                struct stat sb;

                if (fstat(fd, &sb) >= 0 && sb.st_dev == s->test_dev && sb.st_ino == s->test_ino) {
                        v->refusal = FD_REFUSAL_UNKNOWN;
                        return;
                }
        }
        if (!s->table_ok) {
                v->refusal = FD_REFUSAL_UNKNOWN;
                return;
        }
        if (s->last_valid && v->st.mount_id == s->last_mount_id && v->st.dev_major == s->last_major &&
            v->st.dev_minor == s->last_minor) {
                v->refusal = s->last_refusal;
                v->fs_class = s->last_class;
                return;
        }
        if (fs_table_classify(s->table, fd, &v->st, &fs) < 0)
                fs = (FsInfo){ .class = FS_CLASS_UNKNOWN };
        /* Root's own FUSE mounts are trusted to answer, as root's NFS mounts are: root callers hash
         * their files through fds, and other callers' fds of them are refused (bus-args.c). */
        v->refusal = fs.class == FS_CLASS_FUSE && !fs.root_mounted ? FD_REFUSAL_FUSE
                     : fs.class == FS_CLASS_UNKNOWN                ? FD_REFUSAL_UNKNOWN
                                                                   : FD_REFUSAL_NONE;
        v->fs_class = fs.class;
        s->last_mount_id = v->st.mount_id;
        s->last_major = v->st.dev_major;
        s->last_minor = v->st.dev_minor;
        s->last_refusal = v->refusal;
        s->last_class = v->fs_class;
        s->last_valid = true;
}

void fd_screen_judge(FdScreen *s, int fd, FdVerdict *ret)
{
        FdVerdict v = { .flags = fcntl(fd, F_GETFL), .fs_class = FS_CLASS_LOCAL };

        if (fsinfo_statx(fd, ENGINE_FD_STATX_MASK, &v.st, &v.stx) < 0)
                /* Not even a cached statx: FUSE that refuses fhashd (fuse_allow_current_process). */
                v.refusal = FD_REFUSAL_UNSEEN;
        else
                switch (v.st.mode & S_IFMT) {
                case S_IFREG:
                case S_IFDIR:
                case S_IFLNK:
                        judge_file_system(s, fd, &v);
                        break;
                case S_IFSOCK:
                        v.refusal = FD_REFUSAL_SOCKET;
                        break;
                default:
                        break; /* pipes, devices, anonymous inodes: no file system's flush */
                }
        v.closer = v.refusal != FD_REFUSAL_NONE;
        *ret = v;
}
