#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-client-loop.py: issue 27's bugs of libfhash's client API, each as the integrator met it
# (tests/integration/libfhash-probe.c is the integrator's program):
#   B6  with no bus (no fallback) the error was name "" and a message that named neither fhashd nor
#       what to do; now org.fhash.Hasher1.Error.NotReachable and "cannot reach fhashd: no bus at ...".
#   B7  a bus that refuses the user read "Transport endpoint is not connected"; now it says the bus
#       refused the connection, and whose.
import os
import pwd
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

PROBE = os.environ.get("FHASH_PROBE", "")


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


def main():
    ft.require()
    if not PROBE or not os.access(PROBE, os.X_OK):
        ft.skip("$FHASH_PROBE (tests/integration/libfhash-probe.c) is not built")
    with ft.Bus() as bus:
        tmp = ft.files_dir(bus)
        test_messages(bus, tmp)


if __name__ == "__main__":
    main()
