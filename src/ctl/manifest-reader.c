/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "ctl/macro.h"
#include "ctl/manifest-reader.h"
#include "ctl/output.h"

struct ManifestReader {
        FILE *f;
        ManifestParseOptions o;
        char *line;
        size_t line_alloc;
        unsigned lineno;
        int end;       /* MANIFEST_READ_END or -errno once reading stopped, else 1 */
        int reversed;  /* the manifest's form, where the caller keeps none (ManifestParseOptions) */
        int mtree;     /* an mtree manifest: 1, 0 not, -1 undecided (its first line decides) */
        MtreeParser *mp;
        char *joined;  /* an mtree entry continued over several lines, joined */
        size_t joined_alloc;
};

/* gzip through stdio, so that a compressed manifest is read a line at a time as a plain one. */
static ssize_t gz_read(void *cookie, char *buf, size_t size)
{
        int n = gzread(cookie, buf, (unsigned)MIN(size, (size_t)INT32_MAX));
        int zerr = Z_OK;

        if (n >= 0)
                return n;
        (void)gzerror(cookie, &zerr);
        /* Z_ERRNO: read(2) failed and errno says why; anything else is a damaged stream. */
        if (zerr != Z_ERRNO)
                errno = EBADMSG;
        return -1;
}

static int gz_close(void *cookie)
{
        return gzclose(cookie) == Z_OK ? 0 : -1;
}

/* A FILE over fd: through zlib when the file starts with gzip's magic (a regular file: a pipe
 * cannot be peeked at, and zcat serves it). Takes fd on success (the caller forgets it then). */
static FILE *manifest_fopen(int fd)
{
        struct stat st;
        uint8_t magic[2];
        gzFile gz;
        FILE *f;
        int dfd;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || pread(fd, magic, 2, 0) != 2 || magic[0] != 0x1f ||
            magic[1] != 0x8b)
                return fdopen(fd, "r");
        /* zlib closes the fd it was given: a duplicate, so that fd is the caller's on every failure. */
        dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return NULL;
        gz = gzdopen(dfd, "rb");
        if (!gz) {
                safe_close(dfd);
                errno = ENOMEM;
                return NULL;
        }
        f = fopencookie(gz, "r", (cookie_io_functions_t){ .read = gz_read, .close = gz_close });
        if (!f) {
                int e = errno;
                (void)gzclose_r(gz);
                errno = e;
                return NULL;
        }
        /* The FILE holds the duplicate: fd, which it takes on success, goes now. */
        safe_close(fd);
        return f;
}

int manifest_reader_new(const char *path, const ManifestParseOptions *o, ManifestReader **ret)
{
        _cleanup_close_ int fd = -EBADF;
        ManifestReader *r;

        if (streq(path, "-"))
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        else
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->f = manifest_fopen(fd);
        if (!r->f) {
                free(r);
                return negative_errno();
        }
        TAKE_FD(fd);
        r->o = *o;
        r->reversed = -1;
        if (!r->o.bsd_reversed)
                r->o.bsd_reversed = &r->reversed;
        r->mtree = o->zero ? 0 : mtree_detect_filename(path) ? 1 : -1;
        r->end = 1;
        *ret = r;
        return 0;
}

/* Reads the next line into r->line: its length without the terminator, or -1 at the end or on an
 * error (r->end says which). */
static ssize_t reader_getline(ManifestReader *r)
{
        char end = r->o.zero ? '\0' : '\n';
        ssize_t n;

        errno = 0;
        n = getdelim(&r->line, &r->line_alloc, end, r->f);
        if (n < 0) {
                /* getdelim() fails ENOMEM without marking the stream: not an end. */
                r->end = ferror(r->f) || errno == ENOMEM ? -(errno ?: EIO) : MANIFEST_READ_END;
                return -1;
        }
        r->lineno++;
        if (n > 0 && r->line[n - 1] == end)
                n--;
        return n;
}

/* An mtree entry from the line just read (n bytes) and those that continue it ('\' at the end):
 * as manifest_reader_next() returns. */
static int reader_next_mtree(ManifestReader *r, ssize_t n, ManifestEntry *ret)
{
        unsigned first = r->lineno;
        size_t len = 0;
        ManifestEntry e = { .is_mtree = true, .tagged = true };
        int k;

        if (!r->mp) {
                k = mtree_parser_new(&r->mp);
                if (k < 0)
                        return k;
        }
        for (;;) {
                bool more = n > 0 && r->line[n - 1] == '\\';
                size_t add = (size_t)n - (more ? 1 : 0);

                if (len + add + 1 > r->joined_alloc) {
                        size_t na = MAX(r->joined_alloc * 2, len + add + 1);
                        char *nj = realloc(r->joined, na);
                        if (!nj)
                                return -ENOMEM;
                        r->joined = nj;
                        r->joined_alloc = na;
                }
                memcpy(r->joined + len, r->line, add);
                len += add;
                if (!more)
                        break;
                n = reader_getline(r);
                if (n < 0) {
                        if (r->end < 0)
                                return r->end;
                        break; /* continued past the end: the entry as it stands */
                }
        }
        k = mtree_parse_line(r->mp, r->joined, len, r->o.algo, &e.name, &e.algo, e.hex, &e.mtree);
        if (k <= 0)
                return k == 0 ? 0 : k == -ENOMEM ? k : -EINVAL;
        e.line = first;
        *ret = e;
        return 1;
}

int manifest_reader_next(ManifestReader *r, ManifestEntry *ret)
{
        while (r->end > 0) {
                ManifestEntry e;
                ssize_t n;
                int k;

                n = reader_getline(r);
                if (n < 0)
                        break;
                if (r->mtree < 0) {
                        size_t b = 0;

                        while (b < (size_t)n && (r->line[b] == ' ' || r->line[b] == '\t' || r->line[b] == '\r'))
                                b++;
                        if (b < (size_t)n)
                                r->mtree = mtree_detect(r->line, (size_t)n);
                }
                if (r->mtree > 0) {
                        unsigned line = r->lineno;

                        k = reader_next_mtree(r, n, ret);
                        if (k == 0)
                                continue;
                        if (k == -ENOMEM)
                                return k;
                        if (k < 0 && r->end < 0)
                                break;
                        if (k < 0) {
                                *ret = (ManifestEntry){ .line = line };
                                return MANIFEST_READ_BAD;
                        }
                        return MANIFEST_READ_ENTRY;
                }
                k = manifest_parse_line_with(r->line, (size_t)n, &r->o, &e);
                if (k == 0)
                        continue;
                if (k == -ENOMEM)
                        return k;
                if (k < 0) {
                        *ret = (ManifestEntry){ .line = r->lineno };
                        return MANIFEST_READ_BAD;
                }
                e.line = r->lineno;
                *ret = e;
                return MANIFEST_READ_ENTRY;
        }
        return r->end;
}

ManifestReader *manifest_reader_free(ManifestReader *r)
{
        if (!r)
                return NULL;
        if (r->f)
                (void)fclose(r->f);
        free(r->line);
        free(r->joined);
        mtree_parser_free(r->mp);
        return mfree(r);
}

int manifest_read(const char *path, char **ret, size_t *ret_size)
{
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, alloc = 0;

        if (streq(path, "-"))
                fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
        else
                fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        for (;;) {
                ssize_t k;

                if (size == alloc) {
                        size_t na = MAX(alloc * 2, (size_t)65536);
                        char *nb = realloc(buf, na);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        alloc = na;
                }
                k = read(fd, buf + size, alloc - size);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                size += (size_t)k;
        }
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}
