#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""test-libfhash-symbols.py LIBFHASH_SO SYMBOLS_FILE DAEMON_ARCHIVE OTHER_ARCHIVE...: libfhash.so.0 holds the
client and the in-process engine, nothing of fhashd. Every global symbol the objects of src/daemon/
define (nm on the fhash-daemon archive) must be absent from the library's symbol table, hidden ones
included: a backup tool that links libfhash must not map fhashd's manager, jobs or fd screening into
its process. A name the daemon shares with a static function of another layer (the engine's own
job_free() in a build without inlining) counts only when the library holds more of it than the other
layers' archives define. The library exports fhash_* and nothing else, each in a version node,
exactly as the Debian symbols file lists them. Exits 77 when nm is missing or the library was
stripped (nothing could be checked)."""

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
    if len(sys.argv) < 5:
        sys.exit('usage: test-libfhash-symbols.py LIBFHASH_SO SYMBOLS_FILE DAEMON_ARCHIVE OTHER_ARCHIVE...')
    lib, symbols, archive, others = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
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
    ours, count = {}, {}
    for line in nm('--defined-only', lib):
        f = line.split()
        if len(f) == 3:
            ours[f[2]] = f[1]
            count[f[2]] = count.get(f[2], 0) + 1
    if not ours:
        print(f'SKIP: {lib} has no symbol table (stripped): nothing to check')
        return 77
    elsewhere = {}
    for a in others:
        for line in nm('--defined-only', a):
            f = line.split()
            if len(f) == 3 and f[1] in 'tTdDbBrR':
                elsewhere[f[2]] = elsewhere.get(f[2], 0) + 1
    leaked = sorted(x for x in daemon & set(ours) if count[x] > elsewhere.get(x, 0))
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
    # nm -D says fhash_x@@LIBFHASH_0.1; the symbols file " fhash_x@LIBFHASH_0.1 0.1.0".
    versioned = {x.replace('@@', '@') for x in exported if not x.startswith('LIBFHASH_')}
    unversioned = sorted(x for x in versioned if '@' not in x)
    if unversioned:
        print(f'FAIL: exported without a version node (libfhash.sym): {", ".join(unversioned)}')
        return 1
    with open(symbols) as f:
        listed = {line.split()[0] for line in f if line.startswith(' fhash_')}
    if listed != versioned:
        print(f'FAIL: {symbols} and the library disagree: only listed {sorted(listed - versioned)}, '
              f'only exported {sorted(versioned - listed)}')
        return 1
    print(f'ok: none of the {len(daemon)} global symbols of src/daemon/ is in {os.path.basename(lib)} '
          f'({len(ours)} symbols, {os.path.getsize(lib):,} bytes); exports: {len(versioned)}, all fhash_*, '
          f'each in its version node as {os.path.basename(symbols)} lists it')
    return 0


if __name__ == '__main__':
    sys.exit(main())
