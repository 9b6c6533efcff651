/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "basic/macro.h"
#include "test-helpers.h"

char *th_mkdtemp(const char *tag)
{
        const char *base = getenv("TMPDIR");
        char *p;

        if (!base || !*base)
                base = "/var/tmp";
        if (asprintf(&p, "%s/fhash-%s-XXXXXX", base, tag) < 0)
                abort();
        if (!mkdtemp(p)) {
                perror("mkdtemp");
                abort();
        }
        return p;
}

void th_rm_rf(const char *path)
{
        _cleanup_free_ char *cmd = NULL;

        if (!path || asprintf(&cmd, "rm -rf -- '%s'", path) < 0)
                return;
        (void)!system(cmd);
}

/* xorshift32: cheap, deterministic, good enough to defeat compression and dedup. */
void th_fill_random(void *buf, size_t n, uint32_t seed)
{
        uint32_t x = seed ? seed : 0x9e3779b9u;
        uint8_t *p = buf;

        for (size_t i = 0; i < n; i++) {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                p[i] = (uint8_t)x;
        }
}

int th_write_random_file(const char *path, uint64_t size, uint32_t seed)
{
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        const size_t chunk = 1 << 20;
        uint32_t x = seed ? seed : 0x9e3779b9u;

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        buf = malloc(chunk);
        if (!buf)
                return -ENOMEM;
        /* One continuous stream, so th_fill_random(buf, size, seed) matches the file. */
        for (uint64_t done = 0; done < size;) {
                size_t n = (size_t)MIN((uint64_t)chunk, size - done);
                for (size_t i = 0; i < n; i++) {
                        x ^= x << 13;
                        x ^= x >> 17;
                        x ^= x << 5;
                        buf[i] = (uint8_t)x;
                }
                for (size_t off = 0; off < n;) {
                        ssize_t w = write(fd, buf + off, n - off);
                        if (w < 0)
                                return -errno;
                        off += (size_t)w;
                }
                done += n;
        }
        return 0;
}

char *th_run_first_word(const char *fmt, ...)
{
        _cleanup_free_ char *cmd = NULL;
        char line[4096];
        va_list ap;
        FILE *f;
        char *w = NULL;

        va_start(ap, fmt);
        if (vasprintf(&cmd, fmt, ap) < 0)
                cmd = NULL;
        va_end(ap);
        if (!cmd)
                return NULL;
        f = popen(cmd, "r");
        if (!f)
                return NULL;
        if (fgets(line, sizeof line, f)) {
                size_t n = strcspn(line, " \t\n");
                if (n > 0)
                        w = strndup(line, n);
        }
        if (pclose(f) != 0) {
                free(w);
                return NULL;
        }
        return w;
}

int th_have_program(const char *name)
{
        _cleanup_free_ char *cmd = NULL;

        if (asprintf(&cmd, "command -v '%s' >/dev/null 2>&1", name) < 0)
                return 0;
        return system(cmd) == 0;
}

int th_count_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1; /* the DIR's own fd */
}
