#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-glib-symbols.py LIBFHASH_GLIB_SO VERSION_SCRIPT SYMBOLS_FILE LIBFHASH_SO: libfhash-glib.so.0 exports
exactly the names its version script lists, each in its version node, as the Debian symbols file lists
them; and none of them is one of libfhash.so.0's, which every program using it loads too (the same
name in both would bind one library's calls to the other's function). Exits 77 without nm."""
import re
import shutil
import subprocess
import sys


def exported(lib):
    """The defined dynamic symbols, "name@@NODE", and each version node as "NODE@NODE" (as
    dpkg-gensymbols lists them)."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    syms = set()
    for line in out.splitlines():
        kind, name = line.split()[-2:]
        if kind in "TDBRW":
            syms.add(name)
        elif kind == "A":
            syms.add(f"{name}@@{name}")
    return syms


def main():
    lib, script, symbols, core = sys.argv[1:5]
    if not shutil.which("nm"):
        print("SKIP: nm is not installed (binutils)")
        return 77
    ours = exported(lib)
    listed = set(re.findall(r"^\s+(fhash_\w+);", open(script).read(), re.M))
    debian = {line.split()[0] for line in open(symbols) if line.startswith(" ") and "@" in line}
    bad = []
    versioned = {s.split("@")[0] for s in ours if not s.startswith("LIBFHASH")}
    if versioned != listed:
        bad.append(f"exported but not in {script}: {sorted(versioned - listed)}; "
                   f"listed but not exported: {sorted(listed - versioned)}")
    if {s.replace("@@", "@") for s in ours} != debian:
        bad.append(f"{symbols} differs from the exports: {sorted(debian ^ {s.replace('@@', '@') for s in ours})}")
    clash = versioned & {s.split("@")[0] for s in exported(core)}
    if clash:
        bad.append(f"names libfhash.so.0 exports too: {sorted(clash)}")
    for b in bad:
        print(f"FAIL: {b}")
    if not bad:
        print(f"ok: {len(versioned)} symbols, all listed, versioned as debian/ says, none of libfhash's")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
