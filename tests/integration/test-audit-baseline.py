#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-audit-baseline.py: fhashctl audit's baselines (src/ctl/baseline.h), in-process and through a real
# fhashd as a background job. The first run (--update on a missing or an empty manifest) makes one,
# which sha256sum -c reads; then an audit finds a changed, a missing, a new and a moved file, and the
# attributes that changed alone (mode, owner, an extended attribute, mtime), in text and --json;
# --update writes it atomically (a full disk, as RLIMIT_FSIZE, leaves the old one whole and no
# temporary file); a baseline cut short, of another version or with a bad "#@" line is refused; and
# --journal sends each finding with its MESSAGE_ID and fields to a journal socket of our own (a
# private mount namespace, where /run/systemd/journal is a tmpfs this test listens on).
import json
import os
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

SRC = os.environ.get("FHASH_SOURCE_ROOT", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MESSAGE_IDS = {}


def message_ids():
    """The MESSAGE_IDs as src/ctl/audit-journal.h defines them."""
    import re
    text = open(os.path.join(SRC, "src", "ctl", "audit-journal.h")).read()
    return {k.lower(): v for k, v in re.findall(r'#define AUDIT_MESSAGE_([A-Z]+) "([0-9a-f]{32})"', text)}


def ctl(mode, *args, **kw):
    return subprocess.run([ft.fhashctl_path()] + mode + list(args), capture_output=True, text=True, timeout=120, **kw)


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def make_tree(t):
    shutil.rmtree(t, ignore_errors=True)
    for name, data in [("a", b"a\n"), ("b", b"b" * 70000), ("mode", b"m\n"), ("owner", b"o\n"), ("xattr", b"x\n"),
                       ("touched", b"t\n"), ("sub/c", b"c\n"), ("sub/moved", b"moved" * 1000), ("gone", b"g\n")]:
        write(os.path.join(t, name), data)


def modify(t):
    write(os.path.join(t, "a"), b"changed\n")                       # changed (content)
    os.chmod(os.path.join(t, "mode"), 0o600)                         # changed (mode)
    os.chown(os.path.join(t, "owner"), 65534, 65534)                 # changed (uid, gid)
    os.setxattr(os.path.join(t, "xattr"), "user.fhash-test", b"1")  # changed (xattrs)
    os.utime(os.path.join(t, "touched"), (1, 1))                     # changed (mtime)
    os.unlink(os.path.join(t, "gone"))                               # missing
    write(os.path.join(t, "new"), b"new\n")                          # new
    os.rename(os.path.join(t, "sub/moved"), os.path.join(t, "moved-here"))  # moved


def xattrs_work(d):
    p = os.path.join(d, "probe")
    write(p, b"")
    try:
        os.setxattr(p, "user.fhash-probe", b"1")
        return True
    except OSError:
        return False
    finally:
        os.unlink(p)


def test_mode(mode, tmp):
    what = " ".join(mode[:1] + mode[-1:])
    t = os.path.join(tmp, "tree")
    base = os.path.join(tmp, "state", "tree.sums")
    os.makedirs(os.path.dirname(base), exist_ok=True)
    make_tree(t)

    # The first run makes the baseline: a missing manifest, then an empty one.
    for start in ("missing", "empty"):
        if os.path.exists(base):
            os.unlink(base)
        if start == "empty":
            open(base, "w").close()
            os.chmod(base, 0o644)
        r = ctl(mode, "audit", "--update", "--attributes", base, t)
        ft.check(r.returncode == 0 and r.stdout == "" and "a new baseline of 9 files" in r.stderr,
                 f"{what}: the first run on a {start} baseline: {r.returncode} {r.stdout!r} {r.stderr!r}")
        # A new one is the owner's alone; one that replaces a file keeps that file's mode.
        want = 0o600 if start == "missing" else 0o644
        ft.check(os.stat(base).st_mode & 0o777 == want, f"{what}: {start}: mode {os.stat(base).st_mode:o}")
    text = open(base).read()
    ft.check(text.startswith("# fhash-baseline 1\n# algorithm sha256\n# attributes mode,uid,gid,ino,mtime,ctime,xattrs\n")
             and text.endswith("# end 9\n") and text.count("\n#@ ") == 9, f"{what}: baseline:\n{text}")
    r = subprocess.run(["sha256sum", "-c", "--strict", base], cwd=t, capture_output=True, text=True)
    ft.check(r.returncode == 0 and r.stdout.count(": OK\n") == 9, f"{what}: sha256sum -c of the baseline: {r.stdout!r}")
    r = ctl(mode, "audit", base, t)
    ft.check(r.returncode == 0 and r.stdout.count(": ok\n") == 9, f"{what}: untouched: {r.stdout!r} {r.stderr!r}")
    # Without --update an empty manifest is still an error, with the hint.
    empty = os.path.join(tmp, "empty")
    open(empty, "w").close()
    r = ctl(mode, "audit", empty, t)
    ft.check(r.returncode == 1 and "--update or --create makes a baseline" in r.stderr,
             f"{what}: empty without --update: {r.stderr!r}")
    # --create makes a missing one, and leaves one that exists as it is (the scheduled audit's way).
    made = os.path.join(tmp, "made.sums")
    r = ctl(mode, "audit", "--create", made, t)
    ft.check(r.returncode == 0 and "a new baseline of 9 files" in r.stderr and open(made).read().endswith("# end 9\n"),
             f"{what}: --create of a missing baseline: {r.stderr!r}")

    with_xattrs = xattrs_work(t)
    modify(t)
    before_create = open(made, "rb").read()
    r = ctl(mode, "audit", "--create", made, t)
    ft.check(r.returncode == 1 and open(made, "rb").read() == before_create and "gone: missing" in r.stdout,
             f"{what}: --create of an existing baseline changed it or found nothing: {r.stdout!r}")
    r = ctl(mode, "audit", base, t)
    want = ["a: changed", "b: ok", "mode: changed (mode, ctime)", "owner: changed (uid, gid, ctime)",
            "sub/c: ok", "touched: changed (mtime, ctime)", "xattr: changed (ctime, xattrs)",
            "moved-here: moved from sub/moved", "new: new", "gone: missing"]
    got = r.stdout.splitlines()
    if not with_xattrs:
        want = [x for x in want if not x.startswith("xattr")]
        got = [x for x in got if not x.startswith("xattr")]
    # "a" was rewritten in place: its mtime and ctime moved with its content.
    want[0] = "a: changed (content, mtime, ctime)"
    ft.check(r.returncode == 1 and got == want, f"{what}: audit after changes:\n{got}\nwant\n{want}\n{r.stderr}")

    r = ctl(mode, "audit", "--json", base, t)
    objs = [json.loads(x) for x in r.stdout.splitlines()]
    by = {o["name"]: o for o in objs if not o.get("summary")}
    ft.check(by["owner"]["changes"] == ["uid", "gid", "ctime"] and by["owner"]["status"] == "changed",
             f"{what}: json owner {by['owner']}")
    ft.check(by["moved-here"]["status"] == "moved" and by["moved-here"]["from"] == "sub/moved", f"{what}: json moved")
    ft.check(by["gone"]["status"] == "missing" and by["new"]["status"] == "new", f"{what}: json missing/new")
    ft.check(by["b"]["status"] == "ok" and "changes" not in by["b"], f"{what}: json ok {by['b']}")
    s = objs[-1]
    ft.check(s["summary"] and not s["created"] and (s["ok"], s["missing"], s["new"], s["moved"]) == (2, 1, 1, 1),
             f"{what}: json summary {s}")

    # --update while the disk is full: RLIMIT_FSIZE makes the write fail (EFBIG) as ENOSPC would.
    before = open(base, "rb").read()

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))
    r = subprocess.run([ft.fhashctl_path()] + mode + ["audit", "--update", base, t], capture_output=True, text=True,
                       preexec_fn=small_files, timeout=120)
    ft.check(r.returncode == 1 and "cannot update" in r.stderr, f"{what}: update on a full disk: {r.stderr!r}")
    ft.check(open(base, "rb").read() == before, f"{what}: a failed update changed the baseline")
    leftovers = [f for f in os.listdir(os.path.dirname(base)) if f != os.path.basename(base)]
    ft.check(leftovers == [], f"{what}: a failed update left {leftovers}")

    # --update: a new inode renamed over the old; then all ok.
    ino = os.stat(base).st_ino
    r = ctl(mode, "audit", "--update", base, t)
    ft.check(r.returncode == 1 and os.stat(base).st_ino != ino, f"{what}: --update: {r.returncode} {r.stderr!r}")
    r = ctl(mode, "audit", base, t)
    ft.check(r.returncode == 0 and "9 ok" in r.stderr, f"{what}: after --update: {r.stdout!r} {r.stderr!r}\n{open(base).read()}")

    # Damaged baselines are refused, naming what is wrong.
    text = open(base).read()
    bad = {"cut short": text[:text.rindex("# end")], "another version": text.replace("# fhash-baseline 1",
                                                                                     "# fhash-baseline 2"),
           "bad attributes": text.replace("mode=100", "mode=9", 1), "wrong count": text.replace("# end 9", "# end 10")}
    for why, content in bad.items():
        p = os.path.join(tmp, "bad.sums")
        with open(p, "w") as f:
            f.write(content)
        r = ctl(mode, "audit", p, t)
        ft.check(r.returncode == 1 and r.stdout == "" and "bad.sums" in r.stderr, f"{what}: {why}: {r.stderr!r}")
    ft.log(f"ok: {what}: baseline made, changes found, atomic update, damaged baselines refused")


def test_unit_command(bus, tmp):
    """The scheduled audit's own command line, as fhash-audit@.service (the build's) runs it for a tree:
    the first run makes the baseline in the state directory and exits 0; after a changed, a missing,
    a new and a moved file, the next run finds each of them, exits 1 (the unit fails), and leaves the
    baseline as it was."""
    import shlex
    unit = open(os.path.join(os.environ["FHASH_BUILD_ROOT"], "systemd", "fhash-audit@.service")).read()
    line = [x for x in unit.splitlines() if x.startswith("ExecStart=")][0][len("ExecStart="):]
    env = [x for x in unit.splitlines() if x.startswith("Environment=FHASH_AUDIT_OPTIONS=")][0].split("=", 2)[2]
    t = os.path.join(tmp, "unit-tree")
    state = os.path.join(tmp, "unit-state")
    os.makedirs(os.path.join(state, "fhash", "audit"))
    make_tree(t)
    instance = subprocess.run(["systemd-escape", "--path", t], capture_output=True, text=True, check=True).stdout.strip()
    argv = []
    for w in shlex.split(line):
        if w == "$FHASH_AUDIT_OPTIONS":
            argv += env.split()
            continue
        argv.append(w.replace("%S", state).replace("%i", instance).replace("%f", t))
    ft.check(argv[0].endswith("/fhashctl") and "--background" in argv and "--create" in argv,
             f"the unit's command: {argv}")
    # Its journal entries would land in the host's journal: --journal is tested in a namespace below.
    argv = [ft.fhashctl_path(), "--address", bus.address, "--daemon"] + [w for w in argv[1:] if w != "--journal"]
    base = os.path.join(state, "fhash", "audit", f"{instance}.sums")
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    ft.check(r.returncode == 0 and os.path.exists(base) and r.stdout == "", f"unit, first run: {r.returncode} {r.stderr!r}")
    before = open(base, "rb").read()
    modify(t)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    got = r.stdout.splitlines()
    for want in ("a: changed (content, mtime, ctime)", "gone: missing", "new: new", "moved-here: moved from sub/moved"):
        ft.check(want in got, f"unit, second run: {want!r} not in {got}")
    ft.check(r.returncode == 1 and open(base, "rb").read() == before, f"unit, second run: {r.returncode}, baseline changed")
    ft.log(f"ok: the unit's command ({' '.join(argv[4:])}) made the baseline, then found {len(got)} changes")


def read_journal(sock):
    """The entries received so far on the datagram socket, each a dict (journald's native protocol)."""
    entries = []
    sock.setblocking(False)
    while True:
        try:
            data = sock.recv(1 << 20)
        except BlockingIOError:
            break
        e, i = {}, 0
        while i < len(data):
            nl = data.index(b"\n", i)
            line = data[i:nl]
            if b"=" in line:
                k, v = line.split(b"=", 1)
                e[k.decode()] = v.decode()
                i = nl + 1
            else:
                n = struct.unpack("<Q", data[nl + 1:nl + 9])[0]
                e[line.decode()] = data[nl + 9:nl + 9 + n].decode()
                i = nl + 9 + n + 1
        entries.append(e)
    return entries


def journal_inner(tmp):
    """In a private mount namespace: /run/systemd is a tmpfs with our journal socket."""
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run/systemd"], check=True)
    os.makedirs("/run/systemd/journal")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("/run/systemd/journal/socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    t = os.path.join(tmp, "jtree")
    base = os.path.join(tmp, "jtree.sums")
    make_tree(t)
    r = ctl(["--local"], "audit", "--update", "--journal", "--attributes=mode,uid,gid", base, t)
    ft.check(r.returncode == 0, f"journal: first run: {r.stderr}")
    created = [e for e in read_journal(sock) if e.get("MESSAGE_ID") == MESSAGE_IDS["created"]]
    ft.check(len(created) == 1 and created[0]["FHASH_AUDIT_FILES"] == "9" and created[0]["FHASH_AUDIT_ROOT"] == t,
             f"journal: creation entry {created}")
    modify(t)
    r = ctl(["--local"], "audit", "--journal", base, t)
    ft.check(r.returncode == 1, f"journal: audit: {r.stderr}")
    entries = read_journal(sock)
    by = {e.get("FHASH_AUDIT_FILE"): e for e in entries if "FHASH_AUDIT_FILE" in e}
    for name, kind in [("a", "changed"), ("gone", "missing"), ("new", "new"), ("moved-here", "moved"),
                       ("mode", "changed"), ("owner", "changed")]:
        e = by.get(name)
        ft.check(e and e["MESSAGE_ID"] == MESSAGE_IDS[kind] and e["FHASH_AUDIT_STATUS"] == kind and
                 e["FHASH_AUDIT_ROOT"] == t and e["FHASH_AUDIT_MANIFEST"] == base and e["PRIORITY"] == "4",
                 f"journal: {name}: {e}")
    ft.check(by["moved-here"]["FHASH_AUDIT_FROM"] == "sub/moved", f"journal: moved {by['moved-here']}")
    ft.check(by["owner"]["FHASH_AUDIT_CHANGES"] == "uid,gid", f"journal: owner {by['owner']}")
    ft.check(by["a"]["FHASH_AUDIT_CHANGES"] == "content" and by["a"]["FHASH_AUDIT_EXPECTED"] != by["a"]["FHASH_AUDIT_DIGEST"],
             f"journal: a {by['a']}")
    ft.check("FHASH_AUDIT_DIGEST" not in by["gone"], f"journal: a missing file has a digest: {by['gone']}")
    ft.check("b" not in by and "sub/c" not in by and "touched" not in by, f"journal: ok files sent: {sorted(by)}")
    summary = [e for e in entries if e.get("MESSAGE_ID") == MESSAGE_IDS["summary"]]
    ft.check(len(summary) == 1 and summary[0]["FHASH_AUDIT_MISSING"] == "1" and summary[0]["FHASH_AUDIT_MOVED"] == "1",
             f"journal: summary {summary}")
    man = open(os.path.join(SRC, "systemd", "fhash-audit.8.scd")).read()
    ft.check(all(v in man for v in MESSAGE_IDS.values()), "fhash-audit(8) does not list every MESSAGE_ID")
    ft.log(f"ok: --journal: {len(entries)} entries, one MESSAGE_ID per kind, fields as documented")


def main():
    global MESSAGE_IDS
    MESSAGE_IDS = message_ids()
    if len(sys.argv) > 2 and sys.argv[1] == "--journal-inner":
        journal_inner(sys.argv[2])
        return
    ft.require(("sha256sum",))
    if os.geteuid() != 0:
        ft.skip("needs root: files chown()ed to nobody, a private mount namespace for the journal")
    tmp = tempfile.mkdtemp(prefix="fhash-baseline-", dir=os.environ.get("TMPDIR", "/var/tmp"))
    try:
        test_mode(["--local"], os.path.join(tmp, "local"))
        with ft.Bus() as bus:
            with ft.Daemon(bus, "--workers", "2"):
                test_mode(["--address", bus.address, "--daemon", "--background"], os.path.join(tmp, "daemon"))
                test_unit_command(bus, tmp)
        if subprocess.run(["unshare", "--mount", "--propagation", "private", "true"]).returncode != 0:
            ft.log("SKIP: --journal: unshare --mount is not permitted here")
            sys.exit(77)
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "/usr/bin/python3",
                            os.path.abspath(__file__), "--journal-inner", tmp])
        ft.check(r.returncode == 0, "the journal part failed")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
