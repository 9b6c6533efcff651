# SPDX-License-Identifier: MIT
"""bench/run's command line: which modes run, where the build and the data are."""

import argparse
import datetime
import json
import os
import sys

from .common import ALGOS, BASELINE_FULL, BASELINE_QUICK, HERE, ROOT, loadavg, write_json
from .harness import Harness
from .machine import machine_brief
from .packages import ensure_bench_packages
from .quick import QUICK_CHECKS, QuickCheck
from .report import report
from .targets import evaluate_targets, fill_ratios, targets_json


def find_build_dir():
    env = os.environ.get('FHASH_BUILD_ROOT')
    if env:
        return env
    for d in ('build-bench', 'build'):
        if os.path.exists(os.path.join(ROOT, d, 'build.ninja')):
            return os.path.join(ROOT, d)
    return os.path.join(ROOT, 'build')


def per_process_main(a, build):
    """--per-process: its own regime and table (bench/per_process.py), saved with --save."""
    from . import per_process
    spawn = os.path.abspath(a.bench_spawn or os.path.join(build, 'bench', 'bench-spawn'))
    if not os.access(spawn, os.X_OK) or not os.access(a.fhashctl, os.X_OK):
        print(f'bench/run: --per-process needs {spawn} and {a.fhashctl} (ninja -C {build})', file=sys.stderr)
        return 1
    print(f'per-process regime: {machine_brief()}, load {loadavg()}')
    rows = per_process.run(a.fhashctl, spawn)
    text = per_process.table(rows)
    print(text)
    if a.save:
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
        os.makedirs(os.path.join(HERE, 'results'), exist_ok=True)
        base = os.path.join(HERE, 'results', f'{stamp}-per-process')
        with open(base + '.txt', 'w') as f:
            f.write(text + '\n')
        write_json(base + '.json', {'regime': 'per-process', 'machine': machine_brief(), 'rows': rows})
        print(f'saved {base}.txt and .json')
    return 1 if any(r.get('verdict') == 'MISS' for r in rows) else 0


def background_main(a):
    """--background: its own regime and table (bench/background.py), saved with --save."""
    from . import background
    for exe in (a.fhashd, a.fhashctl):
        if not os.access(exe, os.X_OK):
            print(f'bench/run: --background needs {exe} (ninja -C {a.build_root})', file=sys.stderr)
            return 1
    print(f'background regime: {machine_brief()}, load {loadavg()}')
    result = background.Bench(a, print).run()
    text = background.table(result)
    print(text)
    if a.save:
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
        os.makedirs(os.path.join(HERE, 'results'), exist_ok=True)
        base = os.path.join(HERE, 'results', f'{stamp}-background')
        with open(base + '.txt', 'w') as f:
            f.write(text + '\n')
        write_json(base + '.json', {'regime': 'background', 'machine': machine_brief(), **result})
        print(f'saved {base}.txt and .json')
    return 1 if background.misses(result) else 0


def audit_main(a):
    """--audit: fhashctl audit against aide (bench/audit.py), saved with --save."""
    from . import audit
    for exe in (a.fhashd, a.fhashctl):
        if not os.access(exe, os.X_OK):
            print(f'bench/run: --audit needs {exe} (ninja -C {a.build_root})', file=sys.stderr)
            return 1
    print(f'audit regime: {machine_brief()}, load {loadavg()}')
    result = audit.run(a)
    text = audit.table(result)
    print(text)
    if a.save:
        stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
        os.makedirs(os.path.join(HERE, 'results'), exist_ok=True)
        base = os.path.join(HERE, 'results', f'{stamp}-audit')
        with open(base + '.txt', 'w') as f:
            f.write(text + '\n')
        write_json(base + '.json', {'regime': 'audit', 'machine': machine_brief(), **result})
        print(f'saved {base}.txt and .json')
    return 0


def main():
    ap = argparse.ArgumentParser(description='fhash benchmark harness (see bench/README.md)')
    ap.add_argument('--quick', action='store_true',
                    help='alone: the regression check against bench/baseline-quick.json (under a minute); '
                         'with --main/--sweep/--daemon/--all: those on the small data, one repeat')
    ap.add_argument('--update-baseline', action='store_true',
                    help='run the quick check and rewrite bench/baseline-quick.json with its ratios')
    ap.add_argument('--baseline', default=BASELINE_QUICK, help='the quick check\'s baseline (default %(default)s)')
    ap.add_argument('--sweep', action='store_true', help='buffer size x queue depth grid')
    ap.add_argument('--daemon', action='store_true', help='fhashctl through fhashd vs --local')
    ap.add_argument('--multi', action='store_true',
                    help='several algorithms in one read (fhashctl -a md5,sha256) vs hashdeep, rhash, tool pairs')
    ap.add_argument('--client', action='store_true',
                    help='fhashctl hash --local next to bench-engine on the hot 20,000 x 4 KiB files, alternating: '
                         'what the layers above the engine cost')
    ap.add_argument('--main', action='store_true',
                    help='the engine/peer scenarios (the default unless another mode is given)')
    ap.add_argument('--all', action='store_true', help='main scenarios, sweep and daemon: the full run')
    ap.add_argument('--per-process', action='store_true',
                    help='one 4 KiB file per process x 1,000: fhashctl as sha256sum, b3sum, xxhsum, ... vs the '
                         'tools (bench/per_process.py)')
    ap.add_argument('--bench-spawn')
    ap.add_argument('--background', action='store_true',
                    help='a foreground (fio random reads, openssl speed on every core, another user\'s fhashctl '
                         'hash) alone and beside a background job, the same job at normal priority and nice/ionice '
                         'sha256sum, over a cold and a hot set (bench/background.py; root)')
    ap.add_argument('--background-seconds', type=int, help='--background: seconds per measurement (default 8)')
    ap.add_argument('--audit', action='store_true',
                    help='fhashctl audit vs aide: what each detects of one change of each kind, and the time to make '
                         'a baseline and to check a tree against it, hot and cold (bench/audit.py; root, aide)')
    ap.add_argument('--audit-tree', default='/usr', help='--audit: the tree timed (default %(default)s)')
    ap.add_argument('--background-rounds', type=int, help='--background: rounds of the whole plan (default 3)')
    ap.add_argument('--engine-only', action='store_true',
                    help='only bench-engine on the hot big file (sha256 and xxh3 unless --algos), best of 5')
    ap.add_argument('--report', nargs='?', const=BASELINE_FULL, metavar='JSON',
                    help='only regenerate bench/RESULTS.md and bench/charts/ from a saved run '
                         '(default: bench/baseline-full.json)')
    ap.add_argument('--no-cold', action='store_true', help='skip the cold-cache runs')
    ap.add_argument('--no-engine', action='store_true', help='peers only (engine not built yet)')
    ap.add_argument('--no-perf', action='store_true', help='no `perf stat` of the engine for missed targets')
    ap.add_argument('--install', action='store_true',
                    help='install missing benchmark packages (scripts/deps.sh: fhash_bench_packages) with apt-get, '
                         'as root or through sudo -n; without it a run only names them')
    ap.add_argument('--no-install', action='store_true',
                    help='the default (kept for old command lines): never install, name what is missing')
    ap.add_argument('--algos', type=lambda s: s.split(','),
                    help='only these algorithms (every section; for development: the targets need them all)')
    ap.add_argument('--datasets', type=lambda s: s.split(','),
                    help='only these data sets of big,mid,small,mixed (for development)')
    ap.add_argument('--checks', type=lambda s: s.split(','),
                    help='--quick / --update-baseline: only these checks (the others keep their baseline)')
    ap.add_argument('--repeat', type=int, help='runs per measurement, best kept (default 3, quick 1)')
    ap.add_argument('--save', action='store_true',
                    help='also write bench/results/<date>-<time>.txt and .json; with --all (not --quick) also '
                         'bench/baseline-full.json, bench/RESULTS.md and bench/charts/')
    ap.add_argument('--note', help='a line for RESULTS.md\'s "Load during the run" (e.g. who else was busy)')
    ap.add_argument('--build-dir', default=None, help='meson build dir (default: build-bench, else build)')
    ap.add_argument('--data-dir', default=os.path.join(HERE, 'data'))
    ap.add_argument('--bench-engine')
    ap.add_argument('--fhashd')
    ap.add_argument('--fhashctl')
    a = ap.parse_args()
    if a.report:
        with open(a.report) as f:
            data = json.load(f)
        # The measurements as saved; the ratios, targets and evidence as this version defines them.
        h = Harness.from_json(data)
        fill_ratios(h)
        evaluate_targets(h)
        data['targets'] = targets_json(h, {t['id']: t.get('perf', '') for t in data['targets']})
        report(data)
        return 0
    if a.algos:
        bad = [x for x in a.algos if x not in ALGOS]
        if bad:
            ap.error(f'unknown algorithm(s) {",".join(bad)}; valid: {",".join(ALGOS)}')
    if a.datasets:
        bad = [x for x in a.datasets if x not in ('big', 'mid', 'small', 'mixed')]
        if bad:
            ap.error(f'unknown data set(s) {",".join(bad)}; valid: big,mid,small,mixed')
    if a.checks:
        bad = [x for x in a.checks if x not in [c[0] for c in QUICK_CHECKS]]
        if bad:
            ap.error(f'unknown check(s) {",".join(bad)}; valid: {",".join(c[0] for c in QUICK_CHECKS)}')
    check = a.update_baseline or (a.quick and not (a.main or a.all or a.sweep or a.daemon or a.multi or
                                                   a.engine_only or a.client))
    if a.update_baseline:
        a.quick = True
    if a.all:
        a.main = a.sweep = a.daemon = a.multi = True
    elif not (a.sweep or a.daemon or a.multi or a.engine_only or a.client):
        a.main = True
    # Absolute: the engine and the peers run with the data directory as their cwd.
    build = os.path.abspath(a.build_dir or find_build_dir())
    a.build_root = build
    if a.no_engine:
        a.bench_engine = None
    else:
        a.bench_engine = os.path.abspath(a.bench_engine or os.path.join(build, 'bench', 'bench-engine'))
        if not os.access(a.bench_engine, os.X_OK):
            print(f'bench/run: {a.bench_engine} not built (ninja -C {build}, or --no-engine)', file=sys.stderr)
            return 1
    a.fhashd = os.path.abspath(a.fhashd or os.path.join(build, 'src', 'fhashd'))
    a.fhashctl = os.path.abspath(a.fhashctl or os.path.join(build, 'src', 'fhashctl'))
    if a.per_process:
        return per_process_main(a, build)
    if a.background:
        return background_main(a)
    if a.audit:
        return audit_main(a)
    if (a.sweep or a.engine_only) and not a.bench_engine:
        print('bench/run: --sweep and --engine-only need bench-engine', file=sys.stderr)
        return 1
    if a.install and a.no_install:
        ap.error('--install and --no-install contradict each other')
    if a.install or (a.main and not check):
        # Only --install installs; a main run without it names what is missing (the quick check
        # says so per check).
        ensure_bench_packages(a.install)
    h = Harness(a)
    if check:
        return QuickCheck(h).run()
    return h.main()
