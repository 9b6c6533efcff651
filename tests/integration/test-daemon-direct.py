#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-daemon-direct.py: direct connections. Manager.OpenConnection() on the bus returns one end of a
# socketpair with a private D-Bus connection to fhashd on it; the same calls and signals work there
# without dbus-daemon in between. Driven with GLib's GDBus (Gio.DBusConnection on the fd: a client we
# did not write) on a real fhashd and a private dbus-daemon: digests over HashFds/AddFds/Close with
# signals on the direct connection, the Owner it records, who may touch its jobs, bad options,
# closing it mid-job (the job is cancelled, fhashd's fds return to their count), the per-uid limit,
# a client running as nobody keeping its own uid there (HashPaths refused, root's jobs hidden), idle
# exit held off while one is open, SIGTERM telling the owner on it, fhashctl using one by default
# (--no-direct: not) with output equal to --local, and one answered while the bus driver is silent.
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

HERE = os.path.abspath(__file__)
ERR_BUSY = ft.ERR_PREFIX + "Busy"
ERR_NOT_SUPPORTED = "org.freedesktop.DBus.Error.NotSupported"
PEERS_MAX_PER_UID = 16


def open_fd(conn, **kw):
    """OpenConnection() on the bus: the fd of our end."""
    return ft.manager(conn).OpenConnection(ft.options(**kw)).take()


class Direct:
    """A GDBus connection on a direct connection's fd, with FilesHashed/JobFinished collected."""

    def __init__(self, fd):
        from gi.repository import Gio
        sock = Gio.Socket.new_from_fd(fd)  # takes fd
        stream = sock.connection_factory_create_connection()
        self.conn = Gio.DBusConnection.new_sync(stream, None, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT,
                                                None, None)
        # No call without fds first: GDBus sends the first message (often HashFds) right behind
        # BEGIN, which fhashd's gate holds until its sd-bus is past the handshake.
        self.results, self.finished = {}, {}
        self.conn.signal_subscribe(None, ft.MANAGER_IFACE, None, ft.MANAGER_PATH, None,
                                   Gio.DBusSignalFlags.NONE, self._signal)

    def _signal(self, conn, sender, path, iface, name, params):
        v = params.unpack()
        if name == "FilesHashed":
            d = self.results.setdefault(v[0], {})
            for (i, fname, size, digest, error) in v[1]:
                ft.check(i not in d, f"{v[0]}: result {i} twice")
                d[i] = (fname, size, digest, error)
        elif name == "JobFinished":
            ft.check(v[0] not in self.finished, f"{v[0]}: JobFinished twice")
            self.finished[v[0]] = (v[1], v[2], v[3])

    def call(self, path, iface, method, sig, args, reply_sig, fds=()):
        """A method call passing fds (paths or fds) as handles; returns the unpacked reply."""
        from gi.repository import Gio, GLib
        fdlist = Gio.UnixFDList.new()
        handles = []
        for p in fds:
            fd = p if isinstance(p, int) else os.open(p, os.O_RDONLY | os.O_CLOEXEC)
            handles.append(fdlist.append(fd))  # appends a dup
            if not isinstance(p, int):
                os.close(fd)
        args = [handles if a is FDS else a for a in args]
        res, _ = self.conn.call_with_unix_fd_list_sync(None, path, iface, method, GLib.Variant(sig, tuple(args)),
                                                       GLib.VariantType(reply_sig), Gio.DBusCallFlags.NONE,
                                                       30000, fdlist, None)
        return res.unpack()

    def hash_fds(self, paths, algo="sha256", **opts):
        return self.call(ft.MANAGER_PATH, ft.MANAGER_IFACE, "HashFds", "(ahsa{sv})",
                         [FDS, algo, variant_opts(**opts)], "(o)", fds=paths)[0]

    def add_fds(self, job, paths, **opts):
        return self.call(job, ft.JOB_IFACE, "AddFds", "(aha{sv})", [FDS, variant_opts(**opts)], "(u)",
                         fds=paths)[0]

    def prop(self, path, iface, name):
        from gi.repository import GLib
        return self.conn.call_sync(None, path, ft.PROPS_IFACE, "Get", GLib.Variant("(ss)", (iface, name)),
                                   GLib.VariantType("(v)"), 0, 10000, None).unpack()[0]

    def method(self, path, iface, name, sig=None, args=(), reply_sig="()"):
        from gi.repository import GLib
        return self.conn.call_sync(None, path, iface, name, GLib.Variant(sig, tuple(args)) if sig else None,
                                   GLib.VariantType(reply_sig), 0, 10000, None).unpack()

    def expect_error(self, name, fn, *args, **kw):
        from gi.repository import Gio, GLib
        try:
            fn(*args, **kw)
        except GLib.Error as e:
            got = Gio.DBusError.get_remote_error(e)
            ft.check(got == name, f"expected {name}, got {got}: {e.message}")
            return e.message
        ft.fail(f"expected {name}, but the call succeeded")

    def wait(self, jobs, timeout=60):
        ft.JobWatcher.iterate_until(lambda: all(j in self.finished for j in jobs), timeout)
        missing = [j for j in jobs if j not in self.finished]
        ft.check(not missing, f"no JobFinished on the direct connection within {timeout} s for {missing}")

    def close(self):
        if not self.conn.is_closed():
            self.conn.close_sync(None)


FDS = object()  # placeholder for the handle array in Direct.call()


def variant_opts(**kw):
    from gi.repository import GLib
    d = {}
    for k, v in kw.items():
        key = k.replace("_", "-")
        if isinstance(v, bool):
            d[key] = GLib.Variant("b", v)
        elif isinstance(v, int):
            d[key] = GLib.Variant("t", v)
        elif isinstance(v, (list, tuple)):
            d[key] = GLib.Variant("as", list(v))
        else:
            d[key] = GLib.Variant("s", v)
    return d


def test_hash(bus, conn, d, tmp):
    files = ft.make_files(os.path.join(tmp, "hash"), 40, max_size=200000, seed=3)
    want = [ft.sha256_file(p) for p in files]
    unique = conn.get_unique_name()
    dc = Direct(open_fd(conn))
    job = dc.hash_fds(files[:16], names=files[:16], more=True)
    ft.check(dc.add_fds(job, files[16:32], names=files[16:32], more=True) == 16, "AddFds first_index")
    ft.check(dc.add_fds(job, files[32:], names=files[32:], expected=want[32:]) == 32, "last AddFds first_index")
    dc.wait([job])
    ft.check(dc.finished[job] == ("done", len(files), 0), f"JobFinished {dc.finished[job]}")
    res = dc.results[job]
    ft.check(sorted(res) == list(range(len(files))), f"indices {sorted(res)[:5]}...")
    for i, p in enumerate(files):
        ft.check(res[i] == (p, os.path.getsize(p), want[i], ""), f"{i}: {res[i]}")
    owner = dc.prop(job, ft.JOB_IFACE, "Owner")
    ft.check(owner.startswith(unique + "/direct/"), f"Owner {owner!r}, opener {unique}")
    got = dc.method(job, ft.JOB_IFACE, "GetResults", reply_sig="(a(ustss))")[0]
    ft.check([r[3] for r in got] == want, "GetResults on the direct connection")
    # The same job seen from the bus (root may look at it); its signals never went there.
    ft.check(str(ft.job_prop(conn, job, "State")) == "done", "State seen from the bus")
    ft.check(dc.prop(ft.MANAGER_PATH, ft.MANAGER_IFACE, "Version") != "", "Manager properties")
    ft.check(job in dc.method(ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs", reply_sig="(ao)")[0],
             "ListJobs on the direct connection")
    # Every algorithm through it, against the reference tools.
    one = files[5]
    jobs = {a: dc.hash_fds([one], a) for a in ft.ALGORITHMS}
    dc.wait(list(jobs.values()))
    for a, j in jobs.items():
        ft.check(dc.results[j][0][2] == ft.reference_digest(a, one), f"{a} on the direct connection")
    dc.close()
    ft.log("ok: HashFds/AddFds/Close, signals, GetResults, properties and every algorithm on a direct connection")


def test_access(bus, conn, d, tmp):
    f = os.path.join(tmp, "hash", "f00001")
    dc = Direct(open_fd(conn))
    job = dc.hash_fds([f], more=True)
    # The job belongs to the direct connection: the opener's own bus connection may not add to it.
    msg = ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, job).AddFds, ft.fds(f), ft.options())
    ft.check("created" in msg, f"AddFds from the bus: {msg}")
    ft.expect_error(ft.ERR_ACCESS_DENIED, ft.job_iface(conn, job).Close)
    # Nor another direct connection of the same caller.
    dc2 = Direct(open_fd(conn))
    dc2.expect_error(ft.ERR_ACCESS_DENIED, dc2.add_fds, job, [f])
    dc.method(job, ft.JOB_IFACE, "Close")
    dc.wait([job])
    # A direct connection does not hand out more.
    dc2.expect_error(ERR_NOT_SUPPORTED, dc2.method, ft.MANAGER_PATH, ft.MANAGER_IFACE, "OpenConnection",
                     "(a{sv})", [{}], "(h)")
    msg = ft.expect_error(ft.ERR_INVALID_ARGS, ft.manager(conn).OpenConnection, ft.options(bogus=True))
    ft.check("bogus" in msg, f"unknown option message: {msg}")
    # Bad input on the direct connection is answered there, and the connection goes on.
    dc2.expect_error(ft.ERR_INVALID_ARGS, dc2.hash_fds, [f], "nosuch")
    j = dc2.hash_fds([f])
    dc2.wait([j])
    dc.close()
    dc2.close()
    ft.log("ok: only the direct connection may add to its jobs; no OpenConnection on it; bad options refused")


def pipe_job(dc):
    """A job on dc reading a pipe we keep open: it runs until the write end closes."""
    r, w = os.pipe()
    job = dc.hash_fds([r], names=["pipe"], max_size=1 << 40)
    os.close(r)
    return job, w


def test_close_cancels(bus, conn, d, tmp):
    time.sleep(0.3)
    base = d.fd_count()
    dc = Direct(open_fd(conn))
    job, w = pipe_job(dc)
    os.write(w, b"x" * 100000)
    ft.check(ft.wait_for(lambda: str(ft.job_prop(conn, job, "State")) == "running", 10), "pipe job not running")
    ft.check(d.fd_count() > base, "no fds held for the direct connection and its job")
    dc.close()
    ft.check(ft.wait_for(lambda: str(ft.job_prop(conn, job, "State")) == "cancelled", 10),
             f"job {ft.job_prop(conn, job, 'State')} after its direct connection closed")
    ft.check(ft.wait_for(lambda: d.fd_count() == base, 10), f"fhashd fds {d.fd_count()}, {base} before")
    ft.check("Direct connection" in d.log() and "closed" in d.log(), "the close is not logged")
    os.close(w)
    ft.log(f"ok: closing a direct connection cancels its job and fhashd's fds return to {base}")


def test_limit(bus, conn, d, tmp):
    time.sleep(0.2)
    base = d.fd_count()
    held = [open_fd(conn) for _ in range(PEERS_MAX_PER_UID)]
    msg = ft.expect_error(ERR_BUSY, ft.manager(conn).OpenConnection, ft.options())
    ft.check("per uid" in msg, f"limit message: {msg}")
    # Each costs fhashd the same few fds: its socket and the gate's dup of it, the gate's pair towards
    # sd-bus and the gate's dup of sd-bus's end (config.c counts five per connection).
    full = d.fd_count()
    per = (full - base) // PEERS_MAX_PER_UID
    ft.check(per * PEERS_MAX_PER_UID == full - base and 1 <= per <= 5, f"{full - base} fds for {PEERS_MAX_PER_UID} connections")
    # A connection never used and closed frees its place.
    os.close(held.pop())
    ft.check(ft.wait_for(lambda: d.fd_count() == full - per, 10), "closed connection not noticed")
    held.append(open_fd(conn))
    for fd in held:
        os.close(fd)
    ft.check(ft.wait_for(lambda: d.fd_count() == base, 10), f"fds {d.fd_count()} after closing all, {base} before")
    ft.log(f"ok: {PEERS_MAX_PER_UID} direct connections per uid, then Busy; closing one frees its place")


def client_nobody(address, root_job, file):
    """Runs as nobody: the direct connection carries nobody's uid, not fhashd's."""
    import dbus
    ft.glib_mainloop()
    conn = dbus.bus.BusConnection(address)
    dc = Direct(open_fd(conn))
    dc.expect_error(ft.ERR_ACCESS_DENIED, dc.method, ft.MANAGER_PATH, ft.MANAGER_IFACE, "HashPaths",
                    "(assa{sv})", [[file], "sha256", {}], "(o)")
    jobs = dc.method(ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs", reply_sig="(ao)")[0]
    ft.check(root_job not in jobs, "nobody's ListJobs shows root's job")
    dc.expect_error(ft.ERR_ACCESS_DENIED, dc.method, root_job, ft.JOB_IFACE, "Cancel")
    own = dc.hash_fds([file])
    dc.wait([own])
    ft.check(dc.results[own][0][2] == ft.sha256_file(file), "nobody's own job on its direct connection")
    uid = dc.prop(own, ft.JOB_IFACE, "UID")
    ft.check(uid == os.getuid(), f"job UID {uid}, nobody is {os.getuid()}")
    print("ok", flush=True)


def test_nobody(bus, conn, d, tmp):
    dc = Direct(open_fd(conn))
    root_job, w = pipe_job(dc)
    f = os.path.join(tmp, "hash", "f00002")
    p = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", HERE,
                        "--client", bus.address, root_job, f], capture_output=True, text=True, cwd="/", timeout=120)
    ft.check(p.returncode == 0 and p.stdout.strip() == "ok", f"nobody client: {p.stdout}{p.stderr}")
    ft.check(root_job not in dc.finished, "root's job was cancelled by nobody")
    os.close(w)
    dc.wait([root_job])
    dc.close()
    ft.log("ok: a direct connection made by nobody acts as nobody (HashPaths refused, root's jobs hidden)")


def raw_direct(conn):
    """A direct connection spoken by hand on a plain socket: authenticated, then only what we write."""
    import socket
    s = socket.socket(fileno=open_fd(conn))
    s.sendall(b"\0AUTH EXTERNAL %s\r\n" % str(os.getuid()).encode().hex().encode())
    reply = s.recv(4096)
    ft.check(reply.startswith(b"OK "), f"auth reply {reply!r}")
    s.sendall(b"BEGIN\r\n")
    return s


def test_never_reads(bus, conn, d, tmp):
    from gi.repository import Gio, GLib
    # Long names, so that the results (~40 MB of signals) outgrow the socket's buffers (sd-bus asks
    # for 8 MB each way) and queue inside fhashd.
    f = os.path.join(tmp, "n" * 200)
    with open(f, "w") as out:
        out.write("abc")
    time.sleep(0.3)
    base, rss0 = d.fd_count(), ft.vmrss_kib(d.pid)
    s = raw_direct(conn)
    # 40 calls of 2,500 paths: one message of 100,000 would take ASan's realloc minutes to read.
    for serial in range(1, 41):
        msg = Gio.DBusMessage.new_method_call(None, ft.MANAGER_PATH, ft.MANAGER_IFACE, "HashPaths")
        msg.set_body(GLib.Variant("(assa{sv})", ([f] * 2500, "sha256", {})))
        msg.set_serial(serial)
        try:
            s.sendall(msg.to_blob(Gio.DBusCapabilityFlags.NONE))
        except (BrokenPipeError, ConnectionResetError):
            break  # already cut off
    # We never read: fhashd must stop queueing for us, close the connection and cancel the job,
    # and go on serving everyone else.
    ft.check(ft.wait_for(lambda: d.log().count("does not read its messages") == 1, 60),
             f"fhashd did not notice a direct client that never reads:\n{d.log()[-2000:]}")
    jobs = [str(j) for j in ft.manager(conn).ListJobs()]
    ft.check(ft.wait_for(lambda: d.fd_count() == base, 10), f"fhashd fds {d.fd_count()}, {base} before")
    states = [str(ft.job_prop(conn, j, "State")) for j in jobs]
    ft.check("cancelled" in states, f"the never-reading client's job was not cancelled: {states}")
    rss = ft.vmrss_kib(d.pid)
    # Most of the growth is the 40 jobs' 100,000 results (~30 MB), kept while they linger; an
    # unbounded queue would add the ~28 MB of signals on top.
    ft.check_rss(d, rss0, rss, 128 * 1024, "a direct client that never reads")
    import re
    queued = [int(n) for n in re.findall(r"does not read its messages \((\d+) queued\)", d.log())]
    # Checked after each signal; the 40 method replies may sit in the queue too.
    ft.check(len(queued) == 1 and 64 < queued[0] <= 64 + 41, f"cut off at queue lengths {queued}")
    s.close()
    dc = Direct(open_fd(conn))
    j = dc.hash_fds([f])
    dc.wait([j])
    ft.check(dc.results[j][0][2] == ft.sha256_file(f), "a new direct connection after the cut-off")
    dc.close()
    ft.log(f"ok: a direct client that never reads is cut off ({rss0} -> {rss} KiB RSS), its job cancelled, fds back")


def test_undeclared_fds(bus, conn, d, tmp):
    """H3: fds sent with a message whose header declares none (or fewer): sd-bus 252 drops such a
    message and keeps its fds for good. The gate closes them and the connection."""
    import array
    import socket
    from gi.repository import Gio
    time.sleep(0.3)
    base = d.fd_count()
    null = os.open("/dev/null", os.O_RDONLY)
    for declared in (0, 3):
        s = raw_direct(conn)
        ping = Gio.DBusMessage.new_method_call(None, ft.MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping")
        ping.set_serial(1)
        s.sendall(ping.to_blob(Gio.DBusCapabilityFlags.NONE))
        ft.check(len(s.recv(4096)) > 0, "no reply to the first Ping")
        m = Gio.DBusMessage.new_method_call(None, ft.MANAGER_PATH, "org.freedesktop.DBus.Peer", "Ping")
        m.set_serial(2)
        if declared:
            m.set_unix_fd_list(Gio.UnixFDList.new_from_array([os.dup(null) for _ in range(declared)]))
        sent = 0
        try:
            for _ in range(50):
                s.sendmsg([m.to_blob(Gio.DBusCapabilityFlags.UNIX_FD_PASSING)],
                          [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null] * 200))])
                sent += 1
        except OSError:
            pass
        s.settimeout(10)
        try:
            while s.recv(65536):
                pass
        except OSError:
            pass
        s.close()
        ft.check(ft.wait_for(lambda: d.fd_count() <= base, 10),
                 f"UNIX_FDS={declared}, 200 fds sent: fhashd holds {d.fd_count()} fds, {base} before")
        mismatches = [x for x in d.log().splitlines() if "Direct connection" in x and "UNIX_FDS" in x]
        ft.check(len(mismatches) == 1 + (declared > 0),
                 f"the mismatch is not logged once per connection:\n{d.log()[-1000:]}")
    os.close(null)
    ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log(f"ok: messages with fds their header does not declare close the connection; fds back to {base}")


def test_fds_behind_begin(bus, conn, d, tmp):
    """A first call with fds right behind BEGIN, without waiting for any reply (GDBus does this):
    in the same sendmsg as the whole handshake, and in the next one. sd-bus 252 closes a connection
    whose fds come in a read during its handshake; the gate keeps every fd out of sd-bus, so the
    call is served. Fds sent with a handshake line (and no message after BEGIN) close the
    connection."""
    import array
    import socket
    from gi.repository import Gio, GLib
    f = os.path.join(tmp, "behind-begin")
    with open(f, "w") as out:
        out.write("fds behind BEGIN")
    time.sleep(0.3)
    base, fails0 = d.fd_count(), d.log().count("fds during the handshake")
    hello = b"\0AUTH EXTERNAL %s\r\nNEGOTIATE_UNIX_FD\r\n" % str(os.getuid()).encode().hex().encode()
    m = Gio.DBusMessage.new_method_call(None, ft.MANAGER_PATH, ft.MANAGER_IFACE, "HashFds")
    m.set_body(GLib.Variant("(ahsa{sv})", ([0], "sha256", {})))
    m.set_unix_fd_list(Gio.UnixFDList.new_from_array([os.open(f, os.O_RDONLY)]))
    m.set_serial(1)
    call = m.to_blob(Gio.DBusCapabilityFlags.UNIX_FD_PASSING)
    fd = os.open(f, os.O_RDONLY)
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
    for mode in ("one sendmsg", "two sendmsgs") * 10:
        s = socket.socket(fileno=open_fd(conn))
        if mode == "one sendmsg":
            s.sendmsg([hello + b"BEGIN\r\n" + call], anc)
        else:
            s.sendall(hello + b"BEGIN\r\n")
            s.sendmsg([call], anc)
        s.settimeout(10)
        got = b""
        try:
            while b"/job/" not in got:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
        except OSError as e:
            got += str(e).encode()
        s.close()
        ft.check(b"/job/" in got, f"{mode}: no job for a HashFds right behind BEGIN: {got[-300:]!r}\n"
                 f"{d.log()[-1000:]}")
    # The same fds with a handshake line: refused at once, and closed.
    s = socket.socket(fileno=open_fd(conn))
    s.sendmsg([hello], anc)
    s.settimeout(10)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    s.close()
    os.close(fd)
    ft.check(ft.wait_for(lambda: d.log().count("fds during the handshake") == fails0 + 1, 10),
             f"fds with a handshake line were not refused:\n{d.log()[-1000:]}")
    ft.check(ft.wait_for(lambda: d.fd_count() <= base, 10), f"fhashd holds {d.fd_count()} fds, {base} before")
    ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log("ok: a first call with fds right behind BEGIN is served (20 connections); fds with a handshake line refused")


def test_results_never_read(bus, conn, d, tmp):
    """H5: GetResults calls on a direct connection whose replies are never read: cut off after a few
    queued replies, not after a gigabyte."""
    from gi.repository import Gio
    f = os.path.join(tmp, "one-for-results")
    with open(f, "w") as out:
        out.write("results")
    w = ft.JobWatcher(conn)
    names = ["%02d" % i + "r" * 4093 for i in range(16)]
    job = str(ft.manager(conn).HashFds(ft.fds(*[f] * 16), "sha256", ft.options(names=names)))
    w.wait([job])
    time.sleep(0.3)
    rss0, cut0 = ft.vmrss_kib(d.pid), d.log().count("does not read its messages")
    s = raw_direct(conn)
    sent = 0
    for serial in range(1, 3001):  # 3,000 replies of 66 kB: 200 MB if fhashd queued them all
        msg = Gio.DBusMessage.new_method_call(None, job, ft.JOB_IFACE, "GetResults")
        msg.set_serial(serial)
        try:
            s.sendall(msg.to_blob(Gio.DBusCapabilityFlags.NONE))
            sent += 1
        except (BrokenPipeError, ConnectionResetError):
            break
    ft.check(ft.wait_for(lambda: d.log().count("does not read its messages") == cut0 + 1, 30),
             f"fhashd did not cut off a direct client that reads no GetResults reply:\n{d.log()[-1500:]}")
    rss = ft.vmrss_kib(d.pid)
    ft.check_rss(d, rss0, rss, 48 * 1024, "GetResults replies nobody reads")
    s.close()
    ft.check(d.alive(), f"fhashd died:\n{d.log()}")
    ft.log(f"ok: {sent} GetResults sent and never read: cut off, RSS {rss0} -> {rss} KiB")


def test_fhashctl(bus, conn, d, tmp):
    ctl = ft.fhashctl_path()
    files = ft.make_files(os.path.join(tmp, "ctl"), 300, max_size=20000, seed=5)
    local = subprocess.run([ctl, "--local", "hash"] + files, capture_output=True, text=True)
    ft.check(local.returncode == 0, f"--local: {local.stderr}")
    def opened():
        return sum(1 for line in d.log().splitlines() if "Direct connection" in line and "opened" in line)

    before = opened()
    direct = subprocess.run([ctl, "--daemon", "--address", bus.address, "hash"] + files, capture_output=True,
                            text=True)
    ft.check(direct.returncode == 0 and direct.stdout == local.stdout,
             f"fhashctl through a direct connection differs from --local: {direct.stderr}")
    # Logged before OpenConnection's reply, so before fhashctl could pass a single fd.
    ft.check(opened() == before + 1, "fhashctl did not use a direct connection")
    via_bus = subprocess.run([ctl, "--daemon", "--no-direct", "--address", bus.address, "hash"] + files,
                             capture_output=True, text=True)
    ft.check(via_bus.returncode == 0 and via_bus.stdout == local.stdout, f"--no-direct: {via_bus.stderr}")
    ft.check(opened() == before + 1, "--no-direct opened a direct connection")
    ft.log("ok: fhashctl hashes through a direct connection by default (--no-direct: the bus), same output")


def test_driver_silent(bus, conn, d, tmp):
    """fhashd's loop never waits for the bus driver: with a call of a new bus client in fhashd's socket
    (ListJobs: its handler needs the caller's uid, which only the driver can say) and dbus-daemon
    stopped, a direct connection is still answered at once. When fhashd asked the driver and waited
    (up to 5 s), everything waited with it: 2,500 such round trips took 3 s of the loop's 20 under
    LOAD. Once dbus-daemon goes on, the bus client gets its answer."""
    dc = Direct(open_fd(conn))
    try:
        dc.method(ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs", reply_sig="(ao)")
        os.kill(d.pid, signal.SIGSTOP)
        try:
            client = subprocess.Popen(["busctl", f"--address={bus.address}", "--timeout=30", "call", ft.BUS_NAME,
                                       ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs"],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1.0)  # busctl connects and calls; dbus-daemon puts the call in fhashd's socket
            os.kill(bus.pid, signal.SIGSTOP)
        finally:
            os.kill(d.pid, signal.SIGCONT)
        try:
            time.sleep(0.3)  # fhashd reads the call and asks the driver, which does not answer
            t0 = time.monotonic()
            dc.method(ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs", reply_sig="(ao)")
            took = time.monotonic() - t0
        finally:
            os.kill(bus.pid, signal.SIGCONT)
        out, err = client.communicate(timeout=30)
        ft.check(took < 2.0, f"a direct connection waited {took:.1f} s for fhashd while the bus driver was silent")
        ft.check(client.returncode == 0 and out.startswith("ao "),
                 f"the bus client's ListJobs after the driver went on: {client.returncode} {out!r} {err!r}")
        ft.log(f"ok: a direct connection answered in {took * 1000:.0f} ms with the bus driver silent; the bus "
               "client's call went through once it answered")

        # A caller gone before fhashd read its call: the driver's answer is an error, and the bus goes on
        # (a gate left waiting for the uid of a name that no longer exists would stall the bus).
        os.kill(d.pid, signal.SIGSTOP)
        try:
            gone = subprocess.Popen(["busctl", f"--address={bus.address}", "--timeout=30", "call", ft.BUS_NAME,
                                     ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1.0)
            gone.kill()
            gone.wait()
            time.sleep(0.3)  # dbus-daemon sees it go
        finally:
            os.kill(d.pid, signal.SIGCONT)
        after = subprocess.run(["busctl", f"--address={bus.address}", "--timeout=10", "call", ft.BUS_NAME,
                                ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs"], capture_output=True, text=True)
        ft.check(after.returncode == 0 and after.stdout.startswith("ao "),
                 f"a bus call after a caller that left before its call was read: {after.returncode} {after.stderr!r}")
        dc.method(ft.MANAGER_PATH, ft.MANAGER_IFACE, "ListJobs", reply_sig="(ao)")
        ft.check(d.alive(), "fhashd exited after a caller left before its call was read")
        ft.log("ok: a caller gone before its call was read leaves the bus and direct connections served")
    finally:
        dc.close()


def test_idle_and_sigterm(bus, tmp):
    # Idle exit waits while a direct connection is open, and comes once it closes.
    with ft.Daemon(bus, "--workers", "1", "--idle-exit", "1") as d:
        conn = bus.connect()
        fd = open_fd(conn)
        conn.close()
        time.sleep(2.5)
        ft.check(d.alive(), f"fhashd exited on idle with a direct connection open:\n{d.log()}")
        os.close(fd)
        ft.check(ft.wait_for(lambda: not d.alive(), 10), "fhashd did not exit on idle after the close")
        ft.check(d.proc.returncode == 0, f"idle exit status {d.proc.returncode}")
    # SIGTERM: the owner on a direct connection hears "cancelled"; fhashd exits 0.
    with ft.Daemon(bus, "--workers", "1") as d:
        conn = bus.connect()
        dc = Direct(open_fd(conn))
        job, w = pipe_job(dc)
        os.write(w, b"y" * 4096)
        ft.check(ft.wait_for(lambda: str(ft.job_prop(conn, job, "State")) == "running", 10), "not running")
        d.proc.send_signal(ft.signal.SIGTERM)
        dc.wait([job], timeout=15)
        ft.check(dc.finished[job][0] == "cancelled", f"SIGTERM: JobFinished {dc.finished[job]}")
        ft.check(ft.wait_for(lambda: not d.alive(), 10) and d.proc.returncode == 0,
                 f"fhashd exit {d.proc.returncode} after SIGTERM:\n{d.log()}")
        ft.check(ft.JobWatcher.iterate_until(lambda: dc.conn.is_closed(), 5), "direct connection open after exit")
        os.close(w)
        dc.close()
        conn.close()
    ft.log("ok: idle exit waits for open direct connections; SIGTERM reaches the owner on one")
    # fhashd killed while fhashctl waits on a direct connection: no NameOwnerChanged comes there, only
    # the socket's end, and fhashctl must say so and fail, not hang.
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    d = ft.Daemon(bus, "--workers", "1").start()
    ctl = subprocess.Popen([ft.fhashctl_path(), "--daemon", "--address", bus.address, "hash", fifo],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    w = os.open(fifo, os.O_WRONLY)  # returns once fhashctl opened it
    os.write(w, b"z" * 4096)
    ft.check(ft.wait_for(lambda: "Job 1:" in d.log(), 10), f"fhashctl's job did not start:\n{d.log()}")
    d.proc.kill()
    d.proc.wait()
    d.logfile.close()
    try:
        out, errout = ctl.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        ctl.kill()
        ft.fail("fhashctl hung after fhashd was killed under its direct connection")
    finally:
        os.close(w)
    ft.check(ctl.returncode != 0 and "went away" in errout, f"fhashctl exit {ctl.returncode}: {errout!r}")
    ft.log("ok: fhashd killed under a direct connection: fhashctl says it went away and fails")


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--client":
        client_nobody(*sys.argv[2:])
        return
    ft.require_root_clients()
    with ft.Bus(anyone=True) as bus:
        tmp = ft.files_dir(bus)
        with ft.Daemon(bus, "--workers", "2") as d:
            conn = bus.connect()
            test_hash(bus, conn, d, tmp)
            test_access(bus, conn, d, tmp)
            test_close_cancels(bus, conn, d, tmp)
            test_limit(bus, conn, d, tmp)
            test_nobody(bus, conn, d, tmp)
            test_never_reads(bus, conn, d, tmp)
            test_results_never_read(bus, conn, d, tmp)
            test_undeclared_fds(bus, conn, d, tmp)
            test_fds_behind_begin(bus, conn, d, tmp)
            test_fhashctl(bus, conn, d, tmp)
            test_driver_silent(bus, conn, d, tmp)
            conn.close()
        test_idle_and_sigterm(bus, tmp)


if __name__ == "__main__":
    main()
