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
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "basic/macro.h"
#include "io/fsinfo.h"

#define FUSE_SUPER_MAGIC 0x65735546u
#define FUSECTL_SUPER_MAGIC 0x65735543u

/* File systems not local to this machine's disks and memory, by the name mountinfo gives and the
 * f_type statfs gives (where a mount of this namespace does not say). */
static const struct {
        const char *name;
        uint32_t magic;
        FsClass class;
        bool stacked; /* on other mounts, which may be FUSE: unknown where the mount is not ours */
} known_types[] = {
        /* Files made when read, with permission checks against the reader's credentials at that
         * moment (fhashd's, not its caller's). */
        { "proc", 0x9fa0, FS_CLASS_PSEUDO },
        { "sysfs", 0x62656572, FS_CLASS_PSEUDO },
        { "debugfs", 0x64626720, FS_CLASS_PSEUDO },
        { "tracefs", 0x74726163, FS_CLASS_PSEUDO },
        { "securityfs", 0x73636673, FS_CLASS_PSEUDO },
        { "configfs", 0x62656570, FS_CLASS_PSEUDO },
        { "bpf", 0xcafe4a11, FS_CLASS_PSEUDO },
        { "cgroup", 0x27e0eb, FS_CLASS_PSEUDO },
        { "cgroup2", 0x63677270, FS_CLASS_PSEUDO },
        { "pstore", 0x6165676c, FS_CLASS_PSEUDO },
        { "efivarfs", 0xde5e81e4, FS_CLASS_PSEUDO },
        { "fusectl", FUSECTL_SUPER_MAGIC, FS_CLASS_PSEUDO },
        { "binfmt_misc", 0x42494e4d, FS_CLASS_PSEUDO },
        { "selinuxfs", 0xf97cff8c, FS_CLASS_PSEUDO },
        { "smackfs", 0x43415d53, FS_CLASS_PSEUDO },
        { "nsfs", 0x6e736673, FS_CLASS_PSEUDO },
        { "rpc_pipefs", 0x67596969, FS_CLASS_PSEUDO },
        { "nfsd", 0x6e667364, FS_CLASS_PSEUDO },
        { "autofs", 0x0187, FS_CLASS_PSEUDO },
        /* Requests that may wait on a network peer. */
        { "nfs", 0x6969, FS_CLASS_REMOTE },
        { "nfs4", 0x6969, FS_CLASS_REMOTE },
        { "cifs", 0xff534d42, FS_CLASS_REMOTE },
        { "smb3", 0xfe534d42, FS_CLASS_REMOTE },
        { "smbfs", 0x517b, FS_CLASS_REMOTE },
        { "9p", 0x01021997, FS_CLASS_REMOTE },
        { "ceph", 0x00c36400, FS_CLASS_REMOTE },
        { "afs", 0x6b414653, FS_CLASS_REMOTE },
        { "afs", 0x5346414f, FS_CLASS_REMOTE },
        { "ncpfs", 0x564c, FS_CLASS_REMOTE },
        { "coda", 0x73757245, FS_CLASS_REMOTE },
        { "gfs2", 0x01161970, FS_CLASS_REMOTE },
        { "ocfs2", 0x7461636f, FS_CLASS_REMOTE },
        { "lustre", 0x0bd00bd0, FS_CLASS_REMOTE },
        /* A user's server answers every request, or never does ("fuse.sshfs" and the like are
         * subtypes, see fsinfo_class_of_type()). */
        { "fuse", FUSE_SUPER_MAGIC, FS_CLASS_FUSE },
        { "fuseblk", FUSE_SUPER_MAGIC, FS_CLASS_FUSE },
        { "overlay", 0x794c7630, FS_CLASS_LOCAL, .stacked = true },
        { "ecryptfs", 0xf15f, FS_CLASS_LOCAL, .stacked = true },
};

FsClass fsinfo_class_of_type(const char *type)
{
        if (strncmp(type, "fuse.", 5) == 0 || strncmp(type, "fuseblk.", 8) == 0)
                return FS_CLASS_FUSE;
        for (size_t i = 0; i < ELEMENTSOF(known_types); i++)
                if (streq(type, known_types[i].name))
                        return known_types[i].class;
        return FS_CLASS_LOCAL;
}

/* A file system this namespace has no mount of, by its statfs f_type: its class and name. */
static void fsinfo_of_magic(uint64_t magic, FsInfo *ret)
{
        *ret = (FsInfo){ .class = FS_CLASS_LOCAL };
        for (size_t i = 0; i < ELEMENTSOF(known_types); i++)
                if (known_types[i].magic == magic) {
                        ret->class = known_types[i].stacked ? FS_CLASS_UNKNOWN : known_types[i].class;
                        (void)snprintf(ret->type, sizeof(ret->type), "%s", known_types[i].name);
                        return;
                }
        (void)snprintf(ret->type, sizeof(ret->type), "0x%" PRIx64, magic);
}

static const char *const fs_class_table[_FS_CLASS_MAX] = {
        [FS_CLASS_LOCAL] = "local", [FS_CLASS_PSEUDO] = "pseudo", [FS_CLASS_FUSE] = "fuse",
        [FS_CLASS_REMOTE] = "remote", [FS_CLASS_UNKNOWN] = "unknown",
};

const char *fs_class_to_string(FsClass c)
{
        return c >= 0 && c < _FS_CLASS_MAX ? fs_class_table[c] : NULL;
}

int fsinfo_statx(int fd, unsigned mask, FsStat *ret, struct statx *ret_stx)
{
        struct statx stx = {};

        /* glibc 2.36's struct statx does not name stx_mnt_id: the kernel's struct and the raw call. */
        if (syscall(SYS_statx, fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, mask | STATX_TYPE | STATX_MNT_ID, &stx) < 0)
                return -errno;
        if (!(stx.stx_mask & STATX_MNT_ID) || !(stx.stx_mask & STATX_TYPE))
                return -EOPNOTSUPP;
        *ret = (FsStat){
                .mode = stx.stx_mode,
                .mount_id = stx.stx_mnt_id,
                .dev_major = stx.stx_dev_major,
                .dev_minor = stx.stx_dev_minor,
        };
        if (ret_stx)
                *ret_stx = stx;
        return 0;
}

int fsinfo_stat(int fd, FsStat *ret)
{
        return fsinfo_statx(fd, 0, ret, NULL);
}

/* Parses one mountinfo line, "ID PARENT MAJ:MIN ROOT POINT OPTS [TAGS...] - TYPE SOURCE SUPEROPTS",
 * into its mount id, device and ret. 0, or -EBADMSG if it cannot be read so. */
static int parse_mount(const char *line, uint64_t *ret_id, uint32_t *ret_major, uint32_t *ret_minor, FsInfo *ret)
{
        const char *sep, *type, *end, *source, *super;
        unsigned long maj, min;
        char *idend, *p;
        uint64_t v;

        errno = 0;
        v = strtoull(line, &idend, 10);
        if (errno != 0 || idend == line || *idend != ' ')
                return -EBADMSG;
        /* The parent's id, then the device. */
        errno = 0;
        (void)strtoul(idend, &p, 10);
        if (errno != 0 || p == idend || *p != ' ')
                return -EBADMSG;
        maj = strtoul(p + 1, &p, 10);
        if (errno != 0 || *p != ':')
                return -EBADMSG;
        min = strtoul(p + 1, &p, 10);
        if (errno != 0 || *p != ' ' || maj > UINT32_MAX || min > UINT32_MAX)
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
        *ret_major = (uint32_t)maj;
        *ret_minor = (uint32_t)min;
        return 0;
}

int fsinfo_of_fd(int fd, FsInfo *ret)
{
        FsTable *t = NULL;
        int r;

        r = fs_table_new(&t);
        if (r < 0 || !t)
                return r < 0 ? r : -ENOMEM;
        r = fs_table_lookup(t, fd, ret);
        fs_table_free(t);
        return r;
}

typedef struct FsMount {
        uint64_t id;
        uint32_t major, minor;
        FsInfo info;
} FsMount;

struct FsTable {
        int fd;            /* /proc/self/mountinfo, which polls POLLPRI when the table changes */
        int fusectl_fd;    /* /sys/fs/fuse/connections where fusectl is mounted there, or -1 */
        uint32_t memfd_minor; /* the kernel's own tmpfs for memfds (major 0), unlisted; 0 if unknown */
        bool valid;
        FsMount *mounts;
        size_t n, n_alloc;
        char *text;
        size_t text_alloc;
};

/* Where FUSE connections are listed, looked for again with each read of the mount table. */
static void fusectl_open(FsTable *t)
{
        struct statfs sfs;
        int fd;

        /* The new one before the old one goes: a caller that counts our fds sees the same number. */
        fd = open("/sys/fs/fuse/connections", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0 && (fstatfs(fd, &sfs) < 0 || (uint64_t)sfs.f_type != FUSECTL_SUPER_MAGIC))
                fd = safe_close(fd);
        safe_close(t->fusectl_fd);
        t->fusectl_fd = fd;
}

int fs_table_new(FsTable **ret)
{
        FsTable *t = calloc(1, sizeof(*t));
        int m;

        if (!t)
                return -ENOMEM;
        t->fusectl_fd = -1;
        t->fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
        if (t->fd < 0) {
                int r = -errno;

                free(t);
                return r;
        }
        fusectl_open(t);
        /* Callers hash memfds: their file system is known without fusectl. */
        m = memfd_create("fhash-fsinfo", MFD_CLOEXEC);
        if (m >= 0) {
                FsStat st = {};

                if (fsinfo_stat(m, &st) >= 0 && st.dev_major == 0)
                        t->memfd_minor = st.dev_minor;
                safe_close(m);
        }
        *ret = t;
        return 0;
}

FsTable *fs_table_free(FsTable *t)
{
        if (!t)
                return NULL;
        t->fd = safe_close(t->fd);
        t->fusectl_fd = safe_close(t->fusectl_fd);
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
                if (parse_mount(line, &m.id, &m.major, &m.minor, &m.info) < 0)
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
        fusectl_open(t);
        t->valid = true;
        return 0;
}

int fs_table_refresh(FsTable *t)
{
        struct pollfd p = { .fd = t->fd, .events = POLLPRI };
        int r;

        /* The poll reports each change once; read after it, so that a change during the read is
         * seen by the next refresh. */
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLPRI | POLLERR)))
                t->valid = false;
        if (t->valid)
                return 0;
        r = fs_table_read(t);
        return r < 0 ? r : 1;
}

int fs_table_lookup(FsTable *t, int fd, FsInfo *ret)
{
        FsStat st = {};
        int r;

        r = fsinfo_stat(fd, &st);
        if (r < 0)
                return r;
        r = fs_table_refresh(t);
        if (r < 0)
                return r;
        return fs_table_classify(t, fd, &st, ret);
}

int fs_table_classify(FsTable *t, int fd, const FsStat *st, FsInfo *ret)
{
        const FsMount *by_dev = NULL;
        struct statfs sfs;

        if (!t->valid)
                return -ESTALE;
        for (size_t i = 0; i < t->n; i++) {
                if (t->mounts[i].id == st->mount_id) {
                        *ret = t->mounts[i].info;
                        return 0;
                }
                if (!by_dev && t->mounts[i].major == st->dev_major && t->mounts[i].minor == st->dev_minor)
                        by_dev = &t->mounts[i];
        }
        /* Another namespace's mount of a file system this one has too: the same superblock. */
        if (by_dev) {
                *ret = by_dev->info;
                return 0;
        }
        *ret = (FsInfo){ .class = FS_CLASS_UNKNOWN };
        if (st->dev_major == 0 && t->memfd_minor != 0 && st->dev_minor == t->memfd_minor) {
                *ret = (FsInfo){ .class = FS_CLASS_LOCAL, .type = "memfd" };
                return 0;
        }
        /* FUSE has anonymous devices only (fuseblk, on a block device, can only be mounted by root).
         * A FUSE connection is named in fusectl by its device; without fusectl, only a kernel without
         * FUSE says it cannot be FUSE. */
        if (st->dev_major == 0) {
                char name[16];

                if (t->fusectl_fd < 0) {
                        if (access("/sys/fs/fuse", F_OK) < 0 && errno == ENOENT)
                                goto not_fuse;
                        return 0; /* it may be FUSE: fstatfs() could wait on its server */
                }
                (void)snprintf(name, sizeof(name), "%u", st->dev_minor);
                if (faccessat(t->fusectl_fd, name, F_OK, AT_SYMLINK_NOFOLLOW) >= 0) {
                        ret->class = FS_CLASS_FUSE;
                        strcpy(ret->type, "fuse");
                        return 0;
                }
        }
not_fuse:
        /* Not FUSE: its statfs does not wait on a server of a user's. */
        if (fstatfs(fd, &sfs) < 0)
                return 0;
        fsinfo_of_magic((uint64_t)sfs.f_type, ret);
        return 0;
}
