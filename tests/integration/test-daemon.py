#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon.py: the org.fhash.Hasher1 API of a real fhashd on a private dbus-daemon, driven by
# clients we did not write (python3-dbus, gdbus, busctl) and by hostile ones (another uid, an
# eavesdropper, a client killed mid-job, bad arguments, 50 clients at once).
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

HERE = os.path.abspath(__file__)


def run_client_as_nobody(address, mode, *args):
    """This script again, as nobody, in client mode; returns the Popen (stdin/stdout pipes)."""
    return subprocess.Popen(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                             "/usr/bin/python3", HERE, "--client", mode, address] + list(args),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")


def pipe_job(mgr, watcher_conn_mgr=None, algo="sha256", max_size=1 << 40):
    """A job reading a pipe the caller keeps open: it runs until the write end is closed."""
    r, w = os.pipe()
    path = mgr.HashFds(ft.fds(r), algo, ft.options(max_size=max_size, names=["pipe"]))
    os.close(r)
    return str(path), w


# ---------------------------------------------------------------------------------------------

def test_algorithms(conn, w, tmp):
    files = []
    for name, data in [("empty", b""), ("one", b"a"), ("page+1", os.urandom(4097)),
                       ("mib+17", os.urandom((1 << 20) + 17))]:
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(data)
        os.chmod(p, 0o644)
        files.append(p)
    mgr = ft.manager(conn)
    algos = [str(a) for a in ft.job_iface(conn, ft.MANAGER_PATH, ft.PROPS_IFACE).Get(ft.MANAGER_IFACE, "Algorithms")]
    ft.check(sorted(algos) == sorted(ft.ALGORITHMS), f"Algorithms property: {algos}")
    jobs = {}
    for algo in ft.ALGORITHMS:
        jobs[algo] = str(mgr.HashFds(ft.fds(*files), algo, ft.options(names=files)))
    w.wait(jobs.values())
    for algo, job in jobs.items():
        ft.check(w.finished[job] == ("done", len(files), 0), f"{algo}: JobFinished {w.finished[job]}")
        res = w.results[job]
        ft.check(sorted(res) == list(range(len(files))), f"{algo}: result indices {sorted(res)}")
        for i, p in enumerate(files):
            name, size, digest, error = res[i]
            want = ft.reference_digest(algo, p)
            ft.check(error == "" and digest == want,
                     f"{algo} {p}: got {digest!r} error {error!r}, reference says {want}")
            ft.check(name == p and size == os.path.getsize(p), f"{algo} {p}: name {name} size {size}")
        # A client that missed the signals gets the same from GetResults, in input order.
        got = ft.job_iface(conn, job).GetResults()
        ft.check([(int(r[0]), str(r[3])) for r in got] == [(i, res[i][2]) for i in range(len(files))],
                 f"{algo}: GetResults differs from FilesHashed")
        ft.check(str(ft.job_prop(conn, job, "State")) == "done", f"{algo}: State")
        ft.check(float(ft.job_prop(conn, job, "Progress")) == 1.0, f"{algo}: Progress")
        ft.check(int(ft.job_prop(conn, job, "FilesDone")) == len(files), f"{algo}: FilesDone")
    ft.log(f"ok: HashFds digests equal the reference tools for {len(ft.ALGORITHMS)} algorithms")


def test_algorithm_sets(conn, w, tmp):
    """Several algorithms in one job: one read, digests joined by ',' in the order asked."""
    files = [os.path.join(tmp, n) for n in ("empty", "one", "page+1", "mib+17")]
    mgr = ft.manager(conn)
    sets = ["sha256,blake3", "blake3,xxh3,md5,sha512", "crc32c,sha1", "xxh128,blake2b,sha3-256"]
    jobs = {}
    for s in sets:
        jobs[s] = str(mgr.HashFds(ft.fds(*files), s, ft.options(names=files)))
    # HashPaths, with expected digests joined the same way: one right, one wrong.
    want = {p: ",".join(ft.reference_digest(a, p) for a in ("sha1", "md5")) for p in files}
    wrong = want[files[1]].split(",")
    wrong = wrong[0] + "," + "0" * len(wrong[1])
    exp_job = str(mgr.HashPaths(files[:2], "sha1,md5", ft.options(expected=[want[files[0]], wrong])))
    w.wait(list(jobs.values()) + [exp_job])
    for s, job in jobs.items():
        ft.check(w.finished[job] == ("done", len(files), 0), f"{s}: JobFinished {w.finished[job]}")
        ft.check(str(ft.job_prop(conn, job, "Algorithm")) == s, f"{s}: Algorithm property")
        for i, p in enumerate(files):
            name, size, digest, error = w.results[job][i]
            ref = ",".join(ft.reference_digest(a, p) for a in s.split(","))
            ft.check(error == "" and digest == ref, f"{s} {p}: got {digest!r} error {error!r}, want {ref}")
        got = ft.job_iface(conn, job).GetResults()
        ft.check([str(r[3]) for r in got] == [w.results[job][i][2] for i in range(len(files))],
                 f"{s}: GetResults differs from FilesHashed")
    res = w.results[exp_job]
    ft.check(w.finished[exp_job] == ("failed", 1, 1), f"expected job: {w.finished[exp_job]}")
    ft.check(res[0][3] == "" and res[0][2] == want[files[0]], f"expected ok: {res[0]}")
    ft.check(res[1][3].startswith("org.fhash.Hasher1.Error.Mismatch") and res[1][2] == want[files[1]],
             f"expected mismatch: {res[1]}")

    E = ft.ERR_INVALID_ARGS
    fd = os.open(files[1], os.O_RDONLY)
    for bad, word in [("sha256,sha256", "twice"), ("md5,sha1,sha256,sha512,blake3", "at most 4"),
                      ("sha256,", "unknown"), ("sha256,sha257", "unknown"), (",", "unknown")]:
        msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), bad, ft.options())
        ft.check(word in msg and "algorithm" in msg, f"algorithm {bad!r}: {msg}")
    import dbus
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "blake3,sha256",
                          dbus.Dictionary({"length": dbus.UInt32(128)}, signature="sv"))
    ft.check("length" in msg and "one algorithm" in msg, f"length with a set: {msg}")
    for bad in [want[files[1]].split(",")[0], want[files[1]] + ",", want[files[1]].replace(",", ";")]:
        msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "sha1,md5", ft.options(expected=[bad]))
        ft.check("expected[0]" in msg and "sha1,md5" in msg, f"expected {bad!r}: {msg}")
    os.close(fd)
    ft.log(f"ok: {len(sets)} algorithm sets give the reference digests joined; bad sets are InvalidArgs")


def test_packed_results(conn, w, tmp):
    """"packed-results": FilesDigested carries the files hashed without error as arrays, their digests
    as bytes; failures and mismatches as FilesHashed has them, with labels; GetResults unchanged."""
    import dbus
    files = [os.path.join(tmp, n) for n in ("empty", "one", "page+1", "mib+17")]
    mgr = ft.manager(conn)
    want = {p: ",".join(ft.reference_digest(a, p) for a in ("sha256", "md5")) for p in files}
    d = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    job = str(mgr.HashFds(ft.fds(*files, d), "sha256,md5",
                          ft.options(names=files + ["dir"], expected=["", "0" * 64 + "," + "0" * 32, "", "", ""],
                                     packed_results=True)))
    os.close(d)
    # One algorithm with a length, and HashPaths' 1,000 files in batches.
    short = str(mgr.HashFds(ft.fds(*files), "blake3",
                            dbus.Dictionary({"length": dbus.UInt32(128), "packed-results": dbus.Boolean(True)},
                                            signature="sv")))
    many = ft.make_files(os.path.join(tmp, "packed"), 1000, max_size=8192, seed=11)
    paths = str(mgr.HashPaths(many, "sha256", ft.options(packed_results=True)))
    w.wait([job, short, paths])

    ft.check(w.kinds[job].get("FilesHashed", 0) == 0 and w.kinds[job].get("FilesDigested", 0) >= 1,
             f"signals of a packed job: {w.kinds[job]}")
    ft.check(w.finished[job] == ("failed", 3, 2), f"packed job: {w.finished[job]}")
    res = w.results[job]
    for i in (0, 2, 3):
        ft.check(res[i] == ("", os.path.getsize(files[i]), want[files[i]], ""), f"packed {files[i]}: {res[i]}")
    ft.check(res[1][0] == files[1] and res[1][2] == want[files[1]] and
             res[1][3].startswith("org.fhash.Hasher1.Error.Mismatch: "), f"packed mismatch: {res[1]}")
    ft.check(res[4][0] == "dir" and res[4][3].startswith("org.fhash.Hasher1.Error.NotRegular: "),
             f"packed directory: {res[4]}")
    got = ft.job_iface(conn, job).GetResults()
    ft.check([(str(r[1]), str(r[3])) for r in got] == [(n, res[i][2]) for i, n in enumerate(files + ["dir"])],
             f"GetResults of a packed job: {got}")

    ft.check(w.kinds[short] == {"FilesDigested": 1}, f"signals of the blake3 job: {w.kinds[short]}")
    got = ft.job_iface(conn, short).GetResults()
    ft.check([len(str(r[3])) for r in got] == [32] * 4 and
             [w.results[short][i][2] for i in range(4)] == [str(r[3]) for r in got],
             f"blake3 with length 128: {w.results[short]} against {got}")
    ft.check(w.kinds[paths].get("FilesDigested", 0) >= 4 and "FilesHashed" not in w.kinds[paths],
             f"1000 packed results: {w.kinds[paths]}")
    ft.check(all(w.results[paths][i] == ("", os.path.getsize(p), ft.sha256_file(p), "") for i, p in enumerate(many)),
             "HashPaths with packed-results: a digest or size differs")

    E = ft.ERR_INVALID_ARGS
    fd = os.open(files[1], os.O_RDONLY)
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "sha256",
                          dbus.Dictionary({"packed-results": "yes"}, signature="sv"))
    ft.check('"packed-results" must be of type \'b\'' in msg, f"packed-results as a string: {msg}")
    open_job = str(mgr.HashFds(ft.fds(fd), "sha256", ft.options(more=True)))
    msg = ft.expect_error(E, ft.job_iface(conn, open_job).AddFds, ft.fds(fd), ft.options(packed_results=True))
    ft.check('"packed-results" cannot be given to this call' in msg, f"AddFds with packed-results: {msg}")
    ft.job_iface(conn, open_job).Close()
    os.close(fd)
    w.wait([open_job])
    ft.check(w.kinds[open_job] == {"FilesHashed": 1}, f"a job without the option: {w.kinds[open_job]}")
    ft.log("ok: packed-results: FilesDigested with the digests of two algorithms, of a length, of 1,000 "
           "paths; a mismatch and an error as FilesHashed has them; GetResults keeps the labels; a wrong type "
           "and AddFds refused")


def test_batch(conn, w, tmp):
    files = ft.make_files(os.path.join(tmp, "batch"), 1000, max_size=16384, seed=7)
    expected = [ft.sha256_file(p) for p in files]
    wrong = {3, 250, 251, 600, 999}
    exp = [("0" * 64 if i in wrong else e.upper() if i % 2 else e) for i, e in enumerate(expected)]
    mgr = ft.manager(conn)

    # HashPaths, as root: one job, results in batches of at most 256.
    sig_before = w.signals
    job = str(mgr.HashPaths(files, "sha256", ft.options(expected=exp)))
    w.wait([job])
    ft.check(w.finished[job] == ("failed", 1000 - len(wrong), len(wrong)), f"HashPaths: {w.finished[job]}")
    ft.check(w.signals - sig_before >= 4, f"1000 results in {w.signals - sig_before} signals: batches too big")
    for i, p in enumerate(files):
        name, size, digest, error = w.results[job][i]
        ft.check(name == p and digest == expected[i], f"HashPaths {p}: {digest} {error}")
        if i in wrong:
            ft.check(error.startswith("org.fhash.Hasher1.Error.Mismatch: "), f"mismatch not reported: {error!r}")
        else:
            ft.check(error == "", f"HashPaths {p}: unexpected error {error!r}")

    # HashFds, 16 per call, same files and expectations.
    jobs = []
    for k in range(0, len(files), 16):
        chunk = files[k:k + 16]
        jobs.append((k, str(mgr.HashFds(ft.fds(*chunk), "sha256",
                                        ft.options(names=chunk, expected=exp[k:k + 16])))))
    w.wait([j for _, j in jobs])
    for k, job in jobs:
        for i in range(len(files[k:k + 16])):
            name, size, digest, error = w.results[job][i]
            ft.check(name == files[k + i] and digest == expected[k + i], f"HashFds {name}: {digest}")
            ft.check((error != "") == (k + i in wrong), f"HashFds {name}: error {error!r}")
    ft.log("ok: 1000 files with expected digests via HashPaths and via HashFds (16 per call)")


def test_per_file_errors(conn, w, tmp):
    mgr = ft.manager(conn)
    d = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    z = os.open("/dev/zero", os.O_RDONLY)
    job = str(mgr.HashFds(ft.fds(d, z), "sha256", ft.options()))
    capped = str(mgr.HashFds(ft.fds(z), "sha256", ft.options(max_size=1 << 20)))
    os.close(d)
    os.close(z)
    missing = str(mgr.HashPaths([os.path.join(tmp, "does-not-exist")], "sha256", ft.options()))
    w.wait([job, capped, missing], timeout=30)
    res = w.results[job]
    ft.check(res[0][3].startswith("org.fhash.Hasher1.Error.NotRegular: "), f"directory fd: {res[0]}")
    ft.check(res[1][3].startswith("org.fhash.Hasher1.Error.NotRegular: "), f"/dev/zero without max-size: {res[1]}")
    ft.check(w.finished[job] == ("failed", 0, 2), f"{w.finished[job]}")
    ft.check(w.results[capped][0][3].startswith("org.fhash.Hasher1.Error.TooLarge: "),
             f"/dev/zero with max-size: {w.results[capped][0]}")
    ft.check(w.results[missing][0][3].startswith("org.fhash.Hasher1.Error.NotFound: "),
             f"missing path: {w.results[missing][0]}")
    ft.log("ok: directory, /dev/zero (with and without max-size) and missing files give per-file errors")


def test_strategies(conn, w, tmp):
    """The "strategy" option: every way of reading gives the reference digest, by path and by fd,
    for a BLAKE3 file cut into pieces over both workers and a file big enough to be mapped."""
    mgr = ft.manager(conn)
    files = []
    for name, size in [("strat-24m", 24 << 20), ("strat-1m17", (1 << 20) + 17)]:
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(os.urandom(size))
        os.chmod(p, 0o644)
        files.append(p)
    jobs = {}
    for strategy in ("auto", "read", "mmap", "direct"):
        for algo in ("sha256", "blake3"):
            jobs[(strategy, algo, "fds")] = str(mgr.HashFds(ft.fds(*files), algo,
                                                            ft.options(names=files, strategy=strategy)))
            jobs[(strategy, algo, "paths")] = str(mgr.HashPaths(files, algo, ft.options(strategy=strategy)))
        jobs[(strategy, "sha256", "dontcache")] = str(
            mgr.HashPaths(files, "sha256", ft.options(strategy=strategy, dontcache=True)))
    w.wait(jobs.values())
    refs = {(algo, p): ft.reference_digest(algo, p) for algo in ("sha256", "blake3") for p in files}
    for (strategy, algo, how), job in jobs.items():
        ft.check(w.finished[job] == ("done", len(files), 0), f"{strategy}/{algo}/{how}: {w.finished[job]}")
        for i, p in enumerate(files):
            ft.check(w.results[job][i][2] == refs[(algo, p)] and w.results[job][i][3] == "",
                     f"{strategy}/{algo}/{how} {p}: {w.results[job][i]}, reference {refs[(algo, p)]}")
    msg = ft.expect_error(ft.ERR_INVALID_ARGS, mgr.HashPaths, files, "sha256", ft.options(strategy="fast"))
    ft.check("strategy" in msg and "fast" in msg, f"bad strategy message: {msg}")
    ft.log(f"ok: {len(jobs)} jobs with every \"strategy\" give the reference digests; a bad one is InvalidArgs")


def test_bad_args(conn, w, tmp):
    import dbus
    mgr = ft.manager(conn)
    job, wfd = pipe_job(mgr)
    f = os.path.join(tmp, "one")
    E = ft.ERR_INVALID_ARGS
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(f), "sha257", ft.options())
    ft.check("algorithm" in msg, f"unknown algorithm message: {msg}")
    fd = os.open(f, os.O_RDONLY)
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(*([fd] * 17)), "sha256", ft.options())
    ft.check("fds" in msg, f"17 fds message: {msg}")
    ft.expect_error(E, mgr.HashFds, ft.fds(), "sha256", ft.options())
    ft.expect_error(E, mgr.HashPaths, dbus.Array([], signature="s"), "sha256", ft.options())
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "sha256", ft.options(colour="blue"))
    ft.check("colour" in msg, f"unknown option message: {msg}")
    bad = dbus.Dictionary({"max-size": dbus.String("big")}, signature="sv")
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "sha256", bad)
    ft.check("max-size" in msg, f"wrong option type message: {msg}")
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "sha256", ft.options(names=["a", "b"]))
    ft.check("names" in msg, f"names count message: {msg}")
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(fd), "sha256", ft.options(expected=["xyz"]))
    ft.check("expected" in msg, f"bad expected message: {msg}")
    msg = ft.expect_error(E, mgr.HashPaths, ["relative/path"], "sha256", ft.options())
    ft.check("paths[0]" in msg, f"relative path message: {msg}")
    wo = os.open(os.path.join(tmp, "wo"), os.O_WRONLY | os.O_CREAT, 0o644)
    msg = ft.expect_error(E, mgr.HashFds, ft.fds(wo), "sha256", ft.options())
    ft.check("reading" in msg, f"write-only fd message: {msg}")
    os.close(wo)
    os.close(fd)

    # The job that was running meanwhile is unharmed and finishes with the right digest.
    ft.check(str(ft.job_prop(conn, job, "State")) in ("queued", "running"), "pipe job disturbed")
    data = os.urandom(300000)
    os.write(wfd, data)
    os.close(wfd)
    w.wait([job], timeout=30)
    import hashlib
    ft.check(w.results[job][0][2] == hashlib.sha256(data).hexdigest() and w.finished[job][0] == "done",
             f"pipe job after bad calls: {w.results[job]} {w.finished[job]}")
    ft.log("ok: bad arguments get InvalidArgs naming the argument while another job goes on")


def test_cli_clients(bus, conn, tmp):
    f = os.path.join(tmp, "one")
    want = ft.sha256_file(f)
    # gdbus passes fds for top-level 'h' arguments only before GLib 2.80 (HashFds takes 'ah').
    r = subprocess.run(f'gdbus call --address "{bus.address}" --dest {ft.BUS_NAME} --object-path '
                       f'{ft.MANAGER_PATH} --method {ft.MANAGER_IFACE}.HashFds "@ah [0]" sha256 "{{}}" <"{f}"',
                       shell=True, capture_output=True, text=True, timeout=30)
    if r.returncode != 0 and "InconsistentMessage" in r.stderr:
        ft.log("skip: this gdbus cannot pass fds inside an array ('ah'): " + r.stderr.strip())
    else:
        ft.check(r.returncode == 0 and "/org/fhash/Hasher1/job/" in r.stdout, f"gdbus HashFds: {r.stdout} {r.stderr}")
        job = r.stdout.split("'")[1]
        # gdbus has left, so the job lingers for root; it may have been cancelled by that departure.
        ft.wait_for(lambda: str(ft.job_prop(conn, job, "State")) in ("done", "cancelled"), 10)
        res = ft.job_iface(conn, job).GetResults()
        if str(ft.job_prop(conn, job, "State")) == "done":
            ft.check(str(res[0][3]) == want, f"gdbus HashFds digest {res[0][3]} != {want}")
        ft.log("ok: gdbus call HashFds passes an fd")

    r = subprocess.run(["busctl", "--address", bus.address, "--json=short", "call", ft.BUS_NAME, ft.MANAGER_PATH,
                        ft.MANAGER_IFACE, "HashPaths", "assa{sv}", "1", f, "sha256", "0"],
                       capture_output=True, text=True, timeout=30)
    ft.check(r.returncode == 0, f"busctl HashPaths: {r.stderr}")
    for prop, sig in [("Version", "s"), ("Workers", "u"), ("ActiveJobs", "u"), ("QueuedFiles", "u"),
                      ("BytesHashed", "t"), ("Algorithms", "as")]:
        r = subprocess.run(["busctl", "--address", bus.address, "get-property", ft.BUS_NAME, ft.MANAGER_PATH,
                            ft.MANAGER_IFACE, prop], capture_output=True, text=True, timeout=30)
        ft.check(r.returncode == 0 and r.stdout.startswith(sig + " "), f"busctl get-property {prop}: {r.stdout} {r.stderr}")
    r = subprocess.run(["busctl", "--address", bus.address, "introspect", ft.BUS_NAME, ft.MANAGER_PATH],
                       capture_output=True, text=True, timeout=30)
    ft.check(r.returncode == 0 and ".HashFds" in r.stdout and ".FilesHashed" in r.stdout, f"busctl introspect: {r.stdout}")
    ft.log("ok: busctl HashPaths, get-property and introspect")


def test_other_uid(bus, conn, w, tmp):
    mgr = ft.manager(conn)
    job, wfd = pipe_job(mgr)
    # Same uid, another connection, listening for the signals with a plain match rule.
    spy = bus.connect()
    spy_w = ft.JobWatcher(spy)
    nobody = run_client_as_nobody(bus.address, "nobody", job, os.path.join(tmp, "one"))
    line = nobody.stdout.readline().strip()
    ft.check(line == "ready", f"nobody client: {line!r}")
    # Root's job produces results while nobody and the spy listen.
    os.write(wfd, b"secret data")
    os.close(wfd)
    other = str(mgr.HashPaths([os.path.join(tmp, "one")], "sha256", ft.options()))
    w.wait([job, other])
    spy_w.pump(0.3)
    out, _ = nobody.communicate("done\n", timeout=60)
    ft.check(nobody.returncode == 0, f"nobody client failed: {out}")
    ft.check(spy_w.signals == 0 and not spy_w.finished, "a second connection received another's signals")
    spy.close()
    ft.log("ok: another uid is refused HashPaths, Cancel, GetResults, Release and properties; signals stay unicast")


def client_nobody(address, root_job, file):
    """Runs as nobody: everything about root's job is refused, its own fd job works."""
    import dbus
    ft.glib_mainloop()
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    ft.check(os.geteuid() != 0, "not running as another uid")
    w = ft.JobWatcher(conn)
    # An eavesdropper's match rule too: the bus must not hand it root's unicast signals.
    try:
        conn.add_match_string("type='signal',interface='org.fhash.Hasher1.Manager',eavesdrop='true'")
    except dbus.exceptions.DBusException as e:
        # The bus may refuse eavesdropping outright; the plain match rules of the watcher remain.
        ft.check(e.get_dbus_name() == ft.ERR_ACCESS_DENIED, f"AddMatch eavesdrop: {e}")
    mgr = ft.manager(conn)
    ft.expect_error(ft.ERR_ACCESS_DENIED, mgr.HashPaths, [file], "sha256", ft.options())
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, root_job).Cancel)
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, root_job).GetResults)
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, root_job).Release)
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_prop, conn, root_job, "State")
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, root_job, ft.PROPS_IFACE).GetAll, ft.JOB_IFACE)
    ft.check(root_job not in [str(p) for p in mgr.ListJobs()], "ListJobs shows root's job to nobody")
    own = str(mgr.HashFds(ft.fds(file), "sha256", ft.options()))
    w.wait([own])
    ft.check(w.results[own][0][2] == ft.sha256_file(file), "nobody's own fd job")
    print("ready", flush=True)
    sys.stdin.readline()
    w.pump(0.3)
    ft.check(set(w.finished) == {own}, f"nobody saw foreign JobFinished: {w.finished}")
    ft.check(set(w.results) == {own}, f"nobody saw foreign FilesHashed: {list(w.results)}")
    print("ok", flush=True)


def client_holder(address, sparse):
    """Starts a big job on a pipe and a sparse file, prints its path, then waits to be killed."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    r, w = os.pipe()
    job = ft.manager(conn).HashFds(ft.fds(r, sparse), "sha256", ft.options(max_size=1 << 40))
    os.close(r)
    print(job, flush=True)
    time.sleep(600)


def test_owner_disconnect(bus, conn, d, tmp):
    sparse = os.path.join(tmp, "sparse")
    with open(sparse, "wb") as f:
        f.truncate(64 << 30)
    os.chmod(sparse, 0o644)
    time.sleep(0.3)  # let earlier jobs' fds go
    base = d.fd_count()
    p = subprocess.Popen(["/usr/bin/python3", HERE, "--client", "holder", bus.address, sparse],
                         stdout=subprocess.PIPE, text=True)
    job = p.stdout.readline().strip()
    ft.check(job.startswith("/org/fhash/Hasher1/job/"), f"holder client: {job!r}")
    ft.check(ft.wait_for(lambda: int(ft.job_prop(conn, job, "BytesDone")) > 0, 10), "sparse job not running")
    during = d.fd_count()
    p.kill()
    p.wait()
    t0 = time.monotonic()
    ok = ft.wait_for(lambda: d.fd_count() <= base, 3)
    ft.check(ok, f"fd count {d.fd_count()} did not return to {base} (was {during} during the job)")
    ft.check(str(ft.job_prop(conn, job, "State")) == "cancelled", "killed owner's job not cancelled")
    ft.log(f"ok: owner killed mid-job: fds {during} -> {d.fd_count()} (start {base}) in {time.monotonic() - t0:.2f} s")


def test_many_clients(bus, tmp):
    import hashlib
    files = ft.make_files(os.path.join(tmp, "batch"), 1000, max_size=16384, seed=7)
    algos = ["sha256", "sha1", "md5", "sha512", "blake2b", "sha3-256"]
    py = {"sha256": hashlib.sha256, "sha1": hashlib.sha1, "md5": hashlib.md5, "sha512": hashlib.sha512,
          "blake2b": hashlib.blake2b, "sha3-256": hashlib.sha3_256}
    data = {}
    for p in files:
        with open(p, "rb") as f:
            data[p] = f.read()
    clients = []
    pending = {"n": 0}

    def reply(k):
        def ok(path):
            clients[k][2].append(str(path))
            pending["n"] -= 1

        def err(e):
            ft.fail(f"client {k}: {e}")
        return ok, err

    for k in range(50):
        c = bus.connect()
        w = ft.JobWatcher(c)
        mine = [files[(k * 200 + i) % 1000] for i in range(200)]
        clients.append((c, w, [], mine, algos[k % len(algos)]))
    for k, (c, w, jobs, mine, algo) in enumerate(clients):
        ok, err = reply(k)
        pending["n"] += 1
        ft.manager(c).HashPaths(mine, algo, ft.options(), reply_handler=ok, error_handler=err)
    ft.JobWatcher.iterate_until(lambda: pending["n"] == 0, 60)
    ft.check(pending["n"] == 0, "not every HashPaths call was answered")
    ft.JobWatcher.iterate_until(lambda: all(j[0] in w.finished for (_, w, j, _, _) in clients), 120)
    for k, (c, w, jobs, mine, algo) in enumerate(clients):
        job = jobs[0]
        ft.check(w.finished.get(job) == ("done", 200, 0), f"client {k}: {w.finished.get(job)}")
        ft.check(set(w.finished) == {job}, f"client {k} got another client's JobFinished")
        for i, p in enumerate(mine):
            ft.check(w.results[job][i][2] == py[algo](data[p]).hexdigest(), f"client {k} {algo} {p}")
        c.close()
    ft.log("ok: 50 clients x 200 files at once, all answered correctly and only to themselves")


def test_limits(bus, tmp):
    with ft.Daemon(bus, "--workers", "2", "--max-jobs-per-uid", "2", "--max-files-per-uid", "20") as d:
        conn = bus.connect()
        w = ft.JobWatcher(conn)
        mgr = ft.manager(conn)
        j1, w1 = pipe_job(mgr)
        j2, w2 = pipe_job(mgr)
        f = os.path.join(tmp, "one")
        msg = ft.expect_error(ft.ERR_PREFIX + "Busy", mgr.HashPaths, [f], "sha256", ft.options())
        ft.check("jobs" in msg, f"job limit message: {msg}")
        ft.job_iface(conn, j1).Cancel()
        w.wait([j1])
        ft.check(w.finished[j1][0] == "cancelled", f"Cancel: {w.finished[j1]}")
        ft.check(w.results[j1][0][3].startswith(ft.ERR_PREFIX + "Cancelled: "), f"{w.results[j1]}")
        msg = ft.expect_error(ft.ERR_PREFIX + "Busy", mgr.HashPaths, [f] * 20, "sha256", ft.options())
        ft.check("files" in msg, f"file limit message: {msg}")
        j3 = str(mgr.HashPaths([f] * 19, "sha256", ft.options()))
        w.wait([j3])
        # SIGTERM with a job running: its owner hears "cancelled", the daemon exits 0.
        rc = d.stop()
        w.pump(0.3)
        ft.check(rc == 0, f"fhashd exit status {rc} after SIGTERM:\n{d.log()}")
        ft.check(w.finished.get(j2, ("",))[0] == "cancelled", f"SIGTERM: JobFinished {w.finished.get(j2)}")
        os.close(w1)
        os.close(w2)
        conn.close()
    ft.log("ok: per-uid job and file limits answer Busy; Cancel; SIGTERM cancels and exits 0")


def test_admin_max_size(bus, tmp):
    """MaxFileSize is a ceiling: a caller's max-size may lower it, never raise it (M4)."""
    conf = os.path.join(tmp, "maxsize.conf")
    with open(conf, "w") as f:
        f.write("[Daemon]\nMaxFileSize=64K\n")
    big = os.path.join(tmp, "big-100k")
    with open(big, "wb") as f:
        f.write(b"b" * 100000)
    with ft.Daemon(bus, "--workers", "1", "--config", conf):
        conn = bus.connect()
        w = ft.JobWatcher(conn)
        mgr = ft.manager(conn)
        fd = os.open(big, os.O_RDONLY)
        z = os.open("/dev/zero", os.O_RDONLY)
        raised = str(mgr.HashFds(ft.fds(fd, z), "sha256", ft.options(max_size=1 << 40)))
        lowered = str(mgr.HashFds(ft.fds(fd), "sha256", ft.options(max_size=1000)))
        plain = str(mgr.HashFds(ft.fds(fd), "sha256", ft.options()))
        os.close(fd)
        os.close(z)
        w.wait([raised, lowered, plain], timeout=30)
        for job, i, what in ((raised, 0, "100 kB file, max-size 2^40"), (raised, 1, "/dev/zero, max-size 2^40"),
                             (lowered, 0, "max-size 1000"), (plain, 0, "no max-size")):
            r = w.results[job][i]
            ft.check(r[3].startswith(ft.ERR_PREFIX + "TooLarge: "), f"MaxFileSize=64K, {what}: {r}")
        conn.close()
    ft.log("ok: a caller's max-size lowers MaxFileSize but never raises it")


def test_stall_timeout(bus, tmp):
    """StallTimeoutSec: a pipe nobody writes to ends TimedOut and gives its place back; others go on."""
    f = os.path.join(tmp, "one")
    with ft.Daemon(bus, "--workers", "1", "--stall-timeout", "1"):
        conn = bus.connect()
        w = ft.JobWatcher(conn)
        mgr = ft.manager(conn)
        r, wr = os.pipe()
        t0 = time.monotonic()
        silent = str(mgr.HashFds(ft.fds(r), "sha256", ft.options(max_size=1 << 40, names=["silent"])))
        os.close(r)
        plain = str(mgr.HashPaths([f], "sha256", ft.options()))
        w.wait([plain, silent], timeout=20)
        took = time.monotonic() - t0
        res = w.results[silent][0]
        ft.check(res[3].startswith(ft.ERR_PREFIX + "TimedOut: "), f"silent pipe: {res}")
        ft.check(0.9 < took < 10, f"silent pipe ended after {took:.1f} s with StallTimeoutSec=1")
        ft.check(w.finished[plain][0] == "done", f"the other job: {w.finished[plain]}")
        os.close(wr)
        conn.close()
    ft.log(f"ok: StallTimeoutSec=1 ends a silent pipe TimedOut after {took:.1f} s; other jobs go on")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--client":
        if sys.argv[2] == "nobody":
            client_nobody(*sys.argv[3:])
        elif sys.argv[2] == "holder":
            client_holder(*sys.argv[3:])
        return
    ft.require_root_clients(programs=("busctl", "gdbus"))
    with ft.Bus(anyone=True) as bus:
        tmp = ft.files_dir(bus)
        with ft.Daemon(bus, "--workers", "2", "--max-jobs-per-uid", "200") as d:
            conn = bus.connect()
            w = ft.JobWatcher(conn)
            test_algorithms(conn, w, tmp)
            test_algorithm_sets(conn, w, tmp)
            test_packed_results(conn, w, tmp)
            test_batch(conn, w, tmp)
            test_per_file_errors(conn, w, tmp)
            test_bad_args(conn, w, tmp)
            test_strategies(conn, w, tmp)
            test_cli_clients(bus, conn, tmp)
            test_other_uid(bus, conn, w, tmp)
            test_owner_disconnect(bus, conn, d, tmp)
            test_many_clients(bus, tmp)
            conn.close()
            ft.check(d.alive(), f"fhashd died:\n{d.log()}")
        test_limits(bus, tmp)
        test_admin_max_size(bus, tmp)
        test_stall_timeout(bus, tmp)


if __name__ == "__main__":
    main()
