#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-priority.py: the option "priority" on a real fhashd and a private dbus-daemon. A background job
# is hashed by the background engine, made on first use (threads fhash-idle*, SCHED_IDLE at the idle
# I/O class, as /proc says); its digests are right, its Priority property says so, and while another
# user's normal job moves it waits (above the fair share between users), then finishes. Bad values
# are InvalidArgs naming the option; AddFds takes none. fhashctl --background/--priority and the
# Python module's priority= reach it, in-process too.
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

SCHED_OTHER, SCHED_IDLE = 0, 5
IOPRIO_IDLE = 3 << 13


def threads(pid, prefix):
    """{tid: (policy, ioprio)} of pid's threads whose name starts with prefix."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if not f.read().startswith(prefix):
                    continue
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        # fields[0] is field 3 (state): the policy is field 41.
        ioprio = libc.syscall(252, 1, int(tid))  # ioprio_get(IOPRIO_WHO_PROCESS, tid), x86-64
        out[int(tid)] = (int(fields[38]), ioprio)
    return out


def test_background_job(conn, w, d, files):
    mgr = ft.manager(conn)
    ft.check(not threads(d.pid, "fhash-idle"), "idle shards before any background job")
    job = str(mgr.HashFds(ft.fds(*files[:8]), "sha256", ft.options(priority="background")))
    w.wait([job])
    ft.check(w.finished[job] == ("done", 8, 0), f"background job: {w.finished[job]}")
    for i in range(8):
        digest = w.results[job][i][2]
        ft.check(digest == ft.sha256_file(files[i]), f"background digest {i}")
    ft.check(str(ft.job_prop(conn, job, "Priority")) == "background", "Priority property")
    idle = threads(d.pid, "fhash-idle")
    shards = threads(d.pid, "fhash-shard")
    ft.check(len(idle) == len(shards) == 2, f"{len(idle)} idle shards, {len(shards)} normal ones")
    if platform_is_x86_64():
        ft.check(all(v == (SCHED_IDLE, IOPRIO_IDLE) for v in idle.values()), f"idle shards: {idle}")
    else:
        ft.check(all(v[0] == SCHED_IDLE for v in idle.values()), f"idle shards: {idle}")
    ft.check(all(v[0] == SCHED_OTHER for v in shards.values()), f"normal shards: {shards}")
    # A normal and an interactive job say so.
    for prio in ("normal", "interactive"):
        job = str(mgr.HashFds(ft.fds(files[0]), "sha256", ft.options(priority=prio)))
        w.wait([job])
        ft.check(str(ft.job_prop(conn, job, "Priority")) == prio, f"Priority {prio}")
    job = str(mgr.HashFds(ft.fds(files[0]), "sha256", ft.options()))
    w.wait([job])
    ft.check(str(ft.job_prop(conn, job, "Priority")) == "normal", "Priority by default")
    ft.log("ok: background job on idle shards, Priority property")


def platform_is_x86_64():
    return os.uname().machine == "x86_64"


def test_bad_values(conn, files):
    mgr = ft.manager(conn)
    msg = ft.expect_error(ft.ERR_INVALID_ARGS, mgr.HashFds, ft.fds(files[0]), "sha256", ft.options(priority="idle"))
    ft.check('"priority"' in msg and "idle" in msg, f"bad priority message: {msg}")
    import dbus
    opts = dbus.Dictionary({"priority": dbus.UInt32(2)}, signature="sv")
    msg = ft.expect_error(ft.ERR_INVALID_ARGS, mgr.HashFds, ft.fds(files[0]), "sha256", opts)
    ft.check('"priority"' in msg, f"priority of the wrong type: {msg}")
    job = str(mgr.HashFds(ft.fds(files[0]), "sha256", ft.options(priority="background", more=True)))
    msg = ft.expect_error(ft.ERR_INVALID_ARGS, ft.job_iface(conn, job).AddFds, ft.fds(files[1]),
                          ft.options(priority="normal"))
    ft.check("priority" in msg, f"AddFds with a priority: {msg}")
    ft.job_iface(conn, job).Close()
    ft.log("ok: bad priorities refused")


def test_yield_to_other_user(conn, w, ctl, bus, files):
    """nobody's normal job reads a pipe kept full; root's background job must not move meanwhile."""
    env = dict(os.environ, LC_ALL="C")
    r, wfd = os.pipe()
    nobody = subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", ctl,
                               "--address", bus.address, "--daemon", "hash", "-a", "xxh3", "-"],
                              stdin=r, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    os.close(r)
    stop = threading.Event()

    def feed():
        buf = b"x" * (1 << 16)
        try:
            while not stop.is_set():
                os.write(wfd, buf)
        except OSError:
            pass
        os.close(wfd)
    t = threading.Thread(target=feed)
    t.start()
    try:
        mgr = ft.manager(conn)
        # nobody's job is under way once fhashd has files queued for it.
        props = ft.job_iface(conn, ft.MANAGER_PATH, ft.PROPS_IFACE)
        ft.check(ft.wait_for(lambda: int(props.Get(ft.MANAGER_IFACE, "QueuedFiles")) > 0, 10),
                 "nobody's job never reached fhashd")
        time.sleep(0.3)  # it moves: a window (100 ms) and more
        job = str(mgr.HashFds(ft.fds(*files[:8]), "sha256", ft.options(priority="background")))
        w.pump(1.0)
        done = int(ft.job_prop(conn, job, "FilesDone"))
        ft.check(done == 0, f"the background job hashed {done} files beside another user's moving job")
    finally:
        stop.set()
        t.join()
    out, err = nobody.communicate(timeout=60)
    ft.check(nobody.returncode == 0, f"nobody's fhashctl: {nobody.returncode} {err}")
    w.wait([job], timeout=60)
    ft.check(w.finished[job] == ("done", 8, 0), f"background job after the other: {w.finished[job]}")
    ft.log("ok: a background job waits while another user's normal job moves, then finishes")


def test_clients(bus, ctl, files):
    want = "".join(f"{ft.sha256_file(p)}  {p}\n" for p in files[:4])
    for mode in (["--address", bus.address, "--daemon"], ["--local"]):
        for flag in (["--background"], ["--priority=background"], ["--priority=interactive"]):
            r = subprocess.run([ctl] + mode + ["hash"] + flag + files[:4], capture_output=True, text=True)
            ft.check(r.returncode == 0 and r.stdout == want, f"fhashctl {mode[0]} {flag}: {r.returncode} {r.stderr}")
    r = subprocess.run([ctl, "--local", "hash", "--priority=idle", files[0]], capture_output=True, text=True)
    ft.check(r.returncode == 2 and "--priority" in r.stderr, f"--priority=idle: {r.returncode} {r.stderr}")
    r = subprocess.run([ctl, "--local", "status", "--background"], capture_output=True, text=True)
    ft.check(r.returncode == 2 and "--background" in r.stderr, f"status --background: {r.returncode} {r.stderr}")

    lib = os.path.join(os.environ.get("FHASH_BUILD_ROOT", ""), "src", "libfhash.so.0")
    src = os.path.join(os.environ.get("FHASH_SOURCE_ROOT", ""), "python")
    code = ("import fhash, sys\n"
            "for kw in (dict(address=sys.argv[1], fallback=False), dict(local=True)):\n"
            "    with fhash.Client(**kw) as c:\n"
            "        for p in ('background', 'interactive', 'normal'):\n"
            "            print(' '.join(r.digest for r in c.hash(sys.argv[2:], priority=p)))\n"
            "        try:\n"
            "            c.hash(sys.argv[2:], priority='idle')\n"
            "        except fhash.InvalidArgs:\n"
            "            print('refused')\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, bus.address] + files[:2], capture_output=True, text=True,
                       env=dict(os.environ, FHASH_LIBRARY=lib, PYTHONPATH=src, **ft.sanitizer_env(lib)))
    line = " ".join(ft.sha256_file(p) for p in files[:2])
    ft.check(r.returncode == 0 and r.stdout == (f"{line}\n" * 3 + "refused\n") * 2,
             f"python priority=: {r.returncode} {r.stdout} {r.stderr}")
    ft.log("ok: fhashctl --background/--priority and fhash.Client(priority=) through fhashd and in-process")


def main():
    ft.require_root_clients(["setpriv"])
    ctl = ft.fhashctl_path()
    with ft.Bus(anyone=True) as bus:
        files = ft.make_files(ft.files_dir(bus), 16, max_size=200000, seed=28)
        with ft.Daemon(bus, "--workers", "2") as d:
            conn = bus.connect()
            w = ft.JobWatcher(conn)
            test_background_job(conn, w, d, files)
            test_bad_values(conn, files)
            test_yield_to_other_user(conn, w, ctl, bus, files)
            test_clients(bus, ctl, files)
            conn.close()


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
