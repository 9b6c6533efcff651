#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-ctl-walk.py: fhashctl hash -r walks while it hashes. 3,000 files in nested directories give
# what `find | sort | xargs sha256sum` gives, --local and through fhashd alike (also --json, --tag,
# skip notes, errors, and unreadable directories and files for a client running as nobody); and the
# first line comes out before the walk has even opened a directory that sorts after 70,000 files
# (inotify sees the directory's open; fhashctl's stdout is a pipe nobody reads past the first line,
# so it cannot run far ahead: a walk-everything-first fhashctl opens that directory before any output).
import ctypes
import os
import random
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

IN_OPEN = 0x20
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000


def fhashctl():
    return ft.fhashctl_path()


def run(args, cwd, user=None):
    cmd = [fhashctl()] + args
    if user:
        cmd = ["setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups"] + cmd
    return subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=300, stdin=subprocess.DEVNULL)


def make_tree(root):
    """3,000 files, 0..20 KiB, in 3 levels of directories, plus things -r notes and skips."""
    rnd = random.Random(7)
    n = 0
    for a in range(6):
        for b in range(10):
            d = os.path.join(root, f"d{a}", f"s{b:02d}")
            os.makedirs(d)
            for c in range(50):
                with open(os.path.join(d, f"f{c:03d}.dat"), "wb") as f:
                    f.write(rnd.randbytes(rnd.randint(0, 20000) if c % 9 else 0))
                n += 1
    os.makedirs(os.path.join(root, "empty"))
    os.symlink("d0", os.path.join(root, "link"))
    os.mkfifo(os.path.join(root, "fifo"))
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, 0o755)
        for name in filenames:
            p = os.path.join(dirpath, name)
            if not os.path.islink(p):
                os.chmod(p, 0o644)
    ft.check(n == 3000, f"made {n} files")


def reference(cwd, top):
    """sha256sum's lines for every regular file under top, in find | LC_ALL=C sort order."""
    r = subprocess.run(f"find {top} -type f | LC_ALL=C sort | xargs -d '\\n' sha256sum", shell=True, cwd=cwd,
                       capture_output=True, timeout=300, env=dict(os.environ, LC_ALL="C"))
    ft.check(r.returncode == 0, f"reference: {r.stderr!r}")
    return r.stdout


def same(address, args, cwd, what, user=None):
    loc = run(["--local"] + args, cwd, user)
    bus = run(["--daemon", "--address", address] + args, cwd, user)
    ft.check(bus.returncode == loc.returncode,
             f"{what}: exit {bus.returncode} through fhashd, {loc.returncode} --local: {bus.stderr[-300:]!r}")
    ft.check(bus.stdout == loc.stdout, f"{what}: stdout through fhashd differs from --local")
    ft.check(bus.stderr == loc.stderr, f"{what}: stderr differs: {bus.stderr[-300:]!r} vs {loc.stderr[-300:]!r}")
    return loc


def test_tree(address, tmp):
    top = "tree"
    make_tree(os.path.join(tmp, top))
    ref = reference(tmp, top)
    ft.check(ref.count(b"\n") == 3000, "reference has 3,000 lines")

    out = same(address, ["hash", "-r", top], tmp, "-r tree")
    ft.check(out.returncode == 0, f"-r tree: exit {out.returncode}")
    ft.check(out.stdout == ref, "-r tree: output differs from find | sort | xargs sha256sum")
    notes = out.stderr.decode().splitlines()
    ft.check(notes == ["fhashctl: tree/fifo: skipped: not a regular file",
                       "fhashctl: tree/link: skipped: symbolic link not followed (use --follow)"],
             f"-r tree: notes {notes}")

    # Two directory arguments, a missing one in between, and -r of a single file: in the order given.
    out = same(address, ["hash", "-r", f"{top}/d5", "nosuch", f"{top}/d0/s00/f000.dat", f"{top}/d1/"], tmp,
               "-r with several arguments")
    ft.check(out.returncode == 1, "a missing argument fails the run")
    want = reference(tmp, f"{top}/d5") + reference(tmp, f"{top}/d0/s00/f000.dat") + \
        reference(tmp, f"{top}/d1/").replace(b"d1//", b"d1/")
    ft.check(out.stdout == want, "-r with several arguments: output differs from the reference")
    ft.check(b"nosuch: No such file or directory" in out.stderr, f"missing argument: {out.stderr!r}")

    out = same(address, ["hash", "-r", "--follow", top], tmp, "-r --follow")
    ft.check(out.stdout.count(b"\n") == 3500, "--follow hashes the 500 files under the link as well")
    same(address, ["hash", "-r", "--json", "-a", "blake3", top, "nosuch"], tmp, "-r --json")
    same(address, ["hash", "-r", "--tag", "--exclude", "s0[2-7]", top], tmp, "-r --tag --exclude")
    ft.log("ok: -r of 3,000 files in nested directories gives find | sort | sha256sum's lines, --local and "
           "through fhashd alike")


def test_unreadable(address, tmp):
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        ft.log("skip: unreadable directories need root (a client switched to nobody)")
        return
    top = os.path.join(tmp, "locked")
    for d in ("a", "b", "c"):
        os.makedirs(os.path.join(top, d))
        for i in range(3):
            with open(os.path.join(top, d, f"f{i}"), "w") as f:
                f.write(f"{d}{i}\n")
    os.chmod(os.path.join(top, "b"), 0o700)        # nobody cannot enter it
    os.chmod(os.path.join(top, "c", "f1"), 0o600)  # nor read this
    for dirpath, dirnames, filenames in os.walk(top):
        if not dirpath.endswith("/b"):
            os.chmod(dirpath, 0o755)
    out = same(address, ["hash", "-r", "locked"], tmp, "unreadable parts", user="nobody")
    ft.check(out.returncode == 1, f"unreadable parts: exit {out.returncode}")
    ft.check(out.stdout.count(b"\n") == 5, f"unreadable parts: {out.stdout!r}")
    ft.check(out.stderr == b"fhashctl: locked/b: Permission denied\nfhashctl: locked/c/f1: Permission denied\n",
             f"unreadable parts: {out.stderr!r}")
    ft.log("ok: an unreadable directory and file are reported in walk order, --local and through fhashd alike")


def inotify_watch(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    ft.check(fd >= 0, f"inotify_init1: {os.strerror(ctypes.get_errno())}")
    wd = libc.inotify_add_watch(fd, os.fsencode(path), IN_OPEN)
    ft.check(wd >= 0, f"inotify_add_watch: {os.strerror(ctypes.get_errno())}")
    return fd


def opened(fd):
    """Whether an IN_OPEN event is waiting on the inotify fd."""
    seen = False
    while True:
        try:
            buf = os.read(fd, 4096)
        except BlockingIOError:
            return seen
        off = 0
        while off < len(buf):
            _, mask, _, ln = struct.unpack_from("iIII", buf, off)
            seen = seen or bool(mask & IN_OPEN)
            off += 16 + ln


# Files in a/: more than fhashctl's limit on items walked ahead of the output (RUN_MAX_PENDING,
# 65,536, in src/ctl/runner.h: results that come back out of order, e.g. while one worker is
# preempted, let the walk go on up to it) plus what the pipe and stdio buffers hold (< 1,000 lines).
STREAM_FILES = 70000


def make_stream_tree(root):
    os.makedirs(os.path.join(root, "a"))
    os.makedirs(os.path.join(root, "z"))
    for i in range(STREAM_FILES):
        fd = os.open(os.path.join(root, "a", f"f{i:05d}"), os.O_WRONLY | os.O_CREAT, 0o644)
        os.write(fd, b"%d\n" % i)
        os.close(fd)
    with open(os.path.join(root, "z", "last"), "wb") as f:
        f.write(b"last\n")


def test_streams(address, tmp):
    """The first line is out while z/ (after 70,000 files of a/) has not been opened. The reader stops
    after the first line, so fhashctl blocks once the pipe is full (about 700 lines): a walker that keeps
    the queue full but bounded is then at most RUN_MAX_PENDING files ahead, never at z/."""
    # tmpfs where there is one: 70,000 files are made in a fraction of the time.
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tmp
    top = tempfile.mkdtemp(prefix="fhash-walk-", dir=base)
    try:
        make_stream_tree(os.path.join(top, "stream"))
        stream_checks(address, top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def stream_checks(address, tmp):
    top = os.path.join(tmp, "stream")
    for mode in (["--local"], ["--daemon", "--address", address]):
        fd = inotify_watch(os.path.join(top, "z"))
        try:
            p = subprocess.Popen([fhashctl()] + mode + ["hash", "-r", "stream"], cwd=tmp, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
            try:
                ready, _, _ = select.select([p.stdout], [], [], 60)
                ft.check(ready, f"{mode[0]}: no output within 60 s")
                first = p.stdout.readline()
                ft.check(first.endswith(b"  stream/a/f00000\n"), f"{mode[0]}: first line {first!r}")
                # Give a walker that would run ahead the time to do so.
                time.sleep(0.5)
                ft.check(not opened(fd), f"{mode[0]}: z/ was opened before the first line was read: the walk "
                         "does not stream (or runs unbounded ahead of the output)")
                rest = p.stdout.read()
                ft.check(p.wait(120) == 0, f"{mode[0]}: exit {p.returncode}")
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            lines = (first + rest).count(b"\n")
            ft.check(lines == STREAM_FILES + 1, f"{mode[0]}: {lines} lines")
            ft.check(rest.endswith(b"  stream/z/last\n"), f"{mode[0]}: last line")
            # The watch works: the walk did open z/ in the end.
            ft.check(opened(fd), f"{mode[0]}: inotify saw no open of z/ at all")
        finally:
            os.close(fd)
        ft.log(f"ok: {mode[0]}: the first line is out before the walk reaches a directory {STREAM_FILES:,} files "
               "later")


def main():
    ft.require(("find", "sort", "xargs", "sha256sum"))
    fhashctl()
    with ft.Bus(anyone=True) as bus:
        tmp = os.path.join(bus.dir, "files")
        os.makedirs(tmp)
        os.chmod(tmp, 0o755)
        with ft.Daemon(bus, "--workers", "2"):
            test_tree(bus.address, tmp)
            test_unreadable(bus.address, tmp)
            test_streams(bus.address, tmp)


if __name__ == "__main__":
    main()
