# SPDX-License-Identifier: MIT
"""The peers: the tools people already have, how each runs over one file or a set, and the check of
every output against the reference digests."""

import os
import re
import shutil

from .common import DIGEST_HEX

# Peers: every peer runs once, then those within CANDIDATE_MARGIN of the fastest run again up to
# best of n (they can be the best peer, which every target is measured against); the others keep their
# one run: sha256sum or hashdeep at ~0.4 GB/s on 4 GiB would otherwise eat much of the time budget.
CANDIDATE_MARGIN = 1.25

# The CLI peers of every algorithm: (label, argv prefix, flags); the file names follow. An engine
# row's ratio is to the fastest of them on the same data. On one file each runs once over the file.
# Over a set every peer runs the way people run it on many files with several cores,
# `find . -type f -print0 | xargs -0 -P<cores> -n <N> PEER` (see XARGS_N), and flags add a
# single-process form: 'single' = also one process over the whole set (`xargs PEER`, or the
# tool's own recursion in RECURSIVE: `rhash -r .`); 'threads' = the tool spreads files over its own
# threads (hashdeep), so over a set it runs only as one recursive process, never under xargs -P.
# A peer whose program is not installed becomes a "skipped: not installed" row.
PEERS = {
    'sha256': [('sha256sum', ['sha256sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-sha256'], ()),
               ('rhash', ['rhash', '--sha256'], ('single',)),
               ('hashdeep', ['hashdeep', '-c', 'sha256'], ('threads',))],
    'sha512': [('sha512sum', ['sha512sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-sha512'], ()),
               ('rhash', ['rhash', '--sha512'], ('single',))],
    'sha1': [('sha1sum', ['sha1sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-sha1'], ()),
             ('rhash', ['rhash', '--sha1'], ('single',)), ('hashdeep', ['hashdeep', '-c', 'sha1'], ('threads',))],
    'md5': [('md5sum', ['md5sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-md5'], ()),
            ('rhash', ['rhash', '--md5'], ('single',)), ('hashdeep', ['hashdeep', '-c', 'md5'], ('threads',))],
    'sha3-256': [('openssl dgst', ['openssl', 'dgst', '-sha3-256'], ()),
                 ('rhash', ['rhash', '--sha3-256'], ('single',))],
    'blake2b': [('b2sum', ['b2sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-blake2b512'], ()),
                ('rhash', ['rhash', '--blake2b'], ('single',))],
    # b3sum hashes one file on all cores (mmap + threads) but the files of a set one after another:
    # `xargs b3sum` is how it runs over many files, `xargs -P b3sum -t1` one file per core.
    'blake3': [('b3sum', ['b3sum'], ('single',)), ('b3sum -t1', ['b3sum', '--num-threads', '1'], ())],
    'xxh3': [('xxhsum -H3', ['xxhsum', '-H3'], ())],
    'xxh128': [('xxhsum -H128', ['xxhsum', '-H128'], ())],
    'crc32c': [('rhash', ['rhash', '--crc32c'], ('single',))],
    'sha224': [('sha224sum', ['sha224sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-sha224'], ()),
               ('rhash', ['rhash', '--sha224'], ('single',))],
    'sha384': [('sha384sum', ['sha384sum'], ()), ('openssl dgst', ['openssl', 'dgst', '-sha384'], ()),
               ('rhash', ['rhash', '--sha384'], ('single',))],
    'sha3-384': [('openssl dgst', ['openssl', 'dgst', '-sha3-384'], ()), ('rhash', ['rhash', '--sha3-384'], ('single',))],
    'sha3-512': [('openssl dgst', ['openssl', 'dgst', '-sha3-512'], ()), ('rhash', ['rhash', '--sha3-512'], ('single',))],
    'sm3': [('openssl dgst', ['openssl', 'dgst', '-sm3'], ()), ('cksum -a sm3', ['cksum', '-a', 'sm3'], ())],
    'blake2s': [('openssl dgst', ['openssl', 'dgst', '-blake2s256'], ()), ('rhash', ['rhash', '--blake2s'], ('single',))],
    'xxh32': [('xxhsum -H0', ['xxhsum', '-H0'], ())],
    'xxh64': [('xxhsum -H1', ['xxhsum', '-H1'], ())],
    # fsverity-utils: one file at a time on one core (libfsverity reads it through one callback).
    'fsverity': [('fsverity digest', ['fsverity', 'digest'], ())],
}
# The single-process form of a peer that walks a directory itself (its 'single' or 'threads' form):
# extra arguments after its argv prefix, run in the set's directory. Others go through one `xargs`.
RECURSIVE = {'rhash': ['-r', '.'], 'hashdeep': ['-r', '.']}
# `xargs -n` per peer under -P: files per process. Each process costs a fork + exec + the tool's own
# start-up (measured on this VM, 200 runs on one 4 KiB file: xxhsum 0.9 ms, sha256sum 1.4 ms, b3sum
# 1.6-1.9 ms, hashdeep 2.5 ms, rhash 2.7 ms, openssl dgst 4.6 ms: it loads its config and providers)
# against 7-23 µs per hot 4 KiB file: N is where start-up stays near 3-5% on 4 KiB files (the worst
# case; on 1 MiB files it is nothing). xargs_n() then caps N at files / (4 x cores), so that each
# process slot gets at least four batches and no core idles while the last, large batch runs (the
# mixed tree): 250 on 2,000 x 1 MiB, 206 on the tree, 2,500 on 20,000 x 4 KiB (2 cores).
# xargs's default (as many names as fit in 128 KiB) would hand most sets to one process: no -P at all.
XARGS_N = {'sha256sum': 2048, 'sha512sum': 2048, 'sha1sum': 2048, 'md5sum': 2048, 'b2sum': 2048,
           'openssl dgst': 8192, 'rhash': 8192, 'b3sum': 4096, 'b3sum -t1': 4096, 'xxhsum -H3': 4096,
           'xxhsum -H128': 4096, 'sha224sum': 2048, 'sha384sum': 2048, 'cksum -a sm3': 2048,
           'xxhsum -H0': 4096, 'xxhsum -H1': 4096, 'fsverity digest': 4096}
XARGS_BATCHES_PER_CORE = 4

# Several algorithms in one read (`fhashctl -a A,B`, issue 16) against the tools that do the same
# (hashdeep -c A,B spreads files over its threads; rhash with two hash options, one process) and
# against the way people do it without them: each algorithm's tool once per algorithm, one read
# each, under `xargs -P<cores>` over a set. (set, [(label, argv prefix, form, untagged algo)]):
# form 'file' runs the command on the file names, 'threads'/'single' as PEERS' flags, 'xargs' under
# `xargs -P<cores>`; every line of a peer's output is tagged (BSD) or hashdeep's CSV, except that
# GNU lines are the untagged algorithm's.
MULTI_SETS = [
    ('md5,sha256', [('hashdeep -c md5,sha256', ['hashdeep', '-c', 'md5,sha256'], 'threads', None),
                    ('rhash --md5 --sha256', ['rhash', '--bsd', '--md5', '--sha256'], 'single', None),
                    ('md5sum + sha256sum', ['sh', '-c', 'md5sum --tag "$@" && sha256sum --tag "$@"', 'sh'],
                     'xargs', None)]),
    ('sha256,blake3', [('sha256sum + b3sum', ['sh', '-c', 'sha256sum --tag "$@" && b3sum "$@"', 'sh'],
                        'xargs', 'blake3')]),
]
MULTI_TAGS = {'MD5': 'md5', 'SHA256': 'sha256', 'BLAKE3': 'blake3', 'SHA1': 'sha1', 'SHA512': 'sha512'}


def parse_multi(out, algos, cwd, untagged=None):
    """{algo: {path: hex}} from the output of a tool hashing with several algorithms: BSD lines
    (`TAG (PATH) = HEX`, rhash pads the tag), hashdeep's CSV (its `%%%% size,A,B,filename` header gives
    the order), and GNU lines (`HEX  PATH`) of the untagged algorithm."""
    got = {a: {} for a in algos}
    bsd = re.compile(r'^([\w-]+) *\((.+)\) ?= ?([0-9a-f]+)$')
    gnu = re.compile(r'^([0-9a-f]+) [ *](.+)$')
    order = None

    def put(algo, path, digest):
        if algo in got and len(digest) == DIGEST_HEX[algo]:
            if os.path.isabs(path):
                path = os.path.relpath(path, cwd)
            got[algo][os.path.normpath(path)] = digest

    for line in out.splitlines():
        if line.startswith('%%%% size,'):
            order = line[len('%%%% size,'):].split(',')[:-1]
            continue
        m = bsd.match(line)
        if m:
            put(MULTI_TAGS.get(m.group(1), m.group(1).lower()), m.group(2), m.group(3))
            continue
        if order and re.match(r'^\d+,', line):
            parts = line.split(',', len(order) + 1)
            for a, d in zip(order, parts[1:-1]):
                put(a, parts[-1], d)
            continue
        m = gnu.match(line)
        if m and untagged:
            put(untagged, m.group(2), m.group(1))
    return got


def parse_digests(out, algo, cwd):
    """{path: hex digest} from a checksum tool's output, whichever of the forms the peers print:
    GNU (`HEX  NAME`, sha256sum, b3sum, rhash, xxhsum -H128, fhashctl, bench-engine --digests), BSD
    (`NAME (PATH) = HEX`, `SHA2-256(PATH)= HEX`: openssl dgst, xxhsum -H3), fsverity digest's
    `sha256:HEX PATH` and hashdeep's CSV
    (`SIZE,HEX,/ABSOLUTE/PATH`, after its `%%%%` and `##` header lines). Paths are normalised relative to
    cwd, so `./d/f`, `d/f` and `/data/set/d/f` are the same file. Lines that are none of these (result
    lines, headers) are left out; the caller compares the count with the number of files."""
    n = DIGEST_HEX[algo]
    gnu = re.compile(r'^\\?(?:XXH3_|XXH128_)?([0-9a-f]{%d}) [ *](.+)$' % n)
    bsd = re.compile(r'^[\w-]+ ?\((.+)\) ?= ?([0-9a-f]{%d})$' % n)
    deep = re.compile(r'^\d+,([0-9a-f]{%d}),(.+)$' % n)
    fsv = re.compile(r'^sha(?:256|512):([0-9a-f]{%d}) (.+)$' % n)  # fsverity digest: one blank
    got = {}
    for line in out.splitlines():
        m = gnu.match(line) or fsv.match(line)
        if m:
            digest, path = m.group(1), m.group(2)
        else:
            m = bsd.match(line)
            if m:
                path, digest = m.group(1), m.group(2)
            else:
                m = deep.match(line)
                if not m:
                    continue
                digest, path = m.group(1), m.group(2)
        if os.path.isabs(path):
            path = os.path.relpath(path, cwd)
        got[os.path.normpath(path)] = digest
    return got


def xargs_n(label, nfiles, ncpu):
    """`xargs -n` for a peer under -P ncpu on nfiles files: XARGS_N, capped so that every process slot
    gets at least XARGS_BATCHES_PER_CORE batches."""
    return max(1, min(XARGS_N.get(label, 1024), -(-nfiles // (XARGS_BATCHES_PER_CORE * ncpu))))


def set_peer_command(label, argv, nfiles, ncpu, form, outdir=None):
    """(argv to run in the set's directory, the row's label) for a peer over a set. form 'xargs': every
    core, `find . -type f -print0 | xargs -0 -P<cores> -n <N> PEER`; 'single': one process over the
    whole set (the tool's own recursion where RECURSIVE has it, else one `xargs` with no -P and no -n).
    Through bash with pipefail, so a failing find or peer fails the row (xargs exits 123 when any
    invocation failed); wait4() on bash counts every process of the pipeline.
    Under -P each batch writes to its own file in outdir (`sh -c 'exec PEER "$@" >> OUTDIR/$$'`: one
    more exec per batch, a few per set): processes sharing one stdout interleave their 4 KiB stdio
    flushes, which split lines, and the output could not be checked (seen: 1,988 of 2,000 lines of
    `openssl dgst` whole). collect_outputs() reads them back."""
    prog = label.split()[0]
    if form == 'single' and prog in RECURSIVE:
        return [*argv, *RECURSIVE[prog]], f'{label} {" ".join(RECURSIVE[prog])}'
    if form == 'single':
        return ['bash', '-c', 'set -o pipefail; find . -type f -print0 | xargs -0 "$@"', 'bash', *argv], \
            f'xargs {label}'
    n = xargs_n(label, nfiles, ncpu)
    return ['bash', '-c', f'set -o pipefail; find . -type f -print0 | xargs -0 -P{ncpu} -n{n} '
            'sh -c \'exec "$@" >> "$0/$$"\' "$0" "$@"', outdir, *argv], f'xargs -P{ncpu} -n{n} {label}'


def collect_outputs(outdir):
    """The batches' outputs of an `xargs -P` peer (set_peer_command()), concatenated; the files are
    removed for the next run."""
    out = []
    for fn in sorted(os.listdir(outdir)):
        path = os.path.join(outdir, fn)
        with open(path, errors='replace') as f:
            out.append(f.read())
        os.unlink(path)
    return ''.join(out)


def check_output(h, name, algo, who, out):
    """A set's output must hold one digest per file, each equal to the reference (the first complete
    output over this data set and algorithm: the engine's --digests, else the first peer's)."""
    cwd, names = h.data.files(name)
    got = parse_digests(out or '', algo, cwd)
    if len(got) != len(names):
        raise RuntimeError(f'{who}: {len(got)} digest lines for {len(names)} files '
                           f'({(out or "").strip().splitlines()[:1] or "no output"})')
    missing = set(os.path.normpath(n) for n in names) - set(got)
    if missing:
        raise RuntimeError(f'{who}: no digest for {len(missing)} of {len(names)} files (first: {min(missing)})')
    ref = h.ref_digests.get((name, algo))
    if ref is None:
        h.ref_digests[name, algo] = (who, got)
        return
    bad = sorted(p for p, d in got.items() if ref[1].get(p) != d)
    if bad:
        raise RuntimeError(f'{algo}: {who} and {ref[0]} disagree on {len(bad)} of {len(names)} files '
                           f'(first: {bad[0]}: {got[bad[0]]} vs {ref[1].get(bad[0])})')


def peer_row(h, name, label, argv, algo, cache, repeat, form='xargs', verify=None, flags=(), kind='peer',
             prior=None):
    """Runs a peer over a data set `repeat` times and keeps the fastest run (with prior, a row of the
    same peer measured before: the faster of the two stays, n counts both). One file: the tool on
    it, its digest checked against the engine's (verify). A set: set_peer_command()'s form, every
    run's output checked by check_output(): a peer that fails or prints the wrong digests is an
    error, never a row."""
    cwd, names = h.data.files(name)
    nbytes = h.data.nbytes(name)
    if h.data.is_set(name):
        cmd, label = set_peer_command(label, argv, len(names), h.ncpu, form, h.outdir())
    else:
        cmd = [*argv, *names]
    if not shutil.which(argv[0]):
        return h.skip_row(name, label, algo, cache, 'not installed', kind=kind)
    best = None
    for _ in range(repeat):
        if cache == 'cold':
            h.data.drop(name)
        r = h.measure(cmd, cwd=cwd, capture=True)
        if best is None or r.wall < best[0].wall:
            best = (r, h.last_other, h.data.residency(name) if cache == 'cold' else None)
        if h.data.is_set(name):
            check_output(h, name, algo, label, r.out + collect_outputs(h.outdir()))
        elif verify is not None:
            verify(r.out)
            verify = None
    r, h.last_other, cached = best
    if prior and prior['wall'] <= r.wall:
        prior['n'] += repeat
        h.last_other = None
        return prior
    row = h.add_row(name, label, algo, cache, nbytes, len(names), r.wall, r.user + r.sys,
                    n=repeat + (prior['n'] if prior else 0), kind=kind, rss_kib=r.maxrss_kib,
                    rss_exact=r.rss_exact, user=r.user, sys=r.sys, ctxsw=r.ctxsw, faults=r.faults,
                    form=form if h.data.is_set(name) else 'file')
    if cache == 'cold':
        row['cached_after'] = cached
    if prior:
        # The better run takes the earlier row's place in the table.
        h.rows.remove(row)
        h.rows[h.rows.index(prior)] = row
    return row


def peers(h, name, algo, cache, repeat, verify_with=None):
    """Every peer of algo on a data set: on one file, once over the file; over a set, the
    `xargs -P<cores>` form of each, and the single-process form of those people run that way.
    Each runs once; those within CANDIDATE_MARGIN of the fastest then up to best of `repeat`."""
    runs = []
    for label, argv, flags in PEERS[algo]:
        if not h.data.is_set(name):
            verify = check_digest(h, label, algo, verify_with) if verify_with is not None else None
            runs.append((h.guarded(label, peer_row, h, name, label, argv, algo, cache, 1, verify=verify,
                                   flags=flags), (label, argv, 'file', flags)))
            continue
        forms = ([] if 'threads' in flags else ['xargs']) + \
            (['single'] if 'single' in flags or 'threads' in flags else [])
        for form in forms:
            runs.append((h.guarded(f'{label} ({form})', peer_row, h, name, label, argv, algo, cache, 1,
                                   form=form, flags=flags), (label, argv, form, flags)))
    measured = [row for row, _ in runs if row and not row['skipped']]
    if repeat < 2 or not measured:
        return
    fastest = min(row['wall'] for row in measured)
    for row, (label, argv, form, flags) in runs:
        if row and not row['skipped'] and row['wall'] <= CANDIDATE_MARGIN * fastest:
            h.guarded(f'{label} ({form})', peer_row, h, name, label, argv, algo, cache, repeat - 1,
                      form=form, flags=flags, prior=row)


def check_digest(h, label, algo, engine_row):
    """A verifier for a peer's output against the engine's digest of the same single file."""
    want = None
    if engine_row and engine_row.get('digests'):
        want = engine_row['digests'][0].split()[0]

    def verify(out):
        if want is None:
            return
        m = re.search(r'\b(?:XXH3_|XXH128_)?([0-9a-f]{%d})\b' % DIGEST_HEX[algo], out)
        got = m.group(1) if m else None
        if got != want:
            h.error(f'{algo}: engine digest {want} != {label} {got}')
    return verify


def check_multi(h, name, algos, who, out, untagged=None):
    """Every algorithm's digests in a multi-algorithm output, checked as check_output() checks
    one algorithm's (against the same references)."""
    cwd, _ = h.data.files(name)
    got = parse_multi(out, algos, cwd, untagged)
    for a in algos:
        check_output(h, name, a, who, '\n'.join(f'{d}  {p}' for p, d in sorted(got[a].items())))


def multi_row(h, name, label, cmd, algos, kind, untagged=None):
    cwd, names = h.data.files(name)
    best = None
    for _ in range(h.repeat):
        r = h.measure(cmd, cwd=cwd, capture=True)
        out = r.out + (collect_outputs(h.outdir()) if cmd and cmd[0] == 'bash' else '')
        check_multi(h, name, algos, label, out, untagged)
        if best is None or r.wall < best[0].wall:
            best = (r, h.last_other)
    r, h.last_other = best
    return h.add_row(name, label, ','.join(algos), 'hot', h.data.nbytes(name), len(names), r.wall,
                     r.user + r.sys, n=h.repeat, kind=kind, rss_kib=r.maxrss_kib,
                     rss_exact=r.rss_exact, user=r.user, sys=r.sys)
