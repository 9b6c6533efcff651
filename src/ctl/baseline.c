/* SPDX-License-Identifier: MIT */
/* baseline.c: an audit's baseline: a checksum file sha256sum -c reads, with a versioned header, the
 * attributes of each file in comment lines, and a trailer that says it is whole */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "ctl/baseline.h"
#include "ctl/macro.h"
#include "ctl/output.h"

static const char *const attr_table[_BASELINE_ATTR_MAX] = {
        [BASELINE_MODE] = "mode",   [BASELINE_UID] = "uid",     [BASELINE_GID] = "gid",
        [BASELINE_INO] = "ino",     [BASELINE_MTIME] = "mtime", [BASELINE_CTIME] = "ctime",
        [BASELINE_XATTRS] = "xattrs",
};

const char *baseline_attr_to_string(BaselineAttr a)
{
        return (int)a >= 0 && a < _BASELINE_ATTR_MAX ? attr_table[a] : NULL;
}

BaselineAttr baseline_attr_from_string(const char *s)
{
        for (BaselineAttr a = 0; s && a < _BASELINE_ATTR_MAX; a++)
                if (streq(attr_table[a], s))
                        return a;
        return _BASELINE_ATTR_INVALID;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* SHA-256 over every extended attribute, names in byte order (see baseline.h); "-" for none, and for a
 * file system without them. */
static int xattrs_digest(const char *path, char ret[static 65])
{
        /* Freed by hand at one exit: clang-tidy 14's analyzer does not see through _cleanup_ here. */
        char *names = NULL, **sorted = NULL;
        void *value = NULL;
        EVP_MD_CTX *ctx = NULL;
        size_t n = 0, alloc = 0;
        ssize_t len;
        uint8_t d[32];
        int r;

        /* The list may grow between the two calls: ERANGE, then ask again. */
        for (;;) {
                len = llistxattr(path, NULL, 0);
                if (len < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
                        len = 0;
                if (len < 0) {
                        r = -errno;
                        goto out;
                }
                if (len == 0) {
                        strcpy(ret, "-");
                        r = 0;
                        goto out;
                }
                free(names);
                names = malloc((size_t)len);
                if (!names) {
                        r = -ENOMEM;
                        goto out;
                }
                len = llistxattr(path, names, (size_t)len);
                if (len >= 0)
                        break;
                if (errno != ERANGE) {
                        r = -errno;
                        goto out;
                }
        }
        for (char *p = names; p < names + len; p += strlen(p) + 1)
                n++;
        sorted = calloc(MAX(n, (size_t)1), sizeof(char *));
        if (!sorted) {
                r = -ENOMEM;
                goto out;
        }
        n = 0;
        for (char *p = names; p < names + len; p += strlen(p) + 1)
                sorted[n++] = p;
        qsort(sorted, n, sizeof(char *), cmp_str);

        /* libcrypto's SHA-256, which libfhash has loaded already: the verbs hash nothing themselves
         * but this, a few bytes per file. */
        ctx = EVP_MD_CTX_new();
        r = ctx ? 0 : -ENOMEM;
        if (r >= 0 && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1)
                r = -EIO;
        for (size_t i = 0; r >= 0 && i < n; i++) {
                ssize_t vlen = lgetxattr(path, sorted[i], NULL, 0);
                uint8_t le[8];

                if (vlen < 0 && errno == ENODATA)
                        continue; /* removed meanwhile */
                if (vlen < 0) {
                        r = -errno;
                        break;
                }
                if ((size_t)vlen > alloc) {
                        void *p = realloc(value, (size_t)vlen);
                        if (!p) {
                                r = -ENOMEM;
                                break;
                        }
                        value = p;
                        alloc = (size_t)vlen;
                }
                vlen = vlen > 0 ? lgetxattr(path, sorted[i], value, (size_t)vlen) : 0;
                if (vlen < 0) {
                        r = -errno;
                        break;
                }
                for (int b = 0; b < 8; b++)
                        le[b] = (uint8_t)((uint64_t)vlen >> (8 * b));
                if (EVP_DigestUpdate(ctx, sorted[i], strlen(sorted[i]) + 1) != 1 ||
                    EVP_DigestUpdate(ctx, le, sizeof(le)) != 1 || EVP_DigestUpdate(ctx, value, (size_t)vlen) != 1)
                        r = -EIO;
        }
        if (r >= 0 && EVP_DigestFinal_ex(ctx, d, NULL) != 1)
                r = -EIO;
        if (r >= 0)
                hex_from_bytes(d, sizeof(d), ret);
        EVP_MD_CTX_free(ctx);
out:
        free(value);
        free(sorted);
        free(names);
        return r;
}

int baseline_attrs_get(const char *path, unsigned mask, BaselineAttrs *ret)
{
        BaselineAttrs a = { .mask = mask };
        struct stat st;
        int r;

        if (mask == 0) {
                *ret = a;
                return 0;
        }
        if (lstat(path, &st) < 0)
                return -errno;
        a.mode = st.st_mode;
        a.uid = st.st_uid;
        a.gid = st.st_gid;
        a.ino = (uint64_t)st.st_ino;
        a.mtime_sec = (int64_t)st.st_mtim.tv_sec;
        a.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
        a.ctime_sec = (int64_t)st.st_ctim.tv_sec;
        a.ctime_nsec = (uint32_t)st.st_ctim.tv_nsec;
        if (mask & (1u << BASELINE_XATTRS)) {
                r = xattrs_digest(path, a.xattrs);
                if (r < 0)
                        return r;
        }
        *ret = a;
        return 0;
}

static bool parse_u64(const char *s, size_t n, int base, uint64_t *ret)
{
        uint64_t v = 0;

        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned d = (unsigned)(s[i] - '0');
                if (d >= (unsigned)base || v > (UINT64_MAX - d) / (uint64_t)base)
                        return false;
                v = v * (uint64_t)base + d;
        }
        *ret = v;
        return true;
}

/* "SEC.NSEC" with nine digits of nanoseconds. */
static bool parse_time(const char *s, size_t n, int64_t *ret_sec, uint32_t *ret_nsec)
{
        const char *dot = memchr(s, '.', n);
        uint64_t sec, nsec;

        if (!dot || (size_t)(s + n - dot - 1) != 9 || !parse_u64(s, (size_t)(dot - s), 10, &sec) ||
            !parse_u64(dot + 1, 9, 10, &nsec) || sec > INT64_MAX)
                return false;
        *ret_sec = (int64_t)sec;
        *ret_nsec = (uint32_t)nsec;
        return true;
}

int baseline_attrs_parse(const char *s, size_t len, BaselineAttrs *ret)
{
        BaselineAttrs a = {};
        const char *end = s + len;

        while (s < end) {
                const char *sp = memchr(s, ' ', (size_t)(end - s)), *eq;
                size_t n = sp ? (size_t)(sp - s) : (size_t)(end - s);
                char key[16];
                uint64_t v;
                BaselineAttr k;

                eq = memchr(s, '=', n);
                if (!eq || (size_t)(eq - s) >= sizeof(key))
                        return -EINVAL;
                memcpy(key, s, (size_t)(eq - s));
                key[eq - s] = '\0';
                k = baseline_attr_from_string(key);
                const char *val = eq + 1;
                size_t vn = n - (size_t)(val - s);
                bool ok;

                switch (k) {
                case BASELINE_MODE:
                        ok = parse_u64(val, vn, 8, &v) && v <= 0177777;
                        a.mode = (mode_t)v;
                        break;
                case BASELINE_UID:
                case BASELINE_GID:
                        ok = parse_u64(val, vn, 10, &v) && v <= UINT32_MAX;
                        if (k == BASELINE_UID)
                                a.uid = (uid_t)v;
                        else
                                a.gid = (gid_t)v;
                        break;
                case BASELINE_INO:
                        ok = parse_u64(val, vn, 10, &a.ino);
                        break;
                case BASELINE_MTIME:
                        ok = parse_time(val, vn, &a.mtime_sec, &a.mtime_nsec);
                        break;
                case BASELINE_CTIME:
                        ok = parse_time(val, vn, &a.ctime_sec, &a.ctime_nsec);
                        break;
                case BASELINE_XATTRS:
                        ok = vn == 1 || vn == 64;
                        if (ok) {
                                /* hex_to_bytes() wants the digits NUL-terminated. */
                                memcpy(a.xattrs, val, vn);
                                a.xattrs[vn] = '\0';
                                ok = vn == 1 ? val[0] == '-' : hex_to_bytes(a.xattrs, (uint8_t[32]){}, 32) >= 0;
                        }
                        break;
                default:
                        ok = true; /* a key of a later version: not compared */
                        break;
                }
                if (!ok)
                        return -EINVAL;
                if (k >= 0)
                        a.mask |= 1u << k;
                s += n;
                while (s < end && *s == ' ')
                        s++;
        }
        *ret = a;
        return 0;
}

int baseline_attrs_write(FILE *f, const BaselineAttrs *a)
{
        const char *sep = "";

        for (BaselineAttr k = 0; k < _BASELINE_ATTR_MAX; k++) {
                if (!(a->mask & (1u << k)))
                        continue;
                fprintf(f, "%s%s=", sep, baseline_attr_to_string(k));
                sep = " ";
                switch (k) {
                case BASELINE_MODE:
                        fprintf(f, "%o", (unsigned)a->mode);
                        break;
                case BASELINE_UID:
                        fprintf(f, "%u", (unsigned)a->uid);
                        break;
                case BASELINE_GID:
                        fprintf(f, "%u", (unsigned)a->gid);
                        break;
                case BASELINE_INO:
                        fprintf(f, "%" PRIu64, a->ino);
                        break;
                case BASELINE_MTIME:
                        fprintf(f, "%" PRId64 ".%09u", a->mtime_sec, a->mtime_nsec);
                        break;
                case BASELINE_CTIME:
                        fprintf(f, "%" PRId64 ".%09u", a->ctime_sec, a->ctime_nsec);
                        break;
                default:
                        fputs(a->xattrs, f);
                        break;
                }
        }
        return ferror(f) ? -EIO : 0;
}

unsigned baseline_attrs_diff(const BaselineAttrs *a, const BaselineAttrs *b)
{
        unsigned both = a->mask & b->mask, d = 0;

        if ((both & (1u << BASELINE_MODE)) && a->mode != b->mode)
                d |= 1u << BASELINE_MODE;
        if ((both & (1u << BASELINE_UID)) && a->uid != b->uid)
                d |= 1u << BASELINE_UID;
        if ((both & (1u << BASELINE_GID)) && a->gid != b->gid)
                d |= 1u << BASELINE_GID;
        if ((both & (1u << BASELINE_INO)) && a->ino != b->ino)
                d |= 1u << BASELINE_INO;
        if ((both & (1u << BASELINE_MTIME)) && (a->mtime_sec != b->mtime_sec || a->mtime_nsec != b->mtime_nsec))
                d |= 1u << BASELINE_MTIME;
        if ((both & (1u << BASELINE_CTIME)) && (a->ctime_sec != b->ctime_sec || a->ctime_nsec != b->ctime_nsec))
                d |= 1u << BASELINE_CTIME;
        if ((both & (1u << BASELINE_XATTRS)) && !streq(a->xattrs, b->xattrs))
                d |= 1u << BASELINE_XATTRS;
        return d;
}

const char *baseline_attrs_format_mask(unsigned mask, char *buf, size_t size)
{
        size_t l = 0;

        buf[0] = '\0';
        for (BaselineAttr k = 0; k < _BASELINE_ATTR_MAX && l < size; k++)
                if (mask & (1u << k)) {
                        int n = snprintf(buf + l, size - l, "%s%s", l ? "," : "", baseline_attr_to_string(k));
                        if (n < 0)
                                break;
                        l += (size_t)n;
                }
        return buf;
}

int baseline_attrs_parse_mask(const char *s, unsigned *ret, const char **ret_bad)
{
        static char bad[32];
        unsigned mask = 0;

        if (streq(s, "all")) {
                *ret = BASELINE_ATTRS_ALL;
                return 0;
        }
        while (*s) {
                size_t n = strcspn(s, ",");
                char key[32];
                BaselineAttr k;

                if (n == 0 || n >= sizeof(key)) {
                        (void)snprintf(bad, sizeof(bad), "%.*s", (int)MIN(n, sizeof(bad) - 1), s);
                        *ret_bad = bad;
                        return -EINVAL;
                }
                memcpy(key, s, n);
                key[n] = '\0';
                k = baseline_attr_from_string(key);
                if (k < 0) {
                        (void)snprintf(bad, sizeof(bad), "%s", key);
                        *ret_bad = bad;
                        return -EINVAL;
                }
                mask |= 1u << k;
                s += n;
                if (*s == ',')
                        s++;
        }
        *ret = mask;
        return 0;
}

/* The text of a "# KEY VALUE" line after "# ", when it starts with key and a space. */
static const char *header_value(const char *line, size_t len, const char *key, size_t *ret_len)
{
        size_t k = strlen(key);

        if (len < 2 + k + 1 || memcmp(line, "# ", 2) != 0 || memcmp(line + 2, key, k) != 0 || line[2 + k] != ' ')
                return NULL;
        *ret_len = len - 3 - k;
        return line + 3 + k;
}

const BaselineAttrs *baseline_info_attrs(const BaselineInfo *info, unsigned line)
{
        size_t lo = 0, hi = info->n_attrs;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (info->attr_line[mid] < line)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < info->n_attrs && info->attr_line[lo] == line ? &info->attrs[lo] : NULL;
}

int baseline_scan(const char *buf, size_t size, BaselineInfo *ret, unsigned *ret_line, const char **ret_why)
{
        BaselineInfo info = {};
        size_t alloc = 0;
        unsigned line = 0;

        for (size_t pos = 0; pos < size;) {
                const char *p = buf + pos, *nl = memchr(p, '\n', size - pos);
                size_t len = nl ? (size_t)(nl - p) : size - pos, vlen;
                const char *v;
                uint64_t n;

                pos += len + (nl ? 1 : 0);
                line++;
                if (len > 0 && p[len - 1] == '\r')
                        len--;
                if (len == 0 || p[0] != '#')
                        continue;
                *ret_line = line;
                if (len >= strlen(BASELINE_MAGIC) && memcmp(p, BASELINE_MAGIC, strlen(BASELINE_MAGIC)) == 0) {
                        v = p + strlen(BASELINE_MAGIC);
                        vlen = len - strlen(BASELINE_MAGIC);
                        if (info.version != 0) {
                                *ret_why = "a second header";
                                goto invalid;
                        }
                        if (!parse_u64(v, vlen, 10, &n) || n != BASELINE_VERSION) {
                                *ret_why = "a baseline of another version (this fhashctl reads version 1)";
                                goto invalid;
                        }
                        info.version = (unsigned)n;
                } else if (info.version == 0)
                        continue; /* a plain manifest's comment */
                else if ((v = header_value(p, len, "attributes", &vlen))) {
                        char *s = strndup(v, vlen);
                        const char *bad;
                        int k;

                        if (!s)
                                goto nomem;
                        k = baseline_attrs_parse_mask(s, &info.mask, &bad);
                        free(s);
                        if (k < 0) {
                                *ret_why = "an unknown attribute in \"# attributes\"";
                                goto invalid;
                        }
                } else if ((v = header_value(p, len, "end", &vlen))) {
                        if (!parse_u64(v, vlen, 10, &n)) {
                                *ret_why = "a bad \"# end\" count";
                                goto invalid;
                        }
                        info.has_end = true;
                        info.end_count = (size_t)n;
                } else if (len >= 3 && memcmp(p, "#@ ", 3) == 0) {
                        if (info.n_attrs == alloc) {
                                size_t na = MAX(alloc * 2, (size_t)256);
                                BaselineAttrs *a = reallocarray(info.attrs, na, sizeof(*a));
                                unsigned *l;

                                if (!a)
                                        goto nomem;
                                info.attrs = a;
                                l = reallocarray(info.attr_line, na, sizeof(*l));
                                if (!l)
                                        goto nomem;
                                info.attr_line = l;
                                alloc = na;
                        }
                        if (baseline_attrs_parse(p + 3, len - 3, &info.attrs[info.n_attrs]) < 0) {
                                *ret_why = "attributes that do not parse";
                                goto invalid;
                        }
                        info.attr_line[info.n_attrs++] = line + 1;
                }
        }
        *ret = info;
        return 0;
invalid:
        baseline_info_done(&info);
        return -EINVAL;
nomem:
        baseline_info_done(&info);
        return -ENOMEM;
}

void baseline_info_done(BaselineInfo *info)
{
        free(info->attrs);
        free(info->attr_line);
        *info = (BaselineInfo){};
}

static int write_all(FILE *f, unsigned version, const char *algo, unsigned mask, bool tagged, bool dot,
                     const BaselineEntry *entries, size_t n)
{
        char list[128];
        int r = 0;

        if (version > 0) {
                fprintf(f, BASELINE_MAGIC "%u\n# algorithm %s\n# attributes %s\n", version, algo,
                        baseline_attrs_format_mask(mask, list, sizeof(list)));
        }
        for (size_t i = 0; r >= 0 && i < n; i++) {
                _cleanup_free_ char *name = NULL;

                if (version > 0 && mask && entries[i].attrs && entries[i].attrs->mask) {
                        fputs("#@ ", f);
                        r = baseline_attrs_write(f, entries[i].attrs);
                        fputc('\n', f);
                }
                if (asprintf(&name, "%s%s", dot ? "./" : "", entries[i].name) < 0)
                        return -ENOMEM;
                if (r >= 0)
                        r = output_write_digest(f, tagged ? OUTPUT_TAGGED : OUTPUT_UNTAGGED, false, algo, name,
                                                entries[i].hex);
        }
        if (r >= 0 && version > 0)
                fprintf(f, "# end %zu\n", n);
        return r;
}

int baseline_write(const char *path, unsigned version, const char *algo, unsigned mask, bool tagged, bool dot,
                   const BaselineEntry *entries, size_t n)
{
        _cleanup_free_ char *tmp = NULL;
        char *dir;
        struct stat st;
        FILE *f;
        int fd, r;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (stat(path, &st) == 0)
                (void)fchmod(fd, st.st_mode & 07777);
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                (void)close(fd);
                (void)unlink(tmp);
                return r;
        }
        r = write_all(f, version, algo, mask, tagged, dot, entries, n);
        /* ENOSPC and EDQUOT may only show at the flush or at fsync(): both are checked. */
        if (r >= 0 && (fflush(f) != 0 || ferror(f)))
                r = -errno ?: -EIO;
        if (r >= 0 && fsync(fileno(f)) < 0)
                r = -errno;
        if (fclose(f) != 0 && r >= 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0) {
                (void)unlink(tmp);
                return r;
        }
        /* The rename itself must reach the disk before the baseline counts as written. */
        dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        free(dir);
        if (fd < 0)
                return 0; /* not a directory we may open: the rename stands as it is */
        r = fsync(fd) < 0 ? -errno : 0;
        (void)close(fd);
        return r;
}
