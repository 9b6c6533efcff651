#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-ctl-open-jobs.py: fhashctl through fhashd puts a run's files into one job fed by many calls
# (HashNames "more", then pipelined AddNames; HashFds and AddFds with FHASH_BY_FD=1) and prints exactly
# what --local prints: 2,000 files in one
# job, --no-cache (it reaches fhashd), check mode with expected digests, more files than one job takes
# (65,536: a second job), a per-uid file quota far below fhashctl's 1,024 files in flight (Busy, sent
# again), and a daemon without open jobs (no release lacks them: an error per file, not a fallback).
import hashlib
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

HERE = os.path.abspath(__file__)


def fhashctl():
    return ft.fhashctl_path()


def run(args, cwd, stdin=None, env=None):
    return subprocess.run([fhashctl()] + args, cwd=cwd, capture_output=True, timeout=300, input=stdin, env=env)


def same_as_local(address, args, cwd, what, stdin=None, env=None):
    loc = run(["--local"] + args, cwd, stdin)
    bus = run(["--daemon", "--address", address] + args, cwd, stdin, env)
    ft.check(bus.returncode == loc.returncode,
             f"{what}: exit {bus.returncode} through fhashd, {loc.returncode} --local: {bus.stderr[-300:]!r}")
    ft.check(bus.stdout == loc.stdout, f"{what}: stdout differs from --local")
    ft.check(bus.stderr == loc.stderr, f"{what}: stderr differs: {bus.stderr[-300:]!r} vs {loc.stderr[-300:]!r}")
    return bus


def jobs_of(conn):
    """{job: (State, FilesTotal)} of every job fhashd lists for us (root: all)."""
    out = {}
    for j in ft.manager(conn).ListJobs():
        out[str(j)] = (str(ft.job_prop(conn, str(j), "State")), int(ft.job_prop(conn, str(j), "FilesTotal")))
    return out


def new_jobs(conn, before):
    ft.wait_for(lambda: all(s in ("done", "failed", "cancelled") for s, _ in jobs_of(conn).values()), 10)
    return {j: v for j, v in jobs_of(conn).items() if j not in before}


def test_one_job(bus, tmp):
    d = os.path.join(tmp, "two-k")
    files = ft.make_files(d, 2000, max_size=9000, seed=21)
    names = [os.path.basename(p) for p in files]
    with ft.Daemon(bus, "--workers", "2") as dmn:
        conn = bus.connect()
        before = jobs_of(conn)
        same_as_local(bus.address, ["hash"] + names, d, "2,000 files")
        jobs = new_jobs(conn, before)
        ft.check(list(jobs.values()) == [("done", 2000)], f"2,000 files went to jobs {jobs}")
        # By name (issue 24): 256 names per call.
        calls = dmn.log().count(" more inputs by name from index ")
        ft.check(calls >= 2000 // 256 - 1, f"only {calls} AddNames calls in fhashd's log")
        # By fd (FHASH_BY_FD=1, and what fhashd cannot open by name): 16 fds per call.
        before, log0 = jobs_of(conn), len(dmn.log())
        same_as_local(bus.address, ["hash"] + names, d, "2,000 files by fd", env=dict(os.environ, FHASH_BY_FD="1"))
        ft.check(list(new_jobs(conn, before).values()) == [("done", 2000)], "2,000 files by fd: jobs")
        calls = dmn.log()[log0:].count(" more inputs from index ")
        ft.check(calls >= 2000 // 16 - 1, f"only {calls} AddFds calls in fhashd's log")

        # --no-cache: the same digests, and the jobs had "dontcache".
        before = jobs_of(conn)
        log0 = len(dmn.log())
        same_as_local(bus.address, ["hash", "--no-cache", "-a", "blake3"] + names[:100], d, "--no-cache")
        ft.check(", dontcache" in dmn.log()[log0:], "fhashd did not get dontcache")
        ft.check(list(new_jobs(conn, before).values()) == [("done", 100)], "--no-cache jobs")
        log0 = len(dmn.log())
        same_as_local(bus.address, ["hash", "--no-cache"] + names[:3], d, "--no-cache, one call")
        ft.check(", dontcache." in dmn.log()[log0:], "fhashd did not get dontcache on a one-call job")

        # --io: every way of reading reaches fhashd, and the output stays --local's.
        for how in ("read", "mmap", "direct"):
            log0 = len(dmn.log())
            same_as_local(bus.address, ["hash", "--io", how, "-a", "blake3"] + names[:50], d, f"--io {how}")
            ft.check(f", strategy {how}" in dmn.log()[log0:], f"fhashd did not get strategy {how}")
        bad = run(["--local", "hash", "--io", "fast", names[0]], d)
        ft.check(bad.returncode == 2 and b"--io" in bad.stderr, f"--io fast: {bad.returncode} {bad.stderr!r}")

        # check: expected digests go with the AddFds calls; a mismatch and a missing file among them.
        sums = os.path.join(tmp, "SUMS")
        with open(sums, "w") as f:
            for i, n in enumerate(names):
                h = hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest()
                f.write(f"{'0' * 64 if i == 1234 else h}  {n}\n")
            f.write(f"{'1' * 64}  missing-file\n")
        before = jobs_of(conn)
        r = same_as_local(bus.address, ["check", sums], d, "check of 2,000")
        ft.check(r.returncode == 1 and b"f01234: FAILED" in r.stdout, f"check: {r.returncode} {r.stdout[-200:]!r}")
        jobs = new_jobs(conn, before)
        # By name the missing file goes to fhashd too (its ENOENT sends it again as an fd, whose
        # open says it): 2,001 inputs.
        ft.check(list(jobs.values()) == [("failed", 2001)], f"check went to jobs {jobs}")
        same_as_local(bus.address, ["check", "--no-cache", "--quiet", sums], d, "check --no-cache")

        # Standard input (a pipe: a job of its own) among files, a directory and a missing file.
        stdin = os.urandom(100000)
        before = jobs_of(conn)
        same_as_local(bus.address, ["hash"] + names[:40] + ["-", ".", "nope"] + names[40:80], d,
                      "stdin among files", stdin=stdin)
        jobs = sorted(v for v in new_jobs(conn, before).values())
        ft.check(jobs == [("done", 1), ("failed", 81)], f"stdin among files: jobs {jobs}")
        conn.close()
    ft.log("ok: fhashctl: 2,000 files in one job, --no-cache reaches fhashd, check, stdin: all as --local")


def test_many_files(bus, tmp):
    """More files than one job takes: the run goes on in a second job."""
    d = os.path.join(tmp, "many")
    os.makedirs(d)
    n = 65536 + 300
    for i in range(n):
        with open(os.path.join(d, f"g{i:06d}"), "wb") as f:
            f.write(b"%d" % (i % 97))
    with ft.Daemon(bus, "--workers", "2") as dmn:
        conn = bus.connect()
        before = jobs_of(conn)
        same_as_local(bus.address, ["hash", "-a", "xxh3", "-r", "."], d, f"{n} files")
        jobs = sorted(v for v in new_jobs(conn, before).values())
        ft.check(jobs == [("done", 300), ("done", 65536)], f"{n} files went to jobs {jobs}")
        # The job that finished first was released by the run while it waited for the other (the
        # other's Release may race the run's exit, which releases it anyway).
        released = dmn.log().count("results released by its owner")
        ft.check(released >= 1, f"no job of the run was released by it:\n{dmn.log()[-2000:]}")
        conn.close()
    ft.log(f"ok: fhashctl: {n} files in two jobs (65,536 + 300), output as --local; {released} released by the run")


def test_many_manifests(bus, tmp):
    """check over many manifests: one job for all of them (one engine --local), verdicts and each
    manifest's messages in order, byte-identical to md5sum -c (stdout, stderr, exit code)."""
    d = os.path.join(tmp, "manifests")
    files = ft.make_files(d, 400, max_size=5000, seed=33)
    names = [os.path.basename(p) for p in files]
    md5 = {n: hashlib.md5(open(os.path.join(d, n), "rb").read()).hexdigest() for n in names}
    sums = []
    for k in range(40):
        p = os.path.join(tmp, f"m{k:02d}.md5sums")
        with open(p, "w") as f:
            for i, n in enumerate(names[k * 10:(k + 1) * 10]):
                h = md5[n]
                if k == 7 and i == 3:
                    h = "0" * 32  # a mismatch
                f.write(f"{h}  {n}\n")
            if k == 11:
                f.write("not a checksum line\n")  # improperly formatted
            if k == 13:
                f.write(f"{'2' * 32}  gone-{k}\n")  # missing file
        sums.append(p)
    empty = os.path.join(tmp, "empty.md5sums")
    open(empty, "w").close()
    sums[20:20] = [empty, os.path.join(tmp, "no-such.md5sums")]
    total = 401  # by name the missing file goes to fhashd too, then again as an fd, whose open says it

    def prog_free(b, prog):
        return b.replace(prog.encode() + b": ", b"")

    with ft.Daemon(bus, "--workers", "2") as dmn:
        for flags in ([], ["-w"], ["--quiet"], ["--status"]):
            ref = subprocess.run(["md5sum", "-c"] + flags + sums, cwd=d, capture_output=True)
            for how in (["--local"], ["--daemon", "--address", bus.address]):
                got = run(how + ["check", "-a", "md5"] + flags + sums, d)
                what = f"check {' '.join(flags)} of {len(sums)} manifests {how[0]}"
                ft.check(got.returncode == ref.returncode, f"{what}: exit {got.returncode}, md5sum {ref.returncode}")
                ft.check(got.stdout == ref.stdout, f"{what}: stdout differs from md5sum -c")
                ft.check(prog_free(got.stderr, "fhashctl") == prog_free(ref.stderr, "md5sum"),
                         f"{what}: stderr differs:\n{got.stderr[-600:]!r}\n{ref.stderr[-600:]!r}")
        conn = bus.connect()
        before = jobs_of(conn)
        r = run(["--daemon", "--address", bus.address, "check", "-a", "md5"] + sums, d)
        ft.check(r.returncode == 1, f"exit {r.returncode}")
        jobs = list(new_jobs(conn, before).values())
        ft.check(jobs == [("failed", total)], f"{len(sums)} manifests went to jobs {jobs}, not one of {total}")
        # A manifest of another algorithm between them: a job per run of one algorithm, output as --local.
        s256 = os.path.join(tmp, "x.sha256")
        with open(s256, "w") as f:
            for n in names[:5]:
                f.write(hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest() + f"  {n}\n")
        mixed = sums[:5] + [s256] + sums[5:10]
        before = jobs_of(conn)
        same_as_local(bus.address, ["check"] + mixed, d, "md5, sha256, md5 manifests")
        jobs = sorted(v[1] for v in new_jobs(conn, before).values())
        ft.check(jobs == [5, 50, 50], f"md5, sha256, md5 manifests went to jobs of {jobs} files")
        # --json: every manifest's summary object follows its own entries.
        r = run(["--daemon", "--address", bus.address, "check", "--json", "-a", "md5"] + sums, d)
        import json
        objs = [json.loads(x) for x in r.stdout.splitlines()]
        order = [o["manifest"] for o in objs if o.get("summary")]
        ft.check(order == sums, f"--json summaries in order {order[:5]}...")
        ft.check(sum(1 for o in objs if not o.get("summary")) == total, "--json: not one object per entry")
        conn.close()
    ft.log(f"ok: check of {len(sums)} manifests: one job, identical to md5sum -c (4 flag sets, --local and "
           "fhashd), a job per algorithm run, --json summaries in order")


def test_quota(bus, tmp):
    """A file quota far below the files fhashctl keeps in flight: Busy answers, calls sent again."""
    d = os.path.join(tmp, "two-k")
    names = sorted(os.listdir(d))
    with ft.Daemon(bus, "--workers", "1", "--max-files-per-uid", "40", "--max-jobs-per-uid", "2") as dmn:
        same_as_local(bus.address, ["hash"] + names, d, "quota of 40 files")
        ft.check("more inputs from index" in dmn.log(), "no AddFds under the quota")
        # Standard input needs a second job: with a job quota of 1 it waits for a slot.
        same_as_local(bus.address, ["hash"] + names[:30] + ["-"] + names[30:60], d, "quota, stdin",
                      stdin=b"abc")
    with ft.Daemon(bus, "--workers", "1", "--max-jobs-per-uid", "1"):
        same_as_local(bus.address, ["hash"] + names[:30] + ["-"] + names[30:60], d, "one job, stdin",
                      stdin=b"abc")
    ft.log("ok: fhashctl under a 40-file quota and a 1-job quota: output as --local")


# ---- a daemon without open jobs: HashFds refuses "more", no AddFds ---------------------------------

def client_old_daemon(address):
    import dbus
    import dbus.service
    from gi.repository import GLib
    ft.glib_mainloop()
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    algos = {"sha256": hashlib.sha256, "md5": hashlib.md5, "sha1": hashlib.sha1, "sha512": hashlib.sha512}
    known = ("names", "expected", "max-size", "dontcache")
    calls = []

    def send(dest, name, sig, *args):
        m = dbus.lowlevel.SignalMessage(ft.MANAGER_PATH, ft.MANAGER_IFACE, name)
        m.set_destination(dest)
        m.append(*args, signature=sig)
        conn.send_message(m)

    class OldManager(dbus.service.Object):
        @dbus.service.method(ft.MANAGER_IFACE, in_signature="ahsa{sv}", out_signature="o", sender_keyword="sender")
        def HashFds(self, fds, algo, options, sender=None):
            for k in options:
                if k not in known:
                    raise dbus.exceptions.DBusException(f'options: unknown option "{k}" (known: {", ".join(known)})',
                                                        name=ft.ERR_INVALID_ARGS)
            calls.append(len(fds))
            path = f"/org/fhash/Hasher1/job/{len(calls)}"
            results = []
            for i, fd in enumerate(fds):
                with os.fdopen(fd.take(), "rb") as f:
                    digest = algos[str(algo)](f.read()).hexdigest()
                exp = options.get("expected")
                err = "" if not exp or not exp[i] or exp[i].lower() == digest else \
                    "org.fhash.Hasher1.Error.Mismatch: expected it, got something else"
                results.append((dbus.UInt32(i), "", dbus.UInt64(0), digest, err))

            def later():
                send(sender, "FilesHashed", "oa(ustss)", dbus.ObjectPath(path), results)
                bad = sum(1 for r in results if r[4])
                send(sender, "JobFinished", "osuu", dbus.ObjectPath(path), "failed" if bad else "done",
                     dbus.UInt32(len(results) - bad), dbus.UInt32(bad))
                return False
            GLib.idle_add(later)
            return dbus.ObjectPath(path)

        @dbus.service.method("org.fhash.Test", in_signature="", out_signature="au")
        def Calls(self):
            return dbus.Array(calls, signature="u")

    OldManager(conn, ft.MANAGER_PATH)
    conn.request_name(ft.BUS_NAME)
    print("ready", flush=True)
    GLib.MainLoop().run()


def test_old_daemon(bus, tmp):
    """No release of fhashd lacks open jobs, so fhashctl no longer has a path without them: a daemon that
    refuses "more" gets its own words printed for each file, and the run fails, with no hang and no
    silently different output."""
    d = os.path.join(tmp, "two-k")
    names = sorted(os.listdir(d))[:20]
    p = subprocess.Popen(["/usr/bin/python3", HERE, "--client", "old-daemon", bus.address], stdout=subprocess.PIPE,
                         text=True)
    try:
        ft.check(p.stdout.readline().strip() == "ready", "the old daemon did not start")
        r = run(["--daemon", "--address", bus.address, "hash"] + names, d)
        loc = run(["--local", "hash"] + names, d).stdout.decode().splitlines()
        err, out = r.stderr.decode(), r.stdout.decode().splitlines()
        # The first call (16 files, "more") is refused; the last 4 fit in one plain HashFds, which any
        # fhashd takes.
        ft.check(r.returncode == 1 and err.count('unknown option "more"') == 16 and out == loc[16:],
                 f"fhashctl with a daemon without open jobs: exit {r.returncode}, {out[:3]!r}, {err[:300]!r}")
    finally:
        p.kill()
        p.wait()
    ft.log("ok: fhashctl with a daemon without open jobs says what it said of each file and fails")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--client":
        if sys.argv[2] == "old-daemon":
            client_old_daemon(*sys.argv[3:])
        return
    ft.require()
    fhashctl()
    ft.glib_mainloop()
    with ft.Bus() as bus:
        tmp = os.path.join(bus.dir, "files")
        os.makedirs(tmp)
        test_one_job(bus, tmp)
        test_quota(bus, tmp)
        test_old_daemon(bus, tmp)
        test_many_manifests(bus, tmp)
        test_many_files(bus, tmp)


if __name__ == "__main__":
    main()
