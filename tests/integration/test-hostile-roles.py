# SPDX-License-Identifier: MIT
"""test-hostile-roles.py: the processes of test-hostile.py (attackers, the root victim, FUSE servers,
the load test's clients) and the Gio client they share.

Each role runs in its own process, as the user test-hostile.py chose (nobody, uid 1 or root):
    /usr/bin/python3 test-hostile-roles.py ROLE ARGS...
It talks to the test on stdout, one line per event: "READY ...", "INFO {json}", "RESULT {json}".
test-hostile.py imports this file too, for the client (Conn) and the constants.
"""
import array
import ctypes
import hashlib
import json
import os
import random
import socket
import struct
import sys
import time

from gi.repository import Gio, GLib

NAME = "org.fhash.Hasher1"
MP = "/org/fhash/Hasher1"
MI = "org.fhash.Hasher1.Manager"
JI = "org.fhash.Hasher1.Job"
PI = "org.freedesktop.DBus.Properties"
PEER = "org.freedesktop.DBus.Peer"
ADDR = os.environ.get("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/run/dbus/system_bus_socket")
SOCKET_PATH = ADDR.split("path=", 1)[1].split(",")[0]
FDS = object()  # stands for the handle list in Conn.call() arguments


def emit(kind, payload=None):
    if payload is None:
        print(kind, flush=True)
    elif isinstance(payload, str):
        print(f"{kind} {payload}", flush=True)
    else:
        print(f"{kind} {json.dumps(payload)}", flush=True)


def err_name(e):
    return Gio.DBusError.get_remote_error(e) or f"(local) {e.message[:80]}"


def opts(**kw):
    """a{sv} from keyword arguments: max_size -> "max-size"; values typed as fhashd expects."""
    d = {}
    for k, v in kw.items():
        k = k.replace("_", "-")
        if isinstance(v, GLib.Variant):
            d[k] = v
        elif isinstance(v, bool):
            d[k] = GLib.Variant("b", v)
        elif isinstance(v, int):
            d[k] = GLib.Variant("t", v)
        elif isinstance(v, str):
            d[k] = GLib.Variant("s", v)
        else:
            d[k] = GLib.Variant("as", list(v))
    return d


def iterate_until(cond, timeout):
    ctx = GLib.MainContext.default()
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        src = GLib.timeout_source_new(20)
        src.set_callback(lambda *a: False)
        src.attach(ctx)
        ctx.iteration(True)
        src.destroy()
    return cond()


class Conn:
    """A Gio connection to fhashd: on the system bus, or a direct one from OpenConnection()."""

    def __init__(self, c, bus=True):
        self.c = c
        self.dest = NAME if bus else None
        self.results = {}   # job -> {index: (name, size, digest, error)}
        self.finished = {}  # job -> (result, ok, failed)
        self.finished_at = {}
        c.signal_subscribe(NAME if bus else None, MI, None, MP, None, Gio.DBusSignalFlags.NONE, self._sig)

    @classmethod
    def system(cls):
        c = Gio.DBusConnection.new_for_address_sync(
            ADDR, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
            None, None)
        c.set_exit_on_close(False)
        return cls(c, True)

    @classmethod
    def direct(cls, fd):
        sock = Gio.Socket.new_from_fd(fd)
        stream = sock.connection_factory_create_connection()
        c = Gio.DBusConnection.new_sync(stream, None, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT, None, None)
        c.set_exit_on_close(False)
        return cls(c, False)

    def _sig(self, conn, sender, path, iface, name, params):
        v = params.unpack()
        if name == "FilesHashed":
            d = self.results.setdefault(v[0], {})
            for (i, fname, size, digest, error) in v[1]:
                d[i] = (fname, size, digest, error)
        elif name == "JobFinished":
            self.finished[v[0]] = (v[1], v[2], v[3])
            self.finished_at[v[0]] = time.monotonic()

    def call(self, path, iface, method, sig=None, args=(), reply_sig=None, fds=(), timeout=30000, dest=None):
        fdlist = None
        if fds:
            fdlist = Gio.UnixFDList.new()
            handles = [fdlist.append(fd) for fd in fds]
            if not isinstance(args, GLib.Variant):
                args = [handles if a is FDS else a for a in args]
        if isinstance(args, GLib.Variant):  # a body built by the caller (what a tuple cannot say)
            body = args
        else:
            body = GLib.Variant(sig, tuple(args)) if sig else None
        res, outfds = self.c.call_with_unix_fd_list_sync(dest or self.dest, path, iface, method, body,
                                                          GLib.VariantType(reply_sig) if reply_sig else None,
                                                          Gio.DBusCallFlags.NONE, timeout, fdlist, None)
        v = res.unpack() if res is not None else None
        if outfds is not None and outfds.get_length():
            return v, outfds.steal_fds()
        return v

    def hash_fds(self, fds, algo="sha256", timeout=30000, **kw):
        return self.call(MP, MI, "HashFds", "(ahsa{sv})", [FDS, algo, opts(**kw)], "(o)", fds=fds,
                         timeout=timeout)[0]

    def hash_paths(self, paths, algo="sha256", timeout=30000, **kw):
        return self.call(MP, MI, "HashPaths", "(assa{sv})", [paths, algo, opts(**kw)], "(o)", timeout=timeout)[0]

    def add_fds(self, job, fds, timeout=30000, **kw):
        return self.call(job, JI, "AddFds", "(aha{sv})", [FDS, opts(**kw)], "(u)", fds=fds, timeout=timeout)[0]

    def close_job(self, job):
        return self.call(job, JI, "Close")

    def cancel(self, job):
        return self.call(job, JI, "Cancel")

    def get_results(self, job, timeout=30000):
        return self.call(job, JI, "GetResults", reply_sig="(a(ustss))", timeout=timeout)[0]

    def prop(self, path, iface, name, timeout=30000):
        return self.call(path, PI, "Get", "(ss)", [iface, name], "(v)", timeout=timeout)[0]

    def ping(self, timeout=2000):
        self.call(MP, PEER, "Ping", timeout=timeout)

    def bus_driver(self, method, sig, args, reply_sig):
        return self.call("/org/freedesktop/DBus", "org.freedesktop.DBus", method, sig, args, reply_sig,
                         timeout=2000, dest="org.freedesktop.DBus")[0]

    def open_connection(self):
        v, fds = self.call(MP, MI, "OpenConnection", "(a{sv})", [{}], "(h)")
        return fds[v[0]]

    def wait(self, jobs, timeout=60):
        return iterate_until(lambda: all(j in self.finished for j in jobs), timeout)

    def close(self):
        if not self.c.is_closed():
            self.c.close_sync(None)


def try_call(fn):
    """(value, None) or (None, error name) for a D-Bus call; the time it took."""
    t = time.monotonic()
    try:
        return fn(), None, time.monotonic() - t
    except GLib.Error as e:
        return None, f"{err_name(e)}: {e.message[:160]}", time.monotonic() - t


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256_file(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                return h.hexdigest()
            h.update(b)


# ---- raw sockets: what a hostile client sends without a D-Bus library in the way ----

def raw_auth(s, fds=True):
    s.sendall(b"\0AUTH EXTERNAL %s\r\n" % str(os.geteuid()).encode().hex().encode())
    if not s.recv(4096).startswith(b"OK "):
        raise RuntimeError("authentication refused")
    if fds:
        s.sendall(b"NEGOTIATE_UNIX_FD\r\n")
        s.recv(4096)
    s.sendall(b"BEGIN\r\n")


def raw_direct(conn, fds=True):
    s = socket.socket(fileno=conn.open_connection())
    raw_auth(s, fds)
    return s


def raw_bus():
    s = socket.socket(socket.AF_UNIX)
    s.connect(SOCKET_PATH)
    raw_auth(s)
    m = Gio.DBusMessage.new_method_call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                        "Hello")
    m.set_serial(1)
    s.sendall(m.to_blob(Gio.DBusCapabilityFlags.NONE))
    return s


def blob(dest, path, iface, member, serial, sig=None, args=None, nfds=0):
    m = Gio.DBusMessage.new_method_call(dest, path, iface, member)
    m.set_serial(serial)
    if sig:
        m.set_body(GLib.Variant(sig, args))
    if nfds:
        fl = Gio.UnixFDList.new()
        for _ in range(nfds):
            fl.append(0)
        m.set_unix_fd_list(fl)
    return m.to_blob(Gio.DBusCapabilityFlags.UNIX_FD_PASSING)


def send_fds(s, data, fds):
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    s.sendmsg([data], anc)


# ---- roles ----

def role_victim(args):
    """Root's files: one HashFds per file, all at once; how long until each JobFinished."""
    wait = float(args[0])
    paths = args[1:]
    c = Conn.system()
    jobs = {}
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        t = time.monotonic()
        try:
            jobs[c.hash_fds([fd], timeout=int(wait * 1000))] = (p, t)
        except GLib.Error as e:
            jobs[f"error:{p}"] = (p, t, err_name(e))
        os.close(fd)
    c.wait([j for j in jobs if not j.startswith("error:")], wait)
    out = {}
    for j, v in jobs.items():
        name = os.path.basename(v[0])
        if j.startswith("error:"):
            out[name] = {"latency": None, "error": v[2]}
        elif j in c.finished:
            r = c.results.get(j, {}).get(0)
            ok = r is not None and r[2] == sha256_file(v[0])
            out[name] = {"latency": round(c.finished_at[j] - v[1], 3), "result": c.finished[j][0],
                         "digest_ok": ok, "error": r[3] if r else "no result"}
        else:
            out[name] = {"latency": None, "error": f"not finished after {wait} s"}
            try:
                c.cancel(j)
            except GLib.Error:
                pass
    emit("RESULT", out)


def role_victim3(args):
    """Root: one HashFds call carrying three fds (a multi-fd message, as fhashctl sends)."""
    c = Conn.system()
    fds = [os.open(args[0], os.O_RDONLY) for _ in range(3)]
    j, e, dt = try_call(lambda: c.hash_fds(fds, timeout=10000))
    ok = c.wait([j], 5) if j else False
    emit("RESULT", {"call": e or "ok", "seconds": round(dt, 3), "finished": ok})


def role_h1(args):
    """nobody: the worst-case array of each Hash call: N entries where at most 1 may be."""
    n = int(args[0])
    c = Conn.system()
    mfd = os.memfd_create("h1")
    os.write(mfd, b"h1")
    empties = GLib.Variant("as", [""] * n)
    job = c.hash_fds([mfd], more=True)
    calls = [
        ("HashFds names", lambda: c.call(MP, MI, "HashFds", "(ahsa{sv})", [FDS, "sha256", {"names": empties}],
                                         "(o)", fds=[mfd], timeout=600000)),
        ("HashFds expected", lambda: c.call(MP, MI, "HashFds", "(ahsa{sv})",
                                            [FDS, "sha256", {"expected": empties}], "(o)", fds=[mfd],
                                            timeout=600000)),
        ("AddFds names", lambda: c.call(job, JI, "AddFds", "(aha{sv})", [FDS, {"names": empties}], "(u)",
                                        fds=[mfd], timeout=600000)),
    ]
    # The other unbounded arrays of these calls: the fd handles and the options.
    handles = GLib.Variant("ah", [0] * (4 * n))
    entry = GLib.Variant.new_dict_entry(GLib.Variant("s", "dontcache"), GLib.Variant("v", GLib.Variant("b", True)))
    repeated = GLib.Variant.new_array(GLib.VariantType("{sv}"), [entry] * (2 * n))
    s256, no_opts = GLib.Variant("s", "sha256"), GLib.Variant("a{sv}", {})
    calls += [
        ("HashFds fds", lambda: c.call(MP, MI, "HashFds", None, GLib.Variant.new_tuple(handles, s256, no_opts), "(o)",
                                       fds=[mfd], timeout=600000)),
        # The same 10 MB body to a method fhashd does not have (sd-bus answers UnknownMethod without
        # reading the body): what carrying the message costs (dbus-daemon validates it whole, then it
        # is queued before any later message to fhashd, Pings included), against which the call with
        # it is judged.
        ("bus control", lambda: c.call(MP, MI, "NoSuchMethod", None,
                                       GLib.Variant.new_tuple(GLib.Variant("ah", [0]), s256, repeated), None,
                                       fds=[mfd], timeout=600000)),
        ("HashFds options", lambda: c.call(MP, MI, "HashFds", None,
                                           GLib.Variant.new_tuple(GLib.Variant("ah", [0]), s256, repeated), "(o)",
                                           fds=[mfd], timeout=600000)),
    ]
    for name, fn in calls:
        emit("CALL", name)
        _, e, dt = try_call(fn)
        emit("DONE", {"call": name, "seconds": round(dt, 3), "error": e})
    emit("RESULT", "end")


def role_hashpaths_many(args):
    """root: HashPaths with one path more than MaxPathsPerCall allows."""
    n = int(args[0])
    c = Conn.system()
    # The body is built before the clock starts: PyGObject takes seconds to convert 100,001 strings.
    body = GLib.Variant.new_tuple(GLib.Variant("as", ["/nonexistent"] * n), GLib.Variant("s", "sha256"),
                                  GLib.Variant("a{sv}", {}))
    emit("CALL", "HashPaths paths")
    _, e, dt = try_call(lambda: c.call(MP, MI, "HashPaths", None, body, "(o)", timeout=600000))
    emit("DONE", {"call": "HashPaths paths", "seconds": round(dt, 3), "error": e})


def biggest_names(make_job, sizes):
    """Tries names of each size in turn (longest first); returns (size, job, error of refused sizes)."""
    refused = {}
    for size in sizes:
        j, e, _ = try_call(lambda: make_job(size))
        if j:
            return size, j, refused
        refused[size] = e
    return None, None, refused


def role_bigreply(args):
    """nobody: a job whose GetResults reply would pass the system bus's 32 MiB message limit."""
    via, f = args[0], args[1]
    c = Conn.system()
    fds = [os.open(f, os.O_RDONLY) for _ in range(16)]
    sizes = [int(x) for x in args[2].split(",")]
    info = {"via": via}
    if via == "direct":
        d = Conn.direct(c.open_connection())
        size, j, refused = biggest_names(lambda s: d.hash_fds(fds, names=[("n%02d" % i) + "A" * (s - 3)
                                                                           for i in range(16)]), sizes)
        info.update(name_len=size, refused=refused)
        if j:
            d.wait([j], 20)
    else:
        size, j, refused = biggest_names(lambda s: c.hash_fds(fds, more=True, names=[("n%02d" % i) + "A" * (s - 3)
                                                                                    for i in range(16)]), sizes)
        info.update(name_len=size, refused=refused)
        if j:
            # Inputs with names until the reply would be ~40 MiB or fhashd refuses more.
            added, err = 16, None
            while added * size < (40 << 20):
                _, err, _ = try_call(lambda: c.add_fds(j, fds, more=True, names=[("m%05d" % (added + i)) + "B" * (size - 6)
                                                                                 for i in range(16)]))
                if err:
                    break
                added += 16
            info.update(inputs=added, add_error=err)
            try_call(lambda: c.close_job(j))
            c.wait([j], 30)
    info["name_bytes"] = (info.get("inputs", 16)) * (size or 0)
    if j:
        r, e, dt = try_call(lambda: c.get_results(j, timeout=30000))
        info["get_results"] = e or f"ok: {len(r)} results, {sum(len(x[1]) for x in r)} bytes of names"
        info["get_results_seconds"] = round(dt, 2)
    emit("RESULT", info)


def role_fdfill(args):
    """nobody: inputs parked behind a silent pipe (open job, direct connection) until fhashd refuses."""
    max_calls, hold = int(args[0]), float(args[1])
    c = Conn.system()
    d = Conn.direct(c.open_connection())
    r, w = os.pipe()
    n, errs, first = 0, {}, {}
    t = time.monotonic()
    j, e, _ = try_call(lambda: d.hash_fds([r] * 16, max_size=1 << 40, more=True))
    if j:
        n = 16
        for size in (16, 8, 4, 2, 1):
            for i in range(max_calls if size == 16 else 20):
                _, e, _ = try_call(lambda: d.add_fds(j, [r] * size, more=True))
                if e:
                    k = e.split(":")[0]
                    errs[k] = errs.get(k, 0) + 1
                    first.setdefault(k, e)
                    if errs[k] > 20 or size < 16:
                        break
                else:
                    n += size
    else:
        first["HashFds"] = e
    emit("READY", {"inputs": n, "seconds": round(time.monotonic() - t, 2), "errors": errs, "first": first})
    iterate_until(lambda: False, hold)
    d.close()


def role_fdleak(args):
    """nobody: messages on a direct connection whose header declares no fds, with fds attached."""
    n_msgs, per = int(args[0]), int(args[1])
    c = Conn.system()
    f = os.open("/dev/null", os.O_RDONLY)
    s = raw_direct(c)
    # One answered call first: fhashd is past the handshake (fds that arrive with it end the
    # connection instead), so every fd below reaches the message reader.
    s.sendall(blob(None, MP, PEER, "Ping", 1))
    s.recv(4096)
    b = blob(None, MP, PEER, "Ping", 2)
    sent = 0
    try:
        for _ in range(n_msgs):
            send_fds(s, b, [f] * per)
            sent += 1
    except OSError as e:
        emit("INFO", {"send": str(e)})
    time.sleep(1)
    s.close()
    emit("RESULT", {"messages": sent, "fds_each": per})


def role_pipehog(args):
    """nobody: N silent pipes (with max-size), 16 per HashFds; holds them until killed."""
    n, hold = int(args[0]), float(args[1])
    c = Conn.system()
    pipes = [os.pipe() for _ in range(n)]
    jobs, errs = [], []
    for k in range(0, n, 16):
        j, e, _ = try_call(lambda: c.hash_fds([r for r, _ in pipes[k:k + 16]], max_size=1 << 40))
        jobs.append(j) if j else errs.append(e)
    emit("READY", {"jobs": len(jobs), "errors": errs})
    iterate_until(lambda: False, hold)


def role_zero(args):
    """nobody: N /dev/zero streams with max-size 2^64-1, 16 per HashFds."""
    n, hold = int(args[0]), float(args[1])
    c = Conn.system()
    jobs, errs = [], []
    for k in range(0, n, 16):
        fds = [os.open("/dev/zero", os.O_RDONLY) for _ in range(min(16, n - k))]
        j, e, _ = try_call(lambda: c.hash_fds(fds, "sha512", max_size=(1 << 64) - 1))
        jobs.append(j) if j else errs.append(e)
        for fd in fds:
            os.close(fd)
    emit("READY", {"jobs": len(jobs), "errors": errs})
    iterate_until(lambda: False, hold)
    emit("RESULT", {"finished": {j: list(c.finished[j]) for j in jobs if j in c.finished},
                    "errors": sorted({v[3].split(":")[0] for j in jobs for v in c.results.get(j, {}).values()})})


def role_stall(args):
    """nobody: N silent pipes it never writes nor closes; waits for fhashd to end them."""
    n, wait = int(args[0]), float(args[1])
    c = Conn.system()
    pipes = [os.pipe() for _ in range(n)]
    t = time.monotonic()
    j = c.hash_fds([r for r, _ in pipes], max_size=1 << 40)
    emit("READY")
    done = c.wait([j], wait)
    emit("RESULT", {"finished": done, "seconds": round(time.monotonic() - t, 2),
                    "job": list(c.finished.get(j, ())),
                    "errors": sorted({v[3] for v in c.results.get(j, {}).values()})})


def role_noread(args):
    """nobody: many GetResults calls for a job with long names on a direct connection; reads nothing."""
    f, sizes, target, hold = args[0], [int(x) for x in args[1].split(",")], int(args[2]), float(args[3])
    c = Conn.system()
    fds = [os.open(f, os.O_RDONLY) for _ in range(16)]
    size, j, refused = biggest_names(lambda s: c.hash_fds(fds, names=["N%02d" % i + "x" * (s - 3)
                                                                      for i in range(16)]), sizes)
    if not j:
        emit("READY", {"error": refused})
        return
    c.wait([j], 20)
    reply = 16 * size
    calls = max(64, min(20000, target // reply))
    s = raw_direct(c, fds=False)
    b = [blob(None, j, JI, "GetResults", k + 1) for k in range(2)]
    sent, err = 0, None
    s.settimeout(5)
    try:
        for k in range(calls):
            m = Gio.DBusMessage.new_method_call(None, j, JI, "GetResults")
            m.set_serial(k + 1)
            s.sendall(m.to_blob(Gio.DBusCapabilityFlags.NONE))
            sent += 1
    except OSError as e:
        err = str(e)
    del b
    emit("READY", {"name_len": size, "refused": refused, "calls": sent, "reply_bytes": reply,
                   "send_error": err})
    # Cut off? A closed connection reads as EOF once the queued replies are drained... by nobody.
    time.sleep(hold)
    s.setblocking(False)
    eof = False
    try:
        while True:
            d = s.recv(1 << 20)
            if not d:
                eof = True
                break
    except BlockingIOError:
        pass
    except OSError:
        eof = True
    emit("RESULT", {"cut_off": eof})
    s.close()


def role_noread_bus(args):
    """nobody: a raw bus connection that asks for jobs with the longest names fhashd accepts and
    never reads a byte: FilesHashed and JobFinished pile up for it."""
    f, sizes, n, hold = args[0], [int(x) for x in args[1].split(",")], int(args[2]), float(args[3])
    c = Conn.system()
    fd = os.open(f, os.O_RDONLY)
    size, j, refused = biggest_names(lambda s: c.hash_fds([fd], names=["p" * s]), sizes)
    if not j:
        emit("READY", {"error": refused})
        return
    s = raw_bus()
    sent = 0
    try:
        for i in range(n):
            b = blob(NAME, MP, MI, "HashFds", i + 2, "(ahsa{sv})",
                     ([0] * 16, "sha256", {"names": GLib.Variant("as", ["n" * size] * 16)}), nfds=1)
            send_fds(s, b, [fd])
            sent += 1
    except OSError as e:
        emit("INFO", {"send": str(e)})
    emit("READY", {"name_len": size, "refused": refused, "jobs": sent, "result_bytes": sent * 16 * size})
    time.sleep(hold)
    s.close()


def role_parts(args):
    """nobody: an open job with many parts (one fd per AddFds); the last ones wait behind a silent
    pipe; then the pipe ends and they all finish at once."""
    f, n_fast, n_parked = args[0], int(args[1]), int(args[2])
    c = Conn.system()
    d = Conn.direct(c.open_connection())
    r, w = os.pipe()
    fd = os.open(f, os.O_RDONLY)
    j = d.hash_fds([fd], more=True, max_size=1 << 40)
    t = time.monotonic()
    fast = parked = busy = 0
    errs = {}

    def add(x):
        nonlocal busy
        for _ in range(200):
            _, e, _ = try_call(lambda: d.add_fds(j, [x], more=True))
            if not e:
                return True
            k = e.split(":")[0]
            errs[k] = errs.get(k, 0) + 1
            if not k.endswith("Busy"):
                return False
            busy += 1
            iterate_until(lambda: False, 0.01)
        return False
    first_half = None
    for i in range(n_fast):
        if not add(fd):
            break
        fast += 1
        if i == 999:
            first_half = time.monotonic() - t
        if i % 500 == 0:
            iterate_until(lambda: False, 0.001)
    t_fast = time.monotonic() - t
    t2 = time.monotonic()
    for i in range(n_parked):
        if not add(r):
            break
        parked += 1
    last = time.monotonic() - t2
    try_call(lambda: d.close_job(j))
    emit("READY", {"fast": fast, "parked": parked, "busy_retries": busy, "errors": errs,
                   "seconds_fast": round(t_fast, 2), "seconds_first_1000": round(first_half or 0, 2),
                   "seconds_parked": round(last, 2)})
    sys.stdin.readline()
    os.close(w)
    t = time.monotonic()
    emit("RELEASED")
    ok = d.wait([j], 120)
    emit("RESULT", {"finished": ok, "job": list(d.finished.get(j, ())),
                    "seconds_after_release": round(time.monotonic() - t, 2)})


def role_linger(args):
    """nobody: many short jobs with long names whose finished objects linger (KeepFinishedSec)."""
    f, sizes, seconds = args[0], [int(x) for x in args[1].split(",")], float(args[2])
    c = Conn.system()
    d = Conn.direct(c.open_connection())
    fd = os.open(f, os.O_RDONLY)
    size, j, refused = biggest_names(lambda s: d.hash_fds([fd] * 16, names=["x" * s] * 16), sizes)
    n, errs = (1 if j else 0), {}
    t = time.monotonic()
    while j and time.monotonic() - t < seconds:
        _, e, _ = try_call(lambda: d.hash_fds([fd] * 16, names=["x" * size] * 16))
        if e:
            k = e.split(":")[0]
            errs[k] = errs.get(k, 0) + 1
            errs.setdefault("first " + k, e)
            if errs[k] >= 20:
                break
            iterate_until(lambda: False, 0.05)
        else:
            n += 1
        if n % 20 == 0:
            iterate_until(lambda: False, 0.001)
    emit("READY", {"name_len": size, "refused": refused, "jobs": n, "errors": errs,
                   "name_bytes": n * 16 * (size or 0), "seconds": round(time.monotonic() - t, 1)})
    sys.stdin.readline()
    d.close()
    c.close()
    emit("RESULT", "closed")


def role_again(args):
    """nobody: one more job with names of the given length (is the uid's budget free again?)."""
    f, size = args[0], int(args[1])
    c = Conn.system()
    fd = os.open(f, os.O_RDONLY)
    j, e, _ = try_call(lambda: c.hash_fds([fd] * 16, names=["y" * size] * 16))
    emit("RESULT", {"error": e, "job": j})


def role_fuse_server(args):
    """A FUSE file system speaking the kernel protocol, with one 16 MiB file "f".
    args: MNT MODE [user_id] [allow_other 0|1]; env USERNS=1: mount it in the caller's own user and
    mount namespace (as any user may on Debian); SENDFD=n: a child opens f and passes the fd on
    socket n. Modes: ok; hang-getattr=N (answer N GETATTRs of f, then none); hang-flush-foreign
    (never answer a FLUSH from anyone but the server's own user, and dbus-daemon)."""
    mnt, mode = args[0], args[1]
    user_id = int(args[2]) if len(args) > 2 else 65534
    allow_other = len(args) <= 3 or args[3] == "1"
    size = 16 << 20
    libc = ctypes.CDLL(None, use_errno=True)
    userns = bool(os.environ.get("USERNS"))
    if userns:
        uid, gid = os.getuid(), os.getgid()
        if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
            emit("ERROR", f"unshare: {os.strerror(ctypes.get_errno())}")
            return
        open("/proc/self/uid_map", "w").write(f"0 {uid} 1")
        open("/proc/self/setgroups", "w").write("deny")
        open("/proc/self/gid_map", "w").write(f"0 {gid} 1")
        libc.mount(None, b"/", None, 0x4000 | 0x40000, None)  # MS_REC | MS_PRIVATE
        user_id, allow_other = 0, False
    try:
        dev = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        emit("ERROR", f"/dev/fuse: {e}")
        return
    o = f"fd={dev},rootmode=40000,user_id={user_id},group_id={user_id}" + (",allow_other" if allow_other else "")
    if libc.mount(b"hostile", mnt.encode(), b"fuse.hostile", 6, o.encode()) != 0:  # MS_NOSUID | MS_NODEV
        emit("ERROR", f"mount: {os.strerror(ctypes.get_errno())}")
        return
    if not userns and os.getuid() == 0:
        os.setresgid(65534, 65534, 65534)
        os.setgroups([])
        os.setresuid(65534, 65534, 65534)
    if os.environ.get("SENDFD"):
        if os.fork() == 0:
            fd = os.open(os.path.join(mnt, "f"), os.O_RDONLY)
            send_fds(socket.socket(fileno=int(os.environ["SENDFD"])), b"x", [fd])
            os._exit(0)
    now = int(time.time())
    content = bytes(range(256)) * (size // 256)
    getattrs = 0
    hang_from = int(mode.split("=")[1]) if mode.startswith("hang-getattr=") else None
    held = []  # requests left unanswered, kept so that nothing answers them by accident

    def attr(node):
        m, sz, nlink = (0o40755, 0, 2) if node == 1 else (0o100644, size, 1)
        return struct.pack("<QQQQQQIIIIIIIIII", node, sz, (sz + 511) // 512, now, now, now, 0, 0, 0,
                           m, nlink, 0, 0, 0, 4096, 0)

    def reply(unique, err=0, body=b""):
        try:
            os.write(dev, struct.pack("<IiQ", 16 + len(body), -err if err else 0, unique) + body)
        except OSError:
            pass

    def comm(pid):
        try:
            with open(f"/proc/{pid}/comm") as fh:
                return fh.read().strip()
        except OSError:
            return "?"

    emit("READY", {"pid": os.getpid()})
    while True:
        try:
            req = os.read(dev, 1 << 20 | 4096)
        except OSError as e:
            if e.errno in (4, 2):
                continue
            return
        ln, op, unique, node, uid, gid, pid = struct.unpack_from("<IIQQIII", req)
        arg = req[40:ln]
        if op == 26:  # INIT
            major, minor, ra, flags = struct.unpack_from("<IIII", arg)
            reply(unique, body=struct.pack("<IIIIHHIIHHII", 7, 31, ra, 0, 16, 12, 131072, 1, 32, 0, 0, 0) + b"\0" * 24)
        elif op == 1:  # LOOKUP
            if node == 1 and arg.split(b"\0")[0] == b"f":
                reply(unique, body=struct.pack("<QQQQII", 2, 0, 0, 0, 0, 0) + attr(2))  # nothing cached
            else:
                reply(unique, 2)
        elif op == 3:  # GETATTR
            if node == 2:
                getattrs += 1
                if hang_from is not None and getattrs > hang_from:
                    held.append(unique)
                    continue
            reply(unique, body=struct.pack("<QII", 0, 0, 0) + attr(node))
        elif op in (14, 27):  # OPEN, OPENDIR
            reply(unique, body=struct.pack("<QIi", node, 0, 0))
        elif op == 15:  # READ
            fh, off, sz = struct.unpack_from("<QQI", arg)
            reply(unique, body=content[off:off + sz])
        elif op == 25 and mode == "hang-flush-foreign" and uid != 0 and comm(pid) != "dbus-daemon":
            held.append(unique)  # FLUSH from someone else: never answered
        elif op in (18, 25, 29):  # RELEASE, FLUSH, RELEASEDIR
            reply(unique)
        elif op in (2, 42, 36):  # FORGET, BATCH_FORGET, INTERRUPT
            pass
        elif op == 38:  # DESTROY
            reply(unique)
            return
        else:
            reply(unique, 38)


def role_userns_fuse(args):
    """nobody, with no help from root: a FUSE mount in its own user namespace whose server never
    answers fhashd's FLUSH; its file's fd goes to fhashd (direct: in HashFds on a direct connection;
    bus-extra: attached unreferenced to a HashFds on the bus beside an ordinary fd)."""
    import subprocess
    via, hold, workdir, good = args[0], float(args[1]), args[2], args[3]
    mnt = os.path.join(workdir, f"m{os.getpid()}")
    os.makedirs(mnt, exist_ok=True)
    a, b = socket.socketpair()
    env = dict(os.environ, USERNS="1", SENDFD=str(b.fileno()))
    srv = subprocess.Popen(["/usr/bin/python3", os.path.abspath(__file__), "fuse-server", mnt, "hang-flush-foreign"],
                           env=env, pass_fds=[b.fileno()], stdout=subprocess.PIPE, text=True)
    line = srv.stdout.readline().strip()
    emit("SERVER", {"pid": srv.pid, "said": line})
    if not line.startswith("READY"):
        emit("RESULT", {"error": line or "the FUSE server died"})
        return
    msg, anc, _, _ = a.recvmsg(1, socket.CMSG_LEN(4))
    fd = array.array("i", anc[0][2])[0]
    c = Conn.system()
    if via == "bus-extra":
        gfd = os.open(good, os.O_RDONLY)
        fl = Gio.UnixFDList.new()
        h = fl.append(gfd)
        fl.append(fd)
        fn = (lambda: c.c.call_with_unix_fd_list_sync(NAME, MP, MI, "HashFds",
                                                      GLib.Variant("(ahsa{sv})", ([h], "sha256", {})),
                                                      GLib.VariantType("(o)"), 0, 5000, fl, None)[0].unpack()[0])
    else:
        d = Conn.direct(c.open_connection())
        fn = (lambda: d.hash_fds([fd], timeout=5000))
    emit("CALL", via)
    j, e, dt = try_call(fn)
    emit("DONE", {"call": via, "job": j, "error": e, "seconds": round(dt, 3)})
    conn = c if via == "bus-extra" else d
    results = None
    if j and conn.wait([j], 10):
        results = [list(r) for r in conn.get_results(j)]
    emit("JOB", {"results": results})
    os.close(fd)
    emit("READY")
    iterate_until(lambda: False, hold)
    srv.terminate()
    srv.wait()
    emit("RESULT", "server stopped")


def role_fuse_client(args):
    """nobody: passes an fd of a file on a FUSE mount to HashFds on the bus, waits for the job."""
    path, wait = args[0], float(args[1])
    c = Conn.system()
    fd = os.open(path, os.O_RDONLY)
    emit("CALL", "HashFds")
    j, e, dt = try_call(lambda: c.hash_fds([fd], timeout=int(wait * 1000)))
    emit("DONE", {"job": j, "error": e, "seconds": round(dt, 3)})
    ok = c.wait([j], wait) if j else False
    emit("RESULT", {"finished": ok, "job": list(c.finished.get(j, ())), "results": c.results.get(j)})
    iterate_until(lambda: False, 3600)


def role_maxsize(args):
    """nobody: a caller's max-size against the admin's MaxFileSize: a 3 MB file and /dev/zero."""
    f, wait = args[0], float(args[1])
    c = Conn.system()
    out = {}
    for what, path, algo, kw in (("3MB max-size=2^40", f, "sha256", {"max_size": 1 << 40}),
                                 ("/dev/zero max-size=2^64-1", "/dev/zero", "sha512", {"max_size": (1 << 64) - 1})):
        fd = os.open(path, os.O_RDONLY)
        t = time.monotonic()
        j, e, _ = try_call(lambda: c.hash_fds([fd], algo, **kw))
        os.close(fd)
        if not j:
            out[what] = {"call": e}
            continue
        ok = c.wait([j], wait)
        r = c.results.get(j, {}).get(0)
        out[what] = {"finished": ok, "seconds": round(time.monotonic() - t, 2), "size": r[1] if r else None,
                     "digest": bool(r and r[2]), "error": r[3][:100] if r else None}
        if not ok:
            try_call(lambda: c.cancel(j))
    emit("RESULT", out)


def role_deputy(args):
    """nobody: fds of pseudo files whose content is checked against the reader at read time."""
    paths = args
    c = Conn.system()
    out = {}
    for p in paths:
        try:
            mine = open(p, "rb").read()
            mine_d = sha256_bytes(mine)
        except OSError as e:
            mine_d = f"<{e.strerror}>"
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError as e:
            out[p] = {"open": str(e)}
            continue
        j, e, _ = try_call(lambda: c.hash_fds([fd]))
        os.close(fd)
        if not j:
            out[p] = {"call": e}
            continue
        ok = c.wait([j], 5)
        r = c.results.get(j, {}).get(0)
        out[p] = {"finished": ok, "digest": r[2][:16] if r and r[2] else "",
                  "same_as_nobody": bool(r and r[2] == mine_d), "error": r[3][:120] if r else None,
                  "size": r[1] if r else None}
        if not ok:
            try_call(lambda: c.cancel(j))
    emit("RESULT", out)


def role_sizeleak(args):
    """nobody: polls the public counters while root hashes files nobody cannot read."""
    seconds = float(args[0])
    c = Conn.system()
    out = {}
    for prop in ("BytesHashed", "QueuedFiles"):
        v, e, _ = try_call(lambda: c.prop(MP, MI, prop))
        out[prop] = {"first": v, "error": e, "deltas": []}
    emit("READY")
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        for prop in ("BytesHashed", "QueuedFiles"):
            if out[prop]["error"]:
                continue
            v, e, _ = try_call(lambda: c.prop(MP, MI, prop))
            if e:
                out[prop]["error"] = e
            elif v != out[prop].get("last", out[prop]["first"]):
                out[prop]["deltas"].append(v - out[prop].get("last", out[prop]["first"]))
                out[prop]["last"] = v
        time.sleep(0.002)
    emit("RESULT", out)


def role_owners(args):
    """One uid: as many bus connections as dbus-daemon lets it have, each with one finished job,
    and as many direct connections as fhashd gives it; all held."""
    n, f, hold = int(args[0]), args[1], float(args[2])
    conns, errs, ok = [], {}, 0
    fd = os.open(f, os.O_RDONLY)
    for _ in range(n):
        try:
            c = Conn.system()
        except GLib.Error as e:
            errs["connect"] = e.message[:80]
            break
        conns.append(c)
        _, e, _ = try_call(lambda: c.hash_fds([fd]))
        if e:
            k = e.split(":")[0]
            errs[k] = errs.get(k, 0) + 1
        else:
            ok += 1
    directs = 0
    if conns:
        for _ in range(40):
            v, e, _ = try_call(lambda: conns[0].open_connection())
            if e:
                k = e.split(":")[0]
                errs[k] = errs.get(k, 0) + 1
            else:
                directs += 1
                socket.socket(fileno=v).detach()
    emit("READY", {"uid": os.getuid(), "connections": len(conns), "jobs": ok, "direct": directs, "errors": errs})
    iterate_until(lambda: False, hold)


def role_writer(args):
    """nobody: owns a 64 MiB file; on "A" writes it all-A and drops it from the cache; on "GO"
    rewrites it all-B in place after a random 0-20 ms and restores its mtime."""
    path, seed = args[0], int(args[1])
    rng = random.Random(seed)
    size = 64 << 20
    A, B = b"A" * (1 << 20), b"B" * (1 << 20)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "A":
            with open(path, "wb") as f:
                for _ in range(size >> 20):
                    f.write(A)
                f.flush()
                os.fsync(f.fileno())
                os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
            os.chmod(path, 0o644)
            emit("READY")
        elif cmd == "GO":
            st = os.stat(path)
            fd = os.open(path, os.O_WRONLY)
            time.sleep(rng.uniform(0, 0.02))
            for off in range(0, size, 1 << 20):
                os.pwrite(fd, B, off)
            os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.close(fd)
            emit("WRITTEN")


def role_odirect(args):
    """nobody: an fd it opened with O_DIRECT."""
    path = args[0]
    want = sha256_file(path)
    c = Conn.system()
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    j, e, _ = try_call(lambda: c.hash_fds([fd]))
    os.close(fd)
    ok = c.wait([j], 10) if j else False
    r = c.results.get(j, {}).get(0) if j else None
    emit("RESULT", {"call": e, "finished": ok, "correct": bool(r and r[2] == want), "error": r[3][:120] if r else None})


def role_one_job(args):
    """nobody: a new client's first job (fhashd starts tracking it); waits for JobFinished."""
    f, call_wait, job_wait = args[0], float(args[1]), float(args[2])
    c = Conn.system()
    fd = os.open(f, os.O_RDONLY)
    emit("CALL")
    j, e, dt = try_call(lambda: c.hash_fds([fd], timeout=int(call_wait * 1000)))
    ok = c.wait([j], job_wait) if j else False
    emit("RESULT", {"call": e, "seconds": round(dt, 2), "finished": ok, "job": list(c.finished.get(j, ()))})


def role_keepjobs(args):
    """Live job objects for dfuzzer to find: one running on a silent pipe, one finished, one open."""
    f, hold = args[0], float(args[1])
    c = Conn.system()
    r, w = os.pipe()
    j1 = c.hash_fds([r], max_size=1 << 20, more=True)
    j2 = c.hash_fds([os.open(f, os.O_RDONLY)])
    j3 = c.hash_fds([r, r], max_size=1 << 20)
    emit("READY", {"jobs": [j1, j2, j3]})
    iterate_until(lambda: False, hold)


# ---- issue 24: N1-N3 of the 2026-11-26 review, and the load test ----

MALFORMED = ("utf8", "path", "nul", "signature")


def ping_blob(serial, nfds, dest=None, kind="valid"):
    """A Peer.Ping (no reply expected) that declares the nfds fds it carries (UNIX_FDS); kind, other
    than "valid", makes its header one that sd-bus refuses: utf8 (a byte of the object path that is
    not UTF-8), path (an invalid object path), nul (the path's string without its terminating NUL),
    signature (an invalid SIGNATURE field, for a body that has one)."""
    m = Gio.DBusMessage.new_method_call(dest, MP, PEER, "Ping")
    m.set_serial(serial)
    m.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
    if kind == "signature":
        m.set_body(GLib.Variant("(s)", ("x",)))
    if nfds:
        fl = Gio.UnixFDList.new()
        r, w = os.pipe()
        for _ in range(nfds):
            fl.append(r)
        os.close(r)
        os.close(w)
        m.set_unix_fd_list(fl)
    b = m.to_blob(Gio.DBusCapabilityFlags.UNIX_FD_PASSING)
    swap = {"valid": (b"", b""),
            "utf8": (MP.encode(), b"/org/fhash/Hasher\xc3"),
            "path": (MP.encode(), b"/org//hash/Hasher1"),
            "nul": (MP.encode() + b"\0", b"/org/fhash/Hasher1x"),
            "signature": (b"\x08\x01g\x00\x01s\x00", b"\x08\x01g\x00\x01{\x00")}[kind]
    if kind != "valid":
        assert swap[0] in b, kind
        b = b.replace(swap[0], swap[1], 1)
    return b


def declared_fds(b):
    """The UNIX_FDS header field of a little-endian message (0 without one)."""
    i = b.find(b"\x09\x01u\x00", 16)
    return struct.unpack_from("<I", b, i + 4)[0] if i >= 0 else 0


class DirectFlood:
    """Raw direct connections that carry a flood: a new one (OpenConnection) whenever fhashd ends
    the last; what happened counted. A send that waits SEND_TIMEOUT_S means fhashd stopped reading."""
    SEND_TIMEOUT_S = 5

    def __init__(self, conn, spares=0):
        self.conn = conn
        self.s = None
        self.st = {"messages": 0, "fds": 0, "connections": 0, "dropped": 0, "stalled": False, "errors": {}}
        # Connections opened before the flood, taken in turn when fhashd ends one: OpenConnection may
        # no longer be possible then (it needs fds of fhashd's own).
        self.spares = [x for x in (self._open() for _ in range(spares)) if x]

    def _count(self, what):
        self.st["errors"][what] = self.st["errors"].get(what, 0) + 1

    def connect(self):
        self.s = self.spares.pop(0) if self.spares else self._open()
        return self.s is not None

    def _open(self):
        v, e, _ = try_call(lambda: self.conn.open_connection())
        if e:
            self._count("OpenConnection " + e.split(":")[0])
            return None
        s = socket.socket(fileno=v)
        s.settimeout(self.SEND_TIMEOUT_S)
        try:
            raw_auth(s)
            # One answered call first: fhashd is past the handshake (fds that come with it end the
            # connection instead), so every fd after it reaches the message reader.
            s.sendall(blob(None, MP, PEER, "Ping", 1))
            if not s.recv(4096):
                raise ConnectionResetError("closed after the first Ping")
        except (OSError, RuntimeError) as e:
            self._count(f"handshake {type(e).__name__}")
            s.close()
            return None
        self.st["connections"] += 1
        return s

    def send(self, data, fds):
        """True once sent; False when no connection takes it (refused, or fhashd stopped reading)."""
        for _ in range(3):
            if self.s is None and not self.connect():
                return False
            try:
                send_fds(self.s, data, fds)
                self.st["messages"] += 1
                self.st["fds"] += len(fds)
                return True
            except socket.timeout:
                self.st["stalled"] = True
                self.close()
                return False
            except OSError as e:
                self.st["dropped"] += 1
                self._count(type(e).__name__)
                self.close()
        return False

    def eof(self):
        """Whether fhashd ended the current connection (what it wrote is read and dropped)."""
        if self.s is None:
            return True
        try:
            self.s.setblocking(False)
            while True:
                d = self.s.recv(65536)
                if not d:
                    return True
        except BlockingIOError:
            return False
        except OSError:
            return True
        finally:
            if self.s is not None:
                self.s.settimeout(self.SEND_TIMEOUT_S)

    def close(self):
        if self.s is not None:
            self.s.close()
            self.s = None

    def close_all(self):
        self.close()
        for x in self.spares:
            x.close()
        self.spares = []


def role_hdrflood(args):
    """nobody: on direct connections, n_msgs messages of per fds each, then topup messages of one fd,
    all of them declaring the fds they carry with a header sd-bus refuses (each kind of ping_blob()
    in turn); a new connection whenever fhashd ends one."""
    n_msgs, per, topup, path = int(args[0]), int(args[1]), int(args[2]), args[3]
    f = os.open(path, os.O_RDONLY)
    c = Conn.system()
    fl = DirectFlood(c)
    blobs = {(k, n): ping_blob(2, n, kind=k) for k in MALFORMED for n in (per, 1)}
    t = time.monotonic()
    for i in range(n_msgs + topup):
        n = per if i < n_msgs else 1
        if not fl.send(blobs[(MALFORMED[i % len(MALFORMED)], n)], [f] * n):
            break
    time.sleep(1)
    fl.st["ended_by_fhashd"] = fl.eof()
    fl.close()
    fl.st["seconds"] = round(time.monotonic() - t, 2)
    emit("RESULT", fl.st)


def role_replay(args):
    """nobody: each message (a file holding a captured one, or gen:KIND:N for ping_blob(KIND) with N
    fds) alone on a fresh direct connection with the fds its header declares attached, on a line of
    stdin each; the connection is closed again before SENT."""
    c = Conn.system()
    f = os.open("/dev/null", os.O_RDONLY)
    for item in args:
        if item.startswith("gen:"):
            _, kind, n = item.split(":")
            data = ping_blob(2, int(n), kind=kind)
        else:
            with open(item, "rb") as fh:
                data = fh.read()
        n = declared_fds(data)
        sys.stdin.readline()
        fl = DirectFlood(c)
        ok = fl.send(data, [f] * n)
        time.sleep(0.3)
        ended = fl.eof()
        fl.close()
        emit("SENT", {"message": os.path.basename(item), "fds": n, "sent": ok, "ended_by_fhashd": ended,
                      "errors": fl.st["errors"]})


def role_ping_fds(args):
    """Peer.Ping to fhashd on the bus with n fds of path attached (16 is the system bus's maximum)."""
    n, path = int(args[0]), args[1]
    c = Conn.system()
    f = os.open(path, os.O_RDONLY)
    fl = Gio.UnixFDList.new()
    for _ in range(n):
        fl.append(f)
    t = time.monotonic()
    try:
        c.c.call_with_unix_fd_list_sync(NAME, MP, PEER, "Ping", None, None, 0, 5000, fl, None)
        e = None
    except GLib.Error as x:
        e = f"{err_name(x)}: {x.message[:160]}"
    emit("RESULT", {"call": e or "ok", "seconds": round(time.monotonic() - t, 3)})


class BusFlood:
    """A raw bus connection that sends without waiting for replies; what comes back is read now and
    then and counted (error replies by name)."""

    def __init__(self):
        self.s = raw_bus()
        self.s.settimeout(DirectFlood.SEND_TIMEOUT_S)
        self.buf = b""
        self.st = {"messages": 0, "fds": 0, "stalled": False, "errors": {}, "closed": False}
        # dbus-daemon may read the end of the handshake and what follows it in one read(), which
        # drops the fds that came with it (and then the connection, for a message short of its
        # fds): nothing is sent before the reply to Hello.
        while not any(m.get_message_type() == Gio.DBusMessageType.METHOD_RETURN for m in self._frame()):
            d = self.s.recv(65536)
            if not d:
                raise ConnectionResetError("dbus-daemon ended the connection before Hello's reply")
            self.buf += d

    def _frame(self):
        """The whole messages at the start of buf, taken out of it."""
        out = []
        while len(self.buf) >= 16:
            need = Gio.DBusMessage.bytes_needed(self.buf[:16])
            if len(self.buf) < need:
                break
            out.append(Gio.DBusMessage.new_from_blob(self.buf[:need], Gio.DBusCapabilityFlags.UNIX_FD_PASSING))
            self.buf = self.buf[need:]
        return out

    def send(self, data, fds):
        try:
            send_fds(self.s, data, fds)
        except socket.timeout:
            self.st["stalled"] = True
            return False
        except OSError as e:
            self.st["closed"] = str(e)
            return False
        self.st["messages"] += 1
        self.st["fds"] += len(fds)
        if self.st["messages"] % 16 == 0:
            self.drain()
        return True

    def drain(self):
        self.s.setblocking(False)
        try:
            while True:
                d = self.s.recv(1 << 20)
                if not d:
                    self.st["closed"] = "end of input"
                    break
                self.buf += d
        except BlockingIOError:
            pass
        except OSError as e:
            self.st["closed"] = str(e)
        self.s.settimeout(DirectFlood.SEND_TIMEOUT_S)
        for m in self._frame():
            if m.get_message_type() == Gio.DBusMessageType.ERROR:
                k = m.get_error_name()
                self.st["errors"][k] = self.st["errors"].get(k, 0) + 1

    def close(self):
        self.drain()
        self.s.close()


def role_bus_fdflood(args):
    """nobody: on the bus, n messages to fhashd with 16 fds each and no reply expected, which fhashd
    must close: Peer.Pings with 16 fds of null, and HashFds calls naming one fd of good with 15 more of
    it attached."""
    n, null, good = int(args[0]), args[1], args[2]
    fn, fg = os.open(null, os.O_RDONLY), os.open(good, os.O_RDONLY)
    bf = BusFlood()
    ping = ping_blob(2, 16, dest=NAME)
    m = Gio.DBusMessage.new_method_call(NAME, MP, MI, "HashFds")
    m.set_serial(3)
    m.set_flags(Gio.DBusMessageFlags.NO_REPLY_EXPECTED)
    m.set_body(GLib.Variant("(ahsa{sv})", ([0], "sha256", {})))
    fl = Gio.UnixFDList.new()
    r, w = os.pipe()
    for _ in range(16):
        fl.append(r)
    os.close(r)
    os.close(w)
    m.set_unix_fd_list(fl)
    hashfds = m.to_blob(Gio.DBusCapabilityFlags.UNIX_FD_PASSING)
    t = time.monotonic()
    for i in range(n):
        if not (bf.send(ping, [fn] * 16) if i % 2 == 0 else bf.send(hashfds, [fg] * 16)):
            break
    time.sleep(1)
    bf.close()
    bf.st["seconds"] = round(time.monotonic() - t, 2)
    emit("RESULT", bf.st)


def role_lease(args):
    """nobody: n files of its own (1 MiB, written, synced and dropped from the page cache, mode 0666),
    each opened read-only with a write lease (F_SETLEASE F_WRLCK; SIGIO ignored), one HashFds per file
    (strategy direct, or auto, which reads a cold file directly) on the bus or a direct connection.
    Waits up to hold s for its jobs (RESULT), and on a line of stdin lets the leases go (F_UNLCK: a
    process waiting to break one goes on; so does SIGTERM)."""
    import fcntl
    import signal
    via, strategy, n, workdir, hold = args[0], args[1], int(args[2]), args[3], float(args[4])
    signal.signal(signal.SIGIO, signal.SIG_IGN)
    fds, want = [], []
    for i in range(n):
        p = os.path.join(workdir, f"lease-{os.getpid()}-{i}")
        data = os.urandom(1 << 20)
        with open(p, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # Writable by others: fhashd (no CAP_FOWNER) may ask the page cache about another user's file
        # only if it could write it (cachestat(2), mincore(2) since Linux 5.0 tell the truth only
        # then); otherwise AUTO takes it as cached and never reads it with O_DIRECT.
        os.chmod(p, 0o666)
        fd = os.open(p, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        try:
            fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
        except OSError as e:
            emit("ERROR", f"F_SETLEASE F_WRLCK: {e}")
            return
        fds.append(fd)
        want.append(sha256_bytes(data))

    def release():
        for fd in fds:
            try:
                fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
            except OSError:
                pass
    signal.signal(signal.SIGTERM, lambda *a: (release(), os._exit(0)))
    c = Conn.system()
    conn = c if via == "bus" else Conn.direct(c.open_connection())
    kw = {} if strategy == "auto" else {"strategy": strategy}
    jobs = []
    for fd in fds:
        t = time.monotonic()
        j, e, _ = try_call(lambda: conn.hash_fds([fd], timeout=int(hold * 1000), **kw))
        jobs.append((j, e, t))
    emit("READY", {"files": n, "calls": [e or "ok" for j, e, t in jobs]})
    conn.wait([j for j, e, t in jobs if j], hold)
    out = []
    for i, (j, e, t) in enumerate(jobs):
        if not j:
            out.append({"call": e})
        elif j in conn.finished:
            r = conn.results.get(j, {}).get(0)
            out.append({"seconds": round(conn.finished_at[j] - t, 3), "digest_ok": bool(r and r[2] == want[i]),
                        "error": r[3] if r else "no result"})
        else:
            out.append({"seconds": None, "error": f"not finished after {hold} s"})
    emit("RESULT", out)
    sys.stdin.readline()
    release()
    emit("RELEASED")
    iterate_until(lambda: all(j in conn.finished for j, e, t in jobs if j), 60)


def start_userns_fuse(workdir):
    """A FUSE server in nobody's own user and mount namespace (role fuse-server, mode
    hang-flush-foreign: FLUSH is answered only to the server's own user and to dbus-daemon) and one
    fd of its file: (server process, its first line, the fd or None)."""
    import subprocess
    mnt = os.path.join(workdir, f"m{os.getpid()}")
    os.makedirs(mnt, exist_ok=True)
    a, b = socket.socketpair()
    env = dict(os.environ, USERNS="1", SENDFD=str(b.fileno()))
    srv = subprocess.Popen(["/usr/bin/python3", os.path.abspath(__file__), "fuse-server", mnt, "hang-flush-foreign"],
                           env=env, pass_fds=[b.fileno()], stdout=subprocess.PIPE, text=True)
    b.close()
    line = srv.stdout.readline().strip()
    if not line.startswith("READY"):
        return srv, line or "the FUSE server died", None
    _, anc, _, _ = a.recvmsg(1, socket.CMSG_LEN(4))
    a.close()
    return srv, line, array.array("i", anc[0][2])[0]


def role_closer_flood(args):
    """nobody, with no help from root: copies of one fd of a file on its own FUSE mount whose server
    never answers fhashd's FLUSH, so that no close of one ever ends, sent in Peer.Pings (no reply
    expected): via direct, on direct connections (three spares opened first, then OpenConnection,
    whenever fhashd ends one); via bus, on a raw bus connection (16 fds a message at most). stages:
    TOTAL:PER,... (PER copies a message until TOTAL were sent); after each, STAGE and a line of stdin.
    Then a Peer.Ping on the bus with 16 copies (PING16); on a line of stdin the server stops (RESULT)."""
    via, workdir = args[0], args[2]
    stages = [tuple(int(y) for y in x.split(":")) for x in args[1].split(",")]
    srv, line, fd = start_userns_fuse(workdir)
    emit("SERVER", {"pid": srv.pid, "said": line})
    if fd is None:
        return
    c = Conn.system()
    fl = DirectFlood(c, spares=3) if via == "direct" else BusFlood()
    t = time.monotonic()
    going = True
    for total, per in stages:
        per = per if via == "direct" else min(per, 16)
        data = ping_blob(2, per, dest=None if via == "direct" else NAME)
        while going and fl.st["fds"] < total:
            going = fl.send(data, [fd] * per)
        st = dict(fl.st, seconds=round(time.monotonic() - t, 2))
        if via == "direct":
            st["ended_by_fhashd"] = fl.eof()
        else:
            fl.drain()
        emit("STAGE", st)
        sys.stdin.readline()
    fds16 = Gio.UnixFDList.new()
    for _ in range(16):
        fds16.append(fd)
    t = time.monotonic()
    try:
        c.c.call_with_unix_fd_list_sync(NAME, MP, PEER, "Ping", None, None, 0, 5000, fds16, None)
        e = None
    except GLib.Error as x:
        e = f"{err_name(x)}: {x.message[:160]}"
    emit("PING16", {"call": e or "ok", "seconds": round(time.monotonic() - t, 3)})
    sys.stdin.readline()
    st = dict(fl.st)
    if via == "direct":
        st["ended_by_fhashd"] = fl.eof()
        fl.close_all()
    else:
        fl.close()
    os.close(fd)
    srv.terminate()
    srv.wait()
    emit("RESULT", st)


def percentile(xs, p):
    """The p-th percentile (nearest rank) of xs."""
    if not xs:
        return None
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, -(-len(xs) * p // 100) - 1))]


def load_batch(rng, files):
    """A job of the load test: eight 4 KiB files, or a 1 MiB one with four 4 KiB ones, or (one time in
    ten, where the uid has them) a 20 MiB file."""
    small = [p for p, v in files.items() if v["size"] <= 4096]
    mid = [p for p, v in files.items() if 4096 < v["size"] <= 1 << 20]
    big = [p for p, v in files.items() if v["size"] > 1 << 20]
    x = rng.random()
    if big and x < 0.1:
        return [rng.choice(big)]
    if x < 0.4:
        return [rng.choice(mid)] + rng.sample(small, 4)
    return rng.sample(small, 8)


class LoadTally:
    def __init__(self):
        self.st = {"jobs": 0, "files": 0, "bytes": 0, "wrong": 0, "lost": 0, "failed": {}, "refused": {},
                   "first_problems": [], "job_ms": []}

    def problem(self, kind, what, detail):
        if isinstance(self.st[kind], dict):
            self.st[kind][what] = self.st[kind].get(what, 0) + 1
        else:
            self.st[kind] += 1
        if len(self.st["first_problems"]) < 5:
            self.st["first_problems"].append(f"{kind}: {detail}"[:240])

    def ok(self, size):
        self.st["files"] += 1
        self.st["bytes"] += size

    def result(self):
        ms = self.st.pop("job_ms")
        self.st["job_p50_ms"], self.st["job_p99_ms"] = percentile(ms, 50), percentile(ms, 99)
        self.st["uid"] = os.getuid()
        return self.st


def role_load(args):
    """One uid of the load test: jobs of its own files (load_batch()) streamed for seconds s after a
    line on stdin, one in flight at a time on a bus connection and one on a direct connection, every
    digest checked against the manifest (path -> size, sha256) the test wrote; then up to drain s for
    what is in flight. Lost: a job accepted that never finished, or an input without a result."""
    manifest, seconds, drain = args[0], float(args[1]), float(args[2])
    with open(manifest) as fh:
        files = json.load(fh)
    rng = random.Random(os.getuid())
    c = Conn.system()
    conns = {"bus": c, "direct": Conn.direct(c.open_connection())}
    tally = LoadTally()
    inflight = {}

    def submit(name):
        paths = load_batch(rng, files)
        fds = [os.open(p, os.O_RDONLY) for p in paths]
        t = time.monotonic()
        j, e, _ = try_call(lambda: conns[name].hash_fds(fds, timeout=30000))
        for fd in fds:
            os.close(fd)
        if j:
            inflight[name] = (j, paths, t)
            tally.st["jobs"] += 1
        else:
            tally.problem("refused", e.split(":")[0], f"{name}: {e}")
            time.sleep(0.05)

    def collect(name):
        j, paths, t = inflight.pop(name)
        conn = conns[name]
        tally.st["job_ms"].append(round((conn.finished_at.pop(j) - t) * 1000, 1))
        conn.finished.pop(j)
        res = conn.results.pop(j, {})
        for i, p in enumerate(paths):
            r = res.get(i)
            if r is None:
                tally.problem("lost", "", f"{name} {j}: no result for input {i} ({p})")
            elif r[3]:
                tally.problem("failed", r[3].split(":")[0], f"{name} {p}: {r[3]}")
            elif r[2] != files[p]["sha256"] or r[1] != files[p]["size"]:
                tally.problem("wrong", "", f"{name} {p}: {r[1]} bytes, {r[2]}")
            else:
                tally.ok(files[p]["size"])

    def done(name):
        return name in inflight and inflight[name][0] in conns[name].finished

    emit("READY")
    sys.stdin.readline()
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for name in conns:
            if name not in inflight:
                submit(name)
        iterate_until(lambda: any(done(n) for n in conns), max(0.0, min(1.0, end - time.monotonic())))
        for name in conns:
            if done(name):
                collect(name)
    iterate_until(lambda: all(done(n) for n in inflight), drain)
    for name in list(inflight):
        if done(name):
            collect(name)
        else:
            tally.problem("lost", "", f"{name} {inflight.pop(name)[0]}: not finished {drain} s after the end")
    emit("RESULT", tally.result())


def role_load_ctl(args):
    """One uid of the load test through fhashctl: `fhashctl --daemon hash` of load_batch() files, on
    a direct connection and with --no-direct in turn, for seconds s after a line on stdin, each
    output line checked against the manifest."""
    import subprocess
    manifest, seconds, fhashctl = args[0], float(args[1]), args[2]
    with open(manifest) as fh:
        files = json.load(fh)
    rng = random.Random(os.getuid())
    tally = LoadTally()
    emit("READY")
    sys.stdin.readline()
    end = time.monotonic() + seconds
    k = 0
    while time.monotonic() < end:
        paths = load_batch(rng, files)
        cmd = [fhashctl, "--daemon"] + (["--no-direct"] if k % 2 else []) + ["hash"] + paths
        k += 1
        t = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            tally.problem("lost", "", f"{' '.join(cmd[1:4])}: no answer in 60 s")
            continue
        tally.st["jobs"] += 1
        tally.st["job_ms"].append(round((time.monotonic() - t) * 1000, 1))
        got = {}
        for line in r.stdout.splitlines():
            digest, _, name = line.partition("  ")
            got[name] = digest
        if r.returncode:
            why = r.stderr.strip().splitlines()
            tally.problem("failed", f"exit {r.returncode}", why[-1] if why else "")
        for p in paths:
            if p not in got:
                tally.problem("lost", "", f"{p}: not in fhashctl's output (exit {r.returncode})")
            elif got[p] != files[p]["sha256"]:
                tally.problem("wrong", "", f"{p}: {got[p]}")
            else:
                tally.ok(files[p]["size"])
    emit("RESULT", tally.result())


def role_latency(args):
    """root during the load test: a HashFds of a 4 KiB file on the bus every interval s for seconds
    s, each timed from the call to its JobFinished and its digest checked; right after each, the same
    on a direct connection (OpenConnection: how fhashctl and libfhash reach fhashd by default); and,
    as a control, a Peer.Ping of dbus-daemon itself (what the bus and this process's own scheduling
    cost, whoever serves the call)."""
    path, seconds, interval = args[0], float(args[1]), float(args[2])
    want = sha256_file(path)
    c = Conn.system()
    d = Conn.direct(c.open_connection())
    lat, direct, bus, problems = [], [], [], {}

    def one(conn, out):
        fd = os.open(path, os.O_RDONLY)
        t = time.monotonic()
        j, e, _ = try_call(lambda: conn.hash_fds([fd], timeout=10000))
        os.close(fd)
        if j and conn.wait([j], 10):
            out.append((conn.finished_at.pop(j) - t) * 1000)
            r = conn.results.pop(j, {}).get(0)
            conn.finished.pop(j)
            if not r or r[2] != want:
                problems[f"wrong: {r}"[:120]] = problems.get(f"wrong: {r}"[:120], 0) + 1
        else:
            out.append((time.monotonic() - t) * 1000)
            k_ = (e or "not finished in 10 s").split(":")[0]
            problems[k_] = problems.get(k_, 0) + 1

    t0 = time.monotonic()
    k = 0
    while time.monotonic() - t0 < seconds:
        one(c, lat)
        one(d, direct)
        t = time.monotonic()
        try_call(lambda: c.call("/org/freedesktop/DBus", PEER, "Ping", timeout=10000, dest="org.freedesktop.DBus"))
        bus.append((time.monotonic() - t) * 1000)
        k += 1
        time.sleep(max(0.0, t0 + k * interval - time.monotonic()))
    emit("RESULT", {"n": len(lat), "p50_ms": round(percentile(lat, 50), 1), "p99_ms": round(percentile(lat, 99), 1),
                    "max_ms": round(max(lat), 1), "direct_p50_ms": round(percentile(direct, 50), 1),
                    "direct_p99_ms": round(percentile(direct, 99), 1), "bus_p50_ms": round(percentile(bus, 50), 1),
                    "bus_p99_ms": round(percentile(bus, 99), 1), "problems": problems})


ROLES = {name[5:].replace("_", "-"): fn for name, fn in globals().items() if name.startswith("role_")}

if __name__ == "__main__":
    try:
        ROLES[sys.argv[1]](sys.argv[2:])
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        pass
