#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon-open-jobs.py: one job fed by many calls. HashFds with the "more" option leaves the job
# open; the job's AddFds() adds fds to it (indices continue), AddFds(more=false) or Close() closes it.
# Checked here on a real fhashd and a private dbus-daemon: digests and continuous indices over many
# calls, names and expected digests per call, who may add, adding after close, Cancel of an open job,
# the owner disconnecting from an open job (fds back to baseline), the per-uid file quota on AddFds,
# bad fds refused while other work goes on, the job quota for idle open jobs, SIGTERM.
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

HERE = os.path.abspath(__file__)
ERR_CLOSED = ft.ERR_PREFIX + "JobClosed"
ERR_BUSY = ft.ERR_PREFIX + "Busy"


def opts(**kw):
    import dbus
    d = ft.options(**{k: v for k, v in kw.items() if k != "more"})
    if "more" in kw:
        d["more"] = dbus.Boolean(kw["more"])
    return d


def add_fds(conn, job, fdlist, **kw):
    return int(ft.job_iface(conn, job).AddFds(ft.fds(*fdlist), opts(**kw)))


def pipes(n):
    """n pipes: (read ends, write ends); the read ends are for the daemon, the caller closes them."""
    rs, ws = zip(*[os.pipe() for _ in range(n)])
    return list(rs), list(ws)


def close_all(fds):
    for fd in fds:
        os.close(fd)


def test_many_calls(conn, w, tmp):
    files = ft.make_files(os.path.join(tmp, "many"), 500, max_size=9000, seed=11)
    want = [ft.sha256_file(p) for p in files]
    mgr = ft.manager(conn)
    job = str(mgr.HashFds(ft.fds(*files[:16]), "sha256", opts(names=files[:16], more=True)))
    firsts = [0]
    # Calls of 1 to 16 fds, so that parts differ in size.
    k, size = 16, 1
    while k < len(files) - 16:
        chunk = files[k:k + size]
        firsts.append(add_fds(conn, job, chunk, names=chunk, more=True))
        ft.check(firsts[-1] == k, f"AddFds: first_index {firsts[-1]}, expected {k}")
        k += size
        size = size % 16 + 1
    # The job stays open while the earlier parts finish: no JobFinished, State running.
    ft.JobWatcher.iterate_until(lambda: len(w.results.get(job, {})) == k, 30)
    ft.check(len(w.results.get(job, {})) == k, f"open job: {len(w.results.get(job, {}))} of {k} results")
    w.pump(0.2)
    ft.check(job not in w.finished, f"open job finished early: {w.finished.get(job)}")
    ft.check(str(ft.job_prop(conn, job, "State")) == "running", f"open job State {ft.job_prop(conn, job, 'State')}")
    ft.check(int(ft.job_prop(conn, job, "FilesTotal")) == k, f"FilesTotal {ft.job_prop(conn, job, 'FilesTotal')}")
    # Every input so far has its result: Progress is 1 (it was 0.999 for as long as the job was open).
    ft.check(ft.wait_for(lambda: float(ft.job_prop(conn, job, "Progress")) == 1.0, 5),
             f"open job with all {k} inputs done: Progress {ft.job_prop(conn, job, 'Progress')}")
    last = add_fds(conn, job, files[k:], names=files[k:], more=False)
    ft.check(last == k, f"last AddFds: first_index {last}, expected {k}")
    w.wait([job])
    ft.check(w.finished[job] == ("done", len(files), 0), f"JobFinished {w.finished[job]}")
    res = w.results[job]
    ft.check(sorted(res) == list(range(len(files))), f"indices not continuous: {sorted(res)[:5]}...")
    for i, p in enumerate(files):
        name, size_, digest, error = res[i]
        ft.check(name == p and digest == want[i] and error == "" and size_ == os.path.getsize(p),
                 f"{i}: {name} {digest} {error!r}")
    got = ft.job_iface(conn, job).GetResults()
    ft.check([(int(r[0]), str(r[3])) for r in got] == [(i, want[i]) for i in range(len(files))],
             "GetResults differs")
    ft.check(int(ft.job_prop(conn, job, "FilesTotal")) == len(files), "FilesTotal at the end")
    ft.check(int(ft.job_prop(conn, job, "BytesTotal")) == sum(os.path.getsize(p) for p in files),
             f"BytesTotal {ft.job_prop(conn, job, 'BytesTotal')}")
    ft.check(float(ft.job_prop(conn, job, "Progress")) == 1.0, "Progress at the end")
    ft.log(f"ok: one job fed by {len(firsts) + 1} calls: {len(files)} digests, indices 0..{len(files) - 1}")


def test_lockstep(conn, w, tmp):
    """A client that sends the next files only once it has the results of the last ones: an idle open
    job hands its results over at once, not after the 50 ms batch delay (40 rounds would take 2 s)."""
    files = ft.make_files(os.path.join(tmp, "lockstep"), 16, max_size=4096, seed=13)
    mgr = ft.manager(conn)
    job = str(mgr.HashFds(ft.fds(*files), "sha256", opts(more=True)))
    rounds = 40
    t0 = time.monotonic()
    for k in range(1, rounds + 1):
        ft.check(ft.JobWatcher.iterate_until(lambda: len(w.results.get(job, {})) == 16 * k, 10),
                 f"round {k}: {len(w.results.get(job, {}))} results")
        if k < rounds:
            add_fds(conn, job, files, more=k < rounds - 1)
    dt = time.monotonic() - t0
    w.wait([job])
    ft.check(w.finished[job] == ("done", 16 * rounds, 0), f"{w.finished[job]}")
    ft.check(dt < 1.0, f"{rounds} lockstep rounds took {dt:.2f} s: results of an idle open job were held back")
    ft.log(f"ok: {rounds} rounds of AddFds, each waiting for the last results: {dt * 1000:.0f} ms")


def test_names_expected(conn, w, tmp):
    files = ft.make_files(os.path.join(tmp, "ne"), 40, max_size=5000, seed=12)
    want = [ft.sha256_file(p) for p in files]
    mgr = ft.manager(conn)
    job = str(mgr.HashFds(ft.fds(*files[:8]), "sha256",
                          opts(names=[f"a{i}" for i in range(8)], expected=want[:8], more=True)))
    # expected on some calls only, upper-case and wrong ones among them, names on some calls only.
    exp = [("0" * 64 if i in (9, 20) else want[i].upper()) for i in range(8, 24)]
    ft.check(add_fds(conn, job, files[8:24], expected=exp, more=True) == 8, "first_index 8")
    ft.check(add_fds(conn, job, files[24:32], names=[f"c{i}" for i in range(24, 32)], more=True) == 24, "24")
    ft.check(add_fds(conn, job, files[32:], names=[f"d{i}" for i in range(32, 40)],
                     expected=["" if i % 2 else "f" * 64 for i in range(32, 40)]) == 32, "32")
    w.wait([job])
    res = w.results[job]
    bad = {9, 20} | {i for i in range(32, 40) if not i % 2}
    for i in range(40):
        name, _, digest, error = res[i]
        ft.check(digest == want[i], f"{i}: digest {digest}")
        wname = f"a{i}" if i < 8 else "" if i < 24 else f"c{i}" if i < 32 else f"d{i}"
        ft.check(name == wname, f"{i}: name {name!r}, expected {wname!r}")
        if i in bad:
            ft.check(error.startswith(ft.ERR_PREFIX + "Mismatch: "), f"{i}: mismatch not reported: {error!r}")
        else:
            ft.check(error == "", f"{i}: unexpected error {error!r}")
    ft.check(w.finished[job] == ("failed", 40 - len(bad), len(bad)), f"JobFinished {w.finished[job]}")

    # Arrays that do not fit the call's fds are InvalidArgs naming the option; nothing is added.
    job = str(mgr.HashFds(ft.fds(files[0]), "sha256", opts(more=True)))
    E = ft.ERR_INVALID_ARGS
    msg = ft.expect_error(E, add_fds, conn, job, files[:2], names=["x"])
    ft.check("names" in msg, f"names count message: {msg}")
    msg = ft.expect_error(E, add_fds, conn, job, files[:1], expected=["xyz"])
    ft.check("expected" in msg, f"bad expected message: {msg}")
    msg = ft.expect_error(E, add_fds, conn, job, files[:1], max_size=10)
    ft.check("max-size" in msg, f"max-size on AddFds message: {msg}")
    msg = ft.expect_error(E, add_fds, conn, job, files[:1], colour="blue")
    ft.check("colour" in msg, f"unknown option message: {msg}")
    ft.check(add_fds(conn, job, files[1:3], more=False) == 1, "first_index after refused calls")
    w.wait([job])
    ft.check(w.finished[job] == ("done", 3, 0), f"after refused calls: {w.finished[job]}")
    ft.log("ok: names and expected digests per AddFds call; mismatches reported; bad arrays refused")


def test_owner_only(bus, conn, w, tmp):
    f = os.path.join(tmp, "one")
    mgr = ft.manager(conn)
    job = str(mgr.HashFds(ft.fds(f), "sha256", opts(more=True)))
    # Same uid (root, even), another connection: refused; only the creating connection may add.
    other = bus.connect()
    msg = ft.expect_error(ft.ERR_ACCESS_DENIED, add_fds, other, job, [f])
    ft.check("connection that created" in msg, f"AddFds by another connection: {msg}")
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(other, job).Close)
    other.close()
    # Another uid: refused before anything else.
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3",
                        HERE, "--client", "intruder", bus.address, job, f], capture_output=True, text=True,
                       timeout=60, cwd="/")
    ft.check(p.returncode == 0 and "refused" in p.stdout, f"nobody's AddFds: {p.stdout} {p.stderr}")
    ft.check(str(ft.job_prop(conn, job, "State")) == "running" and int(ft.job_prop(conn, job, "FilesTotal")) == 1,
             "refused calls changed the job")
    ft.job_iface(conn, job).Close()
    w.wait([job])
    ft.check(w.finished[job] == ("done", 1, 0), f"Close: {w.finished[job]}")
    ft.log("ok: AddFds and Close only from the connection that created the job (not another one, not root)")


def client_intruder(address, job, f):
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    ft.check(os.geteuid() != 0, "not running as another uid")
    ft.expect_error(ft.ERR_ACCESS_DENIED, add_fds, conn, job, [f])
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, job).Close)
    print("refused", flush=True)


def test_closed(conn, w, tmp):
    f = os.path.join(tmp, "one")
    mgr = ft.manager(conn)
    # Closed by AddFds(more=false): refused, named.
    job = str(mgr.HashFds(ft.fds(f), "sha256", opts(more=True)))
    add_fds(conn, job, [f, f])
    msg = ft.expect_error(ERR_CLOSED, add_fds, conn, job, [f])
    ft.check(job.rsplit("/", 1)[1] in msg, f"JobClosed message: {msg}")
    w.wait([job])
    ft.expect_error(ERR_CLOSED, add_fds, conn, job, [f], more=True)
    ft.check(w.finished[job] == ("done", 3, 0), f"{w.finished[job]}")
    # Closed by Close(); Close() again is a no-op.
    job = str(mgr.HashFds(ft.fds(f), "sha256", opts(more=True)))
    ft.job_iface(conn, job).Close()
    ft.expect_error(ERR_CLOSED, add_fds, conn, job, [f])
    w.wait([job])
    ft.job_iface(conn, job).Close()
    ft.check(w.finished[job] == ("done", 1, 0), f"{w.finished[job]}")
    # A job made without "more" takes nothing.
    job = str(mgr.HashFds(ft.fds(f), "sha256", opts()))
    ft.expect_error(ERR_CLOSED, add_fds, conn, job, [f])
    w.wait([job])
    # An open job whose every input failed up front: running while open, finished on close.
    d = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    job = str(mgr.HashFds(ft.fds(d), "sha256", opts(more=True)))
    w.pump(0.2)
    ft.check(job not in w.finished and str(ft.job_prop(conn, job, "State")) == "running",
             f"open job of a directory: {w.finished.get(job)} {ft.job_prop(conn, job, 'State')}")
    ft.check(add_fds(conn, job, [d], more=False) == 1, "second directory")
    os.close(d)
    w.wait([job])
    ft.check(w.finished[job] == ("failed", 0, 2), f"{w.finished[job]}")
    ft.check(all(w.results[job][i][3].startswith(ft.ERR_PREFIX + "NotRegular") for i in (0, 1)), "NotRegular")
    ft.log("ok: AddFds after AddFds(more=false), after Close() and on a job without \"more\" is JobClosed")


def test_cancel(conn, w, tmp):
    f = os.path.join(tmp, "one")
    mgr = ft.manager(conn)
    # Running: a pipe keeps the first part busy.
    rs, ws = pipes(1)
    job = str(mgr.HashFds(ft.fds(*rs), "sha256", opts(max_size=1 << 40, more=True)))
    close_all(rs)
    ft.check(add_fds(conn, job, [f, f], more=True) == 1, "AddFds")
    ft.job_iface(conn, job).Cancel()
    w.wait([job])
    ft.check(w.finished[job][0] == "cancelled", f"Cancel of an open running job: {w.finished[job]}")
    ft.check(w.results[job][0][3].startswith(ft.ERR_PREFIX + "Cancelled: "), f"{w.results[job][0]}")
    ft.check(len(w.results[job]) == 3, f"results {sorted(w.results[job])}")
    ft.expect_error(ERR_CLOSED, add_fds, conn, job, [f])
    close_all(ws)
    # Idle: every part is done, the job only waits for more.
    job = str(mgr.HashFds(ft.fds(f), "sha256", opts(more=True)))
    ft.JobWatcher.iterate_until(lambda: len(w.results.get(job, {})) == 1, 10)
    ft.job_iface(conn, job).Cancel()
    w.wait([job])
    ft.check(w.finished[job] == ("cancelled", 1, 0), f"Cancel of an idle open job: {w.finished[job]}")
    ft.expect_error(ERR_CLOSED, add_fds, conn, job, [f])
    ft.log("ok: Cancel of an open job (running and idle): JobFinished cancelled, AddFds then JobClosed")


def client_holder(address, sparse, f):
    """Opens a job on a pipe and a huge sparse file, adds more, prints its path, waits to be killed."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    rs, ws = pipes(1)
    job = str(ft.manager(conn).HashFds(ft.fds(rs[0], sparse), "sha256", opts(max_size=1 << 40, more=True)))
    close_all(rs)
    add_fds(conn, job, [f] * 16, more=True)
    rs2, ws2 = pipes(8)
    add_fds(conn, job, rs2, more=True)
    close_all(rs2)
    print(job, flush=True)
    time.sleep(600)


def test_owner_disconnect(bus, conn, d, tmp):
    sparse = os.path.join(tmp, "sparse")
    with open(sparse, "wb") as f:
        f.truncate(64 << 30)
    os.chmod(sparse, 0o644)
    time.sleep(0.3)  # let earlier jobs' fds go
    base = d.fd_count()
    p = subprocess.Popen(["/usr/bin/python3", HERE, "--client", "holder", bus.address, sparse,
                          os.path.join(tmp, "one")], stdout=subprocess.PIPE, text=True)
    job = p.stdout.readline().strip()
    ft.check(job.startswith("/org/fhash/Hasher1/job/"), f"holder client: {job!r}")
    ft.check(ft.wait_for(lambda: int(ft.job_prop(conn, job, "BytesDone")) > 0, 10), "sparse job not running")
    during = d.fd_count()
    ft.check(during >= base + 9, f"fds during the job {during}, base {base}: the pipes are not held")
    p.kill()
    p.wait()
    ok = ft.wait_for(lambda: d.fd_count() <= base, 3)
    ft.check(ok, f"fd count {d.fd_count()} did not return to {base} (was {during} during the job)")
    ft.check(str(ft.job_prop(conn, job, "State")) == "cancelled", "killed owner's open job not cancelled")
    ft.log(f"ok: owner of an open job killed: fds {during} -> {d.fd_count()} (start {base}), job cancelled")


def test_bad_fds(conn, w, tmp):
    import dbus
    f = os.path.join(tmp, "one")
    mgr = ft.manager(conn)
    # Another job goes on meanwhile.
    rs, ws = pipes(1)
    other = str(mgr.HashFds(ft.fds(*rs), "sha256", opts(max_size=1 << 40)))
    close_all(rs)
    job = str(mgr.HashFds(ft.fds(f), "sha256", opts(more=True)))
    E = ft.ERR_INVALID_ARGS
    wo = os.open(os.path.join(tmp, "wo"), os.O_WRONLY | os.O_CREAT, 0o644)
    msg = ft.expect_error(E, add_fds, conn, job, [f, wo])
    ft.check("fds[1]" in msg and "reading" in msg, f"write-only fd message: {msg}")
    os.close(wo)
    op = os.open(f, os.O_PATH)
    msg = ft.expect_error(E, add_fds, conn, job, [op])
    ft.check("fds[0]" in msg and "O_PATH" in msg, f"O_PATH fd message: {msg}")
    os.close(op)
    fd = os.open(f, os.O_RDONLY)
    msg = ft.expect_error(E, add_fds, conn, job, [fd] * 17)
    ft.check("fds" in msg and "16" in msg, f"17 fds message: {msg}")
    os.close(fd)
    msg = ft.expect_error(E, ft.job_iface(conn, job).AddFds, dbus.Array([], signature="h"), opts())
    ft.check("fds" in msg, f"no fds message: {msg}")
    # A pipe is NotRegular without max-size on the job, read with it.
    r, wr = os.pipe()
    ft.check(add_fds(conn, job, [r]) == 1, "pipe on a job without max-size")
    os.close(r)
    os.close(wr)
    w.wait([job])
    ft.check(w.results[job][1][3].startswith(ft.ERR_PREFIX + "NotRegular: "), f"pipe: {w.results[job][1]}")
    ft.check(w.finished[job] == ("failed", 1, 1), f"{w.finished[job]}")
    ft.check(str(ft.job_prop(conn, other, "State")) in ("queued", "running"), "the other job was disturbed")
    data = os.urandom(100000)
    os.write(ws[0], data)
    close_all(ws)
    w.wait([other])
    ft.check(w.results[other][0][2] == hashlib.sha256(data).hexdigest(), f"other job: {w.results[other]}")
    ft.log("ok: bad fds in AddFds are InvalidArgs naming fds[i]; the job and another job go on")


def test_quotas(bus, tmp):
    f = os.path.join(tmp, "one")
    with ft.Daemon(bus, "--workers", "2", "--max-jobs-per-uid", "2", "--max-files-per-uid", "20") as d:
        conn = bus.connect()
        w = ft.JobWatcher(conn)
        mgr = ft.manager(conn)
        # Jobs: an open job counts while idle (its files done, waiting for more).
        idle = str(mgr.HashFds(ft.fds(f), "sha256", opts(more=True)))
        ft.JobWatcher.iterate_until(lambda: len(w.results.get(idle, {})) == 1, 10)
        # Files: pipes stay unfinished until their writers close.
        rs, ws = pipes(1)
        job = str(mgr.HashFds(ft.fds(*rs), "sha256", opts(max_size=1 << 40, more=True)))
        close_all(rs)
        msg = ft.expect_error(ERR_BUSY, mgr.HashFds, ft.fds(f), "sha256", opts())
        ft.check("jobs" in msg, f"job quota message: {msg}")
        rs2, ws2 = pipes(16)
        ft.check(add_fds(conn, job, rs2, more=True) == 1, "16 pipes")
        close_all(rs2)
        rs3, ws3 = pipes(4)
        msg = ft.expect_error(ERR_BUSY, add_fds, conn, job, rs3, more=True)
        ft.check("files" in msg, f"file quota message: {msg}")
        ft.check(int(ft.job_prop(conn, job, "FilesTotal")) == 17, "a refused AddFds added files")
        ft.check(add_fds(conn, job, rs3[:3], more=True) == 17, "3 more fit the quota")
        close_all(rs3)
        for wfd in ws + ws2 + ws3[:3]:
            os.write(wfd, b"x")
        close_all(ws + ws2 + ws3)
        ft.JobWatcher.iterate_until(lambda: len(w.results.get(job, {})) == 20, 30)
        ft.check(add_fds(conn, job, [f] * 16, more=False) == 20, "after the pipes finished")
        w.wait([job])
        want = hashlib.sha256(b"x").hexdigest()
        ft.check(all(w.results[job][i][2] == want for i in range(20)), "pipe digests")
        ft.check(w.finished[job] == ("done", 36, 0), f"{w.finished[job]}")

        # SIGTERM with an open, busy job and an open, idle one: both cancelled, exit 0.
        rs, ws = pipes(1)
        busy = str(mgr.HashFds(ft.fds(*rs), "sha256", opts(max_size=1 << 40, more=True)))
        close_all(rs)
        rc = d.stop()
        w.pump(0.3)
        ft.check(rc == 0, f"fhashd exit status {rc} after SIGTERM:\n{d.log()}")
        ft.check(w.finished.get(busy, ("",))[0] == "cancelled", f"SIGTERM: busy {w.finished.get(busy)}")
        ft.check(w.finished.get(idle, ("",))[0] == "cancelled", f"SIGTERM: idle {w.finished.get(idle)}")
        close_all(ws)
        conn.close()
    ft.log("ok: the file quota applies to AddFds (Busy, nothing added); an idle open job holds its job "
           "slot; SIGTERM cancels open jobs")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--client":
        if sys.argv[2] == "holder":
            client_holder(*sys.argv[3:])
        elif sys.argv[2] == "intruder":
            client_intruder(*sys.argv[3:])
        return
    ft.require_root_clients()
    with ft.Bus(anyone=True) as bus:
        tmp = ft.files_dir(bus)
        with open(os.path.join(tmp, "one"), "wb") as f:
            f.write(b"one\n")
        os.chmod(os.path.join(tmp, "one"), 0o644)
        with ft.Daemon(bus, "--workers", "2", "--max-jobs-per-uid", "200") as d:
            conn = bus.connect()
            w = ft.JobWatcher(conn)
            test_many_calls(conn, w, tmp)
            test_lockstep(conn, w, tmp)
            test_names_expected(conn, w, tmp)
            test_owner_only(bus, conn, w, tmp)
            test_closed(conn, w, tmp)
            test_cancel(conn, w, tmp)
            test_bad_fds(conn, w, tmp)
            test_owner_disconnect(bus, conn, d, tmp)
            conn.close()
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
        test_quotas(bus, tmp)


if __name__ == "__main__":
    main()
