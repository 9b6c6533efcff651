#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon-names.py: files by name (issue 24). Manager.HashNames(ah dirs, ay dir_of, ay names, s,
# a{sv})
# and Job.AddNames() send a few directory fds and the names beneath them; fhashd's shards open each
# name with the caller's uid and groups, beneath the directory, never leaving its mount. Checked on
# a real fhashd (root) and a private dbus-daemon, with clients as root, as nobody and as nobody in a
# group: each reads exactly what it may (a 0600 file, a group's file, a file in a closed directory),
# no name escapes its directory ("..", symlinks out, absolute symlinks, /proc below /), FIFOs and
# directories fail as by path, and a directory fd that is not one, or is on a pseudo file system, is
# NotSupported; fhashctl sends names by default (fhashd's log says "by name"), its output equals
# sha256sum's and the fd path's, files fhashd cannot open by name go again as fds (the symlinks, the
# FIFO), nobody's 0600 file is "Permission denied" as before, and fhashd's fds return to their count;
# a call's directory fds count against the uid's fd budget (Busy at nobody's share, root still
# served).
import hashlib
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

HERE = os.path.abspath(__file__)
ERR_REFUSED = ft.ERR_PREFIX + "AccessDenied"
ERR_INVALID = "org.freedesktop.DBus.Error.InvalidArgs"
GROUP = 4321


def dir_fds(*paths):
    import dbus
    out = []
    for p in paths:
        fd = os.open(p, os.O_PATH | os.O_CLOEXEC)
        out.append(dbus.types.UnixFd(fd))
        os.close(fd)
    return dbus.Array(out, signature="h")


def name_array(pairs):
    """HashNames' "ay dir_of, ay names" of (directory index, name) pairs, a name str or bytes."""
    import dbus
    names = b"".join((n if isinstance(n, bytes) else n.encode()) + b"\0" for _, n in pairs)
    return dbus.ByteArray(bytes(d for d, _ in pairs)), dbus.ByteArray(names)


def hash_names(conn, w, dirs, names, **opts):
    """HashNames of names (each a name beneath dirs[0], or (index, name)); {name: (digest, error)}."""
    pairs = [n if isinstance(n, tuple) else (0, n) for n in names]
    job = str(ft.manager(conn).HashNames(dir_fds(*dirs), *name_array(pairs), "sha256", ft.options(**opts)))
    w.wait([job])
    res = w.results.get(job, {})
    ft.check(len(res) == len(pairs), f"{job}: {len(res)} results for {len(pairs)} names")
    return {pairs[i][1]: (res[i][2], res[i][3]) for i in res}


def make_tree(tmp):
    t = os.path.join(tmp, "tree")
    os.makedirs(os.path.join(t, "sub"))
    os.makedirs(os.path.join(t, "closed"))
    files = {"pub": 0o644, "grp": 0o640, "sec": 0o600, "sub/deep": 0o644, "closed/inner": 0o644}
    for n, mode in files.items():
        with open(os.path.join(t, n), "wb") as f:
            f.write(os.urandom(3000 + len(n) * 1000))
        os.chmod(os.path.join(t, n), mode)
    os.chown(os.path.join(t, "grp"), 0, GROUP)
    os.chmod(os.path.join(t, "closed"), 0o700)
    with open(os.path.join(tmp, "outside"), "wb") as f:
        f.write(b"outside the tree\n")
    os.symlink("../outside", os.path.join(t, "up"))
    os.symlink("/etc/hostname", os.path.join(t, "abs"))
    os.symlink("sub/deep", os.path.join(t, "inner-link"))
    os.mkfifo(os.path.join(t, "fifo"))
    with open(os.path.join(os.fsencode(t), NOT_UTF8), "wb") as f:
        f.write(b"a name that is not UTF-8\n")
    for d in (tmp, t, os.path.join(t, "sub")):
        os.chmod(d, 0o755)
    return t


NOT_UTF8 = b"caf\xe9"  # Latin-1: names go as bytes, not D-Bus strings
ALL = ["pub", "grp", "sec", "sub/deep", "closed/inner", "inner-link", "up", "abs", "../outside", "sub", "nope"]


def expected(tree, who):
    """What each name gives who ("root", "nobody", "member"): a digest, or an error name's tail."""
    readable = {"pub", "sub/deep", "inner-link"} | ({"grp", "sec", "closed/inner"} if who == "root" else set())
    if who == "member":
        readable.add("grp")
    out = {}
    for n in ALL:
        if n in readable:
            out[n] = ft.sha256_file(os.path.join(tree, n))
        elif n in ("grp", "sec", "closed/inner"):
            out[n] = "AccessDenied"
        elif n in ("up", "abs", "../outside"):
            out[n] = "IO"  # EXDEV: the name leaves its directory or its mount
        elif n == "sub":
            out[n] = "NotRegular"
        else:
            out[n] = "NotFound"
    return out


def check_names(conn, tree, who):
    w = ft.JobWatcher(conn)
    got = hash_names(conn, w, [tree], ALL)
    for n, want in expected(tree, who).items():
        digest, error = got[n]
        if len(want) == 64:
            ft.check(digest == want and not error, f"{who}: {n}: {digest!r} {error!r}, expected {want}")
        else:
            ft.check(not digest and error.startswith(ft.ERR_PREFIX + want),
                     f"{who}: {n}: {digest!r} {error!r}, expected {want}")
    # Two directories in one call, the same one twice, and AddNames to the job.
    mgr = ft.manager(conn)
    job = str(mgr.HashNames(dir_fds(tree, os.path.join(tree, "sub"), tree),
                            *name_array([(0, "pub"), (1, "deep"), (2, "pub")]), "sha256", ft.options(more=True)))
    first = ft.job_iface(conn, job).AddNames(dir_fds(os.path.join(tree, "sub")), *name_array([(0, "deep")]),
                                             ft.options())
    ft.check(int(first) == 3, f"AddNames placed its name at {first}")
    ft.job_iface(conn, job).Close()
    w.wait([job])
    res = w.results[job]
    want = [ft.sha256_file(os.path.join(tree, p)) for p in ("pub", "sub/deep", "pub", "sub/deep")]
    ft.check([res[i][2] for i in range(4)] == want, f"{who}: two directories: {res}")
    # What is refused as a whole.
    fdjob = str(mgr.HashFds(ft.fds(os.path.join(tree, "pub")), "sha256", ft.options(more=True)))
    ft.expect_error(ERR_INVALID, ft.job_iface(conn, fdjob).AddNames, dir_fds(tree), *name_array([(0, "pub")]),
                    ft.options())
    ft.job_iface(conn, fdjob).Close()
    w.wait([fdjob])
    for dirs, names, err in (([os.path.join(tree, "pub")], [(0, "x")], ERR_REFUSED),
                             (["/proc"], [(0, "self/status")], ERR_REFUSED),
                             ([tree], [(1, "pub")], ERR_INVALID),
                             ([tree], [(0, "/etc/hostname")], ERR_INVALID),
                             ([tree], [(0, "")], ERR_INVALID),
                             ([tree], [], ERR_INVALID)):
        ft.expect_error(err, mgr.HashNames, dir_fds(*dirs), *name_array(names), "sha256", ft.options())
    ft.expect_error(ERR_INVALID, mgr.HashNames, dir_fds(tree), *name_array([(0, "pub")] * 4097), "sha256",
                    ft.options())
    # The two byte arrays must agree: every name ends with a NUL, one dir_of entry each.
    import dbus
    for dir_of, names, word in ((b"\0", b"pub", "must end with a NUL"),
                                (b"\0\0", b"pub\0", "1 names for dir_of's 2 entries"),
                                (b"\0", b"pub\0pub\0", "more names than dir_of's 1 entries"),
                                (b"\0\0", b"pub\0\0", "names[1]: a name must be relative"),
                                (b"\x10", b"pub\0", "dir_of[0]: directory 16 of 1 given")):
        msg = ft.expect_error(ERR_INVALID, mgr.HashNames, dir_fds(tree), dbus.ByteArray(dir_of), dbus.ByteArray(names),
                              "sha256", ft.options())
        ft.check(word in msg, f"dir_of {dir_of!r}, names {names!r}: {msg}")
    # A name that is not UTF-8 is a name like any other.
    got = hash_names(conn, w, [tree], [NOT_UTF8])
    ft.check(got[NOT_UTF8] == (hashlib.sha256(b"a name that is not UTF-8\n").hexdigest(), ""),
             f"{who}: a name that is not UTF-8: {got}")


def client(address, tree, who):
    """Runs as nobody (or nobody in GROUP): its names open with its own rights."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    check_names(conn, tree, who)
    print("ok", flush=True)


def client_budget(address, d):
    """As nobody: calls of 16 directory fds and a FIFO beneath each (nothing writes to them, so the
    calls' parts stay), until fhashd says Busy; prints what it held and what fhashd said."""
    import dbus
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    mgr = ft.manager(conn)
    held = 0
    out = {"held": 0, "error": ""}
    for _ in range(40):
        try:
            mgr.HashNames(dir_fds(*[d] * 16), *name_array([(k, f"fifo{k}") for k in range(16)]), "sha256",
                          ft.options())
            held += 16
        except dbus.exceptions.DBusException as e:
            out["error"] = f"{e.get_dbus_name()}: {e.get_dbus_message()}"
            break
    out["held"] = held
    print(json.dumps(out), flush=True)
    sys.stdin.readline()


def run_as(uid_args, *argv, env=None):
    return subprocess.run(["setpriv"] + uid_args + list(argv), capture_output=True, text=True, timeout=120,
                          env=env)


NOBODY = ["--reuid=nobody", "--regid=nogroup", "--clear-groups"]
MEMBER = ["--reuid=nobody", "--regid=nogroup", f"--groups={GROUP}"]


def driver_questions(out):
    """The bus driver's GetConnectionUnixUser/GetConnectionCredentials calls in dbus-monitor's output:
    {the sender asked about: [member, ...]}."""
    asked, member = {}, None
    for line in out.splitlines():
        m = re.search(r"^method call .* member=(GetConnectionUnixUser|GetConnectionCredentials)$", line)
        if m:
            member = m.group(1)
            continue
        m = re.match(r'^\s+string "(:[0-9.]+)"$', line)
        if member and m:
            asked.setdefault(m.group(1), []).append(member)
        member = None
    return asked


def test_api(bus, tree):
    with ft.Daemon(bus) as d:
        conn = bus.connect()
        base = d.fd_count()
        check_names(conn, tree, "root")
        # What fhashd asks the bus driver about nobody's and the member's connections: once each,
        # the credentials, by the bus gate without waiting; a handler that asked again (waiting,
        # its loop stopped) would show a second question.
        log = os.path.join(bus.dir, "monitor.log")
        with open(log, "w") as out:
            mon = subprocess.Popen(["dbus-monitor", "--address", bus.address, "--monitor",
                                    "type='method_call',destination='org.freedesktop.DBus'"],
                                   stdout=out, stderr=subprocess.DEVNULL)

        def monitoring():
            with open(log) as f:
                return "member=NameLost" in f.read()  # what BecomeMonitor ends with
        ft.check(ft.wait_for(monitoring, 10), "dbus-monitor did not start monitoring")
        for who, ids in (("nobody", NOBODY), ("member", MEMBER)):
            r = run_as(ids, sys.executable, HERE, "client", bus.address, tree, who)
            ft.check(r.returncode == 0 and r.stdout.strip() == "ok",
                     f"{who} client: {r.returncode}\n{r.stdout}\n{r.stderr}\n{d.log()[-3000:]}")
        time.sleep(0.3)
        mon.terminate()
        mon.wait(timeout=10)
        with open(log) as f:
            asked = driver_questions(f.read())
        ft.check(len(asked) >= 2 and all(q == ["GetConnectionCredentials"] for q in asked.values()),
                 f"fhashd's questions to the bus driver about nobody's and the member's connections: {asked}")
        ft.log(f"ok: fhashd asked the bus driver about {len(asked)} connections once each, their credentials "
               "(the gate, without waiting)")
        ft.check(ft.wait_for(lambda: d.fd_count() <= base, 10), f"fhashd holds {d.fd_count()} fds, had {base}")
        ft.check("by name" in d.log(), "fhashd's log says nothing of names")


def test_budget(bus, tree):
    """A call's directory fds count against the uid's fd budget while its names are hashed: with
    RLIMIT_NOFILE 1024 nobody's share is 80 fds (test-daemon-limits' H3), five calls of 16."""
    import resource
    d = os.path.join(bus.dir, "budget")
    os.makedirs(d)
    os.chmod(d, 0o755)
    for k in range(16):
        os.mkfifo(os.path.join(d, f"fifo{k}"), 0o666)
    dmn = ft.Daemon(bus, "--workers", "1", preexec=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024)))
    dmn.start()
    try:
        time.sleep(0.2)
        base = dmn.fd_count()
        filler = subprocess.Popen(["setpriv"] + NOBODY + [sys.executable, HERE, "budget", bus.address, d],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd="/")
        got = json.loads(filler.stdout.readline() or "{}")
        ft.check(got.get("error", "").startswith(ft.ERR_PREFIX + "Busy") and "fds" in got["error"] and
                 got["held"] == 80, f"nobody's directories: {got}")
        during = dmn.fd_count()
        ft.check(during < 1024 - 256, f"fhashd holds {during} fds with nobody at its budget")
        conn = bus.connect()
        w = ft.JobWatcher(conn)
        got_root = hash_names(conn, w, [tree], ["pub"])
        ft.check(got_root["pub"] == (ft.sha256_file(os.path.join(tree, "pub")), ""), f"root: {got_root}")
        filler.stdin.close()
        filler.wait(10)
        ft.check(ft.wait_for(lambda: dmn.fd_count() <= base, 10), f"fds {dmn.fd_count()} not back to {base}")
        ft.check(dmn.alive(), f"fhashd died:\n{dmn.log()}")
    finally:
        dmn.stop()
    ft.log(f"ok: nobody's directories: {got['held']} fds, then Busy ({during} fds in fhashd); root served; "
           f"fds back to {base}")


def ctl(args, ids=None, env=None):
    argv = [ft.fhashctl_path()] + args
    if ids:
        return run_as(ids, *argv, env=env)
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env)


def test_fhashctl(bus, tree):
    paths = [os.path.join(tree, n) for n in ("pub", "sub/deep", "inner-link", "up", "abs", "grp", "sec")]
    ref = subprocess.run(["sha256sum"] + paths, capture_output=True, text=True).stdout
    with ft.Daemon(bus) as d:
        base = d.fd_count()
        for mode in ([], ["--no-direct"]):
            args = ["hash", "--daemon", "--address", bus.address] + mode
            r = ctl(args + paths)
            ft.check(r.returncode == 0 and r.stdout == ref, f"fhashctl {mode}: {r.returncode}\n{r.stdout}\n{r.stderr}")
            # Relative names, in the current directory and below it.
            r = subprocess.run([ft.fhashctl_path()] + args + ["pub", "sub/deep", "./up"], cwd=tree,
                               capture_output=True, text=True, timeout=60)
            want = subprocess.run(["sha256sum", "pub", "sub/deep", "./up"], cwd=tree, capture_output=True,
                                  text=True).stdout
            ft.check(r.returncode == 0 and r.stdout == want, f"relative names {mode}: {r.stdout}\n{r.stderr}")
            # A FIFO by name is read as a stream: all its writer writes, whether the writer waited
            # in its open() first or comes a while after (fhashd's poll waits for it).
            fifo = os.path.join(tree, "fifo")
            want = hashlib.sha256(b"through the fifo").hexdigest()
            for writer_first in (True, False):
                writer = None
                if writer_first:
                    writer = subprocess.Popen(["sh", "-c", f"sleep 0.2; printf 'through the fifo' > {fifo}"])
                reader = subprocess.Popen([ft.fhashctl_path()] + args + [fifo], stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True)
                if not writer_first:
                    time.sleep(0.5)
                    writer = subprocess.Popen(["sh", "-c", f"printf 'through the fifo' > {fifo}"])
                out, err = reader.communicate(timeout=60)
                writer.wait(timeout=30)
                ft.check(reader.returncode == 0 and out.split()[0] == want,
                         f"fifo {mode}, writer first {writer_first}: {out}\n{err}")
            # nobody: what it may read, and "Permission denied" for the rest, as without names.
            r = ctl(args + paths, ids=NOBODY)
            local = ctl(["hash", "--local"] + paths, ids=NOBODY)
            ft.check(r.returncode == 1 and r.stdout == local.stdout and r.stderr == local.stderr,
                     f"nobody {mode}: {r.returncode}\n{r.stdout}\n{r.stderr}\nlocal:\n{local.stdout}\n{local.stderr}")
            ft.check("sec: Permission denied" in r.stderr, f"nobody {mode}: {r.stderr}")
        # A cold file by name (evicted from the page cache), opened O_NONBLOCK: read whole. (This
        # kernel's io_uring waits for the data anyway; one that answers -EAGAIN makes the engine
        # clear O_NONBLOCK and read again, read_completion().)
        cold = os.path.join(tree, "cold")
        with open(cold, "wb") as f:
            f.write(os.urandom(3 << 20))
            f.flush()
            os.fsync(f.fileno())
            os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
        r = ctl(["hash", "--daemon", "--address", bus.address, "--io", "read", cold])
        ft.check(r.returncode == 0 and r.stdout.split()[0] == ft.sha256_file(cold), f"cold by name: {r.stdout}\n{r.stderr}")
        jobs_by_name = d.log().count("by name")
        ft.check(jobs_by_name > 0, "fhashctl sent nothing by name")
        # A name that is not UTF-8 goes by name too, and prints as sha256sum prints it.
        latin = os.path.join(os.fsencode(tree), NOT_UTF8)
        r = subprocess.run([ft.fhashctl_path(), "hash", "--daemon", "--address", bus.address, latin],
                           capture_output=True, timeout=60)
        want = subprocess.run(["sha256sum", latin], capture_output=True).stdout
        ft.check(r.returncode == 0 and r.stdout == want and d.log().count("by name") == jobs_by_name + 1,
                 f"a name that is not UTF-8: {r.stdout!r} {r.stderr!r}, want {want!r}")
        jobs_by_name += 1
        # FHASH_BY_FD=1: every file as an fd, the same output.
        r = ctl(["hash", "--daemon", "--address", bus.address] + paths, env=dict(os.environ, FHASH_BY_FD="1"))
        ft.check(r.returncode == 0 and r.stdout == ref, f"FHASH_BY_FD=1: {r.stdout}\n{r.stderr}")
        ft.check(d.log().count("by name") == jobs_by_name, "FHASH_BY_FD=1 sent names")
        ft.check(ft.wait_for(lambda: d.fd_count() <= base, 10), f"fhashd holds {d.fd_count()} fds, had {base}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "client":
        client(*sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "budget":
        client_budget(*sys.argv[2:])
        return
    ft.require_root_clients(["setpriv", "sha256sum", "dbus-monitor"])
    with ft.Bus(anyone=True) as bus:
        tree = make_tree(bus.dir)
        test_api(bus, tree)
        test_fhashctl(bus, tree)
        test_budget(bus, tree)
    print("test-daemon-names: ok")


if __name__ == "__main__":
    main()
