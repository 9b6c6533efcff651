#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-ctl-terminal.py: fhashctl as a person meets it (issue 26, item 7). In a real terminal (a
# private tmux server, 40 columns): the progress line stays on one row and leaves nothing behind,
# Ctrl-C wipes it, `hash` with no FILE says it reads standard input. Errors that say what to do: no
# bus, no session bus, a malformed --address, a directory without -r, check from the wrong
# directory, cancel and watch of an unknown job. Through a real fhashd on a private bus: jobs in
# aligned columns with sizes in binary units, watch into a pipe printing while the job runs.
import hashlib
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

COLS, ROWS = 40, 15
PROGRESS = re.compile(r"\d+ files|B/s|%\]")


class Tmux:
    """A tmux server of our own (its socket in tmp), one session COLS x ROWS running one command;
    the pane stays after the command ends, so its last screen can be read."""

    def __init__(self, tmp):
        self.sock = os.path.join(tmp, "tmux.sock")
        self.conf = os.path.join(tmp, "tmux.conf")
        with open(self.conf, "w") as f:
            f.write("set -g remain-on-exit on\nset -g status off\nset -g history-limit 2000\n")

    def tmux(self, *args, check=True):
        r = subprocess.run(["tmux", "-S", self.sock, "-f", self.conf] + list(args), capture_output=True, text=True,
                           timeout=30)
        if check and r.returncode != 0:
            ft.fail(f"tmux {' '.join(args)}: {r.stderr}")
        return r.stdout

    def start(self, cmd, cwd):
        self.tmux("new-session", "-d", "-s", "t", "-x", str(COLS), "-y", str(ROWS), "-c", cwd, cmd)

    def screen(self):
        """The rows of the screen and of what scrolled off it (a dead pane's notice scrolls it by one)."""
        return self.tmux("capture-pane", "-p", "-S", "-", "-t", "t").rstrip("\n").split("\n")

    def dead(self):
        return self.tmux("display-message", "-p", "-t", "t", "#{pane_dead}").strip() == "1"

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "t", *keys)

    def wait(self, what, cond, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen()
            if cond(s):
                return s
            time.sleep(0.05)
        ft.fail(f"{what}: not seen in {timeout} s; the screen:\n" + "\n".join(self.screen()))

    def stop(self):
        self.tmux("kill-server", check=False)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def progress_rows(screen):
    return [row for row in screen if PROGRESS.search(row)]


def make_check_tree(t):
    """Two files and a FIFO listed in SUMS: check hashes the files, then waits on the FIFO with its
    progress line up until something writes to it."""
    os.makedirs(t)
    for name in ("a", "b"):
        with open(os.path.join(t, name), "wb") as f:
            f.write(os.urandom(4 << 20))
    os.mkfifo(os.path.join(t, "f"))
    with open(os.path.join(t, "SUMS"), "w") as f:
        for name in ("a", "b"):
            f.write(f"{sha256(open(os.path.join(t, name), 'rb').read())}  {name}\n")
        f.write(f"{sha256(b'hello')}  f\n")


def test_progress_width(tmp, ctl):
    t = os.path.join(tmp, "width")
    make_check_tree(t)
    tm = Tmux(tmp)
    try:
        tm.start(f"'{ctl}' --local check --progress SUMS; echo EXIT=$?", t)
        tm.wait("a progress line", lambda s: progress_rows(s))
        time.sleep(1.5)  # six redraws or more
        s = tm.screen()
        rows = progress_rows(s)
        ft.check(len(rows) == 1, f"{len(rows)} rows of progress at {COLS} columns:\n" + "\n".join(s))
        ft.check(len(rows[0].rstrip()) < COLS, f"a progress line of {len(rows[0].rstrip())} columns: {rows[0]!r}")
        fd = os.open(os.path.join(t, "f"), os.O_WRONLY)
        os.write(fd, b"hello")
        os.close(fd)
        s = tm.wait("the end of check", lambda s: any(r.startswith("EXIT=") for r in s))
        ft.check("EXIT=0" in s and "a: OK" in s and "f: OK" in s, "check's end:\n" + "\n".join(s))
        ft.check(not progress_rows(s), "progress left on the screen after check:\n" + "\n".join(s))
    finally:
        tm.stop()
    ft.log(f"progress: one row under {COLS} columns, nothing left after the run")


def test_ctrl_c(tmp, ctl):
    t = os.path.join(tmp, "ctrlc")
    make_check_tree(t)
    tm = Tmux(tmp)
    try:
        tm.start(f"'{ctl}' --local check --progress SUMS", t)
        tm.wait("a progress line after b's verdict", lambda s: progress_rows(s) and "b: OK" in s)
        time.sleep(0.5)
        tm.keys("C-c")
        deadline = time.monotonic() + 10
        while not tm.dead() and time.monotonic() < deadline:
            time.sleep(0.05)
        ft.check(tm.dead(), "fhashctl did not end on Ctrl-C")
        s = tm.screen()
        ft.check(not progress_rows(s), "the progress line stayed after Ctrl-C:\n" + "\n".join(s))
        ft.check(any("a: OK" in r for r in s), "check's output before Ctrl-C is gone:\n" + "\n".join(s))
    finally:
        tm.stop()
    ft.log("Ctrl-C: the progress line is wiped")


def test_stdin_note(tmp, ctl):
    tm = Tmux(tmp)
    try:
        tm.start(f"'{ctl}' --local hash", tmp)
        tm.wait("the note that standard input is read", lambda s: any("standard input" in r for r in s))
        tm.keys("abc", "Enter")
        tm.keys("C-d")
        tm.wait("the digest of what was typed", lambda s: sha256(b"abc\n") + "  -" in "".join(s))
    finally:
        tm.stop()
    ft.log("hash at a terminal without FILE: says it reads standard input")


def run(args, cwd=None, env=None, **kw):
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, **kw)


def test_errors(tmp, ctl):
    t = os.path.join(tmp, "errors")
    os.makedirs(os.path.join(t, "x", "sub"))
    os.makedirs(os.path.join(t, "y"))
    for name, data in (("x/a", b"a"), ("x/b", b"b"), ("x/c", b"c"), ("y/a", b"not a")):
        with open(os.path.join(t, name), "wb") as f:
            f.write(data)
    nobus = f"unix:path={t}/no-bus"
    env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=nobus)

    r = run([ctl, "--daemon", "hash", "x/a"], t, env)
    ft.check(r.returncode == 1 and nobus in r.stderr and "--local" in r.stderr and "system bus" in r.stderr,
             f"--daemon without a bus: {r.returncode} {r.stderr!r}")
    r = run([ctl, "hash", "x/a"], t, env)
    ft.check(r.returncode == 0 and nobus in r.stderr and "in-process" in r.stderr, f"fallback note: {r.stderr!r}")

    nosession = {k: v for k, v in env.items() if k not in ("DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR")}
    for mode in (["--user"], ["--user", "--daemon"]):
        r = run([ctl] + mode + ["hash", "x/a"], t, nosession)
        ft.check("medium" not in r.stderr and "DBUS_SESSION_BUS_ADDRESS" in r.stderr and "session bus" in r.stderr,
                 f"{mode} without a session bus: {r.stderr!r}")
        ft.check(r.returncode == (1 if "--daemon" in mode else 0), f"{mode}: exit {r.returncode}")

    for bad in ("garbage", "unix:", "unix:path=/x;oops", "tcp:port=1"):
        r = run([ctl, "--address", bad, "hash", "x/a"], t)
        ft.check(r.returncode == 2 and "not a D-Bus address" in r.stderr and r.stdout == "",
                 f"--address {bad}: {r.returncode} {r.stderr!r} {r.stdout!r}")

    r = run([ctl, "--local", "hash", "x/sub", "x/a"], t)
    ft.check(r.returncode == 1 and "x/sub: Is a directory" in r.stderr and "-r" in r.stderr.split("\n")[-2],
             f"a directory without -r: {r.stderr!r}")

    r = run([ctl, "--local", "hash", "a", "b", "c"], os.path.join(t, "x"))
    with open(os.path.join(t, "x", "SUMS"), "w") as f:
        f.write(r.stdout)
    r = run([ctl, "--local", "check", "../x/SUMS"], os.path.join(t, "y"))
    ft.check(r.returncode == 1 and "try -a" not in r.stderr and "run check there" in r.stderr,
             f"check from the wrong directory: {r.stderr!r}")
    ft.log("errors: no bus, no session bus, bad --address, a directory, the wrong directory")


def test_daemon(tmp, ctl):
    if not shutil.which("dbus-daemon"):
        ft.log("dbus-daemon is not installed: jobs and watch not tested")
        return
    ft.require()
    with ft.Bus() as bus:
        with ft.Daemon(bus, "--workers", "2"):
            a = ["--address", bus.address]
            for verb in ("cancel", "watch"):
                r = run([ctl] + a + [verb, "999999"])
                ft.check(r.returncode == 1 and "no job 999999" in r.stderr and "org.freedesktop" not in r.stderr
                         and "Unknown object" not in r.stderr, f"{verb} of an unknown job: {r.stderr!r}")
                r = run([ctl] + a + [verb, "not a job"])
                ft.check(r.returncode == 1 and "is not a job" in r.stderr, f"{verb} 'not a job': {r.stderr!r}")

            # A job that waits on a FIFO, with a finished one beside it.
            fifo = os.path.join(bus.dir, "fifo")
            os.mkfifo(fifo)
            big = os.path.join(bus.dir, "big")
            with open(big, "wb") as f:
                f.write(os.urandom(3 << 20))
            r = run([ctl] + a + ["hash", big])
            ft.check(r.returncode == 0, f"hash through fhashd: {r.stderr!r}")
            hasher = subprocess.Popen([ctl] + a + ["hash", fifo], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            writer = os.open(fifo, os.O_WRONLY)
            # A byte, then nothing: the job waits in fhashd (libfhash hands fhashd a FIFO once it has
            # data or its writer went; before, it waits in fhashctl's loop, with no job).
            os.write(writer, b"x")
            job = None
            deadline = time.monotonic() + 10
            while not job and time.monotonic() < deadline:
                out = run([ctl] + a + ["jobs"]).stdout
                m = re.search(r"^(\S+)\s+running", out, re.M)
                job = m.group(1) if m else None
                time.sleep(0.05)
            ft.check(job, f"no running job in jobs: {out!r}")
            lines = out.rstrip("\n").split("\n")
            head = lines[0]
            ft.check(len(lines) >= 3, f"jobs: {out!r}")
            for line in lines:
                ft.check(len(line) == len(head) and not line.endswith(" "), f"jobs' columns not aligned:\n{out}")
                cols = re.split(r"  +", line.strip())
                ft.check(len(cols) == 5, f"jobs: 5 columns expected:\n{out}")
            for word in ("STATE", "ALGORITHM"):
                at = head.index(word)
                ft.check(all(line[at - 1] == " " and line[at] != " " for line in lines[1:]),
                         f"jobs: {word} not aligned:\n{out}")
            ft.check(re.search(r"3\.0 MiB/3\.0 MiB$", out, re.M) and "3145728" not in out,
                     f"jobs: sizes not in binary units:\n{out}")

            # watch into a pipe: the first line while the job still runs.
            watcher = subprocess.Popen([ctl] + a + ["watch", job], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            ready, _, _ = select.select([watcher.stdout], [], [], 10)
            ft.check(ready, "watch into a pipe printed nothing while the job ran")
            first = watcher.stdout.readline().decode()
            ft.check(f"/job/{job}: running, 0/1 files" in first, f"watch's first line: {first!r}")
            os.write(writer, b"hello")
            os.close(writer)
            out, err = watcher.communicate(timeout=30)
            ft.check(watcher.returncode == 0 and re.search(r": done, 1/1 files, 6 B/6 B$", out.decode(), re.M),
                     f"watch's end: {watcher.returncode} {out!r} {err!r}")
            out, err = hasher.communicate(timeout=30)
            ft.check(out.decode().startswith(sha256(b"xhello")), f"the hash of the FIFO: {out!r} {err!r}")
    ft.log("jobs aligned in binary units; watch into a pipe as the job runs; unknown jobs said so")


def main():
    ctl = ft.fhashctl_path()
    tmp = tempfile.mkdtemp(prefix="fhash-term-", dir="/var/tmp")
    try:
        test_errors(tmp, ctl)
        if shutil.which("tmux"):
            test_progress_width(tmp, ctl)
            test_ctrl_c(tmp, ctl)
            test_stdin_note(tmp, ctl)
        else:
            ft.log("SKIP (in part): tmux is not installed: the terminal tests did not run")
        test_daemon(tmp, ctl)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not shutil.which("tmux"):
        ft.skip("tmux is not installed: the terminal half of this test did not run")


if __name__ == "__main__":
    main()
