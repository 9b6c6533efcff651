/* SPDX-License-Identifier: MIT */
/* fd-screen.c: fds whose close could wait for ever are taken from each received message at once */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/log.h"
#include "daemon/fd-screen.h"
#include "io/closer.h"
#include "io/fsinfo.h"

static const char *const refusal_message[_FD_REFUSAL_MAX] = {
        [FD_REFUSAL_UNSEEN] = "on a FUSE file system that does not let fhashd look at it (mounted by another "
                              "user, or in a user namespace): closing it would wait on its server, which "
                              "could hold fhashd for ever; hash it in-process (fhashctl --local)",
        [FD_REFUSAL_FUSE] = "on a FUSE file system that root did not mount: closing it waits on its server, "
                            "which could hold fhashd for ever; hash it in-process (fhashctl --local)",
        [FD_REFUSAL_UNKNOWN] = "on a file system fhashd cannot tell without asking it (a mount it does not "
                               "see, or one stacked on such mounts), whose close could wait for ever; hash "
                               "it in-process (fhashctl --local)",
};

struct FdScreen {
        pthread_mutex_t lock; /* recvmsg() may be called on any thread */
        Closer *closer;
        FsTable *table;
        int stand_in[_FD_REFUSAL_MAX]; /* a pipe's write end each; its read end is closed */
        struct stat stand_in_st[_FD_REFUSAL_MAX];
        uint64_t test_dev, test_ino;
        uint64_t taken;
        bool table_ok;        /* the last refresh read the mount table */
        /* The last verdict on a regular file or directory, by where it is: the fds of one message
         * are mostly on one file system. Forgotten when the mount table is read again. */
        bool last_valid;
        uint64_t last_mount_id;
        uint32_t last_major, last_minor;
        int last_why;
        uint64_t *trusted;    /* SO_COOKIEs of peer gates' inner sockets (fd_screen_trust_socket()) */
        size_t n_trusted, n_trusted_alloc;
};

static FdScreen *installed;

int fd_screen_new(FdScreen **ret)
{
        _cleanup_(fd_screen_freep) FdScreen *s = NULL;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        for (size_t i = 0; i < _FD_REFUSAL_MAX; i++)
                s->stand_in[i] = -EBADF;
        for (size_t i = 0; i < _FD_REFUSAL_MAX; i++) {
                int p[2];

                if (pipe2(p, O_CLOEXEC) < 0)
                        return -errno;
                safe_close(p[0]);
                s->stand_in[i] = p[1];
                if (fstat(p[1], &s->stand_in_st[i]) < 0)
                        return -errno;
        }
        r = fs_table_new(&s->table);
        if (r < 0)
                return r;
        r = closer_new(&s->closer);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

FdScreen *fd_screen_free(FdScreen *s)
{
        if (!s)
                return NULL;
        if (installed == s)
                installed = NULL;
        closer_free(s->closer);
        fs_table_free(s->table);
        free(s->trusted);
        for (size_t i = 0; i < _FD_REFUSAL_MAX; i++)
                safe_close(s->stand_in[i]);
        pthread_mutex_destroy(&s->lock);
        return mfree(s);
}

void fd_screen_install(FdScreen *s)
{
        __atomic_store_n(&installed, s, __ATOMIC_RELEASE);
}

void fd_screen_refuse_for_test(FdScreen *s, uint64_t dev, uint64_t ino)
{
        s->test_dev = dev;
        s->test_ino = ino;
        s->last_valid = false;
}

uint64_t fd_screen_taken(const FdScreen *s)
{
        return __atomic_load_n(&s->taken, __ATOMIC_RELAXED);
}

/* Whether fd must be taken out, and why: -1 if it may stay. Nothing here asks a file system:
 * statx answers from the cache (AT_STATX_DONT_SYNC), the rest from mountinfo and fusectl. The
 * table was refreshed for the message (fd_screen_received()). */
static int judge(FdScreen *s, int fd)
{
        FsStat st = {};
        FsInfo fs = {};
        uint32_t type;

        if (fsinfo_stat(fd, &st) < 0)
                /* Not even a cached statx: FUSE that refuses fhashd (fuse_allow_current_process). */
                return FD_REFUSAL_UNSEEN;
        type = st.mode & S_IFMT;
        if (type != S_IFREG && type != S_IFDIR && type != S_IFLNK)
                return -1; /* pipes, sockets, devices, anonymous inodes: no file system's flush */
        if (s->test_ino != 0) {
                struct stat sb;

                if (fstat(fd, &sb) >= 0 && sb.st_dev == s->test_dev && sb.st_ino == s->test_ino)
                        return FD_REFUSAL_UNKNOWN;
        }
        if (!s->table_ok)
                return FD_REFUSAL_UNKNOWN;
        if (s->last_valid && st.mount_id == s->last_mount_id && st.dev_major == s->last_major &&
            st.dev_minor == s->last_minor)
                return s->last_why;
        if (fs_table_classify(s->table, fd, &st, &fs) < 0)
                return FD_REFUSAL_UNKNOWN;
        /* Root's own FUSE mounts are trusted to answer, as root's NFS mounts are: root callers hash
         * their files through fds, and other callers' fds of them are refused (bus-args.c). */
        s->last_why = fs.class == FS_CLASS_FUSE && !fs.root_mounted ? FD_REFUSAL_FUSE
                      : fs.class == FS_CLASS_UNKNOWN                ? FD_REFUSAL_UNKNOWN
                                                                    : -1;
        s->last_mount_id = st.mount_id;
        s->last_major = st.dev_major;
        s->last_minor = st.dev_minor;
        s->last_valid = true;
        return s->last_why;
}

/* The fd in a message's place, or fd itself if it may stay. */
static int screen_fd(FdScreen *s, int fd, int flags)
{
        int why = judge(s, fd), stand_in, r;

        if (why < 0)
                return fd;
        /* The stand-in first: if there is no fd for it, the message names an invalid fd (an error for
         * that input), never the one taken out. */
        stand_in = fcntl(s->stand_in[why], flags & MSG_CMSG_CLOEXEC ? F_DUPFD_CLOEXEC : F_DUPFD, 3);
        r = closer_close(s->closer, fd);
        if (r < 0 && r != -EAGAIN)
                log_warning_errno(r, "Could not hand fd %d to the closer, it stays open: %m", fd);
        __atomic_fetch_add(&s->taken, 1, __ATOMIC_RELAXED);
        return stand_in < 0 ? -1 : stand_in;
}

#ifndef SO_COOKIE
#define SO_COOKIE 57
#endif

static uint64_t socket_cookie(int sock)
{
        uint64_t cookie = 0;
        socklen_t len = sizeof(cookie);

        if (getsockopt(sock, SOL_SOCKET, SO_COOKIE, &cookie, &len) < 0 || len != sizeof(cookie))
                return 0;
        return cookie;
}

uint64_t fd_screen_trust_socket(int sock)
{
        FdScreen *s = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
        uint64_t cookie;

        if (!s)
                return 0;
        cookie = socket_cookie(sock);
        if (cookie == 0)
                return 0;
        pthread_mutex_lock(&s->lock);
        if (s->n_trusted == s->n_trusted_alloc) {
                size_t a = MAX((size_t)16, 2 * s->n_trusted_alloc);
                uint64_t *t = reallocarray(s->trusted, a, sizeof(uint64_t));

                if (!t) {
                        pthread_mutex_unlock(&s->lock);
                        return 0;
                }
                s->trusted = t;
                s->n_trusted_alloc = a;
        }
        s->trusted[s->n_trusted++] = cookie;
        pthread_mutex_unlock(&s->lock);
        return cookie;
}

void fd_screen_forget_socket(uint64_t token)
{
        FdScreen *s = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);

        if (!s || token == 0)
                return;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->n_trusted; i++)
                if (s->trusted[i] == token) {
                        s->trusted[i] = s->trusted[--s->n_trusted];
                        break;
                }
        pthread_mutex_unlock(&s->lock);
}

static bool socket_trusted(FdScreen *s, int sock)
{
        uint64_t cookie;

        if (s->n_trusted == 0)
                return false;
        cookie = socket_cookie(sock);
        for (size_t i = 0; cookie != 0 && i < s->n_trusted; i++)
                if (s->trusted[i] == cookie)
                        return true;
        return false;
}

void fd_screen_received(int sock, struct msghdr *mh, int flags)
{
        FdScreen *s = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
        bool refreshed = false;

        if (!s || !mh->msg_control || mh->msg_controllen < sizeof(struct cmsghdr))
                return;
        pthread_mutex_lock(&s->lock);
        for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
                        uint8_t *p = CMSG_DATA(c);
                        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

                        /* Once per message; a table that cannot be read leaves every file's file
                         * system unknown. */
                        if (!refreshed) {
                                int r;

                                if (socket_trusted(s, sock))
                                        break;
                                r = fs_table_refresh(s->table);
                                refreshed = true;
                                s->table_ok = r >= 0;
                                if (r != 0)
                                        s->last_valid = false;
                        }

                        for (size_t i = 0; i < n; i++) {
                                int fd;

                                /* CMSG_DATA need not be aligned for an int. */
                                memcpy(&fd, p + i * sizeof(int), sizeof(int));
                                fd = screen_fd(s, fd, flags);
                                memcpy(p + i * sizeof(int), &fd, sizeof(int));
                        }
                }
        pthread_mutex_unlock(&s->lock);
}

const char *fd_screen_refusal(int fd)
{
        FdScreen *s = __atomic_load_n(&installed, __ATOMIC_ACQUIRE);
        struct stat st;

        if (!s || fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode))
                return NULL;
        for (size_t i = 0; i < _FD_REFUSAL_MAX; i++)
                if (st.st_dev == s->stand_in_st[i].st_dev && st.st_ino == s->stand_in_st[i].st_ino)
                        return refusal_message[i];
        return NULL;
}
