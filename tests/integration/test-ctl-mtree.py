#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-ctl-mtree.py: fhashctl check on mtree manifests written by bsdtar (Debian's libarchive-tools) of
# random trees whose names have blanks, newlines, backslashes, '#' and bytes that are not UTF-8:
# several keyword sets (bsdtar's defaults: no digest; mtree:all with six digests; sha256 with
# /set and continued lines; md5 only; rmd160 only), gzip-compressed as pacman ships its .MTREE, and
# mtree -c's classic form written here. Every entry is OK in-process and through fhashd; then the
# tree is changed (content, size, permissions, a link's target, a type, a missing file) and each
# change is found, and nothing else.
import gzip
import os
import random
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

NAMES = [b"plain", b"with space", b"nl\nname", b"back\\slash", b"#hash", b"bad\xff\xfeutf", b"tab\there",
         b"caf\xc3\xa9", b"eq=sign", b"trail "]


def make_tree(top, rnd):
    """A tree of files, directories, symlinks and a FIFO; returns the regular files' names."""
    os.makedirs(top)
    files = []
    for d in (b"", b"sub dir/", b"sub dir/deeper\n/", b"x\xff/"):
        if d:
            os.makedirs(os.path.join(os.fsencode(top), d), exist_ok=True)
        for n in NAMES:
            if rnd.random() < 0.6:
                p = d + n
                with open(os.path.join(os.fsencode(top), p), "wb") as f:
                    f.write(rnd.randbytes(rnd.choice([0, 1, 100, 4096, 70000])))
                os.chmod(os.path.join(os.fsencode(top), p), rnd.choice([0o644, 0o600, 0o755]))
                files.append(p)
    os.symlink(b"plain", os.path.join(os.fsencode(top), b"link to plain"))
    os.symlink(b"sub dir/nl\nname", os.path.join(os.fsencode(top), b"odd\nlink"))
    os.mkfifo(os.path.join(top, "fifo"))
    return files


def bsdtar_mtree(top, options):
    args = ["bsdtar", "-c", "--format=mtree"] + (["--options", options] if options else []) + ["-f", "-", "."]
    r = subprocess.run(args, cwd=top, capture_output=True, timeout=60)
    ft.check(r.returncode == 0, f"bsdtar {options}: {r.stderr!r}")
    return r.stdout


def octal_escape(name):
    """A name as libarchive escapes it: \\ooo for blanks, '#', '\\', controls and bytes past 126."""
    out = b""
    for c in name:
        if c <= 32 or c >= 127 or c in b"#\\=":
            out += b"\\%03o" % c
        else:
            out += bytes([c])
    return out


def classic(top):
    """mtree -c's form (bsdtar writes only paths): relative names, directories entered, '..' back up,
    /set and /unset, continued lines and comments."""
    out = [b"#mtree", b"# written by test-ctl-mtree.py in mtree -c's classic form", b"/set type=file mode=0644",
           b". type=dir mode=0%o" % (os.stat(top).st_mode & 0o7777)]

    def walk(rel, depth):
        here = os.path.join(os.fsencode(top), rel)
        for n in sorted(os.listdir(here)):
            p = os.path.join(here, n)
            st = os.lstat(p)
            e = octal_escape(n)
            if stat.S_ISDIR(st.st_mode):
                out.append(b"%s type=dir mode=%o" % (e, st.st_mode & 0o7777))
                walk(os.path.join(rel, n), depth + 1)
                out.append(b"..")
            elif stat.S_ISLNK(st.st_mode):
                out.append(b"%s type=link link=%s" % (e, octal_escape(os.readlink(p))))
            elif stat.S_ISREG(st.st_mode):
                import hashlib
                with open(p, "rb") as f:
                    h = hashlib.sha512(f.read()).hexdigest().encode()
                out.append(b"%s size=%d mode=%o \\\n    sha512digest=%s" % (e, st.st_size, st.st_mode & 0o7777, h))
            elif stat.S_ISFIFO(st.st_mode):
                out.append(b"/unset mode")
                out.append(b"%s type=fifo" % e)
                out.append(b"/set mode=0644")
    walk(b"", 0)
    return b"\n".join(out) + b"\n"


def check(how, cwd, manifest, *extra):
    return subprocess.run([ft.fhashctl_path()] + how + ["check"] + list(extra) + [manifest], cwd=cwd,
                          capture_output=True, timeout=300)


def verdicts(out):
    """{escaped name: verdict} of check's stdout."""
    d = {}
    for line in out.split(b"\n"):
        if line:
            name, _, v = line.rpartition(b": ")
            d[name] = v
    return d


def main():
    ft.require(["bsdtar"])
    rnd = random.Random(2828)
    with ft.Bus() as bus:
        top = os.path.join(bus.dir, "tree")
        make_tree(top, rnd)
        mdir = os.path.join(bus.dir, "manifests")
        os.makedirs(mdir)
        manifests = {}
        for label, options in (("defaults", None), ("all", "mtree:all"),
                               ("sha256-set-indent", "mtree:sha256,mtree:use-set,mtree:indent"),
                               ("md5", "mtree:md5"), ("rmd160", "mtree:rmd160,mtree:!cksum")):
            manifests[label] = bsdtar_mtree(top, options)
        manifests["pacman.MTREE"] = gzip.compress(bsdtar_mtree(top, "mtree:sha256,mtree:md5,mtree:use-set"))
        manifests["classic"] = classic(top)
        paths = {}
        for label, data in manifests.items():
            paths[label] = os.path.join(mdir, label if label.endswith("MTREE") else label + ".txt")
            with open(paths[label], "wb") as f:
                f.write(data)
        ft.check(b"\\" in manifests["sha256-set-indent"] and b"/set " in manifests["sha256-set-indent"],
                 "bsdtar wrote no continued lines or /set")

        n_entries = None
        with ft.Daemon(bus, "--workers", "2"):
            for how in (["--local"], ["--daemon", "--address", bus.address]):
                for label, p in paths.items():
                    r = check(how, top, p)
                    ft.check(r.returncode == 0, f"{how[0]} check {label}: {r.returncode} {r.stderr[-500:]!r}")
                    v = verdicts(r.stdout)
                    ft.check(all(x == b"OK" for x in v.values()), f"{how[0]} {label}: {v}")
                    if n_entries is None:
                        n_entries = len(v)
                    ft.check(len(v) == n_entries, f"{how[0]} {label}: {len(v)} entries, {n_entries} in defaults")
                    no_digest = label in ("defaults", "rmd160")
                    ft.check((b"no digest fhash can check" in r.stderr) == no_digest,
                             f"{how[0]} {label}: {r.stderr!r}")
                    if label == "rmd160":
                        ft.check(b"rmd160digest is not supported" in r.stderr, f"rmd160: {r.stderr!r}")
                ft.log(f"{how[0]}: {len(paths)} manifests of {n_entries} entries each: all OK")

            # Change the tree: each change found, nothing else.
            t = os.fsencode(top)
            files = sorted(p for p in os.listdir(t) if os.path.isfile(os.path.join(t, p))
                           and not os.path.islink(os.path.join(t, p)) and p != b"fifo")
            big = [p for p in files if os.path.getsize(os.path.join(t, p)) > 0]
            ft.check(len(big) >= 3, f"too few files to change: {files}")
            content, size, mode = big[0], big[1], big[2]
            with open(os.path.join(t, content), "r+b") as f:
                b = f.read(1)
                f.seek(0)
                f.write(bytes([b[0] ^ 1]))
            with open(os.path.join(t, size), "ab") as f:
                f.write(b"x")
            os.chmod(os.path.join(t, mode), os.stat(os.path.join(t, mode)).st_mode ^ 0o001)
            os.unlink(os.path.join(t, b"link to plain"))
            os.symlink(b"elsewhere", os.path.join(t, b"link to plain"))
            os.unlink(os.path.join(t, b"fifo"))
            with open(os.path.join(t, b"fifo"), "wb"):
                pass
            missing = [p for p in files if p not in (content, size, mode)][0]
            os.unlink(os.path.join(t, missing))
            changed = {content: b"FAILED", size: b"FAILED", mode: b"FAILED", b"link to plain": b"FAILED",
                       b"fifo": b"FAILED", missing: b"FAILED open or read"}

            def esc(n):
                """The name check prints for top-level n, escaped as coreutils does."""
                k = b"./" + n
                if any(c in k for c in (b"\\", b"\n", b"\r")):
                    k = b"\\" + k.replace(b"\\", b"\\\\").replace(b"\n", b"\\n").replace(b"\r", b"\\r")
                return k

            for how in (["--local"], ["--daemon", "--address", bus.address]):
                for label in ("all", "sha256-set-indent", "pacman.MTREE", "md5", "classic"):
                    r = check(how, top, paths[label])
                    ft.check(r.returncode == 1, f"{how[0]} {label} after changes: exit {r.returncode}")
                    v = verdicts(r.stdout)
                    for n, want in changed.items():
                        key = esc(n)
                        ft.check(v.get(key) == want, f"{how[0]} {label}: {n!r} is {v.get(key)!r}, want {want!r}")
                    others = {k: x for k, x in v.items() if x != b"OK" and k not in {esc(n) for n in changed}}
                    ft.check(not others, f"{how[0]} {label}: unexpected verdicts {others}")
                    ft.check(b"its permissions differ" in r.stderr and b"its link target differs" in r.stderr and
                             b"its type differs" in r.stderr, f"{how[0]} {label}: {r.stderr[-600:]!r}")
                # Without a digest only the size and the rest: the content change goes unseen, as it must.
                r = check(how, top, paths["defaults"])
                v = verdicts(r.stdout)
                ft.check(v.get(esc(content)) == b"OK" and v.get(esc(size)) == b"FAILED",
                         f"{how[0]} defaults: {v.get(esc(content))} {v.get(esc(size))}")
                ft.log(f"{how[0]}: every change found in 5 manifests, nothing else")

        # What is not an mtree line is said so, with its number.
        with open(os.path.join(mdir, "bad.mtree"), "wb") as f:
            f.write(b"#mtree\n./plain type=nonsense\n./x sha256digest=abc\n/frob x=1\n")
        r = check(["--local"], mdir, os.path.join(mdir, "bad.mtree"), "--warn")
        ft.check(r.returncode == 1 and r.stderr.count(b"improperly formatted") >= 3 and b": 2: " in r.stderr,
                 f"bad mtree: {r.returncode} {r.stderr!r}")
        shutil.rmtree(mdir, ignore_errors=True)

    print("test-ctl-mtree: ok")


if __name__ == "__main__":
    main()
