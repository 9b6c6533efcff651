#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-bad-input.py: every method of a real fhashd fed wrong types, empty and oversized arrays, fds
# of every wrong kind, unbounded devices, bad paths, huge strings, bad options and algorithms. Each
# call must get a precise error (name checked, message naming the argument) while a concurrent good
# job carries on undisturbed. Then a fuzzing client sends thousands of randomly malformed calls with a
# fixed seed; the daemon must answer every one and still hash correctly afterwards.
import hashlib
import os
import random
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

ERR = ft.ERR_PREFIX
INVALID = ft.ERR_INVALID_ARGS
M = ft.MANAGER_IFACE


class Canary:
    """A job on a pipe that is fed known data throughout the test: its digest at the end proves that
    nothing the bad calls did disturbed a good job."""

    def __init__(self, mgr):
        r, self.w = os.pipe()
        self.job = str(mgr.HashFds(ft.fds(r), "sha256", ft.options(max_size=1 << 40, names=["canary"])))
        os.close(r)
        self.h = hashlib.sha256()
        self.rnd = random.Random(99)

    def feed(self):
        data = self.rnd.randbytes(self.rnd.randrange(1, 1 << 16))
        os.write(self.w, data)
        self.h.update(data)

    def finish(self, w):
        os.close(self.w)
        w.wait([self.job])
        name, size, dg, err = w.results[self.job][0]
        ft.check(err == "" and dg == self.h.hexdigest(), f"the concurrent good job was disturbed: {dg!r} {err!r}")
        ft.check(w.finished[self.job] == ("done", 1, 0), f"canary: {w.finished[self.job]}")


def call(conn, path, iface, method, sig, args):
    return conn.call_blocking(ft.BUS_NAME, path, iface, method, sig, args)


def expect(name, words, fn, *args):
    """fn(*args) must fail with name and a message containing every word in words."""
    msg = ft.expect_error(name, fn, *args)
    for word in words:
        ft.check(word in msg, f"{name}: message {msg[:200]!r} does not name {word!r}")
    return msg


def results_of(w, job):
    w.wait([job], timeout=30)
    return [w.results[job][i] for i in range(len(w.results[job]))]


def test_manager_calls(conn, w, mgr, tmp, canary):
    good = os.path.join(tmp, "good")
    with open(good, "wb") as f:
        f.write(b"good input\n")
    os.chmod(good, 0o644)
    good_sha = hashlib.sha256(b"good input\n").hexdigest()
    o = ft.options
    n = 0

    def ok(what):
        nonlocal n
        n += 1
        canary.feed()

    # Wrong signatures: sd-bus names the signature it expected.
    for method, sig, args in [
        ("HashFds", "ssa{sv}", ["/x", "sha256", {}]),
        ("HashFds", "ah", [ft.fds(good)]),
        ("HashFds", "", []),
        ("HashFds", "ahsa{sv}s", [ft.fds(good), "sha256", {}, "extra"]),
        ("HashPaths", "ssa{sv}", ["/x", "sha256", {}]),
        ("HashPaths", "asa{sv}", [[good], {}]),
        ("HashPaths", "asua{sv}", [[good], 1, {}]),
        ("HashPaths", "assa{ss}", [[good], "sha256", {"names": "x"}]),
        ("ListJobs", "s", ["x"]),
    ]:
        want = {"HashFds": "ahsa{sv}", "HashPaths": "assa{sv}", "ListJobs": "''"}[method]
        expect(INVALID, [f"'{sig}'" if sig else "''", want if method != "ListJobs" else ""], call, conn,
               ft.MANAGER_PATH, M, method, sig, args)
        ok(f"{method}({sig})")

    # Empty and oversized arrays.
    expect(INVALID, ["fds", "no file descriptors"], mgr.HashFds, ft.fds(), "sha256", o())
    expect(INVALID, ["paths", "no paths"], mgr.HashPaths, ft.dbus.Array([], signature="s"), "sha256", o())
    expect(INVALID, ["fds", "17", "at most 16"], mgr.HashFds, ft.fds(*[good] * 17), "sha256", o())
    expect(INVALID, ["fds", "40", "at most 16"], mgr.HashFds, ft.fds(*[good] * 40), "sha256", o())
    ok("arrays")

    # fds that cannot be read: refused for the whole call, naming the fd.
    fd = os.open(good, os.O_PATH)
    expect(INVALID, ["fds[1]", "O_PATH"], mgr.HashFds, ft.fds(good, fd), "sha256", o())
    os.close(fd)
    fd = os.open(good, os.O_WRONLY)
    expect(INVALID, ["fds[0]", "not open for reading"], mgr.HashFds, ft.fds(fd), "sha256", o())
    os.close(fd)
    r, wr = os.pipe()
    expect(INVALID, ["fds[0]", "not open for reading"], mgr.HashFds, ft.fds(wr), "sha256", o(max_size=10))
    os.close(r)
    os.close(wr)
    ok("unreadable fds")

    # fds of the wrong kind: a per-file NotRegular, the rest of the batch hashed.
    d = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    s1, s2 = socket.socketpair()
    r, wr = os.pipe()
    zero = os.open("/dev/zero", os.O_RDONLY)
    job = str(mgr.HashFds(ft.fds(d, good, s1.fileno(), r, zero), "sha256", o()))
    res = results_of(w, job)
    ft.check(res[0][2] == "" and res[0][3] == ERR + "NotRegular: is a directory", f"directory fd: {res[0]}")
    ft.check(res[1][3] == "" and res[1][2] == good_sha, f"good fd beside bad ones: {res[1]}")
    ft.check(res[2][2] == "" and res[2][3] == ERR + "NotRegular: is a socket", f"socket fd: {res[2]}")
    for k, what in ((3, "pipe"), (4, "/dev/zero")):
        ft.check(res[k][2] == "" and res[k][3].startswith(ERR + "NotRegular: ") and "max-size" in res[k][3],
                 f"{what} fd without max-size must be refused: {res[k]}")
    ft.check(w.finished[job] == ("failed", 1, 4), f"mixed fds: {w.finished[job]}")
    ok("wrong-kind fds")

    # /dev/zero with max-size: capped, TooLarge; a pipe whose writer is closed: hashed to its EOF.
    os.close(wr)
    t0 = time.monotonic()
    job = str(mgr.HashFds(ft.fds(zero, r), "sha256", o(max_size=1 << 20)))
    res = results_of(w, job)
    ft.check(res[0][2] == "" and res[0][3].startswith(ERR + "TooLarge: "), f"/dev/zero with max-size: {res[0]}")
    ft.check(res[1][3] == "" and res[1][2] == hashlib.sha256(b"").hexdigest() and res[1][1] == 0,
             f"pipe with its writer closed: {res[1]}")
    ft.log(f"ok: /dev/zero capped by max-size in {time.monotonic() - t0:.2f} s: {res[0][3]}")
    for x in (d, r, zero):
        os.close(x)
    s1.close()
    s2.close()

    # An fd the caller closes right after sending: the daemon has its own copy.
    fd = os.open(good, os.O_RDONLY)
    job = str(mgr.HashFds(ft.fds(fd), "sha256", o()))
    os.close(fd)
    res = results_of(w, job)
    ft.check(res[0][2] == good_sha, f"fd closed by the caller after the call: {res[0]}")
    ok("closed fd")

    # Paths.
    expect(INVALID, ["paths[1]", "not an absolute path", "relative/file"], mgr.HashPaths, [good, "relative/file"],
           "sha256", o())
    expect(INVALID, ["paths[0]", "not an absolute path"], mgr.HashPaths, [""], "sha256", o())
    expect(INVALID, ["paths[0]", "4095 bytes"], mgr.HashPaths, ["/" + "x" * (10 << 20)], "sha256", o())
    os.symlink(good, os.path.join(tmp, "link"))
    os.symlink("dangling-target", os.path.join(tmp, "dangling"))
    os.symlink("loop", os.path.join(tmp, "loop"))
    inputs = [os.path.join(tmp, "no-such-file"), os.path.join(tmp, "..", os.path.basename(tmp), "good"),
              os.path.join(tmp, "link"), os.path.join(tmp, "dangling"), os.path.join(tmp, "loop"), tmp,
              good + "/not-a-dir"]
    job = str(mgr.HashPaths(inputs, "sha256", o()))
    res = results_of(w, job)
    ft.check(res[0][3].startswith(ERR + "NotFound: "), f"non-existent path: {res[0]}")
    ft.check(res[1][2] == good_sha and res[1][0] == inputs[1], f"path with '..' (root caller): {res[1]}")
    ft.check(res[2][2] == good_sha, f"symlink to a file (root caller): {res[2]}")
    ft.check(res[3][3].startswith(ERR + "NotFound: "), f"dangling symlink: {res[3]}")
    ft.check(res[4][2] == "" and res[4][3].startswith(ERR) and "symbolic links" in res[4][3], f"symlink loop: {res[4]}")
    ft.check(res[5][3].startswith(ERR + "NotRegular: "), f"directory path: {res[5]}")
    ft.check(res[6][3].startswith(ERR + "NotFound: "), f"path through a file: {res[6]}")
    ok("paths")

    # Options.
    expect(INVALID, ["options", "unknown option", "frobnicate"], mgr.HashFds, ft.fds(good), "sha256",
           ft.dbus.Dictionary({"frobnicate": ft.dbus.Boolean(True)}, signature="sv"))
    for key, val, want in [("max-size", ft.dbus.String("1"), "t"), ("max-size", ft.dbus.Int64(1), "t"),
                           ("names", ft.dbus.String("x"), "as"), ("expected", ft.dbus.Array([1], signature="i"), "as"),
                           ("dontcache", ft.dbus.UInt32(1), "b")]:
        expect(INVALID, ["options", f'"{key}"', f"'{want}'"], mgr.HashFds, ft.fds(good), "sha256",
               ft.dbus.Dictionary({key: val}, signature="sv"))
    expect(INVALID, ['"names"', "2 entries", "1 inputs"], mgr.HashFds, ft.fds(good), "sha256", o(names=["a", "b"]))
    # An empty array is "0 entries", not "no option" (sd-bus reads an empty array as NULL).
    for key in ("expected", "names"):
        expect(INVALID, [f'"{key}"', "0 entries"], mgr.HashPaths, [good], "sha256",
               o(**{key: ft.dbus.Array([], signature="s")}))
    expect(INVALID, ["expected[0]", "64-digit hex sha256"], mgr.HashFds, ft.fds(good), "sha256", o(expected=["abc"]))
    expect(INVALID, ["expected[0]"], mgr.HashFds, ft.fds(good), "md5", o(expected=["g" * 32]))
    expect(INVALID, ["expected[0]"], mgr.HashFds, ft.fds(good), "sha256", o(expected=[good_sha + "00"]))
    # A wrong expected digest of the right form is a per-file Mismatch, not a call error.
    job = str(mgr.HashFds(ft.fds(good, good), "sha256", o(expected=["0" * 64, good_sha.upper()])))
    res = results_of(w, job)
    ft.check(res[0][3].startswith(ERR + "Mismatch"), f"wrong expected digest: {res[0]}")
    ft.check(res[1][3] == "" and res[1][2] == good_sha, f"upper-case expected digest: {res[1]}")
    ok("options")

    # Parameters: "length" (bits), "key" (32 bytes), "derive-key"; against the algorithm.
    D, U, Y = ft.dbus.Dictionary, ft.dbus.UInt32, ft.dbus.Byte

    def po(**kw):
        return D({k.replace("_", "-"): v for k, v in kw.items()}, signature="sv")

    key32 = ft.dbus.Array([Y(i) for i in range(32)], signature="y")
    for algo, opts, want in [
        ("sha256", po(length=U(128)), ['sha256 takes no "length"']),
        ("blake3", po(length=U(12)), ['"length"', "multiple of 8"]),
        ("blake3", po(length=U(0)), ['"length"', "multiple of 8"]),
        ("blake2s", po(length=U(512)), ['"length"', "at most 256 bits"]),
        ("blake3", po(length=U(4096)), ['"length"', "at most 512 bits"]),
        ("blake3", po(key=ft.dbus.Array([Y(1)] * 31, signature="y")), ['"key"', "32 bytes, not 31"]),
        ("blake2b", po(key=key32), ['blake2b takes no "key"']),
        ("md5", po(derive_key="ctx"), ['md5 takes no "derive-key"']),
        ("blake3", po(key=key32, derive_key="ctx"), ['"key" and "derive-key" exclude each other']),
        ("blake3", po(derive_key="c" * 5000), ['"derive-key" is longer than']),
        ("blake3", po(length=ft.dbus.UInt64(256)), ['"length"', "'u'"]),
        ("blake2b", po(length=U(256), expected=["ab" * 64]), ["expected[0]", "64-digit hex blake2b"]),
    ]:
        expect(INVALID, want, mgr.HashFds, ft.fds(good), algo, opts)
    data = b"good input\n"
    want2b = hashlib.blake2b(data, digest_size=32).hexdigest()
    job = str(mgr.HashFds(ft.fds(good), "blake2b", po(length=U(256), expected=[want2b], more=True)))
    # AddFds checks expected digests against the job's length, and takes no parameters itself.
    expect(INVALID, ["expected[0]", "64-digit"], ft.job_iface(conn, job).AddFds, ft.fds(good), o(expected=["ab" * 64]))
    expect(INVALID, ['"length"', "cannot be given to this call"], ft.job_iface(conn, job).AddFds, ft.fds(good),
           po(length=U(128)))
    ft.job_iface(conn, job).AddFds(ft.fds(good), o(expected=[want2b]))
    ft.job_iface(conn, job).Close()
    res = results_of(w, job)
    ft.check([r[2] for r in res] == [want2b, want2b] and all(r[3] == "" for r in res),
             f"blake2b length 256 with expected digests: {res}")
    ok("parameters")

    # Algorithms.
    for algo in ("", "SHA256x", "sha-256", "md4", "x" * (10 << 20)):
        msg = expect(INVALID, ["algorithm", "unknown algorithm"], mgr.HashFds, ft.fds(good), algo, o())
        if len(msg) > 4096:
            ft.log(f"note: the error for a {len(algo)}-byte algorithm echoes it whole ({len(msg)} bytes)")
    expect(INVALID, ["algorithm"], mgr.HashPaths, [good], "nope", o())
    ok("algorithms")

    # 10 MB strings elsewhere: an option key, a name.
    big = "n" * (10 << 20)
    expect(INVALID, ["unknown option"], mgr.HashFds, ft.fds(good), "sha256",
           ft.dbus.Dictionary({big: ft.dbus.Boolean(True)}, signature="sv"))
    # Names are capped at 4095 bytes (issue 13, H2: 2,000 such names made a 32 MiB reply).
    expect(INVALID, ["names", "4095 bytes"], mgr.HashFds, ft.fds(good), "sha256", o(names=[big]))
    longest = "é" * 2047 + "n"
    job = str(mgr.HashFds(ft.fds(good), "sha256", o(names=[longest])))
    res = results_of(w, job)
    ft.check(res[0][2] == good_sha and res[0][0] == longest, "4095-byte name: not reported back whole")
    ok("10 MB strings")

    # Properties and objects.
    P = ft.PROPS_IFACE
    expect("org.freedesktop.DBus.Error.UnknownProperty", ["Nope"], call, conn, ft.MANAGER_PATH, P, "Get", "ss", [M, "Nope"])
    expect("org.freedesktop.DBus.Error.PropertyReadOnly", ["ActiveJobs"], call, conn, ft.MANAGER_PATH, P, "Set",
           "ssv", [M, "ActiveJobs", ft.dbus.UInt32(0)])
    expect(INVALID, ["interface", "member"], call, conn, ft.MANAGER_PATH, P, "Get", "s", [M])
    expect("org.freedesktop.DBus.Error.UnknownMethod", ["Frob"], call, conn, ft.MANAGER_PATH, M, "Frob", "", [])
    expect("org.freedesktop.DBus.Error.UnknownObject", ["/org/fhash/Hasher1/job/999999"], call, conn,
           ft.FHASH_JOB_PREFIX + "/999999", ft.JOB_IFACE, "Cancel", "", [])
    for bad in ("0", "01", "18446744073709551616", "abc"):
        expect("org.freedesktop.DBus.Error.UnknownObject", [bad], call, conn, ft.FHASH_JOB_PREFIX + "/" + bad,
               ft.JOB_IFACE, "GetResults", "", [])
    expect(INVALID, ["'s'", "''"], call, conn, canary.job, ft.JOB_IFACE, "Cancel", "s", ["now"])
    expect(INVALID, ["'u'"], call, conn, canary.job, ft.JOB_IFACE, "GetResults", "u", [1])
    expect("org.freedesktop.DBus.Error.PropertyReadOnly", ["State"], call, conn, canary.job, P, "Set", "ssv",
           [ft.JOB_IFACE, "State", "done"])
    ok("properties and objects")
    ft.log(f"ok: {n} groups of bad calls answered with precise errors naming the argument")


def test_unbounded_paths(conn, w, mgr, tmp):
    """Paths to unbounded or blocking inputs: refused or capped, never an endless job."""
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    os.chmod(fifo, 0o644)
    for what, path, opts in [("/dev/zero by path", "/dev/zero", ft.options()),
                             ("a FIFO without a writer by path", fifo, ft.options(max_size=1 << 20))]:
        job = str(mgr.HashPaths([path], "sha256", opts))
        w.iterate_until(lambda: job in w.finished, 5)
        if job in w.finished:
            res = w.results[job][0]
            ft.check(res[2] == "" and res[3].startswith(ERR), f"{what}: {res}")
            ft.log(f"ok: {what}: {res[3]}")
        else:
            ft.fail(f"HashPaths of {what} (options {dict(opts)}) still running after 5 s; "
                    "it should end NotRegular or TooLarge")


# ---------------------------------------------------------------------------------------------
# Fuzzing client

BASIC = "ybnqiuxtdsogh"


def rand_sig(rnd, depth=0):
    k = rnd.random()
    if depth > 2 or k < 0.55:
        return rnd.choice(BASIC)
    if k < 0.75:
        return "a" + rand_sig(rnd, depth + 1)
    if k < 0.85:
        return "a{" + rnd.choice("sus") + rand_sig(rnd, depth + 1) + "}"
    if k < 0.93:
        return "(" + "".join(rand_sig(rnd, depth + 1) for _ in range(rnd.randint(1, 3))) + ")"
    return "v"


def split_sig(sig):
    """The complete types of a signature."""
    out, i = [], 0
    while i < len(sig):
        j = i
        while sig[j] == "a":
            j += 1
        if sig[j] in "({":
            depth, j = 0, j
            while True:
                if sig[j] in "({":
                    depth += 1
                elif sig[j] in ")}":
                    depth -= 1
                j += 1
                if depth == 0:
                    break
        else:
            j += 1
        out.append(sig[i:j])
        i = j
    return out


def count_fds(v):
    import dbus
    if isinstance(v, dbus.types.UnixFd):
        return 1
    if isinstance(v, dict):
        return sum(count_fds(k) + count_fds(x) for k, x in v.items())
    if isinstance(v, (list, tuple)):
        return sum(count_fds(x) for x in v)
    return 0


class Fuzzer:
    def __init__(self, seed, files, fds):
        self.rnd = random.Random(seed)
        self.files = files
        self.fd_pool = fds  # readable fds of every kind
        self.budget = 0

    def string(self):
        rnd = self.rnd
        k = rnd.random()
        if k < 0.25:
            return rnd.choice(ft.ALGORITHMS + ["", "sha", "names", "expected", "max-size", "dontcache"])
        if k < 0.5:
            return rnd.choice(self.files + ["/", "/nonexistent", "relative", "/dev/null", "/proc/self/status"])
        if k < 0.6:
            return "\u00e9\u4e2d" * rnd.randint(0, 50)
        if k < 0.65 and self.budget > 0:
            n = rnd.randint(1000, 300000)
            self.budget -= n
            return "z" * n
        return "".join(rnd.choice("abc/-.0129 ") for _ in range(rnd.randint(0, 40)))

    def value(self, t):
        import dbus
        rnd = self.rnd
        if t == "y":
            return dbus.Byte(rnd.randrange(256))
        if t == "b":
            return dbus.Boolean(rnd.random() < 0.5)
        if t in "nqiuxt":
            bits = {"n": 16, "q": 16, "i": 32, "u": 32, "x": 64, "t": 64}[t]
            lo = -(1 << (bits - 1)) if t in "nix" else 0
            hi = (1 << (bits - 1)) - 1 if t in "nix" else (1 << bits) - 1
            v = rnd.choice([lo, hi, 0, 1, rnd.randint(lo, hi)])
            return {"n": dbus.Int16, "q": dbus.UInt16, "i": dbus.Int32, "u": dbus.UInt32, "x": dbus.Int64,
                    "t": dbus.UInt64}[t](v)
        if t == "d":
            return dbus.Double(rnd.choice([0.0, -1.5, 1e308, float("nan"), float("inf")]))
        if t == "s":
            return dbus.String(self.string())
        if t == "o":
            return dbus.ObjectPath(rnd.choice(["/", ft.MANAGER_PATH, ft.FHASH_JOB_PREFIX + "/1", "/a/b"]))
        if t == "g":
            return dbus.Signature(rand_sig(rnd))
        if t == "h":
            return dbus.types.UnixFd(rnd.choice(self.fd_pool))
        if t == "v":
            return self.value(rand_sig(rnd, 2))
        if t.startswith("a{"):
            kt, vt = t[2], t[3:-1]
            n = rnd.choice([0, 1, 2, 5])
            if kt == "s" and vt == "v" and rnd.random() < 0.6:
                keys = ["names", "expected", "max-size", "dontcache", self.string()]
                return dbus.Dictionary({rnd.choice(keys): self.value(rand_sig(rnd, 2)) for _ in range(n)},
                                       signature="sv")
            return dbus.Dictionary({self.value(kt): self.value(vt) for _ in range(n)}, signature=kt + vt)
        if t.startswith("a"):
            inner = t[1:]
            n = rnd.choice([0, 1, 2, 3, 16, 17, 30]) if inner == "h" else rnd.choice([0, 1, 2, 5, 50])
            return dbus.Array([self.value(inner) for _ in range(n)], signature=inner)
        if t.startswith("("):
            return dbus.Struct([self.value(x) for x in split_sig(t[1:-1])], signature=t[1:-1])
        raise ValueError(t)

    def nearly_valid(self, method):
        """The right signature and mostly sane values, so that jobs are created and run."""
        import dbus
        rnd = self.rnd
        n = rnd.randint(1, 4)
        if method == "HashFds":
            first = dbus.Array([dbus.types.UnixFd(rnd.choice(self.fd_pool)) for _ in range(n)], signature="h")
        else:
            first = dbus.Array([rnd.choice(self.files + ["/nonexistent", "/dev/null", "rel"]) for _ in range(n)],
                               signature="s")
        opts = dbus.Dictionary({}, signature="sv")
        for key in rnd.sample(["names", "expected", "max-size", "dontcache"], rnd.randint(0, 2)):
            if key == "names":
                opts[key] = dbus.Array([self.string()[:100] for _ in range(rnd.choice([n, n, n + 1]))], signature="s")
            elif key == "expected":
                opts[key] = dbus.Array([rnd.choice(["", "0" * 64, "zz"]) for _ in range(n)], signature="s")
            elif key == "max-size":
                opts[key] = dbus.UInt64(rnd.choice([0, 1, 4096, 1 << 30]))
            else:
                opts[key] = dbus.Boolean(rnd.random() < 0.5)
        algo = rnd.choice(ft.ALGORITHMS + ["bogus"])
        sig = "ahsa{sv}" if method == "HashFds" else "assa{sv}"
        return ft.MANAGER_PATH, M, method, sig, [first, algo, opts]

    def call(self, job_paths):
        # dbus-daemon disconnects a client whose message carries more fds than the bus allows (64
        # on the test bus, 16 on the system bus): stay within 16, which tests the daemon, not the bus.
        while True:
            c = self._call(job_paths)
            if count_fds(c[4]) <= 16:
                return c

    def _call(self, job_paths):
        rnd = self.rnd
        targets = [
            (ft.MANAGER_PATH, M, "HashFds", "ahsa{sv}"),
            (ft.MANAGER_PATH, M, "HashPaths", "assa{sv}"),
            (ft.MANAGER_PATH, M, "ListJobs", ""),
            (ft.MANAGER_PATH, ft.PROPS_IFACE, "Get", "ss"),
            (ft.MANAGER_PATH, ft.PROPS_IFACE, "GetAll", "s"),
            (ft.MANAGER_PATH, ft.PROPS_IFACE, "Set", "ssv"),
            (ft.MANAGER_PATH, "org.freedesktop.DBus.Introspectable", "Introspect", ""),
            (ft.MANAGER_PATH, M, "Frobnicate", "s"),
            ("JOB", ft.JOB_IFACE, "Cancel", ""),
            ("JOB", ft.JOB_IFACE, "GetResults", ""),
            ("JOB", ft.PROPS_IFACE, "Get", "ss"),
            ("JOB", ft.PROPS_IFACE, "GetAll", "s"),
            ("JOB", ft.PROPS_IFACE, "Set", "ssv"),
        ]
        path, iface, method, sig = rnd.choice(targets)
        self.budget = 1 << 20  # bytes of long strings per call, so nested arrays stay small
        if path == "JOB":
            path = rnd.choice(job_paths + [ft.FHASH_JOB_PREFIX + "/" + str(rnd.randint(0, 10 ** 6))])
        k = rnd.random()
        if k < 0.2 and method in ("HashFds", "HashPaths"):
            return self.nearly_valid(method)
        if k < 0.35:
            sig = "".join(rand_sig(rnd) for _ in range(rnd.randint(0, 4)))  # anything
        elif k < 0.5 and sig:
            types = split_sig(sig)
            types[rnd.randrange(len(types))] = rand_sig(rnd)  # one argument of the wrong type
            sig = "".join(types)
        # else: the right signature with random values
        args = []
        for t in split_sig(sig):
            if t == "s" and method in ("Get", "GetAll", "Set") and not args and rnd.random() < 0.7:
                args.append(rnd.choice([M, ft.JOB_IFACE, "org.nope"]))
            elif t == "s" and method in ("Get", "Set") and len(args) == 1 and rnd.random() < 0.7:
                args.append(rnd.choice(["Version", "ActiveJobs", "State", "Progress", "UID", "Nope"]))
            else:
                args.append(self.value(t))
        return path, iface, method, sig, args


def test_fuzz(bus, d, tmp, n_calls=3000, seed=20240601):
    files = ft.make_files(os.path.join(tmp, "fuzz"), 20, max_size=4096, seed=4)
    devnull = os.open("/dev/null", os.O_RDONLY)
    dirfd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    wonly = os.open(files[0], os.O_WRONLY)
    opath = os.open(files[1], os.O_PATH)
    sock_a, sock_b = socket.socketpair()
    pr, pw = os.pipe()
    os.close(pw)  # a pipe at EOF: a stream that ends
    filefd = os.open(files[2], os.O_RDONLY)
    pool = [devnull, dirfd, wonly, opath, sock_a.fileno(), pr, filefd]
    conn = bus.connect()
    fz = Fuzzer(seed, files, pool)
    answered = {"ok": 0, "err": 0, "bad": []}
    names = {}
    jobs = []
    pending = {"n": 0}
    recent = []
    t0 = time.monotonic()
    for i in range(n_calls):
        path, iface, method, sig, args = fz.call(jobs[-20:])
        recent.append((i, path, method, sig, repr(args)[:300]))

        def reply(*ret, i=i, method=method):
            answered["ok"] += 1
            pending["n"] -= 1
            if method in ("HashFds", "HashPaths") and ret and str(ret[0]).startswith(ft.FHASH_JOB_PREFIX):
                jobs.append(str(ret[0]))

        def error(e, i=i, sig=sig, method=method):
            pending["n"] -= 1
            name = e.get_dbus_name() or ""
            names[name] = names.get(name, 0) + 1
            if name.startswith("org.freedesktop.DBus.Error.") and name not in (
                    "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.ServiceUnknown",
                    "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NameHasNoOwner",
                    "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.Failed",
                    "org.freedesktop.DBus.Error.NoMemory") or name.startswith(ERR):
                answered["err"] += 1
            else:
                answered["bad"].append((i, method, sig, name, e.get_dbus_message()[:200]))
        try:
            conn.call_async(ft.BUS_NAME, path, iface, method, sig, args, reply, error, timeout=30)
            pending["n"] += 1
        except ft.dbus.exceptions.DBusException as e:
            ft.fail(f"fuzz call {i}: {e}; daemon alive: {d.alive()}; last calls: {recent[-3:]}")
        except (ValueError, TypeError, OverflowError) as e:
            # python-dbus refused to marshal it (e.g. NaN is fine, but an invalid UTF-8 mix is not):
            # nothing was sent, so there is nothing to answer.
            names["(not sent: " + type(e).__name__ + ")"] = names.get("(not sent: " + type(e).__name__ + ")", 0) + 1
        if pending["n"] >= 64:
            ft.JobWatcher.iterate_until(lambda: pending["n"] < 32, 60)
    ft.JobWatcher.iterate_until(lambda: pending["n"] == 0, 120)
    dt = time.monotonic() - t0
    log = d.log()
    ft.check(d.alive(), f"fhashd died during fuzzing (first bad answer: {answered['bad'][:1]}):\n{d.log()[-6000:]}")
    ft.check(pending["n"] == 0, f"fuzz: {pending['n']} calls never answered")
    ft.check(not answered["bad"], f"fuzz: unexpected answers, e.g. {answered['bad'][:5]}")
    ft.log(f"ok: fuzz: {n_calls} random calls (seed {seed}) in {dt:.1f} s: {answered['ok']} replies, "
           f"{answered['err']} errors, {len(jobs)} jobs created; error names {sorted(names.items())}")
    # Cancel what the fuzzer left running (a fd of /dev/null etc. with a huge max-size ends by itself).
    for j in jobs:
        try:
            ft.job_iface(conn, j).Cancel()
        except Exception:
            pass
    for x in (devnull, dirfd, wonly, opath, pr, filefd):
        os.close(x)
    sock_a.close()
    sock_b.close()
    conn.close()


def main():
    ft.require()
    if os.geteuid() != 0:
        ft.skip("needs root: HashPaths as root on files anywhere, symlinks and FIFOs checked by path")
    import dbus
    ft.dbus = dbus
    ft.FHASH_JOB_PREFIX = ft.MANAGER_PATH + "/job"
    ft.glib_mainloop()
    n_calls = int(os.environ.get("FHASH_FUZZ_CALLS", "3000"))
    # A mistyped --address is a usage error that says so, not "Protocol not supported" at connect.
    for bad in ("garbage", "unix:", "unix:path=/x;oops"):
        r = subprocess.run([ft.fhashd_path(), "--address", bad], capture_output=True, text=True, timeout=30)
        ft.check(r.returncode == 2 and f'--address: "{bad}" is not a D-Bus address' in r.stderr,
                 f"fhashd --address {bad!r}: exit {r.returncode}, {r.stderr!r}")
    ft.log("ok: fhashd --address with no D-Bus address is a usage error naming it")
    with ft.Bus(anyone=True) as bus:
        tmp = os.path.join(bus.dir, "files")
        os.makedirs(tmp)
        os.chmod(tmp, 0o755)
        with ft.Daemon(bus, "--workers", "2", "--max-jobs-per-uid", "0", "--keep-finished", "2") as d:
            conn = bus.connect()
            w = ft.JobWatcher(conn)
            mgr = ft.manager(conn)
            canary = Canary(mgr)
            canary.feed()
            test_manager_calls(conn, w, mgr, tmp, canary)
            test_unbounded_paths(conn, w, mgr, tmp)
            canary.feed()
            test_fuzz(bus, d, tmp, n_calls)
            canary.feed()
            canary.finish(w)
            ft.log("ok: the concurrent good job hashed everything it was fed, undisturbed")
            # Still correct after all that: a batch by fd and by path, checked against hashlib.
            files = ft.make_files(os.path.join(tmp, "after"), 48, max_size=1 << 18, seed=8)
            jobs = [(str(mgr.HashFds(ft.fds(*files[k:k + 16]), "blake2b", ft.options())), files[k:k + 16])
                    for k in range(0, 48, 16)]
            jp = str(mgr.HashPaths(files, "sha1", ft.options()))
            w.wait([j for j, _ in jobs] + [jp])
            for job, chunk in jobs:
                for i, p in enumerate(chunk):
                    with open(p, "rb") as f:
                        ft.check(w.results[job][i][2] == hashlib.blake2b(f.read()).hexdigest(), f"after: {p}")
            for i, p in enumerate(files):
                with open(p, "rb") as f:
                    ft.check(w.results[jp][i][2] == hashlib.sha1(f.read()).hexdigest(), f"after: {p}")
            ft.log("ok: after the bad input and the fuzzing, 96 digests by fd and path are correct")
            conn.close()
            rc = d.stop()
            log = d.log()
            ft.check(rc == 0, f"fhashd exit status {rc} after SIGTERM:\n{log[-3000:]}")


if __name__ == "__main__":
    main()
