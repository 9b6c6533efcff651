#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-client-loop.py: issue 27's bugs of libfhash's non-blocking API, through a real fhashd on a
# private bus and in-process, each as the integrator met it (tests/integration/libfhash-probe.c is the
# integrator's loop):
#   B1  fhash_run_process() (documented non-blocking) held the loop in open() on a FIFO for as long as
#       its writer took; and in-process, a writer already waiting for a reader lost its data (EPIPE)
#       and the run waited for ever. Now no call holds the loop, and the digest is that of what the
#       writer wrote, whichever comes first.
#   B3  a cancelled run fed by a source pulled the source to its end (a walk of millions of entries
#       just to hand out ECANCELED). Now the source is not called again.
#   B9  fhash_run_get_timeout() woke an idle loop 10 times a second. Now only a reason to wake does.
#   B6  with no bus (no fallback) the error was name "" and a message that named neither fhashd nor
#       what to do; now org.fhash.Hasher1.Error.NotReachable and "cannot reach fhashd: no bus at ...".
#   B7  a bus that refuses the user read "Transport endpoint is not connected"; now it says the bus
#       refused the connection, and whose.
#   B8  two runs of one client at once work, as the documents now say (test-doc-names.py holds the
#       documents to it).
import os
import pwd
import shutil
import subprocess
import sys
import hashlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

PROBE = os.environ.get("FHASH_PROBE", "")
# A call that holds the loop longer than this is one that waited for the FIFO's writer (it comes
# after 1.5 s, libfhash-probe.c's WRITER_LATE_USEC): starting the engine or a bus round trip takes a
# few ms, up to ~400 ms with 10 processes on 2 cores.
HOLD_MAX_MS = 1000
IDLE_SECONDS = 2.0


def probe(*args, timeout=60, user=None):
    cmd = [PROBE, *args]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={pwd.getpwnam(user).pw_gid}", "--clear-groups"] + cmd
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        ft.fail(f"libfhash-probe {' '.join(args)} did not end within {timeout} s")
    # The last line's key=value words; a message (last) is the rest of the line.
    line = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
    head, _, message = line.partition("message=")
    words = dict(w.split("=", 1) for w in head.split() if "=" in w)
    if _:
        words["message"] = message
    return p.returncode, words, p.stderr


def test_fifo(where, what, tmp):
    data = "data written late"
    want = hashlib.sha256(data.encode()).hexdigest()
    for writer_first in (0, 1):
        fifo = os.path.join(tmp, f"fifo-{what}-{writer_first}")
        os.mkfifo(fifo)
        rc, w, err = probe("fifo", where, fifo, str(writer_first), data)
        ft.check(rc == 0 and w.get("r") == "0", f"B1 {what}: the FIFO run failed: {rc} {w} {err}")
        ft.check(float(w["longest_ms"]) < HOLD_MAX_MS,
                 f"B1 {what}: a call held the loop {w['longest_ms']} ms (writer {'first' if writer_first else 'late'})")
        ft.check(w["writer"] == "0", f"B1 {what}: the FIFO's writer failed ({w['writer']}: EPIPE is 141)")
        ft.check(w["digest"] == want, f"B1 {what}: digest {w['digest']}, not that of what was written")
        ft.log(f"ok: B1 {what}: a FIFO whose writer comes {'first' if writer_first else 'late'}: the longest call "
               f"held the loop {w['longest_ms']} ms, the digest is that of the data")


def test_cancel_source(where, what, tmp):
    f = os.path.join(tmp, "small")
    with open(f, "wb") as fh:
        fh.write(b"x" * 100)
    n = 300000
    rc, w, err = probe("cancel-source", where, f, str(n))
    ft.check(rc == 0 and w.get("r") == "0", f"B3 {what}: {rc} {w} {err}")
    pulled, results = int(w["pulled"]), int(w["results"])
    ft.check(pulled < n // 4, f"B3 {what}: cancelled at its first result, the run pulled {pulled} of {n} inputs")
    ft.check(results == pulled, f"B3 {what}: {pulled} inputs pulled, {results} results")
    ft.log(f"ok: B3 {what}: cancelled at the first result, the run pulled {pulled} of {n} inputs, each answered "
           f"({w['ms']} ms)")


def test_idle(where, what):
    rc, w, err = probe("idle", where, str(IDLE_SECONDS))
    ft.check(rc == 0, f"B9 {what}: {rc} {w} {err}")
    wakeups = int(w["wakeups"])
    # The loop's own end (a poll that returns at the probe's deadline) is one.
    ft.check(wakeups <= 2, f"B9 {what}: an idle run woke its loop {wakeups} times in {IDLE_SECONDS} s")
    ft.log(f"ok: B9 {what}: an idle run (a pipe without data) woke its loop {wakeups} times in {IDLE_SECONDS} s")


def test_messages(bus, tmp):
    nobus = f"unix:path={tmp}/no-such-socket"
    rc, w, _ = probe("connect", nobus)
    ft.check(rc == 3 and w.get("name") == ft.ERR_PREFIX + "NotReachable" and "fhashd" in w.get("message", "") and
             f"{tmp}/no-such-socket" in w.get("message", ""), f"B6: no bus: {w}")
    ft.log(f"ok: B6: no bus: {w['name']}: {w['message']}")
    # A bus that lets only root connect (ft.Bus without anyone=True), and a client that is nobody.
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        ft.log("skip B7: needs root and setpriv to be somebody the bus refuses")
        return
    rc, w, _ = probe("connect", bus.address, user="nobody")
    msg = w.get("message", "")
    ft.check(rc == 3 and w.get("name") == ft.ERR_PREFIX + "NotReachable" and "not connected" not in msg and
             "refused" in msg and "uid 65534" in msg, f"B7: refused: {w}")
    ft.log(f"ok: B7: a bus that refuses the user: {msg}")


def test_concurrent(where, what, files, tmp):
    lst = os.path.join(tmp, f"list-{what}")
    with open(lst, "w") as f:
        f.write("".join(p + "\n" for p in files))
    rc, w, err = probe("concurrent", where, lst)
    n = len(files)
    ft.check(rc == 0 and w.get("r0") == "0" and w.get("r1") == "0" and
             w.get("results0") == w.get("results1") == w.get("ok0") == w.get("ok1") == str(n),
             f"B8 {what}: two runs of one client: {rc} {w} {err}")
    ft.log(f"ok: B8 {what}: two runs of one client at once, {n} files each, every result")


def main():
    ft.require()
    if not PROBE or not os.access(PROBE, os.X_OK):
        ft.skip("$FHASH_PROBE (tests/integration/libfhash-probe.c) is not built")
    with ft.Bus() as bus:
        tmp = ft.files_dir(bus)
        files = ft.make_files(os.path.join(tmp, "many"), 2000, max_size=4096)
        with ft.Daemon(bus, "--workers", "2"):
            for where, what in ((bus.address, "through fhashd"), ("--local", "in-process")):
                test_fifo(where, what, tmp)
                test_cancel_source(where, what, tmp)
                test_idle(where, what)
                test_concurrent(where, what, files, tmp)
            test_messages(bus, tmp)


if __name__ == "__main__":
    main()
