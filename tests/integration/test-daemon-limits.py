#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon-limits.py: what one caller sends cannot cost fhashd more than linear time, cannot make
# it send a message the bus refuses, and is bounded in length (issue 13: H1, H2, L4). A real fhashd
# on a private dbus-daemon; the worst cases of the 2026-11-23 review, made small enough for CI.
# tests/integration/test-hostile.py runs the full-size attacks on a system bus.
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

# Each refused worst-case call is answered within this (before: 10-15 s for 200,000 entries).
CALL_S = 2.0
ENTRIES = 200000


class Pinger:
    """Peer.Ping on its own connection every 20 ms while a call is processed; keeps the slowest."""

    def __init__(self, bus):
        import dbus
        self.conn = dbus.bus.BusConnection(bus.address)
        self.peer = dbus.Interface(self.conn.get_object(ft.BUS_NAME, ft.MANAGER_PATH, introspect=False),
                                   "org.freedesktop.DBus.Peer")
        self.worst, self.failed, self.stop = 0.0, 0, threading.Event()
        self.t = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            t0 = time.monotonic()
            try:
                self.peer.Ping(timeout=5)
            except Exception:  # noqa: BLE001 (any failure counts)
                self.failed += 1
            self.worst = max(self.worst, time.monotonic() - t0)
            time.sleep(0.02)

    def __enter__(self):
        self.t.start()
        return self

    def __exit__(self, *a):
        self.stop.set()
        self.t.join()
        self.conn.close()


def timed_error(name, fn, *args, **kw):
    t0 = time.monotonic()
    msg = ft.expect_error(name, fn, *args, **kw)
    return msg, time.monotonic() - t0


def test_linear_calls(bus, conn, f):
    """H1: arrays longer than the call's inputs are refused at once, and Ping goes on meanwhile."""
    import dbus
    mgr = ft.manager(conn)
    E = ft.ERR_INVALID_ARGS
    empties = dbus.Array([""] * ENTRIES, signature="s")
    fd = os.open(f, os.O_RDONLY)
    job = str(mgr.HashFds(ft.fds(fd), "sha256", ft.options(more=True)))
    handles = dbus.Array([dbus.types.UnixFd(fd)] * 64, signature="h")
    calls = [
        ("HashFds names", "names", mgr.HashFds, ft.fds(fd), "sha256", ft.options(names=empties)),
        ("HashFds expected", "expected", mgr.HashFds, ft.fds(fd), "sha256", ft.options(expected=empties)),
        ("AddFds names", "names", ft.job_iface(conn, job).AddFds, ft.fds(fd), ft.options(names=empties)),
        ("HashPaths paths", "paths", mgr.HashPaths, dbus.Array(["/nonexistent"] * 100001, signature="s"),
         "sha256", ft.options()),
        ("HashFds fds", "fds", mgr.HashFds, handles, "sha256", ft.options()),
    ]
    for what, needle, fn, *args in calls:
        with Pinger(bus) as p:
            msg, took = timed_error(E, fn, *args, timeout=120)
        ft.check(needle in msg, f"{what}: message does not name {needle}: {msg}")
        ft.check(took < CALL_S, f"{what}: refused after {took:.2f} s (bound {CALL_S} s)")
        ft.check(p.failed == 0 and p.worst < CALL_S, f"{what}: Ping took up to {p.worst:.2f} s, {p.failed} failed")
        ft.log(f"  {what}: refused in {took * 1000:.0f} ms ({msg[:80]}); Ping worst {p.worst * 1000:.0f} ms")

    # A repeated option key: the options array cannot grow without end either.
    msg = repeated_key_call(bus, fd)
    ft.check("twice" in msg and "dontcache" in msg, f"repeated key: {msg}")
    ft.job_iface(conn, job).Close()
    os.close(fd)
    ft.log("ok: H1: names/expected/paths/fds arrays past the call's inputs refused at once; Ping unaffected")


def repeated_key_call(bus, fd):
    """HashFds whose a{sv} gives "dontcache" 100,000 times (python3-dbus cannot: a dict has each
    key once), through GDBus."""
    from gi.repository import Gio, GLib
    c = Gio.DBusConnection.new_for_address_sync(
        bus.address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
        None, None)
    fdl = Gio.UnixFDList.new()
    fdl.append(fd)
    entry = GLib.Variant.new_dict_entry(GLib.Variant("s", "dontcache"), GLib.Variant("v", GLib.Variant("b", True)))
    opts = GLib.Variant.new_array(GLib.VariantType("{sv}"), [entry] * 100000)
    args = GLib.Variant.new_tuple(GLib.Variant("ah", [0]), GLib.Variant("s", "sha256"), opts)
    try:
        c.call_with_unix_fd_list_sync(ft.BUS_NAME, ft.MANAGER_PATH, ft.MANAGER_IFACE, "HashFds", args,
                                      GLib.VariantType("(o)"), Gio.DBusCallFlags.NONE, 60000, fdl, None)
    except GLib.Error as e:
        name = Gio.DBusError.get_remote_error(e)
        ft.check(name == ft.ERR_INVALID_ARGS, f"repeated key: {name}: {e.message}")
        Gio.DBusError.strip_remote_error(e)
        return e.message
    finally:
        c.close_sync(None)
    ft.fail("a{sv} with a key given 100,000 times was accepted")


def test_bounded_replies(bus, conn, tmp, f):
    """H2: names are at most 4095 bytes; GetResults never builds a reply the bus would refuse and
    GetResultsFrom pages through every result."""
    import dbus
    mgr = ft.manager(conn)
    w = ft.JobWatcher(conn)
    msg = ft.expect_error(ft.ERR_INVALID_ARGS, mgr.HashPaths, [f], "sha256", ft.options(names=["n" * 4096]))
    ft.check("names" in msg and "4095" in msg, f"4096-byte name: {msg}")
    # 2,200 results with 4,000-byte names take ~9 MiB: over the 8 MiB a reply may carry.
    n = 2200
    names = [f"{i:06d}" + "é" * 1997 for i in range(n)]
    job = str(mgr.HashPaths([f] * n, "sha256", ft.options(names=names)))
    w.wait([job], timeout=120)
    ft.check(w.finished[job][0] == "done", f"the big job: {w.finished[job]}")
    ji = ft.job_iface(conn, job)
    msg = ft.expect_error("org.freedesktop.DBus.Error.LimitsExceeded", ji.GetResults, timeout=60)
    ft.check("GetResultsFrom" in msg, f"GetResults over 8 MiB: {msg}")
    got, first, pages = [], 0, 0
    while first < n:
        res, nxt = ji.GetResultsFrom(dbus.UInt32(first), dbus.UInt32(0), timeout=60)
        ft.check(nxt > first, f"GetResultsFrom({first}, 0) did not move on: next {nxt}")
        got += [(int(r[0]), str(r[1]), str(r[3])) for r in res]
        first, pages = int(nxt), pages + 1
    ft.check(pages >= 2, f"{pages} page(s) for ~9 MiB of results")
    want = ft.sha256_file(f)
    ft.check([g[0] for g in got] == list(range(n)) and all(g[1] == names[g[0]] and g[2] == want for g in got),
             "GetResultsFrom pages do not give every result once, in order, with its name and digest")
    res, nxt = ji.GetResultsFrom(dbus.UInt32(10), dbus.UInt32(5))
    ft.check([int(r[0]) for r in res] == [10, 11, 12, 13, 14] and nxt == 15, f"GetResultsFrom(10, 5): next {nxt}")
    res, nxt = ji.GetResultsFrom(dbus.UInt32(n + 5), dbus.UInt32(0))
    ft.check(len(res) == 0 and nxt == n + 5, f"GetResultsFrom past the end: {len(res)} results, next {nxt}")
    ft.log(f"ok: H2: 4096-byte names refused; GetResults of ~9 MiB is LimitsExceeded; GetResultsFrom in {pages} pages")


def client_hash_fds(address, *paths):
    """As whoever runs it: HashFds of the named files opened here; prints {path: [digest, error]}."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    w = ft.JobWatcher(conn)
    job = str(ft.manager(conn).HashFds(ft.fds(*paths), "sha256", ft.options(names=list(paths))))
    w.wait([job], timeout=30)
    print(json.dumps({paths[i]: [r[2], r[3]] for i, r in w.results[job].items()}), flush=True)


def client_counters(address):
    import dbus
    conn = dbus.bus.BusConnection(address)
    props = ft.job_iface(conn, ft.MANAGER_PATH, ft.PROPS_IFACE)
    print(json.dumps({k: int(props.Get(ft.MANAGER_IFACE, k)) for k in ("ActiveJobs", "QueuedFiles", "BytesHashed")}))


def as_user(user, cmd):
    if user != "root":
        cmd = ["setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/")
    ft.check(r.returncode == 0, f"client as {user}: {r.stderr[-600:]}")
    return json.loads(r.stdout)


def counters_as(address, user):
    return as_user(user, ["/usr/bin/python3", os.path.abspath(__file__), "--counters", address])


def hash_fds_as(address, user, paths):
    return as_user(user, ["/usr/bin/python3", os.path.abspath(__file__), "--client", address] + paths)


def test_pseudo_files(bus, f):
    """L1: an unprivileged caller's fds on procfs and sysfs are refused (fhashd would read them with
    its own credentials); root's are hashed; a plain file of the same caller is hashed."""
    target = subprocess.Popen(["sleep", "60"])
    try:
        pseudo = [f"/proc/{target.pid}/stat", "/proc/self/mounts", "/sys/kernel/uevent_seqnum"]
        pseudo = [p for p in pseudo if os.access(p, os.R_OK)]
        got = hash_fds_as(bus.address, "nobody", pseudo + [f])
        for p in pseudo:
            ft.check(got[p][0] == "" and got[p][1].startswith(ft.ERR_PREFIX + "AccessDenied: ") and
                     "pseudo file system" in got[p][1], f"nobody's fd on {p}: {got[p]}")
        ft.check(got[f] == [ft.sha256_file(f), ""], f"nobody's plain file beside them: {got[f]}")
        got = hash_fds_as(bus.address, "root", pseudo)
        for p in pseudo:
            ft.check(len(got[p][0]) == 64 and got[p][1] == "", f"root's fd on {p}: {got[p]}")
    finally:
        target.kill()
        target.wait()
    ft.log(f"ok: L1: nobody's fds on {', '.join(pseudo)} refused (AccessDenied); root's hashed")


def test_counters(bus, conn, tmp, f):
    """L2: the Manager's counters are the caller's own unless it is root: nobody cannot read the
    size of root's file off BytesHashed."""
    mgr = ft.manager(conn)
    w = ft.JobWatcher(conn)
    secret = os.path.join(tmp, "secret")
    with open(secret, "wb") as fh:
        fh.write(os.urandom(123457))
    before = counters_as(bus.address, "nobody")
    root_before = int(ft.job_iface(conn, ft.MANAGER_PATH, ft.PROPS_IFACE).Get(ft.MANAGER_IFACE, "BytesHashed"))
    job = str(mgr.HashPaths([secret], "sha256", ft.options()))
    w.wait([job])
    after = counters_as(bus.address, "nobody")
    root_after = int(ft.job_iface(conn, ft.MANAGER_PATH, ft.PROPS_IFACE).Get(ft.MANAGER_IFACE, "BytesHashed"))
    ft.check(after == before, f"nobody's counters moved with root's job: {before} -> {after}")
    ft.check(root_after - root_before == 123457, f"root's BytesHashed moved by {root_after - root_before}")
    ft.log(f"ok: L2: nobody's counters {after} did not move while root hashed 123457 bytes (root saw them)")


def client_fill(address):
    """An open job on a pipe nobody writes to, AddFds of it 16 at a time until fhashd says Busy; then
    holds everything until stdin closes."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    r, w = os.pipe()
    job = str(ft.manager(conn).HashFds(ft.fds(*[r] * 16), "sha256", ft.options(max_size=1 << 40, more=True)))
    held, error = 16, None
    while error is None and held < 100000:
        try:
            ft.job_iface(conn, job).AddFds(ft.fds(*[r] * 16), ft.options(more=True))
            held += 16
        except dbus.exceptions.DBusException as e:
            error = f"{e.get_dbus_name()}: {e.get_dbus_message()}"
    print(json.dumps({"held": held, "error": error}), flush=True)
    sys.stdin.readline()


def client_linger(address, f):
    """Jobs of 16 inputs with 4,000-byte names, kept after they finish, until fhashd says Busy; then,
    on a line from stdin, one more."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    w = ft.JobWatcher(conn)
    mgr = ft.manager(conn)

    def one(k):
        names = [f"{k:05d}{i:02d}" + "m" * 3993 for i in range(16)]
        try:
            job = str(mgr.HashFds(ft.fds(*[f] * 16), "sha256", ft.options(names=names)))
        except dbus.exceptions.DBusException as e:
            return f"{e.get_dbus_name()}: {e.get_dbus_message()}"
        w.wait([job])
        return None
    made, error = 0, None
    while error is None and made < 1000:
        error = one(made)
        made += error is None
    print(json.dumps({"jobs": made, "error": error}), flush=True)
    sys.stdin.readline()
    print(json.dumps({"again": one(made)}), flush=True)


def test_memory_budget(bus, tmp, f):
    """H5/M2: what finished jobs keep (results, names) is charged to their uid: past MaxMemoryPerUID
    its calls are Busy, root's are not, and once its jobs expire it gets in again."""
    with ft.Daemon(bus, "--workers", "1", "--max-memory-per-uid", "1M", "--keep-finished", "5") as d:
        p = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                              "/usr/bin/python3", os.path.abspath(__file__), "--linger", bus.address, f],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
        got = json.loads(p.stdout.readline() or "{}")
        # 1 MiB holds 15 such jobs (16 x (4,000 + a result) bytes each), not 16 (unless the first
        # expired meanwhile).
        ft.check(got.get("error", "").startswith(ft.ERR_PREFIX + "Busy") and "MaxMemoryPerUID" in got["error"] and
                 10 <= got["jobs"] <= 16, f"nobody's lingering jobs: {got}")
        got_root = hash_fds_as(bus.address, "root", [f])
        ft.check(list(got_root.values()) == [[ft.sha256_file(f), ""]], f"root's HashFds: {got_root}")
        time.sleep(6)
        p.stdin.write("again\n")
        p.stdin.flush()
        again = json.loads(p.stdout.readline() or "{}")
        ft.check(again.get("again") is None, f"after its jobs expired nobody still gets {again}")
        p.stdin.close()
        p.wait(10)
    ft.log(f"ok: MaxMemoryPerUID=1M: nobody keeps {got['jobs']} jobs of long names, then Busy; root hashes; "
           f"after they expire nobody gets in again")


def test_gone_owner_memory(bus, tmp):
    """A job's results go with the client that made it (org.fhash.Hasher1.Job.xml): fhashctl hashing
    1,000 files six times in a row under MaxMemoryPerUID=1M never waits for the results of its earlier
    runs (each run's hold 300 KB or more; they used to stay charged for KeepFinishedSec, and the fourth
    run got Busy). The jobs stay, with their state and counts; GetResults of one says Released."""
    files = ft.make_files(os.path.join(tmp, "runs"), 1000, max_size=4096, seed=11)
    env = dict(os.environ, FHASHCTL_BUSY_TIMEOUT="2")
    with ft.Daemon(bus, "--workers", "2", "--max-memory-per-uid", "1M", "--keep-finished", "300") as d:
        conn = bus.connect()
        for run in range(6):
            p = subprocess.run([ft.fhashctl_path(), "--daemon", "--address", bus.address, "hash", *files],
                               capture_output=True, text=True, env=env, timeout=120)
            ft.check(p.returncode == 0 and len(p.stdout.splitlines()) == len(files) and "busy" not in p.stderr,
                     f"run {run + 1}: fhashctl exit {p.returncode}, {len(p.stdout.splitlines())} lines, "
                     f"stderr {p.stderr[-500:]!r}")
        jobs = [str(j) for j in ft.manager(conn).ListJobs()]
        ft.check(len(jobs) >= 6, f"jobs listed after the runs: {jobs}")
        for job in jobs:
            ft.check(str(ft.job_prop(conn, job, "State")) == "done", f"{job}: {ft.job_prop(conn, job, 'State')}")
        ft.check(sum(int(ft.job_prop(conn, job, "FilesDone")) for job in jobs) == 6 * len(files),
                 "the jobs' FilesDone do not add up to the runs' files")
        msg = ft.expect_error(ft.ERR_PREFIX + "Released", ft.job_iface(conn, jobs[0]).GetResults)
        ft.check("disconnected" in msg, f"GetResults of a gone client's job: {msg}")
        conn.close()
        ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log(f"ok: six runs of 1,000 files under MaxMemoryPerUID=1M, none Busy; {len(jobs)} jobs listed, done, "
           f"their results Released")


def client_release(address, f):
    """As client_linger, but each job is released once finished: prints how many it made (40 at
    most) and the error that stopped it, if any."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    w = ft.JobWatcher(conn)
    mgr = ft.manager(conn)
    made, error = 0, None
    while error is None and made < 40:
        names = [f"{made:05d}{i:02d}" + "m" * 3993 for i in range(16)]
        try:
            job = str(mgr.HashFds(ft.fds(*[f] * 16), "sha256", ft.options(names=names)))
            w.wait([job])
            ft.job_iface(conn, job).Release()
            made += 1
        except dbus.exceptions.DBusException as e:
            error = f"{e.get_dbus_name()}: {e.get_dbus_message()}"
    print(json.dumps({"jobs": made, "error": error}), flush=True)


def test_release(bus, tmp, f):
    """Release() frees a finished job's results and their charge to the uid at once: under
    MaxMemoryPerUID=1M a client that releases each job runs 40 of the jobs of which 16 fill the
    budget (test_memory_budget); only the owner's connection may, only once the job finished; the
    job's state and counts stay, its GetResults says Released."""
    with ft.Daemon(bus, "--workers", "1", "--max-memory-per-uid", "1M", "--keep-finished", "300") as d:
        p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                            "/usr/bin/python3", os.path.abspath(__file__), "--release", bus.address, f],
                           capture_output=True, text=True, cwd="/", timeout=120)
        got = json.loads(p.stdout.strip() or "{}")
        ft.check(got.get("jobs") == 40 and got.get("error") is None, f"nobody's released jobs: {got} {p.stderr[-300:]}")
        conn, other = bus.connect(), bus.connect()
        w = ft.JobWatcher(conn)
        mgr = ft.manager(conn)
        job = str(mgr.HashFds(ft.fds(f), "sha256", ft.options()))
        w.wait([job])
        msg = ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(other, job).Release)
        ft.check("release" in msg, f"Release from another connection: {msg}")
        ft.check(len(ft.job_iface(conn, job).GetResults()) == 1, "GetResults before Release")
        ft.job_iface(conn, job).Release()
        ft.job_iface(conn, job).Release()  # a no-op the second time
        msg = ft.expect_error(ft.ERR_PREFIX + "Released", ft.job_iface(conn, job).GetResults)
        ft.check("by the client that made it" in msg, f"GetResults after Release: {msg}")
        ft.check(str(ft.job_prop(conn, job, "State")) == "done" and int(ft.job_prop(conn, job, "FilesDone")) == 1,
                 "a released job's state and counts")
        r, wfd = os.pipe()
        running = str(mgr.HashFds(ft.fds(r), "sha256", ft.options(max_size=1 << 40)))
        os.close(r)
        msg = ft.expect_error(ft.ERR_PREFIX + "Busy", ft.job_iface(conn, running).Release)
        ft.check("has not finished" in msg, f"Release of a running job: {msg}")
        os.close(wfd)
        conn.close()
        other.close()
        ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log("ok: Release: 40 released jobs under MaxMemoryPerUID=1M (16 kept fill it); owner connection only, "
           "finished only; GetResults then Released, state and counts kept")


def test_release_by_client(bus, tmp):
    """libfhash releases each job of a run once it has its results: fhashctl check of a manifest of
    2,000 SHA-256 then 2,000 MD5 files (two jobs, 700 KB of results, names and expected digests
    each) under MaxMemoryPerUID=1M finishes; without the release its second job waits Busy for the
    first to expire (KeepFinishedSec=300) and the run gives up (FHASHCTL_BUSY_TIMEOUT=3)."""
    import hashlib
    files = ft.make_files(os.path.join(tmp, "two-jobs"), 4000, max_size=512, seed=12)
    manifest = os.path.join(tmp, "two-jobs.tagged")
    with open(manifest, "w") as m:
        for i, path in enumerate(files):
            algo = hashlib.sha256 if i < 2000 else hashlib.md5
            with open(path, "rb") as fh:
                m.write(f"{'SHA256' if i < 2000 else 'MD5'} ({path}) = {algo(fh.read()).hexdigest()}\n")
    env = dict(os.environ, FHASHCTL_BUSY_TIMEOUT="3")
    for way in ([], ["--no-direct"]):
        with ft.Daemon(bus, "--workers", "2", "--max-memory-per-uid", "1M", "--keep-finished", "300") as d:
            p = subprocess.run([ft.fhashctl_path(), "--daemon", "--address", bus.address, *way, "check", "--quiet",
                                manifest], capture_output=True, text=True, env=env, timeout=120)
            ft.check(p.returncode == 0 and p.stdout == "" and "busy" not in p.stderr,
                     f"fhashctl {way} check: exit {p.returncode}, stdout {p.stdout[-300:]!r}, stderr {p.stderr[-500:]!r}")
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log("ok: fhashctl check of two jobs' worth (2,000 SHA-256 + 2,000 MD5) under MaxMemoryPerUID=1M, direct "
           "and on the bus: each job released, none Busy")


def test_busy_wait(bus, tmp, f):
    """fhashctl says on stderr that fhashd is busy after a second, and gives up after
    $FHASHCTL_BUSY_TIMEOUT seconds with an error naming it (issue 16), instead of waiting for ever."""
    with ft.Daemon(bus, "--workers", "1", "--max-files-per-uid", "1") as d:
        conn = bus.connect()
        r, w = os.pipe()
        # Our one unfinished file: a pipe nobody writes to.
        ft.manager(conn).HashFds(ft.fds(r), "sha256", ft.options(max_size=1 << 40))
        os.close(r)
        env = dict(os.environ, FHASHCTL_BUSY_TIMEOUT="3")
        t0 = time.monotonic()
        p = subprocess.run([ft.fhashctl_path(), "--daemon", "--address", bus.address, "hash", f],
                           capture_output=True, text=True, env=env, timeout=60)
        took = time.monotonic() - t0
        # 3: the run stopped before its files had their results (exit-status.h), not a file that failed.
        ft.check(p.returncode == 3 and p.stdout == "", f"fhashctl exit {p.returncode}, stdout {p.stdout!r}")
        lines = p.stderr.splitlines()
        ft.check(any("fhashd is busy" in x and "waiting" in x for x in lines) and
                 any("giving up" in x and "FHASHCTL_BUSY_TIMEOUT" in x for x in lines),
                 f"fhashctl's stderr: {p.stderr!r}")
        ft.check(2.5 < took < 20, f"gave up after {took:.1f} s with FHASHCTL_BUSY_TIMEOUT=3")
        os.close(w)
        conn.close()
        ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log(f"ok: fhashctl says fhashd is busy after a second and gives up after {took:.1f} s (timeout 3 s)")


def test_fd_budget(bus, tmp, f):
    """H3: callers' fds are a budget from RLIMIT_NOFILE: a uid that parks inputs behind a silent pipe
    gets Busy at its share, fhashd never reaches EMFILE, and root still gets in."""
    import resource
    d = ft.Daemon(bus, "--workers", "1",
                  preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024)))
    d.start()
    try:
        time.sleep(0.2)
        base = d.fd_count()
        filler = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                                   "/usr/bin/python3", os.path.abspath(__file__), "--fill", bus.address],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
        got = json.loads(filler.stdout.readline() or "{}")
        # 1024 fds: 512 kept for fhashd; of the other 512, 64 for fds on their way in and 128 for
        # fds waiting for the closer (config_fd_limits()), a quarter of the 320 left for one uid.
        ft.check(got.get("error", "").startswith(ft.ERR_PREFIX + "Busy") and "fds" in got["error"] and
                 got["held"] == 80, f"nobody parking fds: {got}")
        during = d.fd_count()
        ft.check(during < 1024 - 256, f"fhashd holds {during} fds with nobody at its budget")
        got_root = hash_fds_as(bus.address, "root", [f, f, f])
        ft.check(all(v == [ft.sha256_file(f), ""] for v in got_root.values()), f"root's HashFds: {got_root}")
        filler.stdin.close()
        filler.wait(10)
        ft.check(ft.wait_for(lambda: d.fd_count() <= base, 5), f"fds {d.fd_count()} not back to {base}")
        ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    finally:
        d.stop()
    ft.log(f"ok: H3: with RLIMIT_NOFILE 1024 nobody parks {got['held']} fds, then Busy ({during} fds in fhashd); "
           f"root hashes; fds back to {base}")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--linger":
        client_linger(*sys.argv[2:])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--release":
        client_release(*sys.argv[2:])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--fill":
        client_fill(sys.argv[2])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--counters":
        client_counters(sys.argv[2])
        return
    if len(sys.argv) > 2 and sys.argv[1] == "--client":
        client_hash_fds(*sys.argv[2:])
        return
    ft.require_root_clients()
    try:
        from gi.repository import Gio  # noqa: F401
    except ImportError as e:
        ft.skip(f"/usr/bin/python3 lacks python3-gi: {e}")
    with ft.Bus(anyone=True) as bus:
        tmp = ft.files_dir(bus)
        f = os.path.join(tmp, "one")
        with open(f, "wb") as fh:
            fh.write(b"limits\n" * 100)
        os.chmod(f, 0o644)
        with ft.Daemon(bus, "--workers", "2") as d:
            conn = bus.connect()
            test_linear_calls(bus, conn, f)
            test_bounded_replies(bus, conn, tmp, f)
            test_pseudo_files(bus, f)
            test_counters(bus, conn, tmp, f)
            conn.close()
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
        test_fd_budget(bus, tmp, f)
        test_busy_wait(bus, tmp, f)
        test_memory_budget(bus, tmp, f)
        test_gone_owner_memory(bus, tmp)
        test_release(bus, tmp, f)
        test_release_by_client(bus, tmp)


if __name__ == "__main__":
    main()
