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
        FS_CLASS_UNKNOWN,  /* a mount this process cannot see (another mount namespace) */
        _FS_CLASS_MAX,
} FsClass;

typedef struct FsInfo {
        FsClass class;
        bool root_mounted;  /* FUSE: mounted by uid 0 of the initial user namespace ("user_id=0") */
        char type[32];      /* as /proc/self/mountinfo names it; "" for FS_CLASS_UNKNOWN */
} FsInfo;

/* The file system of fd. Asks statx(AT_STATX_DONT_SYNC) for the mount id and looks it up in
 * /proc/self/mountinfo: neither calls into the file system (fstat and fstatfs would, and a FUSE
 * server that never answers holds them for ever). Returns 0 or -errno. */
int fsinfo_of_fd(int fd, FsInfo *ret);
/* One statx(AT_STATX_DONT_SYNC) of fd: its type and mode (st_mode's bits) and its mount id. */
int fsinfo_stat(int fd, uint32_t *ret_mode, uint64_t *ret_mount_id);

/* The mount table, read once and again only after the kernel says it changed (a poll of
 * /proc/self/mountinfo): fsinfo_of_fd() reads it whole for each fd, which cost fhashd most of its
 * time for 20,000 small files. Mount ids are never reused while a mount lives, and a change
 * (an unmount too) is seen before the next lookup. Not thread-safe. */
typedef struct FsTable FsTable;
int fs_table_new(FsTable **ret);
FsTable *fs_table_free(FsTable *t);
/* fsinfo_of_fd() through the table (refreshed first). */
int fs_table_lookup(FsTable *t, int fd, FsInfo *ret);
/* Reads the table again if the kernel said it changed since. For a batch of lookups by id. */
int fs_table_refresh(FsTable *t);
/* The file system of the mount with that id (statx's stx_mnt_id), as of the last refresh; -ESTALE
 * if the table could not be read. */
int fs_table_lookup_id(FsTable *t, uint64_t id, FsInfo *ret);

/* The class of a file system type name as mountinfo gives it ("proc", "fuse.sshfs", ...). */
FsClass fsinfo_class_of_type(const char *type);

const char *fs_class_to_string(FsClass c);
