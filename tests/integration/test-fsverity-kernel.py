#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-fsverity-kernel.py: files with fs-verity enabled, on an ext4 image made with `mkfs.ext4 -O verity`
# on a loop device, hashed with -a fsverity: the digest is the kernel's measurement (`fsverity
# measure`), and not a byte of the file is read (after a remount the file has no page in the page
# cache, read buffered), in-process and through fhashd. Asked for another block size than the file's
# tree has, fhashctl reads it (its pages come in) and gives `fsverity digest --block-size`'s digest.
# Exits 77 naming what is missing: root, losetup, mkfs.ext4, fincore, or fs-verity in the kernel
# (FS_IOC_ENABLE_VERITY answers EOPNOTSUPP without CONFIG_FS_VERITY).
import os
import random
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

SIZES = [0, 1, 4096, 5000, (3 << 20) + 7]


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=120, **kw)


def cached_pages(path):
    r = sh(["fincore", "--raw", "--noheadings", "--output", "PAGES", path])
    ft.check(r.returncode == 0, f"fincore {path}: {r.stderr}")
    return int(r.stdout.split()[0])


class Image:
    """A 64 MiB ext4 image with the verity feature, on a loop device, mounted in dir."""

    def __init__(self, dir):
        self.dir = dir
        self.img = os.path.join(dir, "verity.img")
        self.mnt = os.path.join(dir, "mnt")
        self.loop = None
        self.mounted = False

    def __enter__(self):
        with open(self.img, "wb") as f:
            f.truncate(64 << 20)
        r = sh(["mkfs.ext4", "-q", "-F", "-O", "verity", "-b", "4096", self.img])
        if r.returncode != 0:
            ft.skip(f"mkfs.ext4 -O verity failed (e2fsprogs too old?): {r.stderr.strip()}")
        r = sh(["losetup", "--find", "--show", self.img])
        if r.returncode != 0:
            ft.skip(f"no loop device: {r.stderr.strip()}")
        self.loop = r.stdout.strip()
        os.makedirs(self.mnt)
        self.remount()
        return self

    def remount(self):
        """Unmounts (dropping the file system's page cache, and only its own) and mounts again."""
        if self.mounted:
            r = sh(["umount", self.mnt])
            ft.check(r.returncode == 0, f"umount: {r.stderr}")
            self.mounted = False
        r = sh(["mount", "-t", "ext4", self.loop, self.mnt])
        if r.returncode != 0:
            ft.skip(f"cannot mount the ext4 image: {r.stderr.strip()}")
        self.mounted = True

    def __exit__(self, *a):
        if self.mounted:
            sh(["umount", self.mnt])
        if self.loop:
            sh(["losetup", "-d", self.loop])


def ctl(args):
    return subprocess.run([ft.fhashctl_path()] + args, capture_output=True, text=True, timeout=300)


def digests(out):
    return [line.split()[0] for line in out.splitlines()]


def main():
    ft.require(["fsverity"])
    if os.geteuid() != 0:
        ft.skip("needs root: a loop device and a mount")
    for prog in ("losetup", "mkfs.ext4", "mount", "umount", "fincore"):
        if not shutil.which(prog):
            ft.skip(f"{prog} is not installed")
    rnd = random.Random(280)
    with ft.Bus() as bus, Image(bus.dir) as img:
        paths = []
        for i, n in enumerate(SIZES):
            p = os.path.join(img.mnt, f"v{i}-{n}")
            with open(p, "wb") as f:
                f.write(rnd.randbytes(n))
            paths.append(p)
        for p in paths:
            r = sh(["fsverity", "enable", p])
            if r.returncode != 0:
                ft.skip(f"the kernel ({os.uname().release}) cannot enable fs-verity on ext4 "
                        f"(CONFIG_FS_VERITY): {r.stderr.strip()}")
        r = sh(["fsverity", "measure"] + paths)
        ft.check(r.returncode == 0, f"fsverity measure: {r.stderr}")
        want = [line.split()[0].split(":", 1)[1] for line in r.stdout.splitlines()]
        ft.check(want == digests(sh(["fsverity", "digest", "--compact"] + paths).stdout),
                 "fsverity measure and fsverity digest disagree")

        with ft.Daemon(bus, "--workers", "2"):
            for how in (["--local"], ["--daemon", "--address", bus.address]):
                img.remount()
                ft.check(all(cached_pages(p) == 0 for p in paths), "pages cached right after a mount")
                # Buffered reads would bring the pages in: none may come.
                r = ctl(how + ["hash", "--io", "read", "-a", "fsverity"] + paths)
                ft.check(r.returncode == 0, f"{how[0]} hash: {r.stderr}")
                ft.check(digests(r.stdout) == want, f"{how[0]}: {digests(r.stdout)}, the kernel measures {want}")
                read = [p for p in paths if cached_pages(p) > 0]
                ft.check(not read, f"{how[0]}: read although fs-verity is enabled: {read}")

                # Another block size than the file's tree: read, and as fsverity digest computes it.
                img.remount()
                r = ctl(how + ["hash", "--io", "read", "-a", "fsverity", "--block-size", "1024", paths[-1]])
                ft.check(r.returncode == 0, f"{how[0]} hash --block-size 1024: {r.stderr}")
                w = sh(["fsverity", "digest", "--compact", "--block-size=1024", paths[-1]]).stdout.split()
                ft.check(digests(r.stdout) == w, f"{how[0]} --block-size 1024: {r.stdout}, want {w}")
                ft.check(cached_pages(paths[-1]) > 0, f"{how[0]} --block-size 1024: no page read (the check "
                         "above could not have seen a read)")
                ft.log(f"{how[0]}: {len(paths)} verity files, the kernel's digests, no page read")
    print("test-fsverity-kernel: ok")


if __name__ == "__main__":
    main()
