# SPDX-License-Identifier: MIT
"""`bench/run --quick`: the regression check. A handful of ratios of the engine to a peer on hot data,
against bench/baseline-quick.json; `--update-baseline` rewrites that file."""

import datetime
import json
import os
import shutil
import sys
import time

from .common import GB, uptime, write_json
from .ceilings import openssl_speed
from .engine import run_engine
from .machine import machine_brief
from .peers import check_output, collect_outputs, set_peer_command

# Quick mode: ratios that must not drop more than QUICK_TOLERANCE below bench/baseline-quick.json.
# (id, description, data set, algorithm, peer): the peer is a command line (run on the same files:
# over a set through one `xargs`), or ('speed', n) for `openssl speed -evp sha256` on n processes
# (0: one). Engine and peer alternate, QUICK_ROUNDS times, and the best of each is kept.
QUICK_CHECKS = [
    ('sha256-dgst', 'engine SHA-256 ÷ `openssl dgst -sha256`, hot 512 MiB', 'big', 'sha256',
     ('openssl dgst', ['openssl', 'dgst', '-sha256'])),
    ('sha256-speed', 'engine SHA-256, hot 512 MiB ÷ one-core `openssl speed`', 'big', 'sha256', ('speed', 0)),
    # Plain b3sum, on every core like the engine (which splits a BLAKE3 file across workers): a peer
    # on as many cores as the engine keeps a busy machine from moving the ratio.
    ('blake3-b3sum', 'engine BLAKE3 ÷ b3sum, hot 512 MiB', 'big', 'blake3', ('b3sum', ['b3sum'])),
    ('xxh3-xxhsum', 'engine XXH3 ÷ `xxhsum -H3`, hot 512 MiB', 'big', 'xxh3', ('xxhsum -H3', ['xxhsum', '-H3'])),
    ('xxh128-xxhsum', 'engine XXH3-128 ÷ `xxhsum -H128`, hot 512 MiB', 'big', 'xxh128',
     ('xxhsum -H128', ['xxhsum', '-H128'])),
    ('sha256-mid-multi', 'engine SHA-256, hot 200 × 1 MiB ÷ `openssl speed -multi 2`', 'mid', 'sha256', ('speed', 2)),
    # One hot set regime per algorithm family, each against its best peer's `xargs -P<cores>` form (the
    # best in the full runs), exactly as the full run runs it: peer ('xargs', [(label, argv), ...]) =
    # the first installed of those candidates.
    ('sha256-small-xargs', 'engine SHA-256, hot 20,000 × 4 KiB ÷ `xargs -P<cores>` of the best SHA-256 peer '
     '(files/s)', 'small', 'sha256',
     ('xargs', [('rhash', ['rhash', '--sha256']), ('openssl dgst', ['openssl', 'dgst', '-sha256'])])),
    ('blake3-mid-xargs', 'engine BLAKE3, hot 200 × 1 MiB ÷ `xargs -P<cores> b3sum`', 'mid', 'blake3',
     ('xargs', [('b3sum', ['b3sum'])])),
    ('xxh3-mid-xargs', 'engine XXH3, hot 200 × 1 MiB ÷ `xargs -P<cores> xxhsum -H3`', 'mid', 'xxh3',
     ('xargs', [('xxhsum -H3', ['xxhsum', '-H3'])])),
]
QUICK_TOLERANCE = 0.10
QUICK_ROUNDS = 3
QUICK_RETRIES = 2   # more sets of rounds for a ratio below its limit before it counts as a regression
QUICK_MIN_SECONDS, QUICK_MAX_ROUNDS = 2.0, 15   # quick checks alternate for at least this long


class QuickCheck:
    """`bench/run --quick`: a handful of ratios of the engine to a peer on small hot data, each the best
    of QUICK_ROUNDS alternating runs, against bench/baseline-quick.json. Ratios, not GB/s: a ratio to a
    peer run a moment before on the same data survives a busy machine far better than a speed does."""

    def __init__(self, h):
        self.h = h
        self.a = h.args

    def say(self, *a):
        self.h.say(*a)

    def engine_rate(self, ds, algo):
        # Three passes per process, the best kept: the first one also pays for faulting in the pool.
        best, _, _, _ = run_engine(self.h, ds, algo, 'hot', 3)
        return float(best['files_per_s'] if ds == 'small' else best['gbps']), self.h.last_other

    def peer_rate(self, ds, peer, algo):
        h = self.h
        if peer[0] == 'speed':
            return openssl_speed(h, 'sha256', peer[1], seconds=1), h.last_other
        cwd, names = h.data.files(ds)
        if peer[0] == 'xargs':
            # The full run's form exactly, its output checked the same way.
            label, argv = resolve_peer(peer)
            cmd, shown = set_peer_command(label, argv, len(names), h.ncpu, 'xargs', h.outdir())
            r = h.measure(cmd, cwd=cwd, capture=True)
            check_output(h, ds, algo, shown, r.out + collect_outputs(h.outdir()))
        else:
            r = h.measure([*peer[1], *names], cwd=cwd)
        return (len(names) / r.wall if ds == 'small' else h.data.nbytes(ds) / r.wall / GB), h.last_other

    def measure(self, check, rounds, prev=None):
        """(best engine rate, best peer rate, the CPUs others kept busy during those two runs) over at
        least `rounds` alternating rounds, more for the quick ones: a 35 ms xxhsum run needs many tries
        to catch a quiet moment of the machine."""
        cid, desc, ds, algo, peer = check
        e_best, p_best = (prev[3], prev[4]) if prev else ((0.0, 0.0), (0.0, 0.0))
        t0 = time.monotonic()
        n = 0
        while n < rounds or (time.monotonic() - t0 < QUICK_MIN_SECONDS and n < QUICK_MAX_ROUNDS):
            e, o1 = self.engine_rate(ds, algo)
            p, o2 = self.peer_rate(ds, peer, algo)
            e_best, p_best = max(e_best, (e, o1 or 0)), max(p_best, (p, o2 or 0))
            n += 1
        return e_best[0], p_best[0], max(e_best[1], p_best[1]), e_best, p_best

    def run(self):
        h, a = self.h, self.a
        t0 = time.monotonic()
        h.header()
        if not a.bench_engine:
            print('bench/run --quick: needs bench-engine (build it, or give --bench-engine)', file=sys.stderr)
            return 1
        baseline = None
        if os.path.exists(a.baseline) and not a.update_baseline:
            with open(a.baseline) as f:
                baseline = json.load(f)
        h.data.make(['big', 'small', 'mid'])
        for ds in ('big', 'mid', 'small'):
            h.data.warm(ds)
        rounds = QUICK_ROUNDS
        h.say('')
        h.say(f'## quick check: engine ÷ peer, best of {rounds}+ alternating runs each (at least {QUICK_MIN_SECONDS:.0f} s), hot data; fails below '
              f'{100 * (1 - QUICK_TOLERANCE):.0f}% of {os.path.relpath(a.baseline)}')
        if baseline:
            bm = baseline.get('machine', {})
            mine = machine_brief()
            if bm and (bm.get('cpu'), bm.get('cpus')) != (mine['cpu'], mine['cpus']):
                h.say(f'# WARNING: the baseline was taken on {bm.get("cpu")} x{bm.get("cpus")}, this is '
                      f'{mine["cpu"]} x{mine["cpus"]}: ratios may differ for that reason alone '
                      '(bench/run --update-baseline on this machine to rebase)')
        fmt = '%-18s %16s %16s %7s %9s %7s %5s  %s'
        h.say(fmt % ('check', 'engine', 'peer', 'ratio', 'committed', 'limit', 'other', 'result'))
        results, failed, skipped = {}, [], []
        for check in QUICK_CHECKS:
            cid, desc, ds, algo, peer = check
            if a.checks and cid not in a.checks:
                continue
            if peer[0] == 'xargs' and not resolve_peer(peer):
                skipped.append(cid)
                h.say(fmt % (cid, '', '', '', '', '', '', 'skipped: none of '
                             f'{", ".join(c[1][0] for c in peer[1])} installed'))
                continue
            if peer[0] not in ('speed', 'xargs') and not shutil.which(peer[1][0]):
                skipped.append(cid)
                h.say(fmt % (cid, '', '', '', '', '', '', f'skipped: {peer[1][0]} not installed'))
                continue
            if peer[0] == 'speed' and not shutil.which('openssl'):
                skipped.append(cid)
                h.say(fmt % (cid, '', '', '', '', '', '', 'skipped: openssl not installed'))
                continue
            try:
                if a.update_baseline:
                    # Every later check is held to the baseline, so one unlucky measurement in it (a peer
                    # slowed by someone's compile) would be a false alarm for everyone: the median of
                    # three independent measurements.
                    ms = sorted((self.measure(check, rounds) for _ in range(3)), key=lambda x: x[0] / x[1])
                    h.say(f'# {cid}: {", ".join(f"{x[0] / x[1]:.3f}" for x in ms)}; keeping the median')
                    m = ms[1]
                else:
                    m = self.measure(check, rounds)
                e, p, other = m[:3]
                old = (baseline or {}).get('checks', {}).get(cid, {})
                committed = old.get('ratio')
                if old.get('peer_cmd') and old['peer_cmd'] != peer_cmd(peer):
                    h.say(f'# {cid}: the baseline measured another peer ({old["peer_cmd"]}): not compared')
                    committed = None
                limit = committed * (1 - QUICK_TOLERANCE) if committed else None
                for _ in range(QUICK_RETRIES):
                    if not limit or e / p >= limit:
                        break
                    # Below the line: measure again before crying wolf (a compile next door can take a
                    # core for seconds, and the engine's pipeline of reads and hashing on both cores
                    # loses more to it than a one-process peer); the best of all rounds counts.
                    h.say(f'# {cid}: {e / p:.3f} is below {limit:.3f} (other {other:.2f}); measuring again')
                    m = self.measure(check, rounds, m)
                    e, p, other = m[:3]
            except (RuntimeError, OSError) as ex:
                h.error(f'{cid}: {ex}')
                continue
            unit = 'files/s' if ds == 'small' else 'GB/s'
            ratio = e / p
            res = {'ratio': round(ratio, 4), 'engine': round(e, 4), 'peer': round(p, 4), 'unit': unit,
                   'desc': desc, 'peer_cmd': peer_cmd(peer), 'other': round(other, 2)}
            results[cid] = res
            if limit is None:
                verdict = 'new' if a.update_baseline or baseline is None else 'not in baseline'
            elif ratio < limit:
                verdict = 'REGRESSION'
                failed.append((cid, desc, ratio, committed, limit, other))
            elif ratio > committed * (1 + QUICK_TOLERANCE):
                verdict = 'ok (better: --update-baseline?)'
            else:
                verdict = 'ok'
            if a.update_baseline and baseline_old(a.baseline, cid) is not None:
                verdict = f'was {baseline_old(a.baseline, cid):.3f}'
            fe = f'{e:,.0f} {unit}' if unit == 'files/s' else f'{e:.3f} {unit}'
            fp = f'{p:,.0f} {unit}' if unit == 'files/s' else f'{p:.3f} {unit}'
            h.say(fmt % (cid, fe, fp, f'{ratio:.3f}', f'{committed:.3f}' if committed else '-',
                         f'{limit:.3f}' if limit else '-', f'{other:.2f}', verdict))
        h.cleanup()
        took = time.monotonic() - t0
        h.say(f'# quick check done in {took:.0f} s   [{uptime()}]')
        if a.update_baseline:
            if h.errors:
                print('bench/run: not updating the baseline: some checks failed to run', file=sys.stderr)
                return 1
            busy = max((r['other'] for r in results.values()), default=0)
            if busy > 0.3:
                h.say(f'# WARNING: other processes kept up to {busy:.2f} CPUs busy while measuring: a baseline '
                      'from a busy machine can make later quiet runs look like regressions (or hide real ones); '
                      'take it again on a quiet machine if you can')
            data = {'version': 1, 'created': datetime.datetime.now().isoformat(timespec='seconds'),
                    'git': machine_brief()['git'], 'machine': machine_brief(), 'tolerance': QUICK_TOLERANCE,
                    'rounds': rounds, 'load': uptime(), 'checks': results}
            if a.checks and baseline_checks(a.baseline):
                # Only some checks were measured: the others keep their committed entries (and each
                # entry says when it was taken).
                for r in results.values():
                    r['created'] = data['created']
                kept = {k: v for k, v in baseline_checks(a.baseline).items()
                        if k not in results and k in [c[0] for c in QUICK_CHECKS]}
                data['checks'] = {c[0]: {**kept, **results}[c[0]] for c in QUICK_CHECKS if c[0] in {**kept, **results}}
                data['partial'] = f'{", ".join(results)} measured {data["created"]}; the rest kept from the file'
            write_json(a.baseline, data)
            h.say(f'# wrote {os.path.relpath(a.baseline)}: commit it with the change that moved the ratios')
            return 0
        if baseline is None:
            h.say(f'# no baseline at {os.path.relpath(a.baseline)}: nothing to compare with '
                  '(bench/run --update-baseline writes one)')
        else:
            new = [cid for cid, r in results.items() if cid not in baseline.get('checks', {})]
            if new:
                h.say(f'# NOTE: {", ".join(new)} not in {os.path.relpath(a.baseline)}, so never a regression: on a '
                      f'quiet machine, bench/run --update-baseline --checks {",".join(new)} (and commit it)')
        if failed:
            bar = '!' * 100
            lines = [bar, f'!!! BENCHMARK REGRESSION: {len(failed)} ratio(s) dropped more than '
                     f'{100 * QUICK_TOLERANCE:.0f}% below {os.path.relpath(a.baseline)} '
                     f'(git {baseline.get("git", "?")}, {baseline.get("created", "?")})']
            for cid, desc, ratio, committed, limit, other in failed:
                lines.append(f'!!!   {cid}: {desc}')
                lines.append(f'!!!     measured {ratio:.3f}, committed {committed:.3f}, must be >= {limit:.3f} '
                             f'({100 * (ratio / committed - 1):+.1f}%)' +
                             (f'; other processes kept {other:.2f} CPUs busy meanwhile' if other > 0.2 else ''))
            if max(f[5] for f in failed) > 0.3:
                lines.append('!!! The machine was busy (see "other"): if nothing else explains it, run again when quiet.')
            lines.append('!!! Find the cause before committing (bench/run --engine-only, --sweep, the full run);')
            lines.append('!!! if the drop is intended, bench/run --update-baseline and commit the new baseline.')
            lines.append(bar)
            for f in (sys.stderr,) + tuple(x for x in h.out if x is not sys.stdout):
                print('\n'.join(lines), file=f, flush=True)
            return 1
        if h.errors:
            return 1
        if skipped and not results:
            return 77   # nothing measured: a skip for `meson test --benchmark`
        return 0


def resolve_peer(peer):
    """The (label, argv) a quick check's ('xargs', candidates) peer runs: the first one installed."""
    return next(((lab, argv) for lab, argv in peer[1] if shutil.which(argv[0])), None)


def peer_cmd(peer):
    if peer[0] == 'xargs':
        lab, argv = resolve_peer(peer) or peer[1][0]
        return f'find . -type f -print0 | xargs -0 -P<cores> -n<N> {" ".join(argv)}'
    return f'openssl speed -multi {peer[1]}' if peer[0] == 'speed' and peer[1] else \
        'openssl speed' if peer[0] == 'speed' else ' '.join(peer[1])


def baseline_checks(path):
    try:
        with open(path) as f:
            return json.load(f).get('checks', {})
    except (OSError, ValueError):
        return {}


def baseline_old(path, cid):
    try:
        with open(path) as f:
            return json.load(f)['checks'][cid]['ratio']
    except (OSError, ValueError, KeyError):
        return None
