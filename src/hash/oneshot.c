/* SPDX-License-Identifier: MIT */
/* oneshot.c: one input hashed in the calling thread with plain read(2)s */
#include <fcntl.h>
#include <unistd.h>

#include "basic/macro.h"
#include "hash/oneshot.h"

int oneshot_read_fd(int fd, void *buf, size_t size, OneshotFeedFn fn, void *userdata, uint64_t *ret_size)
{
        uint64_t total = 0;

        if (fd < 0 || !buf || size == 0 || !fn)
                return -EINVAL;
        for (;;) {
                ssize_t k = read(fd, buf, size);
                int r;

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                r = fn(buf, (size_t)k, userdata);
                if (r < 0)
                        return r;
                total += (uint64_t)k;
        }
        if (ret_size)
                *ret_size = total;
        return 0;
}

int oneshot_open(const char *path)
{
        int fd;

        if (!path)
                return -EINVAL;
        if (streq(path, "-"))
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        else
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        /* The read-ahead doubles for a sequential reader; it fails harmlessly on pipes. */
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        return fd;
}

static int feed_ctx(const void *data, size_t n, void *userdata)
{
        return hash_ctx_update(userdata, data, n);
}

int oneshot_hash_fd(HashCtx *c, int fd, void *buf, size_t size, uint64_t *ret_size)
{
        if (!c)
                return -EINVAL;
        return oneshot_read_fd(fd, buf, size, feed_ctx, c, ret_size);
}
