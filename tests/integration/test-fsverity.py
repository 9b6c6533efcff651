#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-fsverity.py: fhashctl -a fsverity / fsverity-sha512 (and --block-size) against `fsverity digest`
# on random files whose sizes sit around block and tree-level boundaries, in-process (--local) and
# through fhashd on a private bus, whose D-Bus option "block-size" is checked too; their lines go
# back through check. The kernel's own measurement of files with fs-verity enabled is
# test-fsverity-kernel.py's.
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

# Empty, one byte, around a 4 KiB block, around one full level-1 block (128 SHA-256 hashes of 4 KiB:
# 512 KiB), a three-level tree past 64 MiB is test-hash-cli's; these are the engine's: several
# buffers, in pieces on two workers.
SIZES = [0, 1, 4095, 4096, 4097, 524287, 524288, 524289, (2 << 20) + 3, (9 << 20) + 4096, (17 << 20) + 5]
VARIANTS = [([], ["--hash-alg=sha256"], "fsverity"),
            (["--block-size", "1024"], ["--hash-alg=sha256", "--block-size=1024"], "fsverity"),
            ([], ["--hash-alg=sha512"], "fsverity-sha512"),
            (["--block-size", "65536"], ["--hash-alg=sha512", "--block-size=65536"], "fsverity-sha512")]


def reference(paths, tool_args):
    r = subprocess.run(["fsverity", "digest", "--compact"] + tool_args + paths, capture_output=True, text=True,
                       timeout=300)
    ft.check(r.returncode == 0, f"fsverity digest {tool_args}: {r.stderr}")
    return r.stdout.split()


def ctl(args, cwd):
    return subprocess.run([ft.fhashctl_path()] + args, cwd=cwd, capture_output=True, timeout=300)


def main():
    ft.require(["fsverity"])
    rnd = random.Random(28)
    with ft.Bus() as bus:
        d = os.path.join(bus.dir, "files")
        os.makedirs(d)
        names = []
        for i, n in enumerate(SIZES):
            name = f"f{i:02d}-{n}"
            with open(os.path.join(d, name), "wb") as f:
                f.write(rnd.randbytes(n))
            names.append(name)
        paths = [os.path.join(d, n) for n in names]
        with ft.Daemon(bus, "--workers", "2"):
            for ours, tool, algo in VARIANTS:
                want = reference(paths, tool)
                for how in (["--local"], ["--daemon", "--address", bus.address]):
                    r = ctl(how + ["hash", "-a", algo] + ours + names, d)
                    ft.check(r.returncode == 0, f"{how} hash -a {algo} {ours}: {r.stderr!r}")
                    got = [line.split()[0] for line in r.stdout.decode().splitlines()]
                    for n, g, w in zip(names, got, want):
                        ft.check(g == w, f"{how[0]} -a {algo} {ours} {n}: {g}, fsverity digest says {w}")
                    ft.check(len(got) == len(names), f"{how[0]} -a {algo}: {len(got)} lines")
                    # The lines go back through check, tagged (FSVERITY (f) = ...) and untagged with -a.
                    if not ours:
                        for form in (["--tag"], []):
                            m = ctl(how + ["hash", "-a", algo] + form + names, d).stdout
                            with tempfile.NamedTemporaryFile(dir=bus.dir, suffix=".sums") as s:
                                s.write(m)
                                s.flush()
                                c = ctl(how + ["check"] + ([] if form else ["-a", algo]) + [s.name], d)
                                ft.check(c.returncode == 0 and c.stdout.count(b": OK\n") == len(names),
                                         f"{how[0]} check of {algo} {form}: {c.stdout[-300:]!r} {c.stderr!r}")
                ft.log(f"{algo} {' '.join(ours)}: {len(names)} files match fsverity digest, in-process and "
                       f"through fhashd")

            # The D-Bus option itself, and what fhashd says of a bad one.
            import dbus
            ft.glib_mainloop()
            conn = bus.connect()
            mgr = ft.manager(conn)
            w = ft.JobWatcher(conn)

            def block_size(n):
                return dbus.Dictionary({"block-size": dbus.UInt32(n)}, signature="sv")

            with open(paths[8], "rb") as f:
                job = mgr.HashFds(ft.fds(f.fileno()), "fsverity", block_size(2048))
            w.wait([job])
            want = reference([paths[8]], ["--block-size=2048"])[0]
            got = w.results[str(job)][0][2]
            ft.check(got == want, f"HashFds block-size 2048: {got}, want {want}")
            for algo, bs, what in (("sha256", 4096, 'takes no "block-size"'),
                                   ("fsverity", 3000, "power of two"), ("fsverity", 131072, "power of two")):
                with open(paths[1], "rb") as f:
                    err = ft.expect_error("org.freedesktop.DBus.Error.InvalidArgs", mgr.HashFds,
                                          ft.fds(f.fileno()), algo, block_size(bs))
                ft.check(what in str(err), f"block-size {bs} on {algo}: {err}")
            ft.log("D-Bus \"block-size\": digests as fsverity digest --block-size, bad ones InvalidArgs")

    # fhashctl's own refusals.
    for args, what in ((["-a", "sha256", "--block-size", "4096"], "takes no --block-size"),
                       (["-a", "fsverity", "--block-size", "4097"], "power of two"),
                       (["-a", "fsverity,sha256", "--block-size", "4096"], "one algorithm")):
        r = ctl(["--local", "hash"] + args + ["/dev/null"], "/")
        ft.check(r.returncode == 2 and what in r.stderr.decode(), f"hash {args}: {r.returncode} {r.stderr!r}")
    print("test-fsverity: ok")


if __name__ == "__main__":
    main()
