#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-ctl-check.py: fhashctl check and audit on hostile names and on big manifests (issue 24, N4 and
# N5). Names with CR, ESC, BEL, C1 controls, bytes that are not UTF-8, newlines and backslashes: into
# a pipe, check and audit escape them as hash does (coreutils' '\' for \n, \r and \\, the rest raw);
# on a terminal (script(1)) no control character reaches it raw. A 204 MB manifest is checked with a
# peak RSS that grows by less than half its size over a 4 MB one (read whole, as check did, it grew
# by 184 MB); warnings of --warn come in line order among the verdicts; a manifest that cannot be
# read says why.
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

HOSTILE = [b"cr\rfake: OK", b"esc\x1b[2J\x1b]0;PWNED\x07", b"nl\nname", b"back\\slash", b"c1\xc2\x9bx",
           b"bad\x9b\xffutf", b"caf\xc3\xa9 plain"]


def ctl(args, cwd, **kw):
    return subprocess.run([ft.fhashctl_path(), "--local"] + args, cwd=cwd, capture_output=True, timeout=300, **kw)


def on_tty(args, cwd):
    """Runs fhashctl --local ARGS with a terminal as stdout (script(1)); returns what reached it."""
    cmd = " ".join("'" + a.replace("'", "'\\''") + "'" for a in [ft.fhashctl_path(), "--local"] + args)
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], cwd=cwd, capture_output=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    return r.stdout.replace(b"\r\n", b"\n")


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def escaped(name):
    """A name as coreutils escapes it in a line (prefix not included)."""
    return name.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")


def test_names(top):
    t = os.path.join(top, "names")
    os.makedirs(os.path.join(t, "tree"))
    for i, n in enumerate(HOSTILE):
        with open(os.path.join(os.fsencode(t), b"tree/" + n), "wb") as f:
            f.write(b"%d\n" % i)
    names = sorted(b"tree/" + n for n in HOSTILE)
    r = ctl(["hash", "-r", "tree"], t)
    ft.check(r.returncode == 0, f"hash -r: {r.stderr!r}")
    with open(os.path.join(t, "m.sha256"), "wb") as f:
        f.write(r.stdout)

    # Into a pipe: every line as the newest coreutils writes it, for check as for hash.
    r = ctl(["check", "m.sha256"], t)
    ft.check(r.returncode == 0, f"check: {r.returncode} {r.stderr!r}")
    want = b"".join((b"\\" + escaped(n) if escaped(n) != n else n) + b": OK\n" for n in names)
    ft.check(r.stdout == want, f"check into a pipe:\n{r.stdout!r}\nwant\n{want!r}")
    ft.check(b"\r" not in r.stdout, "a CR reached check's output")

    # On a terminal: no control character of a name, no byte that is not UTF-8.
    out = on_tty(["check", "m.sha256"], t)
    body = out.replace(b"\n", b"")
    for c in list(range(0, 0x20)) + [0x7f]:
        ft.check(bytes([c]) not in body, f"check on a terminal let {c:#x} through: {out!r}")
    ft.check(b"\xc2\x9b" not in out and b"\x9b\xff" not in out, f"check on a terminal let C1/non-UTF-8 through: {out!r}")
    ft.check(b"\\tree/esc\\x1b[2J\\x1b]0;PWNED\\x07: OK\n" in out, f"ESC and BEL not \\x-escaped: {out!r}")
    ft.check(b"tree/caf\xc3\xa9 plain: OK\n" in out, f"printable UTF-8 not kept: {out!r}")
    out = on_tty(["hash", "tree/" + "esc\x1b[2J\x1b]0;PWNED\x07"], t)
    ft.check(b"\x1b" not in out and b"\x07" not in out, f"hash on a terminal let ESC through: {out!r}")

    # audit: "moved from" with a hostile old name, one '\' for the line.
    os.rename(os.path.join(os.fsencode(t), b"tree/" + HOSTILE[0]), os.path.join(t, "tree", "moved"))
    r = ctl(["audit", "m.sha256", "."], t)
    ft.check(r.returncode == 1, f"audit: {r.returncode} {r.stderr!r}")
    ft.check(b"\\tree/moved: moved from tree/cr\\rfake: OK\n" in r.stdout, f"audit's moved line: {r.stdout!r}")
    ft.check(b"\r" not in r.stdout, f"a CR reached audit's output: {r.stdout!r}")
    out = on_tty(["audit", "m.sha256", "."], t)
    ft.check(b"\x1b" not in out and b"\r" not in out, f"audit on a terminal let a control through: {out!r}")
    ft.log("names: escaped into a pipe, no control character on a terminal")


def peak_rss_kb(args, cwd):
    """Runs fhashctl --local ARGS; returns (exit status, its peak RSS in KiB). Linux counts in a
    child's peak the RSS its parent had when it forked (exec keeps the old mm's high-water mark), so
    this is max(ours, fhashctl's): ours is kept well under fhashctl's smallest."""
    env = dict(os.environ)
    # ASan keeps freed blocks in a quarantine (256 MB by default): that is not check's memory.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=4"
    p = subprocess.Popen([ft.fhashctl_path(), "--local"] + args, cwd=cwd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, ru.ru_maxrss


def test_big_manifest(top):
    t = os.path.join(top, "big")
    os.makedirs(os.path.join(t, "data"))
    sums = []
    for i in range(1000):
        data = b"file %d\n" % i
        with open(os.path.join(t, "data", "%03d" % i), "wb") as f:
            f.write(data)
        sums.append(sha256(data))
    # 204 MB in 50,000 entries, each followed by a 4,000-byte comment line: a manifest much larger
    # than what the run may hold for the entries in flight (up to 65,536 items of ~700 bytes,
    # whatever the manifest), so that holding it shows. Written a line at a time: this process must
    # stay small, since a child's peak RSS starts from its parent's (see peak_rss_kb()).
    pad = "#" + "x" * 3999 + "\n"
    for name, n in (("small.sha256", 1000), ("big.sha256", 50000)):
        with open(os.path.join(t, name), "w") as f:
            for k in range(n):
                f.write("%s  data/./././././%03d\n%s" % (sums[k % 1000], k % 1000, pad))
    size = os.path.getsize(os.path.join(t, "big.sha256"))
    rc, small = peak_rss_kb(["check", "-q", "small.sha256"], t)
    ft.check(rc == 0, f"check of 1,000 entries: exit {rc}")
    rc, big = peak_rss_kb(["check", "-q", "big.sha256"], t)
    ft.check(rc == 0, f"check of 50,000 entries: exit {rc}")
    ft.log(f"peak RSS: {small} KiB for a 4 MB manifest, {big} KiB for {size} bytes")
    # Read whole, it cost its size and more (+184 MB); read a line at a time, +16-19 MB here.
    ft.check((big - small) * 1024 < size // 2,
             f"check of a {size}-byte manifest grew by {big - small} KiB: it holds the manifest")


def test_warn_order(top):
    t = os.path.join(top, "warn")
    os.makedirs(t)
    for n in ("a", "b"):
        with open(os.path.join(t, n), "wb") as f:
            f.write(n.encode())
    with open(os.path.join(t, "m"), "w") as f:
        f.write(f"{sha256(b'a')}  a\ngarbage\n{sha256(b'b')}  b\n# comment\nmore garbage\n")
    r = subprocess.run(f"'{ft.fhashctl_path()}' --local check -w m 2>&1", shell=True, cwd=t, capture_output=True,
                       timeout=60)
    want = (b"a: OK\nfhashctl: m: 2: improperly formatted checksum line\nb: OK\n"
            b"fhashctl: m: 5: improperly formatted checksum line\nfhashctl: WARNING: 2 lines are improperly formatted\n")
    ft.check(r.stdout == want, f"check -w order:\n{r.stdout.decode()}\nwant\n{want.decode()}")
    # A manifest that cannot be read: why, and the next manifest is still checked.
    os.makedirs(os.path.join(t, "dir"))
    r = ctl(["check", "dir", "m"], t)
    ft.check(r.returncode == 1 and b"fhashctl: dir: Is a directory\n" in r.stderr and r.stdout == b"a: OK\nb: OK\n",
             f"check of a directory: {r.returncode} {r.stdout!r} {r.stderr!r}")
    # The same lines through a pipe, in pieces: standard input is read as it comes.
    r = ctl(["check", "-"], t, input=open(os.path.join(t, "m"), "rb").read())
    ft.check(r.returncode == 0 and r.stdout == b"a: OK\nb: OK\n", f"check -: {r.stdout!r} {r.stderr!r}")
    ft.log("--warn in line order; unreadable manifests said")


def main():
    ft.fhashctl_path()
    if not shutil.which("script"):
        ft.skip("script(1) (util-linux) is not installed")
    top = tempfile.mkdtemp(prefix="fhash-check-", dir="/var/tmp")
    try:
        test_names(top)
        test_warn_order(top)
        test_big_manifest(top)
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == "__main__":
    main()
