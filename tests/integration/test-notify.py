#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-notify.py: fhashd speaks the sd_notify protocol and exits when idle, never while working.
#
# fhashd runs on a private dbus-daemon with NOTIFY_SOCKET pointing at a datagram socket this test
# binds, the way systemd runs a Type=notify service:
#   1. READY=1 and STATUS= arrive; WATCHDOG=1 keeps arriving while WATCHDOG_USEC is set; SIGTERM
#      brings STOPPING=1 and exit status 0.
#   2. With --idle-exit 2 and nothing to do, it exits (status 0, STOPPING=1) after about 2 s.
#   3. With --idle-exit 2 and a job reading a pipe this test keeps open, it is still alive well past
#      2 s; once the pipe is closed, the job finishes and the client leaves, it exits.
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

IDLE = 2.0


def skip(msg):
    print(f"SKIP: {msg}")
    sys.exit(77)


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


try:
    import dbus
except ImportError:
    skip("python3-dbus is not installed for /usr/bin/python3")

FHASHD = os.environ.get("FHASHD", "")
if not FHASHD or not os.access(FHASHD, os.X_OK):
    skip("$FHASHD is not set or not executable")
if subprocess.run([FHASHD, "--version"], capture_output=True).returncode != 0:
    skip(f"{FHASHD} is not a working daemon yet (--version failed)")
for prog in ("dbus-daemon",):
    if not any(os.access(os.path.join(d, prog), os.X_OK) for d in os.environ.get("PATH", "").split(":")):
        skip(f"{prog} is not installed")

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


class Notify:
    """The receiving end of NOTIFY_SOCKET: a datagram socket, like systemd's."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.bind(path)
        self.messages = []  # every datagram, in order, as {KEY: VALUE} lists

    def poll(self, timeout):
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(65536)
        except (socket.timeout, BlockingIOError):
            return None
        fields = {}
        for line in data.decode("utf-8", "replace").split("\n"):
            if "=" in line:
                k, v = line.split("=", 1)
                fields[k] = v
        self.messages.append(fields)
        return fields

    def wait_for(self, key, value=None, timeout=10.0, proc=None):
        """Returns the first message (seen before or arriving within timeout) carrying key (=value)."""
        for m in self.messages:
            if key in m and (value is None or m[key] == value):
                return m
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self.poll(min(0.2, deadline - time.monotonic()))
            if m is not None and key in m and (value is None or m[key] == value):
                return m
            if m is None and proc is not None and proc.poll() is not None and key != "STOPPING":
                break
        return None

    def count(self, key):
        return sum(1 for m in self.messages if key in m)

    def drain(self, seconds):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.poll(deadline - time.monotonic())


def start_bus(tmp):
    path = os.path.join(tmp, "bus")
    conf = os.path.join(tmp, "bus.conf")
    with open(conf, "w") as f:
        f.write(BUS_CONFIG.format(path=path))
    proc = subprocess.Popen(["dbus-daemon", "--nofork", "--nopidfile", f"--config-file={conf}"],
                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "dbus.log"), "w"))
    for _ in range(100):
        if os.path.exists(path):
            return proc, f"unix:path={path}"
        time.sleep(0.05)
    proc.kill()
    skip("dbus-daemon did not start (see dbus.log)")


def start_daemon(tmp, address, notify, extra, watchdog_usec=None):
    env = dict(os.environ)
    env.pop("DBUS_STARTER_ADDRESS", None)
    env["NOTIFY_SOCKET"] = notify.path
    argv = [FHASHD, "--address", address, "--workers", "2", "--config", "/dev/null"] + extra
    if watchdog_usec:
        # WATCHDOG_PID must be the daemon's pid, known only once it runs: let a shell set it and exec.
        env["WATCHDOG_USEC"] = str(watchdog_usec)
        argv = ["/bin/sh", "-c", 'WATCHDOG_PID=$$ exec "$@"', "sh"] + argv
    log = open(os.path.join(tmp, "fhashd.log"), "a")
    return subprocess.Popen(argv, env=env, stdout=log, stderr=log)


def show_log(tmp):
    try:
        with open(os.path.join(tmp, "fhashd.log")) as f:
            sys.stdout.write("--- fhashd log ---\n" + f.read() + "--- end ---\n")
    except OSError:
        pass


def wait_exit(proc, timeout):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def check_ready(tmp, notify, proc):
    m = notify.wait_for("READY", "1", timeout=15, proc=proc)
    if m is None:
        show_log(tmp)
        fail(f"no READY=1 within 15 s (exit status {proc.poll()}; got {notify.messages})")
    print(f"ok: READY=1 ({m})")
    if notify.wait_for("STATUS", timeout=5) is None:
        fail(f"no STATUS= line (got {notify.messages})")
    print(f"ok: STATUS={notify.wait_for('STATUS')['STATUS']}")


def test_ready_watchdog_stopping(tmp, address):
    notify = Notify(os.path.join(tmp, "notify1"))
    proc = start_daemon(tmp, address, notify, ["--idle-exit", "0"], watchdog_usec=600000)
    try:
        check_ready(tmp, notify, proc)
        notify.drain(2.0)
        n = notify.count("WATCHDOG")
        # sd-event pings at half of WATCHDOG_USEC: about 6 in 2 s; 3 leaves room for a slow machine.
        if n < 3:
            fail(f"only {n} WATCHDOG=1 in 2 s with WATCHDOG_USEC=600000")
        print(f"ok: {n} WATCHDOG=1 in 2 s")
        proc.send_signal(signal.SIGTERM)
        rc = wait_exit(proc, 10)
        if rc is None:
            fail("still running 10 s after SIGTERM")
        if notify.wait_for("STOPPING", "1", timeout=1) is None:
            fail(f"no STOPPING=1 after SIGTERM (got {notify.messages[-5:]})")
        if rc != 0:
            show_log(tmp)
            fail(f"exit status {rc} after SIGTERM, expected 0")
        print("ok: SIGTERM -> STOPPING=1, exit 0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_idle_exit(tmp, address):
    notify = Notify(os.path.join(tmp, "notify2"))
    proc = start_daemon(tmp, address, notify, ["--idle-exit", str(int(IDLE))])
    try:
        check_ready(tmp, notify, proc)
        ready_at = time.monotonic()
        rc = wait_exit(proc, IDLE + 8)
        elapsed = time.monotonic() - ready_at
        if rc is None:
            fail(f"idle daemon still running {IDLE + 8:.0f} s after READY with --idle-exit {IDLE:.0f}")
        if rc != 0:
            show_log(tmp)
            fail(f"idle exit with status {rc}, expected 0")
        if elapsed < IDLE - 0.5:
            fail(f"exited after {elapsed:.1f} s, before the idle time of {IDLE:.0f} s")
        if notify.wait_for("STOPPING", "1", timeout=1) is None:
            fail("idle exit without STOPPING=1")
        print(f"ok: idle exit after {elapsed:.1f} s with STOPPING=1, status 0")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def job_state(bus, job):
    obj = bus.get_object("org.fhash.Hasher1", job)
    return str(obj.Get("org.fhash.Hasher1.Job", "State", dbus_interface="org.freedesktop.DBus.Properties"))


def test_no_idle_exit_while_working(tmp, address):
    notify = Notify(os.path.join(tmp, "notify3"))
    proc = start_daemon(tmp, address, notify, ["--idle-exit", str(int(IDLE))])
    rfd, wfd = os.pipe()
    bus = None
    try:
        check_ready(tmp, notify, proc)
        bus = dbus.bus.BusConnection(address)
        mgr = dbus.Interface(bus.get_object("org.fhash.Hasher1", "/org/fhash/Hasher1"),
                             "org.fhash.Hasher1.Manager")
        os.write(wfd, b"first part\n")
        # A stream has no size to stop at, so fhashd takes one only with a "max-size" bound.
        opts = dbus.Dictionary({"max-size": dbus.UInt64(1 << 30), "names": dbus.Array(["pipe"], signature="s")},
                               signature="sv")
        job = mgr.HashFds([dbus.types.UnixFd(rfd)], "sha256", opts)
        os.close(rfd)
        rfd = -1
        print(f"ok: job {job} hashing a pipe that stays open")

        # Well past the idle time, the daemon must still be there and the job unfinished.
        deadline = time.monotonic() + IDLE * 2 + 1
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                show_log(tmp)
                fail(f"daemon exited (status {proc.returncode}) while a job was running")
            os.write(wfd, b"more\n")
            notify.drain(0.25)
        state = job_state(bus, job)
        if state not in ("queued", "running"):
            fail(f"job state {state!r} while its pipe is still open")
        print(f"ok: alive {IDLE * 2 + 1:.0f} s into a running job (idle time {IDLE:.0f} s), job {state}")
        # STATUS= carries live counters while working ("1 jobs, ... files queued, ... /s").
        busy = [m["STATUS"] for m in notify.messages if "job" in m.get("STATUS", "").lower()]
        if not busy:
            fail(f"no STATUS= with job counters while a job ran (got {notify.messages})")
        print(f"ok: STATUS={busy[-1]}")

        os.close(wfd)
        wfd = -1
        for _ in range(100):
            state = job_state(bus, job)
            if state not in ("queued", "running"):
                break
            time.sleep(0.1)
        if state != "done":
            fail(f"job ended {state!r} after the pipe was closed, expected 'done'")
        print("ok: job done once the pipe was closed")
        # The finished job stays (for GetResults) while its owner is connected; leaving drops it.
        bus.close()
        bus = None
        left_at = time.monotonic()
        rc = wait_exit(proc, IDLE + 8)
        if rc is None:
            fail(f"daemon still running {IDLE + 8:.0f} s after the last job and client were gone")
        if rc != 0:
            show_log(tmp)
            fail(f"idle exit with status {rc}, expected 0")
        print(f"ok: idle exit {time.monotonic() - left_at:.1f} s after the client left")
    finally:
        for fd in (rfd, wfd):
            if fd >= 0:
                os.close(fd)
        if bus is not None:
            bus.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main():
    with tempfile.TemporaryDirectory(prefix="fhash-notify-") as tmp:
        bus_proc, address = start_bus(tmp)
        try:
            test_ready_watchdog_stopping(tmp, address)
            test_idle_exit(tmp, address)
            test_no_idle_exit_while_working(tmp, address)
        finally:
            bus_proc.terminate()
            bus_proc.wait()
    print("PASS")


if __name__ == "__main__":
    main()
