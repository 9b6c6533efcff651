#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-libfhash-symbols.py LIBFHASH_SO DAEMON_ARCHIVE: libfhash.so.0 holds the client and the
in-process engine, nothing of fhashd. Every global symbol the objects of src/daemon/ define (nm on
the fhash-daemon archive) must be absent from the library's symbol table, hidden ones included: a
backup tool that links libfhash must not map fhashd's manager, jobs or fd screening into its
process. The library exports fhash_* and nothing else. Exits 77 when nm is missing or the library
was stripped (nothing could be checked)."""

import os
import shutil
import subprocess
import sys


def nm(*args):
    p = subprocess.run(['nm', *args], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        sys.exit(f'FAIL: nm {" ".join(args)}: {p.stderr.strip()}')
    return p.stdout.splitlines()


def main():
    if len(sys.argv) != 3:
        sys.exit('usage: test-libfhash-symbols.py LIBFHASH_SO DAEMON_ARCHIVE')
    lib, archive = sys.argv[1:]
    if not shutil.which('nm'):
        print('SKIP: nm is not installed (binutils)')
        return 77
    daemon = set()
    for line in nm('--defined-only', archive):
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBR':
            daemon.add(f[2])
    if not daemon:
        sys.exit(f'FAIL: no global symbol defined in {archive}: is it the daemon archive?')
    ours = {}
    for line in nm('--defined-only', lib):
        f = line.split()
        if len(f) == 3:
            ours[f[2]] = f[1]
    if not ours:
        print(f'SKIP: {lib} has no symbol table (stripped): nothing to check')
        return 77
    leaked = sorted(daemon & set(ours))
    if leaked:
        print(f'FAIL: {len(leaked)} symbol(s) of src/daemon/ in {os.path.basename(lib)}:')
        for s in leaked:
            print(f'  {ours[s]} {s}')
        return 1
    exported = [line.split()[-1] for line in nm('-D', '--defined-only', lib)]
    bad = [s for s in exported if not s.startswith('fhash_') and not s.startswith('LIBFHASH_')]
    if bad:
        print(f'FAIL: {os.path.basename(lib)} exports more than fhash_*: {", ".join(bad)}')
        return 1
    print(f'ok: none of the {len(daemon)} global symbols of src/daemon/ is in {os.path.basename(lib)} '
          f'({len(ours)} symbols, {os.path.getsize(lib):,} bytes); exports: {len(exported)}, all fhash_*')
    return 0


if __name__ == '__main__':
    sys.exit(main())
