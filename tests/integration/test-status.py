#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-status.py: a file's result says the same through fhashd and in-process. Read errors are
# injected for real with tests/integration/failread.c (an LD_PRELOAD: every read of one file fails
# with ESTALE, as NFS fails it, or EBADMSG, as a file system that checksums its data does): both are
# an error (FHASH_ERROR, EIO, their own words), never "changed" or "mismatch", from libfhash in this
# process and from fhashd, in the Python module and in fhashctl; a real mismatch is a mismatch in both.
import errno
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

BUILD = os.environ.get("FHASH_BUILD_ROOT", "")
SRC = os.environ.get("FHASH_SOURCE_ROOT", "")
LIB = os.path.join(BUILD, "src", "libfhash.so.0")
SHIM = os.environ.get("FHASH_FAILREAD", "")

# Hashes argv[2:] with the Python module (expected digests: argv[1], JSON, a list with None), through
# the bus at $ADDRESS (no fallback) or in-process, and prints each result as JSON.
CLIENT = """
import json, os, sys, fhash
addr = os.environ.get("ADDRESS")
c = fhash.Client(address=addr, fallback=False) if addr else fhash.Client(local=True)
ok = c.uses_daemon == bool(addr)
rs = c.hash(sys.argv[2:], expected=json.loads(sys.argv[1]))
print(json.dumps({"daemon": c.uses_daemon, "ok": ok,
                  "results": [[r.status, r.error, r.message, r.digest] for r in rs]}))
"""


def sanitizer_runtimes(path):
    """The sanitizer runtimes a binary links, which must come first in LD_PRELOAD."""
    ldd = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return [line.split("=>")[1].split()[0] for line in ldd.splitlines()
            if "=>" in line and any(s in line for s in ("libasan", "libubsan", "libtsan"))]


def fault_env(binary, target, err, **kw):
    env = dict(os.environ, **kw)
    env["LD_PRELOAD"] = " ".join(sanitizer_runtimes(binary) + [SHIM])
    env["FAILREAD_PATH"], env["FAILREAD_ERRNO"] = target, err
    if "libasan" in env["LD_PRELOAD"]:
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:halt_on_error=1"
    return env


def module_env(**kw):
    """The Python module over this build's library (a sanitized one needs its runtime preloaded into
    the interpreter, and no leak check of the interpreter's own)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(SRC, "python"), FHASH_LIBRARY=LIB, **kw)
    runtimes = sanitizer_runtimes(LIB)
    if runtimes:
        env["LD_PRELOAD"] = " ".join(runtimes)
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:halt_on_error=1"
    return env


def python_hash(env, files, expected):
    p = subprocess.run([sys.executable, "-c", CLIENT, json.dumps(expected)] + files, capture_output=True, text=True,
                       env=env, timeout=120)
    if p.returncode == 77:
        ft.skip(f"the failread shim could not set itself up: {p.stderr.strip()}")
    ft.check(p.returncode == 0, f"the Python client failed ({p.returncode}): {p.stderr}")
    out = json.loads(p.stdout)
    ft.check(out["ok"], f"the client did not hash where it was told to: {out}")
    return out["results"]


def main():
    if not SHIM or not os.path.exists(SHIM):
        ft.skip("the failread shim is not built ($FHASH_FAILREAD)")
    if not os.path.exists(LIB):
        ft.skip(f"libfhash is not built in {BUILD}")
    ft.require()
    with ft.Bus() as bus:
        tmp = tempfile.mkdtemp(prefix="fhash-status-", dir=bus.dir)
        data = {name: os.urandom(size) for name, size in (("good", 70000), ("bad", 5000), ("mism", 3000))}
        files = []
        for name, blob in data.items():
            files.append(os.path.join(tmp, name))
            with open(files[-1], "wb") as f:
                f.write(blob)
        good, bad, mism = files
        sha = {f: hashlib.sha256(data[os.path.basename(f)]).hexdigest() for f in files}
        expected = [None, None, "0" * 64]

        # Without the shim nothing fails: the errors below are the shim's, not the file's.
        plain = python_hash(module_env(), files, expected)
        ft.check([r[0] for r in plain] == ["ok", "ok", "mismatch"] and plain[1][3] == sha[bad],
                 f"without the shim: {plain}")

        for name, code in (("ESTALE", errno.ESTALE), ("EBADMSG", errno.EBADMSG)):
            local = python_hash(fault_env(LIB, bad, name, **module_env()), files, expected)
            with ft.Daemon(bus, "--workers", "2", env=fault_env(ft.fhashd_path(), bad, name)):
                remote = python_hash(module_env(ADDRESS=bus.address), files, expected)
                ctl_remote = subprocess.run([ft.fhashctl_path(), "--daemon", "--address", bus.address, "hash",
                                             *files], capture_output=True, text=True, timeout=120)
            ctl_local = subprocess.run([ft.fhashctl_path(), "--local", "hash", *files], capture_output=True, text=True,
                                       timeout=120, env=fault_env(ft.fhashctl_path(), bad, name))
            want = [["ok", 0, None, sha[good]], ["error", errno.EIO, os.strerror(code), None],
                    ["mismatch", errno.EBADMSG, None, sha[mism]]]
            for who, got in (("in-process", local), ("through fhashd", remote)):
                ft.check(got[0] == want[0] and got[1] == want[1], f"{name} {who}: {got[:2]}, wanted {want[:2]}")
                # The words of a mismatch are each path's own ("checksum mismatch", fhashd's "expected
                # ..., got ..."); what it is and its digest are the same.
                ft.check(got[2][0] == "mismatch" and got[2][1] == errno.EBADMSG and got[2][3] == sha[mism],
                         f"{name} {who}: mismatch {got[2]}")
            ft.check([r[:2] for r in local] == [r[:2] for r in remote], f"{name}: in-process {local} != fhashd {remote}")
            ft.log(f"ok: an injected {name} is an error (EIO, \"{os.strerror(code)}\") in-process and through fhashd")
            for who, p in (("--local", ctl_local), ("through fhashd", ctl_remote)):
                ft.check(p.returncode == 1 and p.stderr == f"fhashctl: {bad}: {os.strerror(code)}\n" and
                         p.stdout == f"{sha[good]}  {good}\n{sha[mism]}  {mism}\n",
                         f"{name}: fhashctl {who}: exit {p.returncode}, {p.stdout!r}, {p.stderr!r}")
            ft.log("ok: fhashctl says the same of it in-process and through fhashd")


if __name__ == "__main__":
    main()
