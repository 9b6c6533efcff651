/* SPDX-License-Identifier: MIT */
/* failread.c: LD_PRELOAD shim that makes every read of one file fail with an errno of the test's
 * choosing, the way NFS fails it (ESTALE) or a file system that checksums its data does (EBADMSG:
 * ext4's and XFS's EFSBADCRC). $FAILREAD_PATH names the file, $FAILREAD_ERRNO the errno (a number,
 * or ESTALE, EBADMSG, EIO). The file is known by its device and inode, so that an fd of it passed
 * over D-Bus fails too. Reads through io_uring cannot be interposed: where the shim is loaded,
 * io_uring_setup() fails with ENOSYS (a seccomp filter, as where io_uring is disabled), so the
 * engine falls back to pread(2), and there the failure is injected. Only for tests; never linked
 * into anything shipped. */
/* The plain and the 64-bit names are interposed each: with 64-bit offsets the headers would make
 * pread() the symbol pread64 and the two definitions one. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* Visible on purpose: the project builds with -fvisibility=hidden, and a hidden read interposes
 * nothing. */
#define EXPORT __attribute__((visibility("default")))

static dev_t target_dev;
static ino_t target_ino;
static int target_errno;

static int errno_of(const char *s)
{
        static const struct {
                const char *name;
                int value;
        } names[] = { { "ESTALE", ESTALE }, { "EBADMSG", EBADMSG }, { "EIO", EIO } };

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (strcmp(s, names[i].name) == 0)
                        return names[i].value;
        return atoi(s);
}

/* io_uring_setup() answers ENOSYS, everything else is allowed. */
static void no_io_uring(void)
{
        struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
                perror("failread: cannot keep io_uring out");
                _exit(77);
        }
}

__attribute__((constructor)) static void failread_init(void)
{
        const char *path = getenv("FAILREAD_PATH"), *e = getenv("FAILREAD_ERRNO");
        struct stat st;

        if (!path || !e)
                return;
        if (stat(path, &st) < 0) {
                fprintf(stderr, "failread: %s: %s\n", path, strerror(errno));
                _exit(77);
        }
        target_dev = st.st_dev;
        target_ino = st.st_ino;
        target_errno = errno_of(e);
        no_io_uring();
}

/* Whether a read of fd must fail (errno set then). */
static int fails(int fd)
{
        struct stat st;

        if (target_errno == 0 || fstat(fd, &st) < 0 || st.st_dev != target_dev || st.st_ino != target_ino)
                return 0;
        errno = target_errno;
        return 1;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))

EXPORT ssize_t read(int fd, void *buf, size_t n);
EXPORT ssize_t pread(int fd, void *buf, size_t n, off_t off);
EXPORT ssize_t pread64(int fd, void *buf, size_t n, off_t off);
EXPORT ssize_t readv(int fd, const struct iovec *iov, int n);
EXPORT ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off);
EXPORT ssize_t preadv64(int fd, const struct iovec *iov, int n, off_t off);
EXPORT ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags);
EXPORT ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off_t off, int flags);

ssize_t read(int fd, void *buf, size_t n)
{
        return fails(fd) ? -1 : NEXT(read)(fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
        return fails(fd) ? -1 : NEXT(pread)(fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off_t off)
{
        return fails(fd) ? -1 : NEXT(pread64)(fd, buf, n, off);
}

ssize_t readv(int fd, const struct iovec *iov, int n)
{
        return fails(fd) ? -1 : NEXT(readv)(fd, iov, n);
}

ssize_t preadv(int fd, const struct iovec *iov, int n, off_t off)
{
        return fails(fd) ? -1 : NEXT(preadv)(fd, iov, n, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int n, off_t off)
{
        return fails(fd) ? -1 : NEXT(preadv64)(fd, iov, n, off);
}

ssize_t preadv2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
        return fails(fd) ? -1 : NEXT(preadv2)(fd, iov, n, off, flags);
}

ssize_t preadv64v2(int fd, const struct iovec *iov, int n, off_t off, int flags)
{
        return fails(fd) ? -1 : NEXT(preadv64v2)(fd, iov, n, off, flags);
}
