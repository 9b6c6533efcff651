/* SPDX-License-Identifier: MIT */
/* fsinfo.c: what kind of file system an fd is on, found without waiting on that file system */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/macro.h"
#include "io/fsinfo.h"

/* File systems whose files are made when read, with permission checks against the reader's
 * credentials at that moment (fhashd's, not its caller's). */
static const char *const pseudo_types[] = {
        "proc",      "sysfs",      "debugfs", "tracefs", "securityfs", "configfs", "bpf",
        "cgroup",    "cgroup2",    "pstore",  "efivarfs", "fusectl",   "binfmt_misc",
        "selinuxfs", "smackfs",    "nsfs",    "rpc_pipefs", "nfsd",    "autofs",
};

/* File systems whose requests may wait on a network peer. */
static const char *const remote_types[] = {
        "nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "afs", "ncpfs", "coda", "gfs2", "ocfs2", "lustre",
};

static bool in_list(const char *type, const char *const *list, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (streq(type, list[i]))
                        return true;
        return false;
}

FsClass fsinfo_class_of_type(const char *type)
{
        if (streq(type, "fuse") || streq(type, "fuseblk") || strncmp(type, "fuse.", 5) == 0 ||
            strncmp(type, "fuseblk.", 8) == 0)
                return FS_CLASS_FUSE;
        if (in_list(type, pseudo_types, ELEMENTSOF(pseudo_types)))
                return FS_CLASS_PSEUDO;
        if (in_list(type, remote_types, ELEMENTSOF(remote_types)))
                return FS_CLASS_REMOTE;
        return FS_CLASS_LOCAL;
}

static const char *const fs_class_table[_FS_CLASS_MAX] = {
        [FS_CLASS_LOCAL] = "local", [FS_CLASS_PSEUDO] = "pseudo", [FS_CLASS_FUSE] = "fuse",
        [FS_CLASS_REMOTE] = "remote", [FS_CLASS_UNKNOWN] = "unknown",
};

const char *fs_class_to_string(FsClass c)
{
        return c >= 0 && c < _FS_CLASS_MAX ? fs_class_table[c] : NULL;
}

int fsinfo_stat(int fd, uint32_t *ret_mode, uint64_t *ret_mount_id)
{
        struct statx stx = {};

        /* glibc 2.36's struct statx does not name stx_mnt_id: the kernel's struct and the raw call. */
        if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE | STATX_MNT_ID, &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_MNT_ID) || !(stx.stx_mask & STATX_TYPE))
                return -EOPNOTSUPP;
        *ret_mode = stx.stx_mode;
        *ret_mount_id = stx.stx_mnt_id;
        return 0;
}

static int mount_id_of_fd(int fd, uint64_t *ret)
{
        uint32_t mode;

        return fsinfo_stat(fd, &mode, ret);
}

/* Parses one mountinfo line, "ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - TYPE SOURCE SUPEROPTS",
 * into its mount id and ret. 0, or -EBADMSG if it cannot be read so. */
static int parse_mount(const char *line, uint64_t *ret_id, FsInfo *ret)
{
        const char *sep, *type, *end, *source, *super;
        char *idend;
        uint64_t v;

        errno = 0;
        v = strtoull(line, &idend, 10);
        if (errno != 0 || idend == line || *idend != ' ')
                return -EBADMSG;
        sep = strstr(line, " - ");
        if (!sep)
                return -EBADMSG;
        type = sep + 3;
        end = strchr(type, ' ');
        if (!end || (size_t)(end - type) >= sizeof(ret->type))
                return -EBADMSG;
        *ret = (FsInfo){ .class = FS_CLASS_LOCAL };
        memcpy(ret->type, type, (size_t)(end - type));
        ret->type[end - type] = '\0';
        ret->class = fsinfo_class_of_type(ret->type);
        source = end + 1;
        super = strchr(source, ' ');
        if (ret->class == FS_CLASS_FUSE && super) {
                /* The kernel prints user_id as seen from the initial user namespace. */
                const char *u = strstr(super, "user_id=");

                ret->root_mounted = u && (u[-1] == ' ' || u[-1] == ',') && u[8] == '0' &&
                                    (u[9] == ',' || u[9] == '\n' || u[9] == '\0');
        }
        *ret_id = v;
        return 0;
}

static void fclosep(FILE **f)
{
        if (*f)
                (void)fclose(*f);
}

int fsinfo_of_fd(int fd, FsInfo *ret)
{
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        size_t n = 0;
        uint64_t id = 0;
        int r;

        r = mount_id_of_fd(fd, &id);
        if (r < 0)
                return r;
        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return -errno;
        while (getline(&line, &n, f) >= 0) {
                uint64_t mid = 0;

                r = parse_mount(line, &mid, ret);
                if (r < 0)
                        return r;
                if (mid == id)
                        return 0;
        }
        if (ferror(f))
                return -EIO;
        *ret = (FsInfo){ .class = FS_CLASS_UNKNOWN };
        return 0;
}

typedef struct FsMount {
        uint64_t id;
        FsInfo info;
} FsMount;

struct FsTable {
        int fd;            /* /proc/self/mountinfo, which polls POLLPRI when the table changes */
        bool valid;
        FsMount *mounts;
        size_t n, n_alloc;
        char *text;
        size_t text_alloc;
};

int fs_table_new(FsTable **ret)
{
        FsTable *t = calloc(1, sizeof(*t));

        if (!t)
                return -ENOMEM;
        t->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (t->fd < 0) {
                int r = -errno;

                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

FsTable *fs_table_free(FsTable *t)
{
        if (!t)
                return NULL;
        t->fd = safe_close(t->fd);
        free(t->mounts);
        free(t->text);
        return mfree(t);
}

static int fs_table_read(FsTable *t)
{
        size_t len = 0;

        t->valid = false;
        if (lseek(t->fd, 0, SEEK_SET) < 0)
                return -errno;
        for (;;) {
                ssize_t k;

                if (t->text_alloc - len < 4096) {
                        size_t a = MAX((size_t)65536, 2 * t->text_alloc);
                        char *p = realloc(t->text, a);

                        if (!p)
                                return -ENOMEM;
                        t->text = p;
                        t->text_alloc = a;
                }
                k = read(t->fd, t->text + len, t->text_alloc - len - 1);
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        t->text[len] = '\0';
        t->n = 0;
        for (char *line = t->text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
                FsMount m;

                nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                if (parse_mount(line, &m.id, &m.info) < 0)
                        return -EBADMSG;
                if (t->n == t->n_alloc) {
                        size_t a = MAX((size_t)64, 2 * t->n_alloc);
                        FsMount *p = reallocarray(t->mounts, a, sizeof(FsMount));

                        if (!p)
                                return -ENOMEM;
                        t->mounts = p;
                        t->n_alloc = a;
                }
                t->mounts[t->n++] = m;
        }
        t->valid = true;
        return 0;
}

int fs_table_refresh(FsTable *t)
{
        struct pollfd p = { .fd = t->fd, .events = POLLPRI };

        /* The poll reports each change once; read after it, so that a change during the read is
         * seen by the next refresh. */
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
                t->valid = false;
        return t->valid ? 0 : fs_table_read(t);
}

int fs_table_lookup(FsTable *t, int fd, FsInfo *ret)
{
        uint64_t id = 0;
        int r;

        r = mount_id_of_fd(fd, &id);
        if (r < 0)
                return r;
        r = fs_table_refresh(t);
        if (r < 0)
                return r;
        return fs_table_lookup_id(t, id, ret);
}

int fs_table_lookup_id(FsTable *t, uint64_t id, FsInfo *ret)
{
        if (!t->valid)
                return -ESTALE;
        for (size_t i = 0; i < t->n; i++)
                if (t->mounts[i].id == id) {
                        *ret = t->mounts[i].info;
                        return 0;
                }
        *ret = (FsInfo){ .class = FS_CLASS_UNKNOWN };
        return 0;
}
