#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-glib.py: libfhash-glib (src/glib/) as integrators use it, through its typelib, against a real
fhashd on a private dbus-daemon:

- examples/hash_files_gi.py (PyGObject), and with --gjs examples/hash-files.js (GJS), print what sha256sum prints,
  through fhashd and in-process; ^C halfway through a tree (the run held at a FIFO) cancels their
  GCancellable, and they end at once with G_IO_ERROR_CANCELLED, having printed the first half;
- the API (in a child with this build's typelib): a missing file's result carries an
  FHASH_CLIENT_ERROR NOT_FOUND GError; a streamed tree cancelled halfway from a result handler
  finishes with G_IO_ERROR_CANCELLED at once, gives no result and pulls no input after; every run
  error is a code of the domain (NotReachable naming the socket, InvalidArgs, Gone, then a new
  connection); open files, inputs with expected digests, skips and their own algorithm; unordered
  results; two runs at once; the busy signal; progress properties; the main loop keeps turning.

With --gjs, the GJS example only (the glib-gjs test). Exits 77 when the typelib was not built (no GLib
or gobject-introspection, or a sanitizer build), or gjs is missing for --gjs.
"""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

BUILD = os.environ.get("FHASH_BUILD_ROOT", "")
SRC = os.environ.get("FHASH_SOURCE_ROOT", "")
GLIBDIR = os.path.join(BUILD, "src", "glib")
LIBDIR = os.path.join(BUILD, "src")
PY_EXAMPLE = os.path.join(SRC, "examples", "hash_files_gi.py")
JS_EXAMPLE = os.path.join(SRC, "examples", "hash-files.js")


def gi_env():
    """This build's typelib and libraries for a program started from here; a sanitizer build's
    library needs its runtime preloaded into the interpreter, leak checks off for the
    interpreter's own allocations."""
    env = dict(os.environ, GI_TYPELIB_PATH=GLIBDIR, LD_LIBRARY_PATH=f"{GLIBDIR}:{LIBDIR}")
    san = ft.sanitizer_env(os.path.join(GLIBDIR, "libfhash-glib.so.0"))
    env.update(san)
    return env, bool(san)


def sha256sum(files, cwd):
    return subprocess.run(["sha256sum", "--"] + files, cwd=cwd, capture_output=True, text=True)


def same_as_sha256sum(cmd, files, cwd, env, what):
    ref = sha256sum(files, cwd)
    got = subprocess.run(cmd + files, cwd=cwd, capture_output=True, text=True, env=env, timeout=120)
    ft.check(got.stdout == ref.stdout, f"{what}: stdout differs from sha256sum:\n{got.stdout[:500]}\n---\n"
             f"{ref.stdout[:500]}\nstderr: {got.stderr[-500:]}")
    ft.check(got.stderr == ref.stderr, f"{what}: stderr {got.stderr[-500:]!r}, sha256sum's {ref.stderr!r}")
    ft.check(got.returncode == ref.returncode, f"{what}: exit {got.returncode}, sha256sum {ref.returncode}")


def cancel_halfway(cmd, files, fifo, cwd, env, what):
    """The example over a tree with a FIFO in the middle that never gets data (a writer holds it open):
    the results stop there. Once the first half is printed, SIGINT: the run's GCancellable is
    cancelled, and the program must end at once (130, "Operation was cancelled"), its output
    exactly sha256sum's for the first half. Returns the seconds from the signal to its exit."""
    half = files.index(fifo)
    ref = sha256sum(files[:half], cwd).stdout.splitlines(keepends=True)
    holder = os.open(os.path.join(cwd, fifo), os.O_RDWR)
    try:
        p = subprocess.Popen(cmd + files, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines, err = [], []
        readers = [threading.Thread(target=lambda: lines.extend(iter(p.stdout.readline, ""))),
                   threading.Thread(target=lambda: err.append(p.stderr.read()))]
        for t in readers:
            t.start()
        ft.check(ft.wait_for(lambda: len(lines) >= half or p.poll() is not None, 120),
                 f"{what}: {len(lines)} of the first {half} lines after 120 s")
        time.sleep(0.3)  # nothing more may come: the FIFO holds the rest back
        ft.check(p.poll() is None and len(lines) == half, f"{what}: {len(lines)} lines before the FIFO's, "
                 f"exit {p.poll()}")
        t0 = time.monotonic()
        p.send_signal(signal.SIGINT)
        try:
            rc = p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            ft.fail(f"{what}: still running 20 s after SIGINT")
        dt = time.monotonic() - t0
        for t in readers:
            t.join()
    finally:
        os.close(holder)
    ft.check(rc == 130 and "Operation was cancelled" in err[0], f"{what}: exit {rc}, stderr {err[0][-300:]!r}")
    ft.check(lines == ref, f"{what}: the output before the cancel is not sha256sum's for the first half")
    # Promptly: what it takes a process to exit; a run that waited for its files would wait for ever.
    ft.check(dt < 3.0, f"{what}: {dt:.2f} s from SIGINT to exit")
    return dt


def test_examples(bus, tmp, env, name, cmd):
    """One example against fhashd and in-process, and cancelled halfway through a tree."""
    files = ft.make_files(os.path.join(tmp, "ex"), 300, max_size=100000, seed=27)
    files = [os.path.relpath(p, tmp) for p in files] + ["missing-file", "ex"]
    tree = ft.make_files(os.path.join(tmp, "tree"), 800, max_size=4096, seed=28)
    fifo = os.path.join(tmp, "tree", "fifo")
    os.mkfifo(fifo)
    tree = [os.path.relpath(p, tmp) for p in tree]
    fifo = os.path.relpath(fifo, tmp)
    tree = tree[:400] + [fifo] + tree[400:]
    same_as_sha256sum(cmd + ["--address", bus.address], files, tmp, env, f"{name} via fhashd")
    dt = cancel_halfway(cmd + ["--address", bus.address], tree, fifo, tmp, env, f"{name} cancelled")
    same_as_sha256sum(cmd + ["--address", f"unix:path={tmp}/no-such-bus"], files, tmp, env, f"{name} in-process")
    ft.log(f"ok: {name} prints what sha256sum prints, through fhashd and in-process; ^C at half a tree "
           f"ends it in {dt * 1000:.0f} ms, with the first half printed")


# ---- the API, in a child that loads this build's typelib ----

def api_tests(address, tmp, fhashd_args):
    import gi
    gi.require_version("Fhash", "1.0")
    from gi.repository import Fhash, Gio, GLib

    ctx = GLib.MainContext.default()
    domain = Fhash.client_error_quark()

    def iterate_until(pred, timeout):
        tick = GLib.timeout_add(10, lambda: True)
        deadline = time.monotonic() + timeout
        try:
            while not pred() and time.monotonic() < deadline:
                ctx.iteration(True)
        finally:
            GLib.source_remove(tick)
        return pred()

    def run(start, finish, timeout=60):
        """Starts an async call, runs the loop until its callback: (value, GLib.Error or None)."""
        box = {}
        start(lambda obj, res: box.setdefault("res", res))
        ft.check(iterate_until(lambda: "res" in box, timeout), f"no callback within {timeout} s")
        try:
            return finish(box["res"]), None
        except GLib.Error as e:
            return None, e

    def digest(path, algo="sha256"):
        with open(path, "rb") as f:
            return hashlib.new(algo, f.read()).hexdigest()

    files = ft.make_files(os.path.join(tmp, "api"), 400, max_size=60000, seed=31)
    missing = os.path.join(tmp, "missing")

    # A tree through fhashd: results in order by signal and in the array, a missing file's GError,
    # a directory's, the progress properties; the loop turns all along.
    c = Fhash.Client.new_for_address(address, Fhash.ClientFlags.NO_FALLBACK)
    c.set_hash_flags(Fhash.HashFlags.PROGRESS)
    by_signal, notified = [], []
    h = c.connect("result", lambda _c, r: by_signal.append(r.get_index()))
    c.connect("notify::files-done", lambda obj, _p: notified.append(obj.props.files_done))
    gaps, last = [], [time.monotonic()]

    def tick():
        now = time.monotonic()
        gaps.append(now - last[0])
        last[0] = now
        return True
    last[0] = time.monotonic()
    t = GLib.timeout_add(5, tick)
    iterate_until(lambda: False, 0.5)
    control = max(gaps)
    gaps.clear()
    last[0] = time.monotonic()
    res, err = run(lambda cb: c.hash_async(files + [missing, os.path.join(tmp, "api")], None, cb), c.hash_finish)
    GLib.source_remove(t)
    ft.check(err is None and len(res) == 402, f"hash_async: {err}, {res and len(res)} results")
    ft.check(c.get_uses_daemon() and c.props.uses_daemon, "the client does not use fhashd")
    ft.check(by_signal == list(range(402)), f"result signals out of order or missing: {by_signal[:5]}...")
    for i, r in enumerate(res[:400]):
        ft.check(r.get_index() == i and r.get_status() == Fhash.Status.OK and r.get_error() is None and
                 r.get_digest() == digest(files[i]) and r.get_size() == os.path.getsize(files[i]) and
                 r.get_name() == files[i] and r.get_algorithm() == "sha256", f"result {i}: {r.get_name()}")
    e = res[400].get_error()
    ft.check(res[400].get_status() == Fhash.Status.ERROR and e is not None and
             e.matches(domain, Fhash.ClientError.NOT_FOUND) and e.message == os.strerror(2),
             f"missing file: {res[400].get_status()}, {e}")
    try:
        res[400].propagate_error()
        ft.fail("propagate_error() of a missing file did not raise")
    except GLib.Error as ex:
        ft.check(ex.matches(domain, Fhash.ClientError.NOT_FOUND), f"propagate_error: {ex}")
    ft.check(res[401].get_error().matches(domain, Fhash.ClientError.NOT_REGULAR), f"directory: {res[401].get_error()}")
    total = sum(os.path.getsize(f) for f in files)
    p = c.get_progress()
    ft.check(tuple(p) == (402, 402, total, total) and notified and notified[-1] == 402 and
             all(a <= b for a, b in zip(notified, notified[1:])), f"progress {tuple(p)}, notified {notified[-3:]}")
    ft.check(max(gaps) < control + 0.1, f"the loop stopped {max(gaps) * 1000:.0f} ms during the run "
             f"(ticks of 5 ms, {control * 1000:.0f} ms without a run)")
    c.disconnect(h)
    ft.log(f"ok: 400 files, a missing one (FHASH_CLIENT_ERROR NOT_FOUND) and a directory through fhashd; "
           f"longest loop gap {max(gaps) * 1000:.0f} ms ({control * 1000:.0f} ms idle)")

    # A streamed tree (a walk) cancelled halfway: the run finishes at once with
    # G_IO_ERROR_CANCELLED; no result is emitted and no input pulled after the cancel. (libfhash
    # pulls a source well ahead of the results, and fhashd hashes small files faster than one step
    # of the loop: the cancel comes from the walk, when it has given half of the tree.)
    tree = ft.make_files(os.path.join(tmp, "tree"), 3000, max_size=2048, seed=32)
    pulled, got, after = [], [], {"results": 0}
    cancellable = Gio.Cancellable()

    def walk():
        for dirpath, _, names in os.walk(os.path.join(tmp, "tree")):
            for n in sorted(names):
                yield os.path.join(dirpath, n)
    paths = walk()

    def source(*_):
        p = next(paths, None)
        if p is None:
            return None
        pulled.append(p)
        if len(pulled) == 1500:
            after["t0"] = time.monotonic()
            cancellable.cancel()
        return Fhash.Input.new_for_path(p)

    def on_result(_c, r):
        got.append(r.get_index())
        if "t0" in after:
            after["results"] += 1
    h = c.connect("result", on_result)
    box = {}
    # PyGObject passes a source's own data only as a keyword (a tuple positionally).
    c.hash_source_async(source, cancellable=cancellable, callback=lambda obj, r: box.update(res=r, t=time.monotonic()))
    ft.check(iterate_until(lambda: "res" in box, 60), "the cancelled source run never finished")
    try:
        c.hash_source_finish(box["res"])
        ft.fail("a cancelled run finished without an error")
    except GLib.Error as ex:
        ft.check(ex.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED), f"cancelled run: {ex}")
    dt = box["t"] - after["t0"]
    iterate_until(lambda: False, 0.5)  # libfhash winds the run down in the background meanwhile
    ft.check(after["results"] == 0, f"{after['results']} results after the cancel")
    ft.check(len(pulled) == 1500, f"{len(pulled) - 1500} inputs pulled after the cancel")
    ft.check(dt < 0.5, f"{dt * 1000:.0f} ms from cancel to the callback")
    c.disconnect(h)
    res, err = run(lambda cb: c.hash_async(tree[:3], None, cb), c.hash_finish)
    ft.check(err is None and [r.get_digest() for r in res] == [digest(x) for x in tree[:3]], f"after cancel: {err}")
    ft.log(f"ok: a walk of 3,000 files cancelled at 1,500: G_IO_ERROR_CANCELLED in {dt * 1000:.1f} ms, "
           f"no result and no input after ({len(got)} results before)")

    # A run held at a FIFO, cancelled from a timer: the same, through fhash_client_hash_async().
    def new_fifo(name):
        """A FIFO of its own for each case: a cancelled job of fhashd may still be reading another."""
        path = os.path.join(tmp, name)
        os.mkfifo(path)
        return path
    fifo = new_fifo("fifo-cancel")
    holder = os.open(fifo, os.O_RDWR)
    cancellable = Gio.Cancellable()
    GLib.timeout_add(300, lambda: (box.update(t0=time.monotonic()), cancellable.cancel(), False)[-1])
    box.clear()
    res, err = run(lambda cb: c.hash_async(files[:5] + [fifo] + files[5:10], cancellable,
                                           lambda o, r: (box.update(t=time.monotonic()), cb(o, r))), c.hash_finish)
    ft.check(err is not None and err.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED) and
             box["t"] - box["t0"] < 0.5, f"a run held at a FIFO, cancelled: {err}")
    # A GCancellable cancelled before the call: at once, nothing is started.
    res, err = run(lambda cb: c.hash_async(files[:2], cancellable, cb), c.hash_finish)
    ft.check(err is not None and err.matches(Gio.io_error_quark(), Gio.IOErrorEnum.CANCELLED), f"pre-cancelled: {err}")
    os.close(holder)
    ft.log("ok: a run held at a FIFO, cancelled from a timer, ends at once; so does one cancelled before it starts")

    # Open files: a regular file and a pipe, closed by the caller at once (the client holds copies).
    rfd = os.open(files[3], os.O_RDONLY)
    pr, pw = os.pipe()
    os.write(pw, b"through a pipe")
    os.close(pw)
    box.clear()
    c.hash_fds_async([rfd, pr], ["the file"], None, lambda o, r: box.update(res=r))
    os.close(rfd)
    os.close(pr)
    ft.check(iterate_until(lambda: "res" in box, 60), "hash_fds_async: no callback")
    res = c.hash_fds_finish(box["res"])
    ft.check(res[0].get_name() == "the file" and res[0].get_digest() == digest(files[3]) and res[1].get_name() == ""
             and res[1].get_digest() == hashlib.sha256(b"through a pipe").hexdigest(), "hash_fds_async results")
    res, err = run(lambda cb: c.hash_fds_async([987654], None, None, cb), c.hash_fds_finish)
    ft.check(err is not None and err.matches(domain, Fhash.ClientError.INVALID_ARGS) and "987654" in err.message,
             f"a closed fd: {err}")
    ft.log("ok: open files (a regular file, a pipe) closed by the caller at once; a bad fd is INVALID_ARGS")

    # Inputs of a source: an expected digest right and wrong, a skip, an fd, an algorithm of its own.
    ins = [Fhash.Input.new_for_path(files[0]), Fhash.Input.new_for_path(files[1]), Fhash.Input.new_for_path(files[2]),
           Fhash.Input.new_for_fd(os.open(files[4], os.O_RDONLY), "fd four"), Fhash.Input.new_for_path(files[5])]
    ins[0].set_expected(digest(files[0]))
    ins[1].set_expected("0" * 64)
    ins[2].set_skip("not today")
    ins[4].set_algorithm("md5")
    got = []
    h = c.connect("result", lambda _c, r: got.append(r))
    it = iter(ins)
    ok, err = run(lambda cb: c.hash_source_async(lambda *_: next(it, None), callback=cb), c.hash_source_finish)
    c.disconnect(h)
    ft.check(ok and err is None and len(got) == 5, f"source of inputs: {err}, {len(got)}")
    ft.check(got[0].get_status() == Fhash.Status.OK and got[0].get_expected() == digest(files[0]), "expected, right")
    ft.check(got[1].get_status() == Fhash.Status.MISMATCH and got[1].get_digest() == digest(files[1]) and
             got[1].get_error().matches(domain, Fhash.ClientError.MISMATCH), "expected, wrong")
    ft.check(got[2].get_status() == Fhash.Status.SKIPPED and got[2].get_skip() == "not today" and
             got[2].get_error() is None, "skipped")
    ft.check(got[3].get_name() == "fd four" and got[3].get_digest() == digest(files[4]), "fd input")
    ft.check(got[4].get_algorithm() == "md5" and got[4].get_digest() == digest(files[5], "md5"), "its own algorithm")
    ft.log("ok: a source's inputs: expected digests (OK, MISMATCH), a skip, an open file, an algorithm of its own")

    # Unordered: the file behind a FIFO that gets its data later comes last, its digest right.
    fifo = new_fifo("fifo-unordered")
    w = os.open(fifo, os.O_RDWR)
    GLib.timeout_add(500, lambda: (os.write(w, b"late data"), os.close(w), False)[-1])
    c.set_hash_flags(Fhash.HashFlags.UNORDERED)
    order = []
    h = c.connect("result", lambda _c, r: order.append(r.get_index()))
    res, err = run(lambda cb: c.hash_async([fifo] + files[:20], None, cb), c.hash_finish)
    c.disconnect(h)
    c.set_hash_flags(Fhash.HashFlags.NONE)
    ft.check(err is None and order[-1] == 0 and sorted(order) == list(range(21)) and
             {r.get_index(): r for r in res}[0].get_digest() == hashlib.sha256(b"late data").hexdigest(),
             f"unordered: {order}")
    # Two runs of one client at once, each with its own results.
    boxes = [{}, {}]
    c.hash_async(files[:150], None, lambda o, r: boxes[0].update(res=r))
    c.hash_async(files[150:300], None, lambda o, r: boxes[1].update(res=r))
    ft.check(iterate_until(lambda: all("res" in b for b in boxes), 60), "two runs at once: no callbacks")
    for b, part in zip(boxes, (files[:150], files[150:300])):
        ft.check([r.get_digest() for r in c.hash_finish(b["res"])] == [digest(x) for x in part], "two runs at once")
    # Bad options: an unknown algorithm, a bad address; no fhashd where there must be one.
    c.set_algorithm("sha257")
    res, err = run(lambda cb: c.hash_async(files[:1], None, cb), c.hash_finish)
    ft.check(err is not None and err.matches(domain, Fhash.ClientError.INVALID_ARGS) and "sha257" in err.message,
             f"unknown algorithm: {err}")
    c.set_algorithm(None)
    ft.check(c.get_algorithm() == "sha256", "set_algorithm(None) is not sha256")
    bad = Fhash.Client.new_for_address("no address", Fhash.ClientFlags.NONE)
    res, err = run(lambda cb: bad.hash_async(files[:1], None, cb), bad.hash_finish)
    ft.check(err is not None and err.matches(domain, Fhash.ClientError.INVALID_ARGS), f"bad address: {err}")
    sock = os.path.join(tmp, "no-such-bus")
    nobus = Fhash.Client.new_for_address(f"unix:path={sock}", Fhash.ClientFlags.NO_FALLBACK)
    ok, err = run(lambda cb: nobus.connect_async(None, cb), nobus.connect_finish)
    ft.check(err is not None and err.matches(domain, Fhash.ClientError.NOT_REACHABLE) and sock in err.message,
             f"no bus: {err}")
    local = Fhash.Client.new_for_address(f"unix:path={sock}", Fhash.ClientFlags.NONE)
    res, err = run(lambda cb: local.hash_async(files[:3], None, cb), local.hash_finish)
    ft.check(err is None and not local.get_uses_daemon() and sock in (local.dup_fallback_reason() or "") and
             [r.get_digest() for r in res] == [digest(x) for x in files[:3]], f"fallback: {err}")
    ft.check("sha256" in Fhash.Client.list_algorithms() and "blake3" in Fhash.Client.list_algorithms(), "algorithms")
    ft.log("ok: unordered results, two runs at once, INVALID_ARGS, NOT_REACHABLE naming the socket, fallback")

    # The busy signal: another run holds one of the two files fhashd allows this uid (a FIFO with a
    # byte and a writer that waits: libfhash keeps a FIFO with no data at all to itself, so fhashd
    # gets it only with its first byte), which leaves no room for the two of this run, for over a
    # second; then it ends and the busy run goes on.
    bus2 = ft.Bus(tmpdir=tempfile.mkdtemp(dir=tmp)).start()
    try:
        a = Fhash.Client.new_for_address(bus2.address, Fhash.ClientFlags.NO_FALLBACK)
        with ft.Daemon(bus2, "--workers", "1", "--max-files-per-uid", "2"):
            b = Fhash.Client.new_for_address(bus2.address, Fhash.ClientFlags.NO_FALLBACK)
            busy = []
            b.connect("busy", lambda _c, reason, gives_up: busy.append((reason, gives_up)))
            fifo = new_fifo("fifo-busy")
            w = os.open(fifo, os.O_RDWR)
            os.write(w, b"n")
            boxes = [{}, {}]
            a.hash_async([fifo], None, lambda o, r: boxes[0].update(res=r))
            iterate_until(lambda: False, 0.5)
            b.hash_async(files[:2], None, lambda o, r: boxes[1].update(res=r))
            ft.check(iterate_until(lambda: busy, 10), "no busy signal within 10 s")
            os.write(w, b"ow")
            os.close(w)
            ft.check(iterate_until(lambda: all("res" in x for x in boxes), 60), "the busy runs never ended")
            ra, rb = a.hash_finish(boxes[0]["res"]), b.hash_finish(boxes[1]["res"])
            ft.check(ra[0].get_digest() == hashlib.sha256(b"now").hexdigest() and
                     [r.get_digest() for r in rb] == [digest(x) for x in files[:2]], "after busy")
            ft.check(len(busy) == 1 and busy[0][0], f"busy signals: {busy}")
        ft.log(f"ok: busy signal once ({busy[0][0]!r}, gives_up={busy[0][1]}), then the run went on")

        # fhashd killed in the middle of a run: FHASH_CLIENT_ERROR_GONE; the client connects again
        # for its next run, to the new fhashd.
        d = ft.Daemon(bus2, "--workers", "1").start()
        a = Fhash.Client.new_for_address(bus2.address, Fhash.ClientFlags.NO_FALLBACK)
        fifo = new_fifo("fifo-gone")
        holder = os.open(fifo, os.O_RDWR)
        box = {}
        a.hash_async([fifo], None, lambda o, r: box.update(res=r))
        iterate_until(lambda: False, 0.5)
        d.stop(signal.SIGKILL)
        ft.check(iterate_until(lambda: "res" in box, 20), "no callback 20 s after fhashd was killed")
        try:
            a.hash_finish(box["res"])
            ft.fail("a run whose fhashd was killed did not fail")
        except GLib.Error as ex:
            ft.check(ex.matches(domain, Fhash.ClientError.GONE), f"fhashd killed: {ex}")
        os.close(holder)
        with ft.Daemon(bus2, "--workers", "1"):
            res, err = run(lambda cb: a.hash_async(files[:3], None, cb), a.hash_finish)
            ft.check(err is None and a.get_uses_daemon() and [r.get_digest() for r in res] ==
                     [digest(x) for x in files[:3]], f"after GONE, the next run: {err}")
        ft.log("ok: fhashd killed mid-run: FHASH_CLIENT_ERROR_GONE; the next run connects to the new fhashd")

        # The same with FHASH_HASH_FLAGS_RESUME on a client that may fall back: nothing activates
        # another fhashd on this bus, so the run goes on in this process with the inputs that have no
        # result, and says why. By fd (FHASH_BY_FD=1) the FIFO was waiting for data in the client: it
        # is read there. By name fhashd had it open, waiting for data as for any stream it reads: it
        # may have read some, so its result is an error, as for a stream sent as an fd.
        for by_fd in (True, False):
            if by_fd:
                os.environ["FHASH_BY_FD"] = "1"
            d = ft.Daemon(bus2, "--workers", "1").start()
            a = Fhash.Client.new_for_address(bus2.address, Fhash.ClientFlags.NONE)
            a.props.hash_flags = Fhash.HashFlags.RESUME
            fifo = new_fifo(f"fifo-resume-{by_fd}")
            holder = os.open(fifo, os.O_RDWR)
            box = {}
            a.hash_async([fifo] + files[:5], None, lambda o, r: box.update(res=r))
            iterate_until(lambda: False, 0.5)
            os.environ.pop("FHASH_BY_FD", None)
            ft.check(a.get_uses_daemon(), "RESUME: the run is not through fhashd")
            d.stop(signal.SIGKILL)
            ft.check(iterate_until(lambda: not a.get_uses_daemon(), 20), "RESUME: no fallback 20 s after fhashd was killed")
            os.write(holder, b"resumed")
            os.close(holder)
            ft.check(iterate_until(lambda: "res" in box, 20), "RESUME: no callback 20 s after fhashd was killed")
            res, err = None, None
            try:
                res = a.hash_finish(box["res"])
            except GLib.Error as ex:
                err = ex
            got = res and [(r.get_digest(), r.get_error() and r.get_error().message) for r in res]
            first = (hashlib.sha256(b"resumed").hexdigest(), None) if by_fd else \
                (None, "fhashd went away while it read this stream, which cannot be read again")
            ft.check(err is None and got and got[0] == first and [x[0] for x in got[1:]] == [digest(x) for x in files[:5]]
                     and "fhashd went away" in (a.dup_fallback_reason() or ""),
                     f"RESUME by {'fd' if by_fd else 'name'}, fhashd killed: {err} {got} {a.dup_fallback_reason()!r}")
        ft.log(f"ok: with FHASH_HASH_FLAGS_RESUME, fhashd killed mid-run: every result, in-process: "
               f"{a.dup_fallback_reason()!r}; a FIFO by name that fhashd was reading is an error")
    finally:
        bus2.stop()


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--api":
        api_tests(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    gjs = len(sys.argv) > 1 and sys.argv[1] == "--gjs"
    for p in ("sha256sum", "dbus-daemon"):
        if not shutil.which(p):
            ft.skip(f"{p} is not installed")
    if not os.path.exists(os.path.join(GLIBDIR, "Fhash-1.0.typelib")):
        ft.skip(f"libfhash-glib's typelib is not built in {GLIBDIR} (GLib and gobject-introspection are needed, "
                "and no sanitizer: scripts/deps.sh, src/glib/meson.build)")
    ft.require()
    env, _ = gi_env()
    if gjs and not shutil.which("gjs"):
        ft.skip("gjs is not installed (Debian's gjs package: scripts/deps.sh)")
    with ft.Bus() as bus:
        tmp = tempfile.mkdtemp(prefix="fhash-glib-", dir=bus.dir)
        with ft.Daemon(bus, "--workers", "2") as d:
            if gjs:
                test_examples(bus, tmp, env, "hash-files.js", [shutil.which("gjs"), JS_EXAMPLE])
            else:
                test_examples(bus, tmp, env, "hash_files_gi.py", ["/usr/bin/python3", PY_EXAMPLE])
                r = subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--api", bus.address, tmp],
                                   env=env, cwd=tmp, timeout=240)
                ft.check(r.returncode == 0, f"the API tests failed ({r.returncode})")
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")


if __name__ == "__main__":
    main()
