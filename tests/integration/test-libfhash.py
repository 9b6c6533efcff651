#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-libfhash.py: libfhash.so as an integrator sees it: only fhash_* exported; the installed header,
# library and fhash.pc build examples/hash-files.c out of tree; that program and examples/hash_files.py
# print what sha256sum prints, through a real fhashd on a private bus and in-process; the Python
# module's API (algorithm sets, expected digests, errors, asyncio) against hashlib and the daemon.
import asyncio
import errno
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

BUILD = os.environ.get("FHASH_BUILD_ROOT", "")
SRC = os.environ.get("FHASH_SOURCE_ROOT", "")
LIB = os.path.join(BUILD, "src", "libfhash.so.0")
EXAMPLE = os.path.join(BUILD, "examples", "hash-files")
EXAMPLE_ASYNC = os.path.join(BUILD, "examples", "hash-files-async")
EXAMPLE_EVENT = os.path.join(BUILD, "examples", "hash-files-event")


def sha256sum(files, cwd):
    return subprocess.run(["sha256sum", "--"] + files, cwd=cwd, capture_output=True, text=True)


def same_as_sha256sum(cmd, files, cwd, env, what):
    ref = sha256sum(files, cwd)
    got = subprocess.run(cmd + files, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    ft.check(got.stdout == ref.stdout, f"{what}: stdout differs from sha256sum:\n{got.stdout[:500]}\n---\n{ref.stdout[:500]}")
    ft.check(got.stderr == ref.stderr, f"{what}: stderr {got.stderr!r}, sha256sum's {ref.stderr!r}")
    ft.check(got.returncode == ref.returncode, f"{what}: exit {got.returncode}, sha256sum {ref.returncode}")


def test_exports():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True, check=True).stdout
    syms = [line.split()[-1] for line in out.splitlines() if line.split()[-2] in ("T", "D", "B", "R", "W")]
    ft.check(syms and all(s.startswith("fhash_") for s in syms), f"libfhash exports more than fhash_*: "
             f"{[s for s in syms if not s.startswith('fhash_')][:10]}")
    soname = subprocess.run(["objdump", "-p", LIB], capture_output=True, text=True, check=True).stdout
    ft.check("SONAME               libfhash.so.0" in soname, "soname is not libfhash.so.0")
    ft.log(f"ok: libfhash.so.0 exports {len(syms)} symbols, all fhash_*")


def test_out_of_tree(tmp):
    """meson install into a destdir, then cc hash-files.c $(pkg-config --cflags --libs fhash)."""
    root = os.path.join(tmp, "root")
    r = subprocess.run(["meson", "install", "-C", BUILD, "--destdir", root, "--no-rebuild", "--quiet"],
                       capture_output=True, text=True)
    ft.check(r.returncode == 0, f"meson install: {r.stdout}{r.stderr}")
    pcs = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f == "fhash.pc"]
    ft.check(len(pcs) == 1, f"fhash.pc installed {len(pcs)} times")
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
    prefix = subprocess.run(["pkg-config", "--variable=prefix", "fhash"], env=env, capture_output=True, text=True,
                            check=True).stdout.strip()
    # The prefix as installed, moved under the destdir (--define-prefix guesses wrong with a
    # multiarch libdir).
    flags = subprocess.run(["pkg-config", f"--define-variable=prefix={root}{prefix}", "--cflags", "--libs", "fhash"],
                           env=env, capture_output=True, text=True, check=True).stdout.split()
    ft.check(any(root in f for f in flags), f"pkg-config does not point into the destdir: {flags}")
    exe = os.path.join(tmp, "hash-files")
    src = os.path.join(tmp, "hash-files.c")
    shutil.copy(os.path.join(SRC, "examples", "hash-files.c"), src)  # nothing of the tree but the file
    r = subprocess.run(["cc", "-Wall", "-Werror", src, "-o", exe] + flags, capture_output=True, text=True)
    ft.check(r.returncode == 0, f"out-of-tree build failed: {r.stderr}")
    libdir = next(f[2:] for f in flags if f.startswith("-L"))
    ft.log(f"ok: hash-files.c built out of tree with pkg-config fhash ({' '.join(flags)})")
    return exe, libdir


async def async_with_ticker(client, files):
    """hash_async() with another task on the loop: the loop must keep turning while it waits."""
    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.001)
    task = asyncio.create_task(ticker())
    seen = []
    res = await client.hash_async(files, algo="blake3", on_progress=lambda *p: seen.append(p))
    task.cancel()
    total = sum(os.path.getsize(f) for f in files)
    ft.check(seen and seen[-1] == (len(files), len(files), total, total) and
             all(a[0] <= b[0] for a, b in zip(seen, seen[1:])), f"progress: {seen[:3]} ... {seen[-1:]}")
    return res, ticks


def test_python_module(mod, address, files, tmp):
    with mod.Client(address=address, fallback=False) as c:
        ft.check(c.uses_daemon, "Client(address=...) does not use fhashd")
        res = c.hash(files)
        ft.check([r.name for r in res] == files and all(r.ok for r in res), f"results: {res[:3]}")
        for r in res:
            with open(r.name, "rb") as f:
                data = f.read()
            ft.check(r.digest == hashlib.sha256(data).hexdigest() and r.size == len(data), f"{r}")
        # Several algorithms in one read, expected digests (one wrong), a missing file.
        want = [hashlib.md5(open(p, "rb").read()).hexdigest() + "," + hashlib.sha1(open(p, "rb").read()).hexdigest()
                for p in files[:2]]
        wrong = "0" * 32 + "," + want[1].split(",")[1]
        res = c.hash(files[:2] + ["/nonexistent/x"], algo="md5,sha1", expected=[want[0], wrong, None])
        ft.check(res[0].ok and res[0].digest == want[0], f"md5,sha1 expected ok: {res[0]}")
        ft.check(res[1].error == errno.EBADMSG and res[1].digest == want[1], f"mismatch: {res[1]}")
        ft.check(res[2].error == errno.ENOENT and res[2].digest is None, f"missing: {res[2]}")
        try:
            c.hash(files[:1], algo="sha257")
            ft.fail("an unknown algorithm was accepted")
        except mod.InvalidArgs as e:
            ft.check(e.errno == errno.EINVAL and "sha257" in e.message, f"unknown algorithm: {e.message}")
        big = max(files, key=os.path.getsize)
        res = c.hash([big, files[1]], max_size=100)
        ft.check(res[0].error == errno.EFBIG and (res[1].ok or os.path.getsize(files[1]) > 100),
                 f"max_size through fhashd: {res}")
        res, ticks = asyncio.run(async_with_ticker(c, files))
        ft.check(len(res) == len(files) and all(r.ok and len(r.digest) == 64 for r in res) and
                 [r.name for r in res] == files, f"hash_async: {res[:3]}")
        ft.check(ticks > 0, "the asyncio loop did not run while hash_async() waited")
        # A stream: a generator read as the run has room; the first results come while it still has
        # items, and an item with a bad expected digest gets its own error.
        pulled = []

        def gen():
            for i in range(5000):
                pulled.append(i)
                yield files[i % len(files)] if i != 7 else (files[0], "nothex")
        first = []
        res = c.hash_stream(gen(), on_result=lambda r: first.append(len(pulled)) if not first else None)
        ft.check(len(res) == 5000 and [r.index for r in res] == list(range(5000)), f"hash_stream: {len(res)} results")
        ft.check(res[7].error == errno.EINVAL and all(r.ok for i, r in enumerate(res) if i != 7),
                 f"hash_stream results: {res[7]}, {[r for r in res if not r.ok][:2]}")
        ft.check(first and first[0] < 5000, f"the first result came only after all 5,000 inputs were pulled ({first})")
        # results(): a generator of results over a generator of inputs (paths, open files, a bad
        # expected digest), lazy at both ends; leaving the loop early cancels the rest and leaks
        # no fd, and the client goes on.
        pulled.clear()
        fds_before = len(os.listdir("/proc/self/fd"))
        seen, at_first = [], None
        with open(files[2], "rb") as f2:
            def gen2():
                for i in range(3000):
                    pulled.append(i)
                    yield f2 if i == 5 else (files[0], "nothex") if i == 7 else files[i % len(files)]
            for r in c.results(gen2()):
                if at_first is None:
                    at_first = len(pulled)
                seen.append(r)
        ft.check([r.index for r in seen] == list(range(3000)) and seen[7].error == errno.EINVAL and
                 all(r.ok for i, r in enumerate(seen) if i != 7), f"results(): {len(seen)}, {seen[7]}")
        ft.check(seen[5].digest == hashlib.sha256(open(files[2], "rb").read()).hexdigest() and
                 seen[9].digest == hashlib.sha256(open(files[9 % len(files)], "rb").read()).hexdigest(),
                 f"results() digests: {seen[5]}, {seen[9]}")
        ft.check(at_first is not None and at_first < 3000, f"results(): the first came after {at_first} inputs")
        pulled.clear()
        for n, r in enumerate(c.results(gen())):
            if n == 2:
                break
        ft.check(len(pulled) < 5000, f"results() left early yet pulled all {len(pulled)} inputs")
        ft.check(len(os.listdir("/proc/self/fd")) == fds_before,
                 f"results() left early: {fds_before} fds before, {len(os.listdir('/proc/self/fd'))} after")
        ft.check(c.hash(files[:1])[0].ok, "the client after results() was left early")
        # Open files: a regular file whose offset must stay, and a pipe.
        with open(files[0], "rb") as f:
            data = f.read()
            f.seek(3)
            r, w = os.pipe()
            os.write(w, b"through a pipe")
            os.close(w)
            res = c.hash_files([f, r], names=["the file", None])
            ft.check(res[0].ok and res[0].digest == hashlib.sha256(data).hexdigest() and res[0].name == "the file",
                     f"hash_files regular: {res[0]}")
            ft.check(res[1].ok and res[1].digest == hashlib.sha256(b"through a pipe").hexdigest() and res[1].name == "",
                     f"hash_files pipe: {res[1]}")
            ft.check(f.tell() == 3 and os.fstat(r) is not None, "the caller's file moved or was closed")
            # hash() takes paths and open files together; expected digests and max_size apply to both.
            mixed = c.hash([files[1], f, f.fileno()], expected=[None, hashlib.sha256(data).hexdigest(), "0" * 64])
            ft.check([m.index for m in mixed] == [0, 1, 2] and mixed[0].ok and
                     mixed[0].digest == hashlib.sha256(open(files[1], "rb").read()).hexdigest() and
                     mixed[1].ok and mixed[1].digest == hashlib.sha256(data).hexdigest() and
                     mixed[2].error == errno.EBADMSG and mixed[2].digest == hashlib.sha256(data).hexdigest(),
                     f"hash() of paths and files: {mixed}")
            if len(data) > 1:
                small = c.hash([f, files[1]], max_size=len(data) - 1)
                ft.check(small[0].error == errno.EFBIG, f"hash() of a file past max_size: {small}")
            ft.check(f.tell() == 3, "hash() of an open file moved its offset")
            os.close(r)
    # Cancel: a run stuck behind a FIFO that never gets data (its writer holds it open) ends at
    # once, every file with a result; an asyncio task cancelled does the same and raises.
    fifo = os.path.join(tmp, "fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    holder = os.open(fifo, os.O_RDWR)
    for kw in ({"address": address, "fallback": False}, {"local": True}):
        with mod.Client(**kw) as c:
            run = c.start([fifo, files[1]])
            t0 = time.monotonic()
            while time.monotonic() - t0 < 0.5:
                run.process()
                time.sleep(0.02)
            run.cancel()
            t0 = time.monotonic()
            while run.process():
                mod._wait(run)
                ft.check(time.monotonic() - t0 < 10, f"{kw}: the run did not end 10 s after cancel")
            res = run.results
            run.close()
            ft.check(len(res) == 2 and res[0].error == errno.ECANCELED and (res[1].ok or res[1].error == errno.ECANCELED),
                     f"{kw}: after cancel: {res}")

            async def cancelled_task():
                task = asyncio.ensure_future(c.hash_async([fifo]))
                await asyncio.sleep(0.3)
                task.cancel()
                try:
                    await task
                except asyncio.CancelledError:
                    return True
                return False
            ft.check(asyncio.run(asyncio.wait_for(cancelled_task(), 10)), f"{kw}: hash_async not cancelled")
            ft.check(c.hash(files[:1])[0].ok, f"{kw}: the client after a cancel")
    os.close(holder)
    # Unordered: the files behind a FIFO that gets its data (and EOF) only later come back first.
    import threading
    for kw in ({"address": address, "fallback": False}, {"local": True}):
        with mod.Client(**kw) as c:
            w = os.open(fifo, os.O_RDWR)
            timer = threading.Timer(1.0, lambda fd=w: (os.write(fd, b"late data"), os.close(fd)))
            timer.start()
            order = []
            res = c.hash_stream([fifo] + files[:20], unordered=True, on_result=lambda r: order.append(r.index))
            timer.join()
            ft.check(sorted(order) == list(range(21)) and order[-1] == 0 and order[0] != 0,
                     f"{kw}: unordered delivery order {order}")
            byidx = {r.index: r for r in res}
            ft.check(byidx[0].digest == hashlib.sha256(b"late data").hexdigest() and
                     all(byidx[i].ok for i in range(21)), f"{kw}: unordered results {byidx[0]}")
    with mod.Client(address=address, fallback=False, direct=False) as c:
        res = c.hash(files[:50])
        ft.check(c.uses_daemon and all(r.ok for r in res) and
                 res[3].digest == hashlib.sha256(open(files[3], "rb").read()).hexdigest(), f"direct=False: {res[:2]}")
    with mod.Client(local=True) as c:
        ft.check(not c.uses_daemon, "Client(local=True) uses fhashd")
        res = c.hash([max(files, key=os.path.getsize)], max_size=100)
        ft.check(res[0].error == errno.EFBIG, f"max_size in-process: {res}")
        res, _ = asyncio.run(async_with_ticker(c, files[:20]))
        ft.check(len(res) == 20 and all(r.ok for r in res), f"hash_async in-process: {res[:3]}")
        with open(files[1], "rb") as f:
            res = c.hash_files([f.fileno()])
            ft.check(res[0].digest == hashlib.sha256(open(files[1], "rb").read()).hexdigest(), f"local fd: {res}")
        ft.check(c.hash(files[:1])[0].digest == hashlib.sha256(open(files[0], "rb").read()).hexdigest(), "local")
        ft.check([(r.index, r.digest) for r in c.results(files[:20])] == [(r.index, r.digest) for r in c.hash(files[:20])],
                 "results() in-process differs from hash()")
    dead = f"unix:path={tmp}/no-such-bus"
    try:
        mod.Client(address=dead, fallback=False)
        ft.fail("Client(fallback=False) without fhashd did not raise")
    except mod.NotReachable as e:
        ft.check(e.errno == errno.ENOTCONN, f"NotReachable errno {e.errno}")
    with mod.Client(address=dead) as c:
        ft.check(not c.uses_daemon and c.hash(files[:1])[0].ok, "fallback to in-process")
    ft.check("sha256" in mod.algorithms() and "blake3" in mod.algorithms() and mod.version(), "algorithms/version")
    ft.log("ok: the Python module: daemon and local, algorithm sets, expected, errors, asyncio, fallback")


ACTIVATED = """
import sys, fhash
with fhash.Client(address=sys.argv[1], fallback=False) as c:
    print(c.uses_daemon, c.hash([sys.argv[2]])[0].digest)
"""

KILLED = """
import os, sys, fhash
r, w = os.pipe()
c = fhash.Client(address=sys.argv[1], fallback=False)
try:
    c.hash_files([r])
except fhash.Error as e:
    print("ERR", e.errno, e.name, e.message)
    sys.exit(3)
print("no error")
"""


def test_many(address, tmp, env):
    """10,000 files in one call, streamed to fhashd by the library: every result, in order."""
    d = os.path.join(tmp, "many")
    os.makedirs(d)
    for i in range(10000):
        with open(os.path.join(d, f"{i:05d}"), "wb") as f:
            f.write(str(i).encode())
    code = ("import os, sys, hashlib, fhash\n"
            "names = sorted(os.listdir(sys.argv[2]))\n"
            "with fhash.Client(address=sys.argv[1], fallback=False) as c:\n"
            "    res = c.hash([os.path.join(sys.argv[2], n) for n in names])\n"
            "bad = [r for i, r in enumerate(res) if r.index != i or not r.ok or\n"
            "       r.digest != hashlib.sha256(str(int(os.path.basename(r.name))).encode()).hexdigest()]\n"
            "print(len(res), len(bad))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, address, d], env=env, capture_output=True, text=True,
                       timeout=120)
    ft.check(r.returncode == 0 and r.stdout.split() == ["10000", "0"], f"10,000 files: {r.stdout} {r.stderr[-500:]}")
    ft.log("ok: 10,000 files in one call through fhashd, every result right and in order")


def lib_env(**kw):
    """The environment for a program that loads this build's library but was not built with it (the
    out-of-tree example, Python): a sanitizer build's library needs its runtime loaded first,
    preloaded, with leak checks off for an interpreter's own allocations."""
    return dict(os.environ, **kw, **ft.sanitizer_env(LIB))


def python_env():
    """PYTHONPATH and FHASH_LIBRARY for this build's module and library."""
    return lib_env(PYTHONPATH=os.path.join(SRC, "python"), FHASH_LIBRARY=LIB)


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "--module":
        import fhash
        test_python_module(fhash, sys.argv[2], sys.argv[4:], sys.argv[3])
        return
    for p in ("sha256sum", "nm", "objdump", "cc", "pkg-config", "meson", "dbus-daemon"):
        if not shutil.which(p):
            ft.skip(f"{p} is not installed")
    if not all(os.path.exists(p) for p in (LIB, EXAMPLE, EXAMPLE_ASYNC, EXAMPLE_EVENT)):
        ft.skip(f"libfhash or the example is not built in {BUILD}")
    test_exports()
    with ft.Bus() as bus:
        tmp = tempfile.mkdtemp(prefix="fhash-lib-", dir=bus.dir)
        files = ft.make_files(os.path.join(tmp, "files"), 300, max_size=200000, seed=15)
        files = [os.path.relpath(p, tmp) for p in files] + ["missing-file"]
        exe, libdir = test_out_of_tree(tmp)
        with ft.Daemon(bus, "--workers", "2") as d:
            env = lib_env(LD_LIBRARY_PATH=libdir)
            same_as_sha256sum([exe, "--address", bus.address], files, tmp, env, "out-of-tree hash-files via fhashd")
            same_as_sha256sum([EXAMPLE, "--address", bus.address], files, tmp, dict(os.environ),
                              "hash-files via fhashd")
            same_as_sha256sum([EXAMPLE_ASYNC, "--address", bus.address], files, tmp, dict(os.environ),
                              "hash-files-async (a poll loop) via fhashd")
            same_as_sha256sum([EXAMPLE_EVENT, "--address", bus.address], files, tmp, dict(os.environ),
                              "hash-files-event (sd-event) via fhashd")
            pyenv = python_env()
            same_as_sha256sum(["/usr/bin/python3", os.path.join(SRC, "examples", "hash_files.py"), "--address",
                               bus.address], files, tmp, pyenv, "hash_files.py via fhashd")
            # The module's own tests, in a Python whose environment can load this build's library.
            r = subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--module", bus.address, tmp]
                               + [f for f in files if f != "missing-file"], env=pyenv, cwd=tmp, timeout=120)
            ft.check(r.returncode == 0, f"the Python module's tests failed ({r.returncode})")
            test_many(bus.address, tmp, pyenv)
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
        # Per-user quotas far below what the library keeps in flight (16 fds a call, open jobs fed
        # as results come): fhashd answers Busy and the library sends the calls again, so the
        # examples still print what sha256sum prints.
        with ft.Daemon(bus, "--workers", "1", "--max-files-per-uid", "40", "--max-jobs-per-uid", "2") as d:
            same_as_sha256sum([EXAMPLE, "--address", bus.address], files, tmp, dict(os.environ),
                              "hash-files under a 40-file quota")
            same_as_sha256sum(["/usr/bin/python3", os.path.join(SRC, "examples", "hash_files.py"), "--address",
                               bus.address], files, tmp, python_env(), "hash_files.py under a 40-file quota")
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
        ft.log("ok: the C and Python examples under a 40-file, 2-job quota (Busy, sent again)")
        # fhashd killed in the middle of a run (its input a pipe that never ends): the call returns
        # an error instead of waiting for ever.
        d = ft.Daemon(bus, "--workers", "2").start()
        child = subprocess.Popen(["/usr/bin/python3", "-c", KILLED, bus.address], env=python_env(),
                                 stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
        ft.check(child.poll() is None, "the run over a silent pipe ended before fhashd was killed")
        d.stop(signal.SIGKILL)
        try:
            out, _ = child.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            ft.fail("fhash_hash_fds() still waits 20 s after fhashd was killed")
        ft.check(child.returncode == 3 and out.startswith("ERR"), f"killed fhashd: rc {child.returncode}, {out!r}")
        ft.log(f"ok: fhashd killed mid-run: the library call fails ({out.strip()})")
        # A bus that activates fhashd when the library first asks for it.
        services = os.path.join(tmp, "services")
        os.makedirs(services)
        with open(os.path.join(services, "org.fhash.Hasher1.service"), "w") as f:
            f.write(f"[D-BUS Service]\nName={ft.BUS_NAME}\nExec={ft.fhashd_path()} --workers 1 --idle-exit 5\n")
        with ft.Bus(servicedir=services) as abus:
            r = subprocess.run(["/usr/bin/python3", "-c", ACTIVATED, abus.address, os.path.join(tmp, files[2])],
                               env=python_env(), capture_output=True, text=True, timeout=60)
            ft.check(r.returncode == 0 and r.stdout.split() == ["True", ft.sha256_file(os.path.join(tmp, files[2]))],
                     f"activation: {r.stdout} {r.stderr[-300:]}")
        ft.log("ok: the library activates fhashd on a bus that can start it")
        # No fhashd on this bus: the examples hash in-process and print the same.
        same_as_sha256sum([EXAMPLE, "--address", bus.address], files, tmp, dict(os.environ), "hash-files in-process")
        same_as_sha256sum([EXAMPLE_ASYNC, "--address", bus.address], files, tmp, dict(os.environ),
                          "hash-files-async in-process")
        same_as_sha256sum([EXAMPLE_EVENT, "--address", bus.address], files, tmp, dict(os.environ),
                          "hash-files-event in-process")
        ft.log("ok: hash-files (in tree and out of tree), hash-files-async (poll), hash-files-event (sd-event) "
               "and hash_files.py print what sha256sum prints, through fhashd and in-process")


if __name__ == "__main__":
    main()
