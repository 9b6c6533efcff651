#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-ctl-audit.py: fhashctl audit MANIFEST [DIR] in-process and through a real fhashd on a private
# dbus-daemon: a tree hashed with `hash -r .`, then a file changed, one deleted, one added, one moved
# (and two missing files of one content with one new file of it: one moved, one missing); statuses,
# text lines and their order, exit codes, --json, --quiet/--status, --update (atomic: a new inode, no
# temporary left, then all ok), the manifest inside DIR left out, bad input; and the same counts as
# hashdeep's audit (-a -k) on the same trees.
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402


def ctl(mode, args, cwd, **kw):
    return subprocess.run([ft.fhashctl_path()] + mode + args, cwd=cwd, capture_output=True, timeout=120, **kw)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_tree(t):
    shutil.rmtree(t, ignore_errors=True)
    for name, data in [("a", b"a\n"), ("b", b"b\n"), ("sub/c", b"c\n"), ("sub/d", b"d" * 300000),
                       ("e with space", b"e\n"), ("new\nline", b"nl\n"), ("dup1", b"same\n"), ("dup2", b"same\n")]:
        write(os.path.join(t, name), data)


def modify(t):
    write(os.path.join(t, "b"), b"bb\n")                      # changed
    os.unlink(os.path.join(t, "sub/c"))                       # missing
    write(os.path.join(t, "f"), b"f\n")                       # new
    os.makedirs(os.path.join(t, "sub2"))
    os.rename(os.path.join(t, "sub/d"), os.path.join(t, "sub2/dm"))  # moved
    os.unlink(os.path.join(t, "dup1"))                        # two missing of one content,
    os.unlink(os.path.join(t, "dup2"))
    write(os.path.join(t, "dup3"), b"same\n")                 # one new of it: moved from dup1


def hashdeep_counts(out):
    want = {"Files matched": "matched", "Files moved": "moved", "New files found": "new",
            "Known files not found": "not_found"}
    got = {}
    for line in out.splitlines():
        k, _, v = line.strip().partition(": ")
        if k in want:
            got[want[k]] = int(v)
    return got


def test_mode(mode, tmp):
    what = mode[0]
    t = os.path.join(tmp, "t")
    make_tree(t)
    sums = os.path.join(tmp, "SUMS")
    r = ctl(mode, ["hash", "-r", "."], t)
    ft.check(r.returncode == 0, f"{what}: hash -r: {r.stderr!r}")
    with open(sums, "wb") as f:
        f.write(r.stdout)
    hd = shutil.which("hashdeep")
    if hd:
        known = os.path.join(tmp, "known")
        with open(known, "wb") as f:
            f.write(subprocess.run([hd, "-r", "-l", "-c", "sha256", "."], cwd=t, capture_output=True,
                                   check=True).stdout)

    # Untouched: all ok, exit 0; the manifest inside DIR is not part of it.
    shutil.copy(sums, os.path.join(t, "SUMS"))
    r = ctl(mode, ["audit", "SUMS"], t)
    ft.check(r.returncode == 0, f"{what}: audit of an untouched tree: {r.returncode} {r.stdout!r} {r.stderr!r}")
    ft.check(r.stdout.count(b": ok\n") == 8 and b"SUMS" not in r.stdout, f"{what}: untouched: {r.stdout!r}")
    ft.check(b"audit: 8 ok, 0 changed, 0 missing, 0 new, 0 moved" in r.stderr, f"{what}: summary {r.stderr!r}")
    os.unlink(os.path.join(t, "SUMS"))
    if hd:
        # hashdeep 4.4 fails an untouched tree with two files of one content (it counts one of them
        # "moved" and a known file "not found"); it finds nothing new, as we do.
        h = subprocess.run([hd, "-r", "-l", "-c", "sha256", "-a", "-k", known, "-v", "."], cwd=t, capture_output=True)
        c = hashdeep_counts(h.stdout.decode())
        ft.check(c.get("new") == 0 and c.get("matched", 0) + c.get("moved", 0) == 8,
                 f"hashdeep on the untouched tree: {c}")

    modify(t)
    r = ctl(mode, ["audit", sums, t], tmp)
    ft.check(r.returncode == 1, f"{what}: audit after changes exits {r.returncode}: {r.stderr!r}")
    lines = r.stdout.decode("utf-8", "surrogateescape").splitlines()
    want = ["a: ok", "b: changed", "e with space: ok", "\\new\\nline: ok",
            "dup3: moved from dup1", "f: new", "sub2/dm: moved from sub/d", "dup2: missing", "sub/c: missing"]
    ft.check(lines == want, f"{what}: lines\n{lines}\nwant\n{want}")
    ft.check(b"audit: 3 ok, 1 changed, 2 missing, 1 new, 2 moved" in r.stderr, f"{what}: summary {r.stderr!r}")
    if hd:
        h = subprocess.run([hd, "-r", "-l", "-c", "sha256", "-a", "-k", known, "-v", "."], cwd=t, capture_output=True)
        c = hashdeep_counts(h.stdout.decode())
        ft.check(h.returncode == 1, f"hashdeep's audit passed a changed tree: {h.stdout!r}")
        # hashdeep sees a changed file as new and its old digest as not found, and has one moved file
        # per digest (it does not pair dup3 with dup1: that content is "matched" by its new name).
        # hashdeep counts a changed file as new (its old digest as not found), and files whose
        # content it knew under another name as matched or moved, as it pairs them: its new files
        # are our changed + new, its matched + moved our ok + moved.
        ft.check(c.get("new") == 1 + 1 and c.get("matched", 0) + c.get("moved", 0) == 3 + 2,
                 f"hashdeep's counts {c} do not follow ours (3 ok, 1 changed, 1 new, 2 moved, 2 missing)")

    r = ctl(mode, ["audit", "--quiet", sums, t], tmp)
    ft.check(b": ok" not in r.stdout and r.returncode == 1 and len(r.stdout.splitlines()) == 6, f"{what}: --quiet {r.stdout!r}")
    r = ctl(mode, ["audit", "--status", sums, t], tmp)
    ft.check(r.stdout == b"" and r.returncode == 1 and b"audit:" not in r.stderr, f"{what}: --status {r.stdout!r} {r.stderr!r}")

    r = ctl(mode, ["audit", "--json", sums, t], tmp)
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    by = {o["name"]: o for o in objs if not o.get("summary")}
    ft.check(by["sub2/dm"]["status"] == "moved" and by["sub2/dm"]["from"] == "sub/d", f"{what}: json moved {by.get('sub2/dm')}")
    ft.check(by["b"]["status"] == "changed" and by["b"]["digest"] != by["b"]["expected"], f"{what}: json changed")
    ft.check(by["sub/c"]["status"] == "missing" and by["sub/c"]["digest"] is None, f"{what}: json missing")
    ft.check(by["f"]["status"] == "new" and by["f"]["expected"] is None, f"{what}: json new")
    ft.check(by["new\nline"]["status"] == "ok", f"{what}: json ok for a name with a newline")
    s = objs[-1]
    ft.check(s.get("summary") and (s["ok"], s["changed"], s["missing"], s["new"], s["moved"]) == (3, 1, 2, 1, 2),
             f"{what}: json summary {s}")

    # --update: a new file renamed over the manifest, then everything is ok.
    ino = os.stat(sums).st_ino
    r = ctl(mode, ["audit", "--update", "--quiet", sums, t], tmp)
    ft.check(r.returncode == 1, f"{what}: --update reports what it found first: {r.returncode}")
    ft.check(os.stat(sums).st_ino != ino, f"{what}: --update did not replace the manifest by rename")
    ft.check(not [n for n in os.listdir(tmp) if n.startswith("SUMS.")], f"{what}: a temporary file was left")
    r = ctl(mode, ["audit", sums, t], tmp)
    ft.check(r.returncode == 0 and b"audit: 7 ok, 0 changed" in r.stderr, f"{what}: after --update: {r.stderr!r}")
    ft.check(all(ln.startswith(b"./") or ln.startswith(b"\\") for ln in
                 [x.split(b"  ", 1)[1] for x in open(sums, "rb").read().splitlines()]),
             f"{what}: --update did not keep the manifest's ./ names")
    ft.check(subprocess.run(["sha256sum", "--quiet", "-c", sums], cwd=t).returncode == 0,
             f"{what}: sha256sum -c rejects the updated manifest")

    # Bad input: a clear error, exit 1; usage errors exit 2.
    for args, code, msg in [(["audit", os.path.join(tmp, "nope"), t], 1, b"No such file"),
                            (["audit", sums, os.path.join(t, "a")], 1, b"Not a directory"),
                            (["audit", os.devnull, t], 1, b"no properly formatted checksum lines"),
                            (["audit"], 2, b"MANIFEST"), (["audit", "a", "b", "c"], 2, b"MANIFEST"),
                            (["hash", "--update", "a"], 2, b"--update is an option of audit")]:
        r = ctl(mode, args, tmp)
        ft.check(r.returncode == code and msg in r.stderr, f"{what}: {args}: {r.returncode} {r.stderr!r}")
    ft.log(f"ok: audit {what}: ok/changed/missing/new/moved, --json, --quiet, --status, --update, bad input"
           + (", counts as hashdeep's" if hd else " (hashdeep not installed: not compared)"))


def main():
    ft.require()
    with ft.Bus() as bus:
        tmp = os.path.join(bus.dir, "audit")
        os.makedirs(tmp)
        test_mode(["--local"], tmp)
        with ft.Daemon(bus, "--workers", "2"):
            test_mode(["--daemon", "--address", bus.address], tmp)


if __name__ == "__main__":
    main()
