/* SPDX-License-Identifier: MIT */
/* fsinfo.h: what kind of file system an fd is on, found without waiting on that file system */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef enum FsClass {
        FS_CLASS_LOCAL,    /* disks and memory: ext4, xfs, btrfs, tmpfs, devtmpfs, ... */
        FS_CLASS_PSEUDO,   /* procfs, sysfs, debugfs, ...: made at read time, checked against the reader */
        FS_CLASS_FUSE,     /* a user-space server answers every request, or never does */
        FS_CLASS_REMOTE,   /* nfs, cifs, 9p, ...: requests may wait on the network */
        FS_CLASS_UNKNOWN,  /* not known without asking the file system itself, or stacked (overlayfs,
                            * ecryptfs) on a mount this process cannot see */
        _FS_CLASS_MAX,
} FsClass;

typedef struct FsInfo {
        FsClass class;
        bool root_mounted;  /* FUSE: mounted by uid 0 of the initial user namespace ("user_id=0") */
        char type[32];      /* as /proc/self/mountinfo names it, or statfs's f_type ("0x...") where
                             * no mount of this namespace has the file's device; "" if unknown */
} FsInfo;

/* What one statx(AT_STATX_DONT_SYNC) says of an fd without asking its file system. */
typedef struct FsStat {
        uint32_t mode;      /* st_mode's bits: type and permissions */
        uint64_t mount_id;  /* the mount the fd was opened through, in the opener's namespace */
        uint32_t dev_major, dev_minor; /* st_dev: the file system's device */
} FsStat;

/* One statx(AT_STATX_DONT_SYNC): fills in a FUSE file system's cached attributes without asking its
 * server; fails (-EACCES) on a FUSE mount that does not allow this process (one mounted in another
 * user's namespace) rather than waiting on it. Returns 0 or -errno. */
int fsinfo_stat(int fd, FsStat *ret);
/* fsinfo_stat() asking for mask too, in the same statx: *ret_stx has what it said (a struct statx of
 * linux/stat.h, which sys/stat.h's is since glibc 2.28). */
struct statx;
int fsinfo_statx(int fd, unsigned mask, FsStat *ret, struct statx *ret_stx);

/* The file system of fd, through a table read for this call (fs_table_lookup() for many). */
int fsinfo_of_fd(int fd, FsInfo *ret);

/* The mount table, read once and again only after the kernel says it changed (a poll of
 * /proc/self/mountinfo): reading it whole for each fd cost fhashd most of its time for 20,000 small
 * files. Mount ids are never reused while a mount lives, and a change (an unmount too) is seen
 * before the next lookup. Not thread-safe.
 *
 * A file is looked up by its mount id, then by its device: the fd of a caller in another mount
 * namespace (any caller of fhashd under its unit, which has a namespace of its own) names a mount
 * of that namespace, whose id this one does not list, but the same file system, whose device it
 * does. Where neither is listed (a btrfs subvolume's own device, a mount made in a user
 * namespace), fstatfs() says what the file system is, unless it may be FUSE: fstatfs asks a FUSE
 * server that allows this process, and one may never answer. A FUSE file system is known by its
 * connection in fusectl (/sys/fs/fuse/connections/DEV); without fusectl, on a machine that has FUSE,
 * the file system stays FS_CLASS_UNKNOWN. */
typedef struct FsTable FsTable;
int fs_table_new(FsTable **ret);
FsTable *fs_table_free(FsTable *t);
/* The file system of fd: fsinfo_stat(), the table refreshed, fs_table_classify(). */
int fs_table_lookup(FsTable *t, int fd, FsInfo *ret);
/* Reads the table again if the kernel said it changed since (then returns 1). For a batch of
 * lookups. */
int fs_table_refresh(FsTable *t);
/* The file system of fd, whose fsinfo_stat() is st, as of the last refresh; -ESTALE if the table
 * could not be read. */
int fs_table_classify(FsTable *t, int fd, const FsStat *st, FsInfo *ret);

/* The class of a file system type name as mountinfo gives it ("proc", "fuse.sshfs", ...). */
FsClass fsinfo_class_of_type(const char *type);

const char *fs_class_to_string(FsClass c);
