#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-resume.py: runs that survive fhashd (issue 27 item 2, FHASH_HASH_RESUME, on in fhashctl).
#
# fhashd is D-Bus activated on a private bus, as on a system with the package installed. While
# `fhashctl --daemon hash -r` hashes a tree of 20,000 small files, the fhashd of the moment is killed
# at a random point: ROUNDS times with SIGKILL (a crash) and ROUNDS times with SIGTERM (a clean stop,
# as `systemctl restart` or a package upgrade does: it cancels its jobs, then exits). The run must
# connect again (activating a new fhashd), send exactly the files without a result, and print what an
# undisturbed run prints, byte for byte, exit 0. Half the rounds pass fds through the bus
# (--no-direct), half on fhashd's direct connection.
#
# Then the C API (tests/integration/libfhash-probe.c) the same way once each, unordered too; and
# without FHASH_HASH_RESUME the documented error: -ECONNRESET, org.fhash.Hasher1.Error.Gone.
#
# $FHASH_RESUME_SEED picks the kill points (printed, to replay a failure); $FHASH_RESUME_ROUNDS the
# rounds per signal (20).
import os
import random
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

FILES = 20000
ROUNDS = int(os.environ.get("FHASH_RESUME_ROUNDS", "20"))
PROBE = os.environ.get("FHASH_PROBE", "")


class Activated:
    """A private bus that activates fhashd (through a wrapper that logs each one's pid and stderr)."""

    def __init__(self, bus_dir):
        self.services = os.path.join(bus_dir, "services")
        self.log = os.path.join(bus_dir, "fhashd-activated.log")
        os.makedirs(self.services)
        wrapper = os.path.join(self.services, "fhashd-wrapper")
        with open(wrapper, "w") as f:
            # --config /dev/null: the host's /etc/fhash does not count; --idle-exit 0: no exit of
            # its own between rounds.
            f.write(f"#!/bin/sh\necho \"started $$\" >> {self.log}\n"
                    f"exec {ft.fhashd_path()} --config /dev/null --workers 2 --idle-exit 0 --log-level info "
                    f"2>> {self.log}\n")
        os.chmod(wrapper, 0o755)
        with open(os.path.join(self.services, "org.fhash.Hasher1.service"), "w") as f:
            f.write(f"[D-BUS Service]\nName={ft.BUS_NAME}\nExec={wrapper}\n")

    def started(self):
        try:
            with open(self.log) as f:
                return sum(1 for line in f if line.startswith("started "))
        except FileNotFoundError:
            return 0

    def tail(self):
        try:
            with open(self.log) as f:
                return "".join(f.readlines()[-40:])
        except FileNotFoundError:
            return ""


def owner_pid(conn):
    """The pid of the fhashd that has the name now, or None (none yet, or it is going)."""
    import dbus
    try:
        return int(conn.call_blocking("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                      "GetConnectionUnixProcessID", "s", (ft.BUS_NAME,)))
    except dbus.exceptions.DBusException:
        return None


def kill_at(conn, proc, at, sig):
    """Waits until `at` (monotonic), then sends sig to the fhashd of that moment; returns how far the
    run was (seconds since its start) or None when the run ended first."""
    while time.monotonic() < at:
        if proc.poll() is not None:
            return None
        time.sleep(0.002)
    # Right after a restart the name may have no owner for a moment: the next one is activated when
    # the run asks for it.
    deadline = time.monotonic() + 5
    while proc.poll() is None:
        pid = owner_pid(conn)
        if pid:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
            return pid
        if time.monotonic() > deadline:
            return None
        time.sleep(0.005)
    return None


def fhashctl(bus, tree, extra=()):
    return subprocess.Popen([ft.fhashctl_path(), "--daemon", "--address", bus.address, *extra, "hash", "-r",
                             os.path.basename(tree)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=os.path.dirname(tree))


def main():
    ft.require()
    import dbus
    seed = int(os.environ.get("FHASH_RESUME_SEED", str(int(time.time()))))
    rnd = random.Random(seed)
    ft.log(f"seed {seed} (FHASH_RESUME_SEED replays it)")
    with ft.Bus() as probe_bus:
        act = Activated(probe_bus.dir)
        with ft.Bus(servicedir=act.services) as bus:
            tmp = ft.files_dir(bus)
            tree = os.path.join(tmp, "tree")
            t0 = time.monotonic()
            ft.make_files(tree, FILES, max_size=512)
            ft.log(f"{FILES} files of 0-512 bytes made in {time.monotonic() - t0:.1f} s")
            want = "".join(f"{ft.sha256_file(os.path.join(tree, n))}  tree/{n}\n" for n in sorted(os.listdir(tree)))
            conn = dbus.bus.BusConnection(bus.address)

            # Undisturbed: the output to compare with, and how long a run takes (where to kill).
            t0 = time.monotonic()
            p = fhashctl(bus, tree)
            out, err = p.communicate(timeout=120)
            took = time.monotonic() - t0
            ft.check(p.returncode == 0 and out.decode() == want,
                     f"undisturbed run: exit {p.returncode}, {err.decode()!r}, {len(out)} bytes of output")
            ft.log(f"undisturbed: {FILES} files through an activated fhashd in {took:.2f} s")

            results = {signal.SIGKILL: [], signal.SIGTERM: []}
            rounds = [sig for sig in (signal.SIGKILL, signal.SIGTERM) for _ in range(ROUNDS)]
            rnd.shuffle(rounds)
            for i, sig in enumerate(rounds):
                extra = ("--no-direct",) if i % 2 else ()
                before = act.started()
                start = time.monotonic()
                # A point of the run: its start (connecting) to its last tenth.
                at = start + rnd.uniform(0.0, 0.9) * took
                p = fhashctl(bus, tree, extra)
                killed = kill_at(conn, p, at, sig)
                try:
                    out, err = p.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    p.kill()
                    ft.fail(f"round {i} ({signal.Signals(sig).name} at {at - start:.2f} s): fhashctl did not "
                            f"end within 120 s\n{act.tail()}")
                out, err = out.decode(), err.decode()
                what = (f"round {i}: {signal.Signals(sig).name} of fhashd {killed} at {at - start:.2f} s"
                        f"{' (--no-direct)' if extra else ''}")
                if out != want:
                    lines, wl = out.splitlines(), want.splitlines()
                    first = next((k for k in range(min(len(lines), len(wl))) if lines[k] != wl[k]), min(len(lines), len(wl)))
                    ft.fail(f"{what}: the output differs from the undisturbed run's from line {first + 1} "
                            f"({len(lines)} lines, not {len(wl)}): {lines[first:first + 2]!r}; exit {p.returncode}, "
                            f"stderr {err!r}\n{act.tail()}")
                ft.check(p.returncode == 0, f"{what}: exit {p.returncode}, stderr {err!r}")
                ft.check(err == "", f"{what}: fhashctl said {err!r}")
                results[sig].append((at - start, killed is not None, act.started() - before))
            for sig, rs in results.items():
                hit = [r for r in rs if r[1]]
                ft.log(f"ok: {signal.Signals(sig).name}: {len(rs)} runs, fhashd killed in {len(hit)} of them "
                       f"at {', '.join(f'{r[0]:.2f}' for r in hit)} s; every output identical to the undisturbed "
                       f"run's, exit 0; {sum(r[2] for r in rs)} fhashds activated again")
            ft.check(all(len([r for r in rs if r[1]]) >= len(rs) * 3 // 4 for rs in results.values()),
                     f"too few rounds killed fhashd before the run ended: {results}")

            if not PROBE or not os.access(PROBE, os.X_OK):
                ft.log("skip: the C API's resume and Gone ($FHASH_PROBE, libfhash-probe.c, is not built)")
                return
            lst = os.path.join(tmp, "list")
            with open(lst, "w") as f:
                f.write("".join(os.path.join(tree, n) + "\n" for n in sorted(os.listdir(tree))))
            want_abs = "".join(f"{line.split('  ', 1)[0]}  {os.path.join(tmp, line.split('  ', 1)[1])}\n"
                               for line in want.splitlines())

            def probe_killed(args, sig, frac):
                start = time.monotonic()
                p = subprocess.Popen([PROBE, "hash", bus.address, *args, lst], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
                killed = kill_at(conn, p, start + frac * took, sig)
                out, err = p.communicate(timeout=120)
                return p.returncode, out.decode(), err.decode(), killed

            for args, sig in ((["--resume", "--no-fallback"], signal.SIGKILL),
                              (["--resume", "--no-fallback", "--no-direct"], signal.SIGTERM),
                              (["--resume", "--no-fallback", "--unordered"], signal.SIGKILL)):
                rc, out, err, killed = probe_killed(args, sig, 0.4)
                got = ("".join(sorted(out.splitlines(keepends=True), key=lambda line: line.split("  ", 1)[-1]))
                       if "--unordered" in args else out)
                ft.check(killed and rc == 0 and got == want_abs,
                         f"C API {' '.join(args)}, {signal.Signals(sig).name} of fhashd {killed}: exit {rc}, "
                         f"{len(out.splitlines())} lines, {err!r}")
                ft.log(f"ok: the C API ({' '.join(args)}): fhashd {killed} got {signal.Signals(sig).name} "
                       "halfway, every result once")

            # Without FHASH_HASH_RESUME: the documented error when fhashd is lost (a crash); a clean stop
            # cancels the job first, and the files it had not hashed are cancelled, as documented.
            rc, out, err, killed = probe_killed(["--no-fallback"], signal.SIGKILL, 0.4)
            ft.check(killed and rc == 3 and "error=-104 name=org.fhash.Hasher1.Error.Gone" in err,
                     f"without resume, SIGKILL of fhashd {killed}: exit {rc}, {err!r}")
            ft.log(f"ok: without FHASH_HASH_RESUME, SIGKILL of fhashd halfway: {err.strip()}")
            rc, out, err, killed = probe_killed(["--no-fallback"], signal.SIGTERM, 0.4)
            lines = out.splitlines()
            bad = [line for line in lines if line.startswith("ERROR") and "ancel" not in line]
            ft.check(killed and ((rc == 3 and "error=-104 name=org.fhash.Hasher1.Error.Gone" in err) or
                                 (rc == 0 and len(lines) == FILES and not bad)),
                     f"without resume, SIGTERM of fhashd {killed}: exit {rc}, {err!r}, {len(lines)} lines, {bad[:3]}")
            ft.log(f"ok: without FHASH_HASH_RESUME, SIGTERM of fhashd halfway: "
                   f"{err.strip() or 'every file not hashed cancelled'}")
            conn.close()
            # Whatever fhashd is left goes with the bus.
            pid = owner_pid(dbus.bus.BusConnection(bus.address))
            if pid:
                os.kill(pid, signal.SIGTERM)


if __name__ == "__main__":
    main()
