#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-bus-client.py: libfhash's D-Bus client against a scripted fake fhashd on a private bus, one
# that does what a real fhashd never should: replies of the wrong type, results for files it was
# never sent (a hundred thousand at once), signals for jobs that are not the client's, signals of the
# wrong signature, and a daemon that dies in the middle of a run. The client must give the right
# result for every file it can, fail the run with a clear error where it cannot, never hang and
# never hold what it was not sent. The same fake, well behaved, gives the right digests first: what
# the misbehaving runs get is the client's doing.
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
JOB_PATH_PREFIX = "/org/fhash/Hasher1/job"
BUILD = os.environ.get("FHASH_BUILD_ROOT", "")
SRC = os.environ.get("FHASH_SOURCE_ROOT", "")
LIB = os.path.join(BUILD, "src", "libfhash.so.0")

# ---- the fake fhashd (run as `test-bus-client.py --fake MODE ADDRESS`) ------------------------------


def fake(mode, address):
    import dbus
    import dbus.service
    from gi.repository import GLib
    conn = dbus.bus.BusConnection(address, mainloop=ft.glib_mainloop())
    jobs = {}

    def signal(dest, name, sig, *args):
        m = dbus.lowlevel.SignalMessage(ft.MANAGER_PATH, ft.MANAGER_IFACE, name)
        if dest:
            m.set_destination(dest)
        m.append(*args, signature=sig)
        conn.send_message(m)

    def hash_fds(fds):
        out = []
        for fd in fds:
            with os.fdopen(fd.take(), "rb") as f:
                data = f.read()
            out.append((hashlib.sha256(data).hexdigest(), len(data)))
        return out

    def results(path, first, hashed):
        return [(dbus.UInt32(first + i), "", dbus.UInt64(size), digest, "") for i, (digest, size) in enumerate(hashed)]

    def note(what):
        with open(os.environ["FAKE_LOG"], "a") as f:
            print(what, file=f)

    def refuse_packed(options):
        # What an fhashd older than "packed-results" says.
        note(f"packed-results={bool(options.get('packed-results', False))}")
        if mode == "old" and "packed-results" in options:
            raise dbus.exceptions.DBusException(
                'options: unknown option "packed-results" (known: names, expected, max-size, dontcache, more, '
                'strategy, length, key, derive-key, block-size, priority)', name="org.freedesktop.DBus.Error.InvalidArgs")

    def send_results(dest, path, first, hashed, packed):
        if not packed:
            signal(dest, "FilesHashed", "oa(ustss)", dbus.ObjectPath(path), results(path, first, hashed))
            return
        # FilesDigested: the file of 1,000 bytes as a failure in "others"; "bad-packed", a digest byte
        # short.
        ok = [(first + i, d, size) for i, (d, size) in enumerate(hashed) if size != 1000]
        digests = b"".join(bytes.fromhex(d) for _, d, _ in ok)
        if mode == "bad-packed":
            digests = digests[:-1]
        others = [(dbus.UInt32(first + i), "", dbus.UInt64(0), "", "org.fhash.Hasher1.Error.NotRegular: not a regular file")
                  for i, (_, size) in enumerate(hashed) if size == 1000]
        signal(dest, "FilesDigested", "oauauataya(ustss)", dbus.ObjectPath(path), [dbus.UInt32(32)],
               [dbus.UInt32(i) for i, _, _ in ok], [dbus.UInt64(size) for _, _, size in ok],
               dbus.ByteArray(digests), others)

    class Job(dbus.service.Object):
        def __init__(self, path, sender, packed=False):
            super().__init__(conn, path)
            self.path, self.sender, self.n, self.open, self.packed = path, sender, 0, True, packed

        def finish(self):
            signal(self.sender, "JobFinished", "osuu", dbus.ObjectPath(self.path), "done", dbus.UInt32(self.n),
                   dbus.UInt32(0))

        @dbus.service.method(ft.JOB_IFACE, in_signature="aha{sv}", out_signature="u")
        def AddFds(self, fds, options):
            first = self.n
            hashed = hash_fds(fds)
            self.n += len(hashed)
            more = bool(options.get("more", False))

            def later():
                send_results(self.sender, self.path, first, hashed, self.packed)
                if not more:
                    self.finish()
                return False
            GLib.idle_add(later)
            return dbus.UInt32(first)

        @dbus.service.method(ft.JOB_IFACE, in_signature="", out_signature="")
        def Close(self):
            GLib.idle_add(lambda: self.finish() and False)

    class Manager(dbus.service.Object):
        @dbus.service.method(ft.MANAGER_IFACE, in_signature="ahsa{sv}", out_signature="o", sender_keyword="sender")
        def HashFds(self, fds, algo, options, sender=None):
            if mode == "dies":
                # The client's files are taken; the daemon goes before it says anything.
                os._exit(0)
            refuse_packed(options)
            path = f"{JOB_PATH_PREFIX}/{len(jobs) + 1}"
            job = jobs[path] = Job(path, sender, bool(options.get("packed-results", False)) and "packed" in mode)
            hashed = hash_fds(fds)
            job.n = len(hashed)
            more = bool(options.get("more", False))
            if mode == "other-jobs":
                # Another client's jobs, as a real bus delivers them to everybody that matches,
                # before our own reply: the client must keep none of them for long.
                for k in range(2000):
                    other = dbus.ObjectPath(f"{JOB_PATH_PREFIX}/other{k}")
                    signal(None, "FilesHashed", "oa(ustss)", other,
                           [(dbus.UInt32(0), "x", dbus.UInt64(1), "00" * 32, "")])
                    signal(None, "JobFinished", "osuu", other, "cancelled", dbus.UInt32(0), dbus.UInt32(1))

            def later():
                if mode == "huge-array":
                    # Results for 100,000 files never sent (past any index the run will have), then
                    # the real ones.
                    bogus = [(dbus.UInt32(1000000 + i), "", dbus.UInt64(0), "00" * 32, "")
                             for i in range(100000)]
                    signal(sender, "FilesHashed", "oa(ustss)", dbus.ObjectPath(path), bogus)
                if mode == "bad-signal":
                    m = dbus.lowlevel.SignalMessage(ft.MANAGER_PATH, ft.MANAGER_IFACE, "FilesHashed")
                    m.set_destination(sender)
                    m.append(dbus.ObjectPath(path), "not an array", signature="os")
                    conn.send_message(m)
                send_results(sender, path, 0, hashed, job.packed)
                if not more:
                    job.finish()
                return False
            GLib.idle_add(later)
            return dbus.ObjectPath(path)

    class SneakyManager(Manager):
        # HashFds answered with a string where the object path belongs.
        @dbus.service.method(ft.MANAGER_IFACE, in_signature="ahsa{sv}", out_signature="s", sender_keyword="sender")
        def HashFds(self, fds, algo, options, sender=None):
            hash_fds(fds)
            return "/not/an/object/path"

    (SneakyManager if mode == "wrong-signature" else Manager)(conn, ft.MANAGER_PATH)
    conn.request_name(ft.BUS_NAME)
    print("ready", flush=True)
    GLib.MainLoop().run()


# ---- the client, through the Python module (run as `test-bus-client.py --client ADDRESS FILE...`) ----

CLIENT = """
import json, sys, fhash
out = {}
try:
    with fhash.Client(address=sys.argv[1], fallback=False, direct=False) as c:
        rs = c.hash(sys.argv[2:])
    out["results"] = [[r.status, r.digest] for r in rs]
except fhash.Error as e:
    out["error"] = [e.errno, e.name, e.message]
print(json.dumps(out))
"""


def run_client(address, files, timeout=60):
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"), FHASH_LIBRARY=LIB, **ft.sanitizer_env(LIB))
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-c", CLIENT, address] + files, capture_output=True, text=True, env=env,
                       timeout=timeout)
    ft.check(p.returncode == 0, f"the client crashed ({p.returncode}): {p.stderr}")
    return json.loads(p.stdout), time.monotonic() - t0


def fake_log(bus, mode):
    return os.path.join(bus.dir, f"fake-{mode}.log")


def fake_calls(bus, mode):
    with open(fake_log(bus, mode)) as f:
        return f.read().split()


def with_fake(bus, mode, fn):
    p = subprocess.Popen(["/usr/bin/python3", HERE, "--fake", mode, bus.address], stdout=subprocess.PIPE, text=True,
                         env=dict(os.environ, FAKE_LOG=fake_log(bus, mode)))
    try:
        ft.check(p.stdout.readline().strip() == "ready", f"the fake fhashd ({mode}) did not start")
        return fn()
    finally:
        p.kill()
        p.wait()


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--fake":
        fake(*sys.argv[2:])
        return
    ft.require()
    if not os.path.exists(LIB):
        ft.skip(f"libfhash is not built in {BUILD}")
    with ft.Bus() as bus:
        tmp = os.path.join(bus.dir, "files")
        os.makedirs(tmp)
        files, want = [], []
        for i in range(40):
            data = os.urandom(1000 + 37 * i)
            files.append(os.path.join(tmp, f"f{i:02d}"))
            with open(files[-1], "wb") as f:
                f.write(data)
            want.append(["ok", hashlib.sha256(data).hexdigest()])

        out, _ = with_fake(bus, "good", lambda: run_client(bus.address, files))
        ft.check(out.get("results") == want, f"the well-behaved fake: {out}")
        ft.log("ok: the fake fhashd, well behaved: 40 files in one open job (HashFds, AddFds), right digests")

        calls = fake_calls(bus, "good")
        ft.check(calls and set(calls) == {"packed-results=True"}, f"the calls that made jobs asked: {calls}")
        ft.log("ok: libfhash asks for packed results (FilesDigested) in every call that makes a job")

        # An fhashd older than FilesDigested refuses the option: the same call again without it.
        out, _ = with_fake(bus, "old", lambda: run_client(bus.address, files))
        calls = fake_calls(bus, "old")
        ft.check(out.get("results") == want and calls[:2] == ["packed-results=True", "packed-results=False"] and
                 "packed-results=True" not in calls[1:], f"an fhashd without packed-results: {out}, calls {calls}")
        ft.log(f"ok: an fhashd without packed-results: refused once, sent again without it, right digests "
               f"({len(calls)} calls)")

        out, _ = with_fake(bus, "packed", lambda: run_client(bus.address, files))
        got = out.get("results") or []
        ft.check(len(got) == len(files) and got[1:] == want[1:] and got[0][0] == "error",
                 f"FilesDigested with a failure in others: {out}")
        ft.log("ok: FilesDigested's arrays give the right digests, its others the failure")

        out, dt = with_fake(bus, "bad-packed", lambda: run_client(bus.address, files))
        m = re.search(r"fhashd sent a FilesDigested of (\d+) indices, (\d+) sizes and (\d+) digest bytes of 32 each: "
                      r"they do not agree", out["error"][2]) if "error" in out else None
        ft.check(m and m[1] == m[2] and int(m[3]) == 32 * int(m[1]) - 1 and dt < 30,
                 f"a FilesDigested a byte short: {out} ({dt:.1f} s)")
        ft.log(f"ok: a FilesDigested whose arrays disagree fails the run: {out['error']}")

        out, dt = with_fake(bus, "huge-array", lambda: run_client(bus.address, files))
        ft.check(out.get("results") == want and dt < 30, f"results for 100,000 files never sent: {out} ({dt:.1f} s)")
        ft.log(f"ok: 100,000 results for files never sent are dropped; the real ones stand ({dt:.1f} s)")

        out, _ = with_fake(bus, "other-jobs", lambda: run_client(bus.address, files))
        ft.check(out.get("results") == want, f"signals for other jobs: {out}")
        ft.log("ok: 4,000 signals for another client's jobs (one cancelled) change nothing")

        out, _ = with_fake(bus, "bad-signal", lambda: run_client(bus.address, files))
        ft.check(out.get("results") == want, f"a FilesHashed of the wrong signature: {out}")
        ft.log("ok: a FilesHashed of the wrong signature is ignored")

        out, dt = with_fake(bus, "wrong-signature", lambda: run_client(bus.address, files))
        ft.check("error" in out and 'answered HashFds with "s", not "o"' in out["error"][2] and dt < 30,
                 f"a HashFds reply of the wrong type: {out} ({dt:.1f} s)")
        ft.log(f"ok: a HashFds reply of the wrong type fails the run: {out['error'][2]!r}")

        out, dt = with_fake(bus, "dies", lambda: run_client(bus.address, files))
        ft.check("error" in out and out["error"][1] == ft.ERR_PREFIX + "Gone" and dt < 30,
                 f"a daemon that dies in the middle: {out} ({dt:.1f} s)")
        ft.log(f"ok: a daemon that dies in the middle of a run: {out['error'][2]!r} in {dt:.1f} s")

        # fhashctl says the same in its words: it tries to go on (FHASH_HASH_RESUME), but nothing
        # activates another fhashd on this bus and --daemon forbids hashing in-process; its exit code
        # is that of a run aborted part-way, not that of a file that failed.
        def ctl():
            return subprocess.run([ft.fhashctl_path(), "--daemon", "--address", bus.address, "--no-direct", "hash",
                                   *files[:3]], capture_output=True, text=True, timeout=60)
        p = with_fake(bus, "dies", ctl)
        ft.check(p.returncode == 3 and "fhashd went away while hashing and cannot be reached again: fhashd is not "
                 "on the bus" in p.stderr, f"fhashctl with a daemon that dies: exit {p.returncode}, {p.stderr!r}")
        ft.log("ok: fhashctl says fhashd went away and cannot be reached again, exit 3 (aborted)")

        # Without --daemon it goes on in-process with what fhashd never answered, and says so.
        def ctl_fallback():
            return subprocess.run([ft.fhashctl_path(), "--address", bus.address, "--no-direct", "hash", *files],
                                  capture_output=True, text=True, timeout=60)
        p = with_fake(bus, "dies", ctl_fallback)
        ref = subprocess.run(["sha256sum", *files], capture_output=True, text=True)
        ft.check(p.returncode == 0 and p.stdout == ref.stdout and "hashing the rest in-process" in p.stderr,
                 f"fhashctl falling back after fhashd died: exit {p.returncode}, {p.stderr!r}")
        ft.log("ok: without --daemon, fhashctl hashes in-process what the dead fhashd never answered: "
               "output as sha256sum's")


if __name__ == "__main__":
    main()
