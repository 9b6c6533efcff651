#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-python.py: the fhash Python package as a package, and its asynchronous and error paths, against a
real fhashd on a private dbus-daemon:

- the wheel, built offline from a copy of python/ (pip wheel --no-index --no-build-isolation), holds
  exactly python/fhash/ (py.typed too) and the metadata Meson installs for Debian's python3-fhash;
  installed with pip --no-index into fresh venvs of every Python here (PATH's python3, a pyenv build
  on the development machines, and /usr/bin/python3), it says clearly when libfhash.so.0 is missing,
  and runs examples/hash_files.py on this build's library, printing what sha256sum prints;
- B2: a hash_async() task cancelled at random points of a run through fhashd always raises
  CancelledError, within 100 ms, and the loop never stops for more than 20 ms from the cancel until
  the run is wound down (both over the loop's own worst gap, measured beside it);
- B5: what the iterable of inputs raises comes out chained as the Error's __cause__, in every form;
  KeyboardInterrupt as itself;
- the same options in the synchronous and asynchronous forms (unordered, max_size, on_result,
  busy_notice), `async for r in client.aresults(...)`, Result.skip, two async runs on one client.
"""
import asyncio
import errno
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

BUILD = os.environ.get("FHASH_BUILD_ROOT", "")
SRC = os.environ.get("FHASH_SOURCE_ROOT", "")
LIB = os.path.join(BUILD, "src", "libfhash.so.0")
EXAMPLE = os.path.join(SRC, "examples", "hash_files.py")


def lib_env(**kw):
    """As test-libfhash.py's: a sanitizer build's library needs its runtime preloaded into the
    interpreter, with leak checks off for the interpreter's own allocations."""
    san = ft.sanitizer_env(LIB)
    return dict(os.environ, **kw, **san), bool(san)


def pip_env():
    """pip offline and on its own: no index, no links to other wheels, no version check."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "PYTHONPATH"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INPUT"] = "1"
    return env


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    ft.check(r.returncode == 0, f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout[-1500:]}{r.stderr[-1500:]}")
    return r


def interpreters():
    """Every distinct Python here: PATH's python3 (through a pyenv shim: the binary it runs) and
    Debian's."""
    found = {}
    for p in (shutil.which("python3"), "/usr/bin/python3"):
        if not p:
            continue
        r = subprocess.run([p, "-c", "import sys, venv, ensurepip; print(sys.executable)"], capture_output=True,
                           text=True)
        if r.returncode == 0:
            found.setdefault(os.path.realpath(r.stdout.strip()), r.stdout.strip())
    return list(found.values())


def test_wheel(bus, tmp):
    for mod in ("setuptools", "wheel", "pip"):
        if subprocess.run(["/usr/bin/python3", "-c", f"import {mod}"], capture_output=True).returncode != 0:
            ft.log(f"SKIP: /usr/bin/python3 has no {mod} (python3-setuptools, python3-wheel, python3-pip): "
                   "the wheel is not built")
            return False
    src = os.path.join(tmp, "python")
    # setuptools writes build/ and *.egg-info beside the sources: a copy keeps the tree clean.
    shutil.copytree(os.path.join(SRC, "python"), src, ignore=shutil.ignore_patterns("__pycache__", "build",
                                                                                   "*.egg-info", "dist"))
    dist = os.path.join(tmp, "dist")
    run(["/usr/bin/python3", "-m", "pip", "wheel", "--no-index", "--no-build-isolation", "--no-deps", "-q",
         "-w", dist, src], env=pip_env())
    wheels = os.listdir(dist)
    ft.check(len(wheels) == 1 and wheels[0].endswith("-py3-none-any.whl"), f"wheels built: {wheels}")
    wheel = os.path.join(dist, wheels[0])
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        pkg = sorted(n for n in names if n.startswith("fhash/"))
        ours = sorted("fhash/" + f for f in os.listdir(os.path.join(SRC, "python", "fhash")) if f != "__pycache__")
        ft.check(pkg == ours, f"the wheel's package {pkg} is not python/fhash/ {ours}")
        for n in pkg:
            with open(os.path.join(SRC, "python", n), "rb") as f:
                ft.check(z.read(n) == f.read(), f"{n} in the wheel differs from the tree's")
        meta = z.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    # Debian's python3-fhash: the same files (python/meson.build) and the same metadata.
    with open(os.path.join(BUILD, "python", "METADATA")) as f:
        installed = dict(line.split(": ", 1) for line in f.read().splitlines() if ": " in line)
    wheel_meta = dict(line.split(": ", 1) for line in meta.splitlines() if ": " in line)
    for k in ("Name", "Version", "Summary", "Requires-Python", "License"):
        ft.check(installed.get(k) == wheel_meta.get(k), f"METADATA {k}: Meson installs {installed.get(k)!r}, "
                 f"the wheel has {wheel_meta.get(k)!r}")
    ft.log(f"ok: {wheels[0]} built offline: exactly python/fhash/ (py.typed too), the metadata Debian's "
           "package gets")

    files = ft.make_files(os.path.join(tmp, "wheel-files"), 40, max_size=50000, seed=41)
    files = [os.path.relpath(p, tmp) for p in files] + ["missing-file"]
    ref = subprocess.run(["sha256sum", "--"] + files, cwd=tmp, capture_output=True, text=True)
    pys = interpreters()
    ft.check(pys, "no Python with venv and ensurepip here")
    for i, py in enumerate(pys):
        venv = os.path.join(tmp, f"venv{i}")
        run([py, "-m", "venv", venv], env=pip_env())
        vpy = os.path.join(venv, "bin", "python")
        run([vpy, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel], env=pip_env())
        probe = ("import importlib.metadata as m, importlib.resources as r, sys\n"
                 "print(m.version('fhash'), (r.files('fhash') / 'py.typed').is_file(), sys.prefix)")
        env = dict(pip_env(), FHASH_LIBRARY="")
        env.pop("LD_LIBRARY_PATH", None)
        system_lib = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
        if "libfhash.so.0 " not in system_lib:
            r = subprocess.run([vpy, "-c", "import fhash"], env=env, capture_output=True, text=True)
            ft.check(r.returncode != 0 and "ImportError: fhash: libfhash.so.0, fhash's C library, is not installed"
                     in r.stderr and "FHASH_LIBRARY" in r.stderr, f"{py}: without libfhash: {r.stderr[-600:]}")
        r = subprocess.run([vpy, "-c", "import fhash"], env=dict(env, FHASH_LIBRARY="/nonexistent/libfhash.so.0"),
                           capture_output=True, text=True)
        ft.check(r.returncode != 0 and "'/nonexistent/libfhash.so.0', which cannot be loaded" in r.stderr,
                 f"{py}: FHASH_LIBRARY wrong: {r.stderr[-600:]}")
        env, _ = lib_env(FHASH_LIBRARY=LIB)
        env = {k: v for k, v in env.items() if k != "PYTHONPATH"}
        # The package, not the tree's: python/ is not on the path, the venv's site-packages is.
        r = run([vpy, "-c", probe.replace("sys.prefix", "sys.prefix, __import__('fhash').__file__")], env=env)
        version, typed, prefix, where = r.stdout.split()
        ft.check(version == "0.1.0" and typed == "True" and where.startswith(venv), f"{py}: {r.stdout}")
        got = subprocess.run([vpy, EXAMPLE, "--address", bus.address] + files, cwd=tmp, env=env, capture_output=True,
                             text=True, timeout=120)
        ft.check((got.stdout, got.stderr, got.returncode) == (ref.stdout, ref.stderr, ref.returncode),
                 f"{py}: hash_files.py in a venv:\n{got.stdout[:300]}{got.stderr[-300:]}\n---\n{ref.stdout[:300]}")
        ft.log(f"ok: the wheel in a fresh venv of {py}: pip --no-index installs it, a missing libfhash.so.0 is "
               "said so, examples/hash_files.py prints what sha256sum prints")
    return True


# ---- in a child with this build's library and the tree's package ----

def api_tests(address, tmp, sanitized):
    import fhash

    files = ft.make_files(os.path.join(tmp, "api"), 300, max_size=40000, seed=42)

    def digest(p, algo="sha256"):
        with open(p, "rb") as f:
            return hashlib.new(algo, f.read()).hexdigest()

    c = fhash.Client(address=address, fallback=False)

    # B5: the iterable's exception, chained, in every form.
    def failing(exc):
        for i, f in enumerate(files[:50]):
            if i == 10:
                raise exc
            yield f

    async def drain_async(gen):
        return [r async for r in c.aresults(gen)]
    forms = {
        "hash_stream": lambda g: c.hash_stream(g),
        "results": lambda g: list(c.results(g)),
        "hash": lambda g: c.hash(g),
        "aresults": lambda g: asyncio.run(drain_async(g)),
        "hash_async": lambda g: asyncio.run(c.hash_async(g)),
    }
    for name, call in forms.items():
        boom = ValueError(f"boom in {name}")
        try:
            call(failing(boom))
            ft.fail(f"{name}: the iterable's ValueError was lost")
        except fhash.Error as e:
            ft.check(e.__cause__ is boom and "ValueError" in e.message and e.errno == errno.EIO,
                     f"{name}: {e!r} caused by {e.__cause__!r}")
        try:
            call(failing(KeyboardInterrupt()))
            ft.fail(f"{name}: KeyboardInterrupt from the iterable was lost")
        except KeyboardInterrupt:
            pass
        ft.check(c.hash(files[:1])[0].digest == digest(files[0]), f"{name}: the client after the iterable failed")
    ft.log("ok: B5: what the iterable raises is the Error's __cause__ in all five forms; KeyboardInterrupt as it is")

    # The same options in both forms.
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    big = max(files, key=os.path.getsize)

    async def collect(inputs, **kw):
        return [r async for r in c.aresults(inputs, **kw)]
    for form in ("sync", "async"):
        def go(inputs, **kw):
            return list(c.results(inputs, **kw)) if form == "sync" else asyncio.run(collect(inputs, **kw))
        seen = []
        res = go(files[:30] + [fhash.Input(path=files[0], skip="not today"),
                               fhash.Input(path=files[1], algorithm="md5", name="renamed"),
                               fhash.Input(path=files[2], expected=digest(files[2]))],
                 on_result=lambda r: seen.append(r.index))
        ft.check([r.index for r in res] == list(range(33)) == seen, f"{form}: on_result/order {seen[:5]}")
        ft.check(all(r.ok and r.digest == digest(files[i]) and r.algorithm == "sha256" for i, r in enumerate(res[:30])),
                 f"{form}: digests")
        ft.check(res[30].status == fhash.SKIPPED and res[30].skip == "not today" and res[30].digest is None,
                 f"{form}: skip {res[30]}")
        ft.check(res[31].algorithm == "md5" and res[31].digest == digest(files[1], "md5") and res[31].name == "renamed",
                 f"{form}: own algorithm {res[31]}")
        ft.check(res[32].ok and res[32].expected == digest(files[2]), f"{form}: expected {res[32]}")
        res = go([big, files[1]], max_size=100)
        ft.check(res[0].error == errno.EFBIG and (res[1].ok or os.path.getsize(files[1]) > 100), f"{form}: max_size")
        w = os.open(fifo, os.O_RDWR)
        timer = threading.Timer(0.5, lambda fd=w: (os.write(fd, b"late data"), os.close(fd)))
        timer.start()
        order = []
        res = go([fifo] + files[:20], unordered=True, on_result=lambda r: order.append(r.index))
        timer.join()
        ft.check(order[-1] == 0 and sorted(order) == list(range(21)) and
                 {r.index: r for r in res}[0].digest == hashlib.sha256(b"late data").hexdigest(),
                 f"{form}: unordered {order}")
    ft.log("ok: sync and async forms: on_result, max_size, unordered, Input's skip, algorithm, name, expected")

    # aresults(): lazy at both ends; left early, nothing more is pulled and nothing leaks.
    async def lazy():
        pulled, first = [], []

        def gen():
            for i in range(5000):
                pulled.append(i)
                yield files[i % len(files)]
        n = 0
        async for r in c.aresults(gen()):
            if not first:
                first.append(len(pulled))
            ft.check(r.index == n and r.digest == digest(files[n % len(files)]), f"aresults: {r}")
            n += 1
        ft.check(n == 5000 and first[0] < 5000, f"aresults: {n} results, the first after {first} pulls")
        fds = len(os.listdir("/proc/self/fd"))
        pulled.clear()
        async for r in c.aresults(gen()):
            if r.index == 2:
                at_break = len(pulled)
                break
        await asyncio.sleep(0.5)  # the run winds down on the loop meanwhile
        ft.check(len(pulled) == at_break and not fhash._winding, f"left early: {len(pulled) - at_break} pulled "
                 f"after, {len(fhash._winding)} runs winding down")
        ft.check(len(os.listdir("/proc/self/fd")) == fds, "aresults left early leaks fds")
        # Two runs of one client at once: they share its connection's fd.
        a, b = await asyncio.gather(c.hash_async(files[:150]), c.hash_async(files[150:]))
        ft.check([r.digest for r in a + b] == [digest(f) for f in files], "two async runs at once")
    asyncio.run(lazy())
    ft.log("ok: async for over aresults(): in order, lazy, left early without a leak; two runs at once")

    # B2: hash_async() cancelled at random points through fhashd.
    tree = ft.make_files(os.path.join(tmp, "b2"), 6000, max_size=8192, seed=43)
    slack = 5 if sanitized else 1

    # What holds the loop is judged by the time the loop's thread could have run and did not: a gap
    # less the time the kernel kept it waiting for a CPU (schedstat's run-queue time), which other
    # work on a shared machine decides, not this code.
    schedstat = f"/proc/self/task/{threading.get_native_id()}/schedstat"

    def runq():
        try:
            with open(schedstat) as f:
                return int(f.read().split()[1]) / 1e9
        except OSError:
            return 0.0

    async def ticking(body):
        marks = []

        async def ticker():
            last, last_q = time.monotonic(), runq()
            while True:
                await asyncio.sleep(0.001)
                now, q = time.monotonic(), runq()
                marks.append((last, now, q - last_q))  # a gap between two ticks, its run-queue wait
                last, last_q = now, q
        tk = asyncio.create_task(ticker())
        try:
            return await body(marks)
        finally:
            tk.cancel()

    def held(marks, since=0.0):
        """The longest the loop was held from since on: each gap's part after since, less its
        run-queue wait."""
        return max(max(0.0, end - max(start, since) - q) for start, end, q in marks if end > since)

    async def control(marks):
        await asyncio.sleep(0.5)
        return held(marks)

    async def timed_run(marks):
        t0 = time.monotonic()
        res = await c.hash_async(tree)
        ft.check(len(res) == len(tree) and all(r.ok for r in res[:50]), "the uncancelled run")
        return time.monotonic() - t0

    async def cancelled(target, fifo_at=None):
        """A run cancelled from outside once target files have their result; with fifo_at, a run held
        at a FIFO (no data, its writer holds it open) at that position, cancelled once the files
        before it are done and those after it wait in libfhash. (outcome, latency, longest loop gap
        from the cancel), or None when the run was over first (fhashd hashes these small files in a
        few steps of the loop)."""
        async def body(marks):
            reached = asyncio.Event()

            def progress(done, total, *_):
                if done >= target:
                    reached.set()
            items = tree if fifo_at is None else tree[:fifo_at] + [fifo] + tree[fifo_at:]
            task = asyncio.ensure_future(c.hash_async(items, on_progress=progress))
            await asyncio.wait([asyncio.ensure_future(reached.wait()), task], return_when=asyncio.FIRST_COMPLETED)
            if fifo_at is not None:
                await asyncio.sleep(0.1)
            if task.done():
                return None
            t0, q0 = time.monotonic(), runq()
            task.cancel()
            try:
                await task
                outcome = "finished"
            except asyncio.CancelledError:
                outcome = "cancelled"
            latency = time.monotonic() - t0 - (runq() - q0)
            deadline = time.monotonic() + 20
            while fhash._winding and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            ft.check(not fhash._winding, "the cancelled run still winds down 20 s later")
            await asyncio.sleep(0.02)
            return outcome, latency, held(marks, t0)
        return await ticking(body)

    idle = asyncio.run(ticking(control))
    duration = asyncio.run(ticking(timed_run))
    rnd = random.Random(27)
    outcomes = []
    holder = os.open(fifo, os.O_RDWR)  # the FIFO case: a run held at a FIFO that gets no data
    for i in range(12):
        at = int(rnd.uniform(0.05, 0.9) * len(tree))
        o = asyncio.run(cancelled(at, at if i % 2 else None))
        ft.check(o is not None or i % 2 == 0, "a run held at a FIFO was over before its cancel")
        if o is not None:
            outcomes.append(o)
    os.close(holder)
    worst_latency = max(o[1] for o in outcomes)
    worst_gap = max(o[2] for o in outcomes)
    ft.log(f"B2: {len(outcomes)} cancels (6 held at a FIFO) of a {duration * 1000:.0f} ms run of {len(tree)} files: "
           f"{sum(o[0] == 'cancelled' for o in outcomes)} raised CancelledError; latency worst "
           f"{worst_latency * 1000:.1f} ms; longest loop gap from the cancel {worst_gap * 1000:.1f} ms "
           f"(idle loop {idle * 1000:.1f} ms; times less the run-queue waits)")
    ft.check(all(o[0] == "cancelled" for o in outcomes), f"a cancel was swallowed: {outcomes}")
    ft.check(worst_latency <= (0.1 + idle) * slack, f"a cancel took {worst_latency * 1000:.0f} ms")
    ft.check(worst_gap <= (0.02 + idle) * slack, f"the loop stopped {worst_gap * 1000:.0f} ms after a cancel")
    ft.check(c.hash(files[:2])[1].digest == digest(files[1]), "the client after the cancels")
    ft.log("ok: B2: every cancel raised CancelledError within 100 ms, the loop never stopped 20 ms (over idle)")
    c.close()


def busy_tests(bus, tmp):
    """busy_notice, sync and async, per call and per client: another client holds one of the two
    files fhashd allows this uid (a FIFO with a byte and a writer that waits: libfhash keeps a FIFO
    with no data at all to itself, fhashd gets it with its first byte) for over a second."""
    import fhash
    files = ft.make_files(os.path.join(tmp, "busy"), 2, max_size=1000, seed=44)
    fifo = os.path.join(tmp, "busy-fifo")
    os.mkfifo(fifo)
    for form in ("sync", "async", "client"):
        with ft.Daemon(bus, "--workers", "1", "--max-files-per-uid", "2"):
            notices = []
            holder = fhash.Client(address=bus.address, fallback=False)
            c = fhash.Client(address=bus.address, fallback=False,
                             busy_notice=(lambda r, g: notices.append((r, g))) if form == "client" else None)
            w = os.open(fifo, os.O_RDWR)
            os.write(w, b"n")
            held = holder.start([fifo])
            t0 = time.monotonic()
            while time.monotonic() - t0 < 0.5:
                held.process()
                time.sleep(0.02)
            timer = threading.Timer(1.8, lambda fd=w: (os.write(fd, b"ow"), os.close(fd)))
            timer.start()
            kw = {} if form == "client" else {"busy_notice": lambda r, g: notices.append((r, g))}
            if form == "async":
                async def go():
                    return [r async for r in c.aresults(files, **kw)]
                res = asyncio.run(go())
            else:
                res = list(c.results(files, **kw))
            timer.join()
            while held.process():
                fhash._wait(held)
            held.close()
            ft.check([r.digest for r in res] == [ft.sha256_file(f) for f in files], f"{form}: after busy {res}")
            ft.check(len(notices) == 1 and "exceed the limit" in notices[0][0], f"{form}: busy notices {notices}")
            c.close()
            holder.close()
    ft.log("ok: busy_notice once per busy run: per call (sync and async) and per client")


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "--api":
        api_tests(sys.argv[2], sys.argv[3], sys.argv[4] == "1")
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--busy":
        with ft.Bus() as bus:
            busy_tests(bus, sys.argv[2])
        return
    for p in ("sha256sum", "dbus-daemon"):
        if not shutil.which(p):
            ft.skip(f"{p} is not installed")
    if not os.path.exists(LIB):
        ft.skip(f"libfhash is not built in {BUILD}")
    ft.require()
    env, sanitized = lib_env(PYTHONPATH=os.path.join(SRC, "python"), FHASH_LIBRARY=LIB)
    with ft.Bus() as bus:
        tmp = tempfile.mkdtemp(prefix="fhash-py-", dir=bus.dir)
        with ft.Daemon(bus, "--workers", "2") as d:
            if sanitized:
                ft.log("SKIP: a sanitizer build: the wheel is not built (the same files as the normal build's)")
            else:
                test_wheel(bus, tmp)
            r = subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--api", bus.address, tmp,
                                "1" if sanitized else "0"], env=env, cwd=tmp, timeout=400)
            ft.check(r.returncode == 0, f"the module's tests failed ({r.returncode})")
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
        r = subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--busy", tmp], env=env, cwd=tmp,
                           timeout=200)
        ft.check(r.returncode == 0, f"the busy tests failed ({r.returncode})")


if __name__ == "__main__":
    main()
