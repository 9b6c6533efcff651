# SPDX-License-Identifier: MIT
"""The targets: what fhash is held to (from the issues), each computed from a run's rows with the
evidence behind its number, and the ratios every row gets to its best peer and its ceiling."""

import json
import os
import shutil

from .ceilings import ceiling_for, hash_ceiling
from .common import BASELINE_FULL, GB, ROOT, cpu_busy_s
from .daemon import DAEMON_COLD, DAEMON_HOT
from .engine import engine_argv
from .peers import MULTI_SETS
from .proc import run_child
from .scenarios import SET_COLD_ALGOS, SET_HOT_ALGOS

OP_TEXT = {'ge': '>=', 'le': '<=', 'lt': '<'}
OP_MD = {'ge': '≥', 'le': '≤', 'lt': '<'}


def fmt_value(v, thr, tid=''):
    if tid.startswith('R-'):
        return f'{v:.1f} MiB'
    if thr > 100:
        return f'{v:,.0f}'
    if thr < 0.1:
        return f'{100 * v:.2f}%'
    return f'{v:.3f}' if v == v else '?'


# The targets: id -> (description, threshold, 'ge' / 'le' / 'lt', from an issue). Those not from an
# issue are kept because earlier results quote them. The names are stable: RESULTS.md, ANALYSIS.md
# and the issues refer to them (bench/README.md lists every one with its definition).
TARGETS = {
    'T1': ('SHA-256, 4 GiB hot ÷ one-core `openssl speed`', 0.97, 'ge', True),
    'B1': ('BLAKE3, 4 GiB hot ÷ b3sum', 1.0, 'ge', True),
    'X1': ('XXH3-128, 4 GiB hot ÷ `xxhsum -H128`', 1.3, 'ge', True),
    'X2': ('XXH3, 4 GiB hot ÷ one core of bench-hash XXH3', 0.95, 'ge', True),
    'C1': ('SHA-256, 4 GiB cold ÷ min(fio --direct=1, hash ceiling)', 0.95, 'ge', True),
    'C2': ('BLAKE3, 4 GiB cold ÷ min(fio --direct=1, hash ceiling)', 0.95, 'ge', True),
    'T2': ('SHA-256, 2,000 × 1 MiB hot ÷ `openssl speed -multi <cores>`', 0.95, 'ge', True),
    'T3': ('SHA-256, 20,000 × 4 KiB hot, files/s', 250000, 'ge', True),
    'S1': ('SHA-256, 20,000 × 4 KiB cold ÷ best peer (files/s)', 2.5, 'ge', True),
    'N1': ('cache-neutral cold 4 GiB: share of the file left in the page cache', 0.01, 'le', True),
    'N2': ('cache-neutral cold 4 GiB ÷ normal cold (throughput)', 0.95, 'ge', True),
    'D1e': ('`fhashctl` via fhashd ÷ in-process (bench-engine), 4 GiB hot', 0.95, 'ge', True),
    'T4': ('engine CPU s/GB, SHA-256 4 GiB hot ÷ openssl\'s (1 / its GB/s)', 1.05, 'le', False),
    'D1': ('`fhashctl` via fhashd ÷ `fhashctl --local`, 4 GiB hot', 0.95, 'ge', False),
    'D2': ('`fhashctl` via fhashd ÷ `fhashctl --local`, 20,000 × 4 KiB hot (files/s)', 0.8, 'ge', False),
    'D2e': ('`fhashctl` via fhashd ÷ bench-engine, 20,000 × 4 KiB hot (files/s)', 0.8, 'ge', False),
}
# M: `fhashctl --local -a A,B` ÷ the fastest way to get both digests with other tools (MULTI_SETS).
for _ms, _ in MULTI_SETS:
    for _ds in ('big', 'mid'):
        TARGETS[f'M-{_ds}-{_ms.replace(",", "+")}'] = (
            f'`fhashctl --local -a {_ms}`, {"one file" if _ds == "big" else "a set of 1 MiB files"} hot '
            '÷ best peer or tool pair', 1.0, 'ge', True)
# Issue 14's targets, one per regime: <kind>-<data set>-<cache>-<algorithm>.
DS_TITLES = {'big': '4 GiB', 'mid': '2,000 × 1 MiB', 'small': '20,000 × 4 KiB', 'mixed': 'mixed tree'}
ALGO_TITLES = {'sha256': 'SHA-256', 'blake3': 'BLAKE3', 'xxh3': 'XXH3', 'xxh128': 'XXH3-128', 'fsverity': 'fs-verity'}
# P: the engine ÷ the fastest peer (any form) on the same data, algorithm and cache state.
for _ds in DS_TITLES:
    for _a in SET_HOT_ALGOS:
        TARGETS[f'P-{_ds}-hot-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} hot ÷ best peer',
                                        1.3 if _ds == 'small' else 1.0, 'ge', True)
for _ds in DS_TITLES:
    for _a in SET_COLD_ALGOS:
        TARGETS[f'P-{_ds}-cold-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} cold ÷ best peer', 1.5, 'ge', True)
# U: the engine's CPU seconds per GB ÷ those of the fastest peer in the same regime.
for _ds in DS_TITLES:
    for _a in SET_HOT_ALGOS:
        TARGETS[f'U-{_ds}-hot-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} hot: engine CPU s/GB ÷ best peer\'s',
                                        1.0, 'le', True)
# F: fhashctl through fhashd ÷ fhashctl --local (in-process, same client, same minute).
for _ds, _a in DAEMON_HOT:
    TARGETS[f'F-{_ds}-hot-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} hot: via fhashd ÷ `fhashctl --local`',
                                    0.95, 'ge', True)
# B: the same through dbus-daemon (`--no-direct`): what clients without a direct connection get (GDBus,
# python-dbus), SHA-256 hot only (the path does not depend on the hash).
for _ds, _a in DAEMON_HOT:
    if _a == 'sha256':
        TARGETS[f'B-{_ds}-hot-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} hot: via fhashd through dbus-daemon '
                                        '(`--no-direct`) ÷ `fhashctl --local`', 0.95, 'ge', True)
for _ds, _a in DAEMON_COLD:
    TARGETS[f'F-{_ds}-cold-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} cold: via fhashd ÷ `fhashctl --local`',
                                     0.95, 'ge', True)
# E: what the layers above the engine cost on many small files (issue 25): `fhashctl hash --local` ÷
# bench-engine, files/s on the same hot set, the same minute.
TARGETS['E-small-hot-sha256'] = ('SHA-256, 20,000 × 4 KiB hot: `fhashctl hash --local` ÷ bench-engine (files/s)',
                                 0.9, 'ge', True)
# R: the largest peak RSS of bench-engine and `fhashctl --local` over every run on a set (MiB).
for _ds in ('mid', 'small', 'mixed'):
    TARGETS[f'R-{_ds}'] = (f'{DS_TITLES[_ds]}: peak RSS of the engine and `fhashctl --local`, every run (MiB)',
                           64, 'lt', True)
# L: what leads today falls by at most 3% against the saved full run (bench/baseline-full.json as it
# was when the run started): a target's value ÷ its saved value (for N1, a share: the rise, at most 3%
# of its 1% allowance); a cold set: the engine ÷ fio --direct=1 of the same run (the disk's run-to-run
# spread cancels), ÷ the same in the saved run (raw throughput where fio is not run: 4 KiB files).
LEADER_TARGETS = ('T1', 'B1', 'N1', 'N2', 'D1', 'D2')
LEADER_COLD = [(ds, a) for ds in ('mid', 'small', 'mixed') for a in ('sha256', 'xxh3')]
LEADER_FALL = 0.03
for _t in LEADER_TARGETS:
    if TARGETS[_t][2] == 'ge':
        TARGETS[f'L-{_t}'] = (f'{_t} now ÷ {_t} in the saved run', 1 - LEADER_FALL, 'ge', True)
    else:
        TARGETS[f'L-{_t}'] = (f'{_t} now − {_t} in the saved run', LEADER_FALL * TARGETS[_t][1], 'le', True)
for _ds, _a in LEADER_COLD:
    TARGETS[f'L-{_ds}-cold-{_a}'] = (f'{ALGO_TITLES[_a]}, {DS_TITLES[_ds]} cold: engine now ÷ in the saved run '
                                     '(each ÷ fio --direct=1 of its run where fio runs)', 1 - LEADER_FALL, 'ge', True)
del _ds, _a, _t


def leader_reference(path=BASELINE_FULL):
    """The saved full run's values behind the L-* targets, or None without one."""
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    if data.get('mode') != 'full':
        return None
    targets = {t['id']: t['value'] for t in data.get('targets', [])
               if t['id'] in LEADER_TARGETS and t.get('value') is not None}
    cold = {}
    for ds, algo in LEADER_COLD:
        rows = [r for r in data['rows'] if not r.get('skipped') and r['scenario'] == f'{ds}-cold']
        e = next((r for r in rows if r['tool'] == 'fhash engine' and r['algo'] == algo), None)
        fio = next((r for r in rows if r['tool'].startswith('fio')), None)
        if e:
            cold[f'{ds}/{algo}'] = {'gbps': e['gbps'], 'fio': fio['gbps'] if fio else None}
    return {'source': os.path.relpath(path, ROOT), 'started': data.get('started'),
            'git': data.get('machine', {}).get('git'), 'targets': targets, 'cold': cold}


def targets_json(h, perf=None):
    out = []
    for tid, (desc, thr, op, issue) in TARGETS.items():
        t = h.targets.get(tid)
        out.append({'id': tid, 'desc': desc, 'threshold': thr, 'op': op, 'issue': issue,
                    'value': t['value'] if t else None, 'pass': t['pass'] if t else None,
                    'evidence': t['evidence'] if t else '',
                    'perf': (t.get('perf') or (perf or {}).get(tid, '')) if t else ''})
    return out


def fill_ratios(h):
    """Every measured row but the ceilings gets its ratio to the fastest peer on the same data,
    algorithm and cache state, and to the ceiling (ceiling_for())."""
    for r in h.rows:
        if r['skipped'] or r['kind'] == 'ceiling' or r['algo'] == '-':
            continue
        sc = f'{r["ds"]}-{r["cache"]}'
        bp = h.best_peer(sc, r['algo'])
        if bp and r['gbps'] > 0:
            r['vs_peer'], r['best_peer'] = r['gbps'] / bp['gbps'], bp['tool']
            if r['kind'] == 'fhash' and not r['ratio']:
                r['ratio'] = f'{r["vs_peer"]:.2f}x {bp["tool"]}'
        c = ceiling_for(h, r['ds'], r['cache'], r['algo'])
        if c and r['gbps'] > 0:
            r['vs_ceiling'], r['ceiling'] = r['gbps'] / c[0], c[1]


def other_note(h, *rows):
    busy = [r['other'] for r in rows if r and r.get('other') is not None]
    if busy and max(busy) > 0.2:
        return (f' Measured while other processes kept up to {max(busy):.2f} CPUs busy: a quiet re-run '
                'may differ.')
    return ''


def evaluate_targets(h):
    ncpu = h.ncpu
    one = lambda sc, tool, algo: next(iter(h.live(sc, tool=tool, algo=algo)), None)  # noqa: E731
    eng = lambda sc, algo: one(sc, 'fhash engine', algo)  # noqa: E731
    fio_hot = next(iter(h.live('big-hot', tool='fio (page cache)')), None)
    fio_cold = next(iter(h.live('big-cold', tool='fio --direct=1')), None)

    def cpu_split(r):
        gbs = r['bytes'] / GB
        return (f'{r["cpu_per_gb"]:.3f} CPU s/GB ({r.get("user", 0) / gbs:.3f} user + '
                f'{r.get("sys", 0) / gbs:.3f} sys)')

    e = eng('big-hot', 'sha256')
    s1 = h.speed.get(('sha256', 1))
    if e and s1:
        dg = one('big-hot', 'openssl dgst', 'sha256')
        ev = (f'engine {e["gbps"]:.3f} GB/s at {cpu_split(e)}; one-core `openssl speed` {s1[0]:.3f} GB/s '
              f'= {1 / s1[0]:.3f} CPU s/GB of hashing alone')
        gbs = e['bytes'] / GB
        ev += (f'; the engine spends {e.get("user", 0) / gbs - 1 / s1[0]:+.3f} user and '
               f'{e.get("sys", 0) / gbs:+.3f} system CPU s/GB beyond that')
        if dg:
            ev += f'; `openssl dgst` on the same file: {dg["gbps"]:.3f} GB/s at {dg["cpu_per_gb"]:.3f} CPU s/GB'
        if 'mmap' in e['note']:
            ev += '; the engine mapped the file (no copy out of the page cache)'
        elif fio_hot:
            ev += (f'; the engine read the file: fio reads the hot file at {fio_hot["gbps"]:.2f} GB/s, i.e. the '
                   f'page-cache copy alone costs ~{fio_hot["cpu_per_gb"]:.3f} CPU s/GB, which `openssl speed` '
                   'never pays')
        h.target('T1', e['gbps'] / s1[0], ev + '.' + other_note(h, e, dg), row=e)
        h.target('T4', e['cpu_per_gb'] * s1[0],
                 f'engine {cpu_split(e)} vs openssl\'s {1 / s1[0]:.3f}.' + other_note(h, e), row=e)
    e = eng('big-hot', 'blake3')
    b3 = one('big-hot', 'b3sum', 'blake3')
    if e and b3:
        t1 = one('big-hot', 'b3sum -t1', 'blake3')
        hc = h.speed.get(('blake3', 1))
        ev = f'engine {e["gbps"]:.3f} GB/s ({e["note"]}, {cpu_split(e)}); b3sum {b3["gbps"]:.3f} GB/s'
        if t1:
            ev += (f' on all cores, `b3sum -t1` {t1["gbps"]:.3f} GB/s on one: engine ÷ b3sum -t1 = '
                   f'{e["gbps"] / t1["gbps"]:.2f}')
        if hc:
            ev += f'; one core of fhash\'s BLAKE3 hashes {hc[0]:.2f} GB/s in memory ({hc[1]})'
        ev += '. Beating b3sum on one file needs the file split across cores (BLAKE3\'s tree).'
        h.target('B1', e['gbps'] / b3['gbps'], ev + other_note(h, e, b3), row=e)
    e = eng('big-hot', 'xxh128')
    xx = one('big-hot', 'xxhsum -H128', 'xxh128')
    if e and xx:
        ev = (f'engine {e["gbps"]:.2f} GB/s ({e["note"]}, {cpu_split(e)}); xxhsum -H128 {xx["gbps"]:.2f} GB/s; '
              f'1.3 × xxhsum = {1.3 * xx["gbps"]:.2f} GB/s')
        hc = h.speed.get(('xxh128', 1))
        if hc:
            ev += (f'; XXH3-128 is one sequential stream, so one file is hashed on one core, which does '
                   f'{hc[0]:.2f} GB/s in memory ({hc[1]}): at most {hc[0] / xx["gbps"]:.2f} × xxhsum even with '
                   'no I/O cost at all')
        if fio_hot:
            ev += (f'; fio reads the hot file at {fio_hot["gbps"]:.2f} GB/s '
                   f'({"above" if fio_hot["gbps"] > 1.3 * xx["gbps"] else "below"} 1.3 × xxhsum)')
        mm = [r for r in h.live('big-hot', algo='xxh128', kind='fhash') if '--strategy mmap' in r['tool']]
        if mm:
            ev += f'; the engine with --strategy mmap: {mm[0]["gbps"]:.2f} GB/s'
        h.target('X1', e['gbps'] / xx['gbps'], ev + '.' + other_note(h, e, xx), row=e)
    for tid, algo in (('C1', 'sha256'), ('C2', 'blake3')):
        e = eng('big-cold', algo)
        hc = hash_ceiling(h, 'big', algo)
        if e and fio_cold and hc:
            c = min(fio_cold['gbps'], hc[0])
            ev = (f'engine {e["gbps"]:.3f} GB/s cold ({e["note"]}, {cpu_split(e)}); fio --direct=1 '
                  f'{fio_cold["gbps"]:.3f} GB/s; hash ceiling {hc[0]:.3f} GB/s ({hc[1]}); the bound is '
                  f'{"the disk" if fio_cold["gbps"] <= hc[0] else "the hash"}')
            if e.get('cached_after') is not None:
                ev += f'; {100 * e["cached_after"]:.1f}% of the file cached after the run'
            ev += ('. Cold reads on this VM\'s virtio disk vary by up to 2× from run to run (the host\'s '
                   'cache): compare with fio of the same run.')
            h.target(tid, e['gbps'] / c, ev + other_note(h, e, fio_cold), row=e)
    e = eng('mid-hot', 'sha256')
    sm = h.speed.get(('sha256', ncpu))
    if e and sm and ncpu > 1:
        ev = (f'engine {e["gbps"]:.3f} GB/s at {cpu_split(e)}; `{sm[1]}` {sm[0]:.3f} GB/s = '
              f'{ncpu / sm[0]:.3f} CPU s/GB: on {ncpu} cores the engine can reach it only if reading, '
              f'opening and hand-offs cost no CPU beside the hashing')
        fio = next(iter(h.live('mid-hot', kind='ceiling')), None)
        if fio:
            ev += f'; fio reads the same files at {fio["gbps"]:.2f} GB/s ({fio["cpu_per_gb"]:.3f} CPU s/GB)'
        h.target('T2', e['gbps'] / sm[0], ev + '.' + other_note(h, e), row=e)
    e = eng('small-hot', 'sha256')
    if e:
        bp = h.best_peer('small-hot', 'sha256')
        us = 1e6 / e['files_per_s'] if e['files_per_s'] else 0
        cpu_us = 1e6 * e['cpu'] / e['files'] if e.get('files') else 0
        ev = (f'engine {e["files_per_s"]:,.0f} files/s = {us:.1f} µs of wall time per file; CPU '
              f'{cpu_us:.1f} µs per file ({1e6 * e.get("user", 0) / e["files"]:.1f} user + '
              f'{1e6 * e.get("sys", 0) / e["files"]:.1f} sys) on {ncpu} CPUs, so at most '
              f'{ncpu * 1e6 / cpu_us if cpu_us else 0:,.0f} files/s at this cost; '
              f'{e.get("ctxsw", 0) / e["files"]:.2f} context switches per file')
        if bp:
            ev += f'; best peer {bp["tool"]} {bp["files_per_s"]:,.0f} files/s'
        h.target('T3', e['files_per_s'], ev + '.' + other_note(h, e), row=e)
    e = eng('small-cold', 'sha256')
    bp = h.best_peer('small-cold', 'sha256')
    if e and bp:
        ev = (f'engine {e["files_per_s"]:,.0f} files/s cold ({cpu_split(e)}); best peer {bp["tool"]} '
              f'{bp["files_per_s"]:,.0f} files/s')
        h.target('S1', e['files_per_s'] / bp['files_per_s'], ev + '.' + other_note(h, e, bp), row=e)
    normal = eng('big-cold', 'sha256')
    neutral = [r for r in h.live('big-cold', algo='sha256', kind='fhash') if r.get('neutral')]
    neutral = [r for r in neutral if r.get('cached_after') is not None]
    if normal and neutral:
        best = max(neutral, key=lambda r: (r['cached_after'] <= TARGETS['N1'][1], r['gbps']))
        ev = (f'{best["tool"]}: {100 * best["cached_after"]:.2f}% of the 4 GiB file cached after the run, '
              f'{best["gbps"]:.3f} GB/s; the normal cold run: '
              f'{100 * (normal.get("cached_after") or 0):.1f}% cached, {normal["gbps"]:.3f} GB/s')
        if normal['note'] == best['note']:
            ev += (f' — both read the file the same way ({best["note"]}): the gap between them is run-to-run '
                   'variation, not the mode')
        others = [r for r in neutral if r is not best]
        for r in others:
            ev += f'; {r["tool"]}: {100 * r["cached_after"]:.2f}% cached, {r["gbps"]:.3f} GB/s'
        for r in h.live('daemon', ds='big', cache='cold', algo='sha256'):
            if r.get('cached_after') is not None:
                ev += f'; through fhashd, `{r["tool"]}`: {100 * r["cached_after"]:.1f}% cached, {r["gbps"]:.3f} GB/s'
        ev += '.' + other_note(h, best, normal)
        h.target('N1', best['cached_after'], ev, row=best)
        h.target('N2', best['gbps'] / normal['gbps'], ev, row=best)
    for name, tids in (('big', ('D1', 'D1e')), ('small', ('D2', 'D2e'))):
        bus = next(iter(h.live('daemon', ds=name, tool='fhashctl hash --address', cache='hot', algo='sha256')),
                   None)
        if not bus:
            continue
        ev = (f'via fhashd {bus["gbps"]:.3f} GB/s, {bus["files_per_s"]:,.0f} files/s at {bus["cpu_per_gb"]:.3f} '
              f'CPU s/GB (fhashd + dbus-daemon {bus.get("daemon_cpu", 0):.2f} CPU s)')
        if 'vs_local' in bus:
            h.target(tids[0], bus['vs_local'], ev + '.' + other_note(h, bus), row=bus)
        if 'vs_engine' in bus:
            h.target(tids[1], bus['vs_engine'], ev + '.' + other_note(h, bus), row=bus)
    evaluate_regime_targets(h)
    for tid, t in h.targets.items():
        _, thr, op, _ = TARGETS[tid]
        t['pass'] = t['value'] >= thr if op == 'ge' else t['value'] <= thr if op == 'le' else t['value'] < thr


def evaluate_regime_targets(h):
    """Issue 14's targets, one per regime (TARGETS' P-, U-, F-, R-, X2 and L- entries)."""
    one = lambda sc, tool, algo: next(iter(h.live(sc, tool=tool, algo=algo)), None)  # noqa: E731

    def rate(r):
        if r['ds'] in h.data.specs and h.data.is_set(r['ds']):
            return f'{r["gbps"]:.3f} GB/s = {r["files_per_s"]:,.0f} files/s'
        return f'{r["gbps"]:.3f} GB/s'

    def cpu(r):
        gbs = r['bytes'] / GB
        return (f'{r["cpu_per_gb"]:.3f} CPU s/GB ({r.get("user", 0) / gbs:.3f} user + '
                f'{r.get("sys", 0) / gbs:.3f} sys)')

    def ctl_suffix(ds):
        return ' -r' if h.data.specs[ds][0] == 'tree' else ''

    for tid in TARGETS:
        kind, _, rest = tid.partition('-')
        if kind not in ('P', 'U') or rest.count('-') != 2:
            continue
        ds, cache, algo = rest.split('-')
        sc = f'{ds}-{cache}'
        e = one(sc, 'fhash engine', algo)
        peers = sorted((r for r in h.live(sc, algo=algo, kind='peer') if r['gbps'] > 0),
                       key=lambda r: -r['gbps'])
        if not e or not peers:
            continue
        bp = peers[0]
        if kind == 'P':
            ev = f'engine {rate(e)} ({e["note"]}); best peer `{bp["tool"]}` {rate(bp)}'
            if len(peers) > 1:
                ev += f'; next `{peers[1]["tool"]}` {peers[1]["gbps"] / bp["gbps"]:.2f} × the best'
            ctl = one(sc, f'fhashctl hash --local{ctl_suffix(ds)}', algo) if ds != 'big' else None
            if ctl:
                ev += f'; `{ctl["tool"]}` {rate(ctl)} = {ctl["gbps"] / bp["gbps"]:.2f} × the best peer'
            if cache == 'hot':
                ev += f'; CPU: engine {cpu(e)}, best peer {cpu(bp)}'
            h.target(tid, e['gbps'] / bp['gbps'], ev + '.' + other_note(h, e, bp), row=e)
        elif bp['cpu_per_gb'] > 0:
            least = min(peers, key=lambda r: r['cpu_per_gb'])
            ev = f'engine {cpu(e)}; the fastest peer `{bp["tool"]}` {cpu(bp)}'
            if least is not bp:
                ev += f'; the peer using least CPU, `{least["tool"]}`: {least["cpu_per_gb"]:.3f} CPU s/GB'
            h.target(tid, e['cpu_per_gb'] / bp['cpu_per_gb'], ev + '.' + other_note(h, e, bp), row=e)
    for tid in TARGETS:
        if not tid.startswith(('F-', 'B-')):
            continue
        kind, ds, cache, algo = tid.split('-')
        sfx = ctl_suffix(ds)
        how = '--address --no-direct' if kind == 'B' else '--address'
        bus = next(iter(h.live('daemon', ds=ds, cache=cache, algo=algo, tool=f'fhashctl hash {how}{sfx}')), None)
        loc = next(iter(h.live('daemon', ds=ds, cache=cache, algo=algo, tool=f'fhashctl hash --local{sfx}')),
                   None)
        if not bus or not loc or 'vs_local' not in bus:
            continue
        ev = (f'via fhashd {rate(bus)} at {bus["cpu_per_gb"]:.3f} CPU s/GB (fhashd + dbus-daemon '
              f'{bus.get("daemon_cpu", 0):.2f} CPU s); `--local` {rate(loc)} at {loc["cpu_per_gb"]:.3f} CPU s/GB')
        if 'vs_engine' in bus:
            ev += f'; via fhashd ÷ bench-engine {bus["vs_engine"]:.3f}'
        h.target(tid, bus['vs_local'], ev + '.' + other_note(h, bus, loc), row=bus)
    for tid in TARGETS:
        if not tid.startswith('R-'):
            continue
        ds = tid[2:]
        rows = [r for r in h.rows if not r['skipped'] and r['ds'] == ds and r['scenario'] != 'daemon'
                and r['kind'] == 'fhash' and r.get('rss_kib')
                and (r['tool'] == 'fhash engine' or r['tool'].startswith('fhashctl hash --local'))]
        if not rows:
            continue
        worst = max(rows, key=lambda r: r['rss_kib'])
        ev = (f'largest: `{worst["tool"]}` {worst["algo"]} {worst["cache"]} ({worst["note"] or "-"}) '
              f'{worst["rss_kib"] / 1024:.1f} MiB, over {len(rows)} rows')
        # Only bench-engine's rows say how each file was read (fhashctl's do not: it maps the same way).
        mapped = [r for r in rows if r['tool'] == 'fhash engine' and 'mmap' in r['note']]
        unmapped = [r for r in rows if r['tool'] == 'fhash engine' and 'mmap' not in r['note']]
        if mapped and unmapped:
            w2 = max(unmapped, key=lambda r: r['rss_kib'])
            ev += (f'; a mapped file counts the page cache it maps in RSS: the largest engine run that mapped '
                   f'nothing is {w2["algo"]} {w2["cache"]} ({w2["note"]}), {w2["rss_kib"] / 1024:.1f} MiB')
        h.target(tid, worst['rss_kib'] / 1024, ev + '.', row=worst)
    for sc in ('small-hot', 'client'):
        e, ctl = one(sc, 'fhash engine', 'sha256'), one(sc, 'fhashctl hash --local', 'sha256')
        if e and ctl and e['files_per_s'] > 0:
            ev = (f'`fhashctl hash --local` {ctl["files_per_s"]:,.0f} files/s (the whole program: start-up, libfhash, '
                  f'the output) and bench-engine {e["files_per_s"]:,.0f} files/s (the job alone), side by side; '
                  f'CPU {ctl["cpu_per_gb"]:.3f} and {e["cpu_per_gb"]:.3f} s/GB')
            ep = one(sc, 'bench-engine (whole process)', 'sha256')
            if ep and ep['files_per_s'] > 0:
                ev += (f'; ÷ bench-engine timed as a whole process (exec to exit, as fhashctl is): '
                       f'{ctl["files_per_s"] / ep["files_per_s"]:.3f}')
            h.target('E-small-hot-sha256', ctl['files_per_s'] / e['files_per_s'], ev + '.' + other_note(h, e, ctl),
                     row=ctl)
    e = one('big-hot', 'fhash engine', 'xxh3')
    bh = one('ceiling', 'bench-hash (1 core)', 'xxh3')
    if e and bh:
        xx = one('big-hot', 'xxhsum -H3', 'xxh3')
        ev = (f'engine {e["gbps"]:.2f} GB/s ({e["note"]}, {cpu(e)}); one core of bench-hash XXH3 '
              f'{bh["gbps"]:.2f} GB/s')
        if xx:
            ev += f'; `xxhsum -H3` {xx["gbps"]:.2f} GB/s'
        h.target('X2', e['gbps'] / bh['gbps'], ev + '.' + other_note(h, e), row=e)
    ref = h.leader_ref
    if ref:
        base = f'the saved run of {ref.get("started")} (git {ref.get("git")}, {ref.get("source")})'
        for tid in LEADER_TARGETS:
            now, old = h.targets.get(tid), ref['targets'].get(tid)
            if not now or old is None:
                continue
            thr = TARGETS[tid][1]
            ev = f'{tid} {fmt_value(now["value"], thr)} now, {fmt_value(old, thr)} in {base}.'
            if TARGETS[tid][2] == 'ge':
                if old > 0:
                    h.target(f'L-{tid}', now['value'] / old, ev, row=now.get('row'))
            else:
                h.target(f'L-{tid}', now['value'] - old, ev, row=now.get('row'))
        for ds, algo in LEADER_COLD:
            e = one(f'{ds}-cold', 'fhash engine', algo)
            old = ref['cold'].get(f'{ds}/{algo}')
            if not e or not old:
                continue
            fio = next((r for r in h.live(f'{ds}-cold', kind='ceiling') if r['tool'].startswith('fio')), None)
            if fio and old.get('fio'):
                v = (e['gbps'] / fio['gbps']) / (old['gbps'] / old['fio'])
                ev = (f'engine {rate(e)} ÷ fio --direct=1 {fio["gbps"]:.3f} GB/s = '
                      f'{e["gbps"] / fio["gbps"]:.3f} now; '
                      f'{old["gbps"]:.3f} ÷ {old["fio"]:.3f} = {old["gbps"] / old["fio"]:.3f} in {base}')
            else:
                v = e['gbps'] / old['gbps']
                ev = f'engine {rate(e)} now, {old["gbps"]:.3f} GB/s in {base} (no fio on this data)'
            h.target(f'L-{ds}-cold-{algo}', v, ev + '.' + other_note(h, e), row=e)


def perf_evidence(h):
    """`perf stat` of the engine row behind each missed target (software counters at least; the
    hardware ones are often not available in a VM), appended to the target's evidence."""
    if h.args.no_perf or not shutil.which('perf') or not h.args.bench_engine:
        return
    done = {}
    for tid, t in h.targets.items():
        r = t.get('row')
        if t['pass'] or not r or r['kind'] != 'fhash' or not r['tool'].startswith('fhash engine'):
            continue
        if id(r) in done:
            if done[id(r)]:
                t['perf'] = done[id(r)]
            continue
        done[id(r)] = None
        cwd, names = h.data.files(r['ds'])
        lst = h.data.list_file(r['ds'])
        argv = ['perf', 'stat', '-x', ',', '-e',
                'task-clock,context-switches,cpu-migrations,page-faults,cycles,instructions,cache-misses',
                '--', *engine_argv(h, r['algo'], 1, r.get('extra_argv') or []),
                *(['--list', lst] if lst else names)]
        try:
            if r['cache'] == 'cold':
                h.data.drop(r['ds'])
            else:
                h.data.warm(r['ds'])   # the daemon section's cold runs may have evicted it since
            b0 = cpu_busy_s()
            p = run_child(argv, cwd=cwd, capture=True)
            h.note_other(cpu_busy_s() - b0, p.user + p.sys, p.wall)
        except OSError:
            continue
        if p.rc != 0:
            continue
        counts = []
        for line in p.err.splitlines():
            f = line.split(',')
            if len(f) >= 3 and f[2] and not f[0].startswith('<'):
                try:
                    v = float(f[0])
                except ValueError:
                    continue
                counts.append(f'{f[2]} {v:,.0f}{" " + f[1] if f[1] else ""}')
        res = next((dict(kv.split('=', 1) for kv in x.split()) for x in p.out.splitlines()
                    if x.startswith('files=')), None)
        if counts and res:
            rate = f'{float(res["gbps"]):.3f} GB/s'
            if h.data.is_set(r['ds']):
                rate += f', {float(res["files_per_s"]):,.0f} files/s'
            if h.last_other is not None:
                rate += f', other {h.last_other:.2f}'
            t['perf'] = done[id(r)] = (f'`perf stat -e {argv[5]}` of one more run of the engine ({rate}): '
                                       f'{"; ".join(counts)} (counters the VM does not expose are left out)')
