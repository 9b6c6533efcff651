# SPDX-License-Identifier: MIT
"""The main scenarios: the big file hot, the sets hot, everything cold, and several algorithms in one
read. Each is a function of the harness that adds rows; the targets are computed from the rows later."""

import os
import re
import shutil

from . import ceilings, engine, peers
from .common import MiB

# What each set scenario measures. Hot: the four algorithm families of issue 14 (SHA-2, BLAKE3,
# XXH3 and XXH3-128); cold: one of each speed class (the disk is the limit for the fast ones).
SET_HOT_ALGOS = ('sha256', 'blake3', 'xxh3', 'xxh128', 'fsverity')
SET_COLD_ALGOS = ('sha256', 'blake3', 'xxh3')
BIG_COLD_ALGOS = ('sha256', 'blake3', 'xxh3')


def run_big(h):
    name = 'big'
    h.section(f'{h.data.label(name)} file: every algorithm, hot')
    h.data.warm(name)
    h.guarded('fio hot', ceilings.fio_row, h, name, 'hot')
    for algo in h.big_algos():
        erow = None
        if h.args.bench_engine:
            erow = h.guarded(f'engine {algo}', engine.engine_row, h, name, algo, 'hot', h.repeat,
                             digests=True)
        # Best of 3 where a target is measured against the best peer; best of 2 for the others.
        peers.peers(h, name, algo, 'hot', h.repeat if algo in SET_HOT_ALGOS else max(1, h.repeat - 1),
                    verify_with=erow)
    for algo in h.big_algos():
        engine.engine_variants(h, name, algo, 'hot', h.repeat)


def run_set(h, name):
    h.section(f'{h.data.title(name)}, hot')
    h.data.warm(name)
    if h.data.specs[name][2] >= MiB or h.data.specs[name][0] == 'tree':
        # fio over 4 KiB files measures fio's own open/close, not a ceiling: only for larger files.
        h.guarded('fio hot', ceilings.fio_row, h, name, 'hot')
    for algo in h.set_algos(SET_HOT_ALGOS):
        if h.args.bench_engine:
            row = h.guarded(f'engine {algo}', engine.engine_row, h, name, algo, 'hot', h.repeat, digests=True)
            if row:
                h.guarded(f'engine {algo}', peers.check_output, h, name, algo, 'bench-engine --digests',
                          '\n'.join(row['digests']))
        h.guarded(f'fhashctl --local {algo}', engine.fhashctl_local_row, h, name, algo, 'hot', h.repeat)
        peers.peers(h, name, algo, 'hot', h.repeat)
        engine.engine_variants(h, name, algo, 'hot', h.repeat)


def run_cold(h):
    names = h.datasets()
    if not h.data.can_drop_caches():
        h.section('cold cache: skipped')
        h.say('# the cold scenarios need root (sync; echo 3 > /proc/sys/vm/drop_caches before each run);'
              ' run bench/run as root, or with --no-cold')
        for name in names:
            h.skip_row(name, 'all tools', '-', 'cold', 'not root: cannot drop the page cache')
        return
    h.section('cold cache (sync; echo 3 > /proc/sys/vm/drop_caches before each run; on a VM "cold" '
              'may still be the host\'s cache)')
    for name in names:
        algos = BIG_COLD_ALGOS if name == 'big' else SET_COLD_ALGOS
        if not h.data.is_set(name) or h.data.specs[name][2] >= MiB:
            h.guarded('fio cold', ceilings.fio_row, h, name, 'cold')
        for algo in h.set_algos(algos):
            if h.args.bench_engine:
                # Best of `repeat` processes, each after a drop: cold reads on this virtio disk vary by
                # up to 2x from run to run, and these rows are the cold targets' numerators.
                best = None
                for _ in range(h.repeat):
                    r = h.guarded(f'engine {algo} cold', engine.engine_row, h, name, algo, 'cold', 1, drop=True)
                    if r and best and r['gbps'] <= best['gbps']:
                        h.rows.remove(r)
                    elif r and best:
                        h.rows.remove(best)
                        best = r
                    elif r:
                        best = r
                if best:
                    best['n'] = h.repeat
            if h.data.is_set(name):
                h.guarded(f'fhashctl --local {algo} cold', engine.fhashctl_local_row, h, name, algo, 'cold', 1)
            peers.peers(h, name, algo, 'cold', h.repeat)
            engine.engine_variants(h, name, algo, 'cold', 1)


def run_multi(h):
    """`fhashctl hash --local -a A,B` (one read of each file) next to hashdeep, rhash and each
    algorithm's own tool run once per algorithm, on one hot file and a hot set of 1 MiB files."""
    if not h.args.fhashctl or not os.access(h.args.fhashctl, os.X_OK):
        h.error('multi: fhashctl not built')
        return
    names = [n for n in ('big', 'mid') if n in h.datasets()]
    h.data.make(names)
    for name in names:
        h.section(f'{h.data.title(name)}, hot: several algorithms in one read')
        h.data.warm(name)
        cwd, files = h.data.files(name)
        for ms, tools in peers.MULTI_SETS:
            algos = ms.split(',')
            if h.args.algos and not set(algos) & set(h.args.algos):
                continue
            ours = h.guarded(f'fhashctl -a {ms}', peers.multi_row, h, name, f'fhashctl hash --local -a {ms}',
                             [h.args.fhashctl, 'hash', '--local', '-a', ms, *files], algos, 'fhash')
            for label, argv, form, untagged in tools:
                if not shutil.which(argv[0]) or (argv[0] == 'sh' and not all(
                        shutil.which(t) for t in re.findall(r'(\w+sum) ', argv[2]))):
                    h.skip_row(name, label, ms, 'hot', 'not installed')
                    continue
                if not h.data.is_set(name) or form in ('threads', 'single'):
                    cmd, shown = ([*argv, *peers.RECURSIVE[argv[0]]], f'{label} -r .') \
                        if h.data.is_set(name) and argv[0] in peers.RECURSIVE else ([*argv, *files], label)
                else:
                    cmd, shown = peers.set_peer_command(label, argv, len(files), h.ncpu, 'xargs', h.outdir())
                h.guarded(label, peers.multi_row, h, name, shown, cmd, algos, 'peer', untagged)
            bp = h.best_peer(f'{name}-hot', ms)
            if ours and bp:
                ratio = ours['gbps'] / bp['gbps']
                ours['ratio'] = f'{ratio:.2f}x {bp["tool"]}'
                tid = f'M-{name}-{ms.replace(",", "+")}'
                h.target(tid, ratio, f'{ours["gbps"]:.2f} GB/s vs {bp["tool"]} {bp["gbps"]:.2f} GB/s',
                         row=ours)
