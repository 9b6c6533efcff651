#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-apt-hook.py: apt's DPkg::Post-Invoke hook (apt/fhash-apt-verify) against a throwaway root and a
# fake dpkg admin directory, never the host's. Disabled (the default) it does nothing; its first run
# once enabled only takes the mark; then it finds the packages whose md5sums are newer than the mark,
# returns at once while their check runs detached (an fhashctl that takes seconds to start does not
# hold it up), and the check, through fhashd as a background job, reports each file that does not
# match or is missing under its package, and nothing of a package unpacked before the mark. apt reads
# the configuration snippet the build made.
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

BUILD = os.environ.get("FHASH_BUILD_ROOT", "")
HOOK = os.path.join(BUILD, "apt", "fhash-apt-verify")
SNIPPET = os.path.join(BUILD, "apt", "90fhash-verify")
DELAY = 1  # seconds the wrapped fhashctl waits before it starts


def write(path, data, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def md5sums(root, files):
    import hashlib
    return "".join(f"{hashlib.md5(open(os.path.join(root, f), 'rb').read()).hexdigest()}  {f}\n"
                   for f in files).encode()


def main():
    ft.require(("md5sum", "setsid", "find"))
    if not os.access(HOOK, os.X_OK):
        ft.skip(f"{HOOK} is not built")
    tmp = tempfile.mkdtemp(prefix="fhash-apt-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    try:
        with ft.Bus() as bus:
            with ft.Daemon(bus, "--workers", "2"):
                run(tmp, bus)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(tmp, bus):
    root = os.path.join(tmp, "root")
    admin = os.path.join(tmp, "dpkg")
    conf = os.path.join(tmp, "apt-verify.conf")
    stamp = os.path.join(tmp, "state", "apt-verify.stamp")
    log = os.path.join(tmp, "results.log")
    now = time.time()
    files = {"pkg1": ["usr/bin/a", "usr/share/doc/pkg1/b"], "pkg2": ["usr/lib/c"], "pkg3": ["usr/bin/d", "usr/bin/e"]}
    for pkg, names in files.items():
        for n in names:
            write(os.path.join(root, n), f"{n}\n".encode() * 1000)
        write(os.path.join(admin, "info", f"{pkg}.md5sums"), md5sums(root, names))
    write(os.path.join(admin, "info", "pkg1.list"), b"/usr/bin/a\n")  # not an md5sums file
    # An fhashctl that takes DELAY seconds to start, through this test's fhashd.
    wrapper = os.path.join(tmp, "fhashctl")
    with open(wrapper, "w") as f:
        f.write(f"#!/bin/sh\nsleep {DELAY}\nexec {ft.fhashctl_path()} --address '{bus.address}' --daemon \"$@\"\n")
    os.chmod(wrapper, 0o755)
    env = dict(os.environ, FHASH_APT_CONF=conf, FHASH_APT_ADMINDIR=admin, FHASH_APT_ROOT=root,
               FHASH_APT_STAMP=stamp, FHASHCTL=wrapper, FHASH_APT_LOG=log, LC_ALL="C")

    def hook():
        t0 = time.monotonic()
        r = subprocess.run([HOOK], env=env, capture_output=True, text=True, timeout=60)
        ft.check(r.returncode == 0 and r.stdout == "" and r.stderr == "", f"hook: {r.returncode} {r.stdout!r} {r.stderr!r}")
        return time.monotonic() - t0

    # Disabled: no configuration file, then VERIFY=no.
    for text in (None, "VERIFY=no\n"):
        if text is not None:
            write(conf, text.encode())
        took = hook()
        ft.check(not os.path.exists(stamp) and not os.path.exists(log) and took < 1,
                 f"disabled ({text!r}): stamp or log made, or {took:.2f} s")
    ft.log("ok: disabled, the hook does nothing")

    # Enabled: the first run takes the mark and checks nothing.
    write(conf, b"# enabled by the test\nVERIFY=yes\n")
    hook()
    ft.check(os.path.exists(stamp), "the first run took no mark")
    time.sleep(DELAY + 1)
    ft.check(not os.path.exists(log), f"the first run checked something: {open(log).read() if os.path.exists(log) else ''}")
    ft.log("ok: the first run after enabling only takes the mark")

    # pkg2 was unpacked before the mark, pkg1 and pkg3 after; files of all three are damaged.
    os.utime(stamp, (now - 3600, now - 3600))
    os.utime(os.path.join(admin, "info", "pkg2.md5sums"), (now - 7200, now - 7200))
    write(os.path.join(root, "usr/bin/a"), b"tampered\n")
    write(os.path.join(root, "usr/lib/c"), b"tampered\n")
    os.unlink(os.path.join(root, "usr/bin/d"))
    took = hook()
    ft.check(took < 1, f"the hook took {took:.2f} s: apt would wait for the check")
    ft.check(os.stat(stamp).st_mtime >= now - 60, "the mark did not move")
    ft.check(ft.wait_for(lambda: os.path.exists(log) and "package(s)" in open(log).read(), 30),
             f"no results within 30 s: {open(log).read() if os.path.exists(log) else 'no log'}")
    lines = open(log).read().splitlines()
    ft.check("pkg1: usr/bin/a: FAILED" in lines, f"pkg1's damaged file not reported: {lines}")
    ft.check(any(x.startswith("pkg3: ") and "usr/bin/d" in x for x in lines), f"pkg3's missing file not reported: {lines}")
    ft.check(not any("pkg2" in x or "usr/lib/c" in x for x in lines), f"pkg2 (before the mark) was checked: {lines}")
    ft.check(not any("usr/bin/e" in x or "pkg1/b" in x for x in lines), f"a good file reported: {lines}")
    ft.check(lines[-1] == "2 package(s) do not match their md5sums", f"summary: {lines}")
    ft.log(f"ok: the hook returned in {took:.2f} s; the detached check reported {len(lines)} lines: {lines}")

    # Nothing new since: nothing checked.
    os.unlink(log)
    hook()
    time.sleep(DELAY + 1)
    ft.check(not os.path.exists(log), "a run with nothing unpacked checked something")

    # apt reads the snippet the build made, and it runs the hook it installs.
    if shutil.which("apt-config"):
        r = subprocess.run(["apt-config", "-c", SNIPPET, "dump", "DPkg::Post-Invoke"], capture_output=True, text=True)
        libexec = os.path.dirname(open(os.path.join(BUILD, "apt", "90fhash-verify")).read().split("-x ", 1)[1].split()[0])
        ft.check(r.returncode == 0 and f"{libexec}/fhash-apt-verify || true" in r.stdout,
                 f"apt-config of the snippet: {r.returncode} {r.stdout} {r.stderr}")
        ft.log("ok: apt-config reads the snippet")


if __name__ == "__main__":
    main()
