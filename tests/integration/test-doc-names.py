#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-doc-names.py: what a program meets is documented where an integrator looks (issue 27: the
# error name Gone, fhash_client_get_fallback_reason, FHASHCTL_BUSY_TIMEOUT and FHASH_LIBRARY were in
# no header, README or man page, and the header said one run per client while two at once work):
#   - every org.fhash.Hasher1.Error.* name the sources give (fhashd's and libfhash's own) is in the
#     README and in a man page (systemd/*.scd);
#   - every environment variable the code reads (getenv() in src/, os.environ in python/) is in the
#     README or a man page, but for a few that belong to others, listed below with why;
#   - every function <fhash/fhash.h> declares is in libfhash(3)'s SYNOPSIS;
#   - fhash.h and libfhash(3) say a client may have several runs at once (the client-loop test runs two).
# Usage: test-doc-names.py (from the tree: $FHASH_SOURCE_ROOT or this file's ../..)
import glob
import os
import re
import sys

SRC = os.environ.get("FHASH_SOURCE_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# Read, but documented by its owner: systemd sets it for fhashd.service (sd_notify(3)).
NOT_OURS = {"NOTIFY_SOCKET": "sd_notify(3), set by systemd"}

failures = []


def read(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as f:
        return f.read()


def expand_braces(text):
    """org.fhash.Hasher1.Error.{A, B} as the README writes lists: each name whole."""
    return re.sub(r"org\.fhash\.Hasher1\.Error\.\{([^}]*)\}",
                  lambda m: " ".join("org.fhash.Hasher1.Error." + n.strip() for n in m.group(1).split(",")),
                  text)


def sources(patterns):
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(SRC, pattern), recursive=True)):
            if "/test-" in path or os.path.basename(path).startswith("test-"):
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                yield os.path.relpath(path, SRC), f.read()


readme = expand_braces(read("README.md"))
man = {p: expand_braces(read(p)) for p in
       (os.path.relpath(x, SRC) for x in sorted(glob.glob(os.path.join(SRC, "systemd", "*.scd"))))}
man_all = "\n".join(man.values())
# fhashd(8) writes its per-file names as "org.fhash.Hasher1.Error. followed by *NotFound*, ...".
fhashd8 = man.get("systemd/fhashd.8.scd", "")
m = re.search(r"\*org\.fhash\.Hasher1\.Error\.\* followed by(.*?)\.\s", fhashd8, re.S)
if m:
    man_all += " " + " ".join("org.fhash.Hasher1.Error." + n for n in re.findall(r"\*(\w+)\*", m.group(1)))

# Error names: FHASH_ERROR_PREFIX "Name" and org.fhash.Hasher1.Error.Name in code and headers.
names = {}
for path, text in sources(["src/**/*.c", "src/**/*.h", "include/**/*.h"]):
    for n in re.findall(r'FHASH_ERROR_PREFIX\s+"(\w+)"', text) + re.findall(r"org\.fhash\.Hasher1\.Error\.(\w+)", text):
        names.setdefault(n, path)
if len(names) < 10:
    failures.append(f"only {len(names)} error names found in src/ and include/: {sorted(names)}")
for n, path in sorted(names.items()):
    full = "org.fhash.Hasher1.Error." + n
    if not re.search(re.escape(full) + r"\b", readme):
        failures.append(f"{full} ({path}) is not in README.md")
    if not re.search(re.escape(full) + r"\b", man_all):
        failures.append(f"{full} ({path}) is in no man page (systemd/*.scd)")

# Environment variables.
env = {}
for path, text in sources(["src/**/*.c"]):
    for v in re.findall(r'getenv\("(\w+)"\)', text):
        env.setdefault(v, path)
for path, text in sources(["python/**/*.py"]):
    for v in re.findall(r'os\.environ(?:\.get\(|\[)"(\w+)"', text):
        env.setdefault(v, path)
    # A name kept in a constant for os.environ (LIBRARY_ENV = "FHASH_LIBRARY").
    for v in re.findall(r'^\w*_ENV\s*=\s*"(\w+)"', text, re.M):
        env.setdefault(v, path)
if len(env) < 5:
    failures.append(f"only {len(env)} environment variables found: {sorted(env)}")
for v, path in sorted(env.items()):
    if v in NOT_OURS:
        continue
    if not re.search(r"\b" + v + r"\b", readme + man_all):
        failures.append(f"${v} (read in {path}) is in neither README.md nor a man page")

# Functions of fhash.h in libfhash(3)'s synopsis.
header = read("include/fhash/fhash.h")
lib3 = man.get("systemd/libfhash.3.scd", "")
synopsis = lib3.split("# SYNOPSIS", 1)[-1].split("# DESCRIPTION", 1)[0]
fns = sorted(set(re.findall(r"^[a-z_ *]*\b(fhash_[a-z_]+)\(", header, re.M)))
if len(fns) < 15:
    failures.append(f"only {len(fns)} functions found in fhash.h")
for fn in fns:
    if not re.search(r"\b" + fn + r"\(", synopsis):
        failures.append(f"{fn}() is not in libfhash(3)'s SYNOPSIS")

# Several runs of one client at once: said, and never the opposite.
for path, text in (("include/fhash/fhash.h", header), ("systemd/libfhash.3.scd", lib3)):
    flat = re.sub(r"\s*\n\s*\*?\s*", " ", text)
    if re.search(r"one client runs one thing at a time|client runs one thing at a time", flat, re.I):
        failures.append(f"{path} says a client runs one thing at a time; two runs at once work")
    if not re.search(r"several runs at once|several at once", flat):
        failures.append(f"{path} does not say that a client may have several runs at once")

for f in failures:
    print(f"FAIL: {f}", file=sys.stderr)
if failures:
    sys.exit(1)
print(f"ok: {len(names)} error names in README.md and the man pages, {len(env) - len(NOT_OURS)} environment "
      f"variables documented, {len(fns)} functions in libfhash(3)'s SYNOPSIS, several runs per client said")
