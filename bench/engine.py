# SPDX-License-Identifier: MIT
"""fhash's own rows: bench-engine (the in-process engine, which prints one line per run) and
`fhashctl hash --local` over a data set, the engine's variants, and the buffer size x depth sweep."""

import os

from .common import TIMEOUT, KiB, MiB, cpu_busy_s, human_size, loadavg, short_size
from .peers import check_output
from .proc import run_child

# Engine variants: one line each, run next to the default engine row where the option exists in
# `bench-engine --help` (else the row says "skipped: bench-engine has no --x"). caches: which
# scenarios; algos: which algorithms; neutral: a cache-neutral mode, held to targets N1 and N2 (cold
# 4 GiB: at most 1% of the file left in the page cache, at 95% of the normal cold speed or more).
ENGINE_VARIANTS = [
    {'label': 'io-mode uring', 'argv': ['--io-mode', 'uring'], 'caches': ('hot',), 'datasets': ('big',),
     'algos': ('sha256', 'xxh3')},
    {'label': 'io-mode pread', 'argv': ['--io-mode', 'pread'], 'caches': ('hot',), 'datasets': ('big',),
     'algos': ('sha256', 'xxh3')},
    {'label': 'strategy mmap', 'argv': ['--strategy', 'mmap'], 'caches': ('hot',), 'datasets': ('big', 'mid'),
     'algos': ('sha256', 'xxh3', 'xxh128')},
    {'label': 'strategy read', 'argv': ['--strategy', 'read'], 'caches': ('hot', 'cold'), 'datasets': ('big',),
     'algos': ('sha256', 'xxh3')},
    {'label': 'strategy direct', 'argv': ['--strategy', 'direct'], 'caches': ('cold',), 'datasets': ('big',),
     'algos': ('sha256', 'xxh3')},
    {'label': 'dontcache', 'argv': ['--dontcache'], 'caches': ('cold',), 'datasets': ('big',),
     'algos': ('sha256',), 'neutral': True},
    # {'label': 'no-cache', 'argv': ['--no-cache'], 'caches': ('cold',), 'datasets': ('big',),
    #  'algos': ('sha256',), 'neutral': True},
]

SWEEP_BUFFER_SIZES = [4 * KiB, 16 * KiB, 64 * KiB, 256 * KiB, MiB, 4 * MiB]
SWEEP_DEPTHS = [1, 2, 4, 8, 16, 32]
SWEEP_ALGOS = ['sha256', 'xxh3']


def engine_argv(h, algo, repeat, extra=()):
    return [h.args.bench_engine, '-a', algo, '--repeat', str(repeat), *extra]


def run_engine(h, name, algo, cache, repeat, extra=(), digests=False):
    """Runs bench-engine on a data set; returns (the best run's parsed line, runs, digest lines,
    the process's ChildResult)."""
    cwd, names = h.data.files(name)
    lst = h.data.list_file(name)
    argv = engine_argv(h, algo, repeat, extra)
    if digests:
        argv.append('--digests')
    argv += ['--list', lst] if lst else names
    b0 = cpu_busy_s()
    p = run_child(argv, cwd=cwd, capture=True)
    b1 = cpu_busy_s()
    h.note_other(b1 - b0, p.user + p.sys, p.wall)
    what = f'bench-engine {algo}{" " + " ".join(extra) if extra else ""} on {h.data.label(name)}'
    if p.timed_out:
        raise RuntimeError(f'{what}: no answer in {TIMEOUT} s')
    if p.rc != 0:
        err = p.err.strip().splitlines()
        raise RuntimeError(f'{what}: exit {p.rc}: {err[-1] if err else ""}')
    runs, digest_lines = [], []
    for line in p.out.splitlines():
        if line.startswith('files='):
            runs.append(dict(kv.split('=', 1) for kv in line.split()))
        elif digests:
            digest_lines.append(line)
    if not runs:
        raise RuntimeError(f'{what}: no result line')
    best = min(runs, key=lambda r: float(r['wall_s']))
    if int(best['files']) != len(names):
        raise RuntimeError(f'{what}: {best["files"]} of {len(names)} files hashed')
    return best, len(runs), digest_lines, p


def engine_note(best):
    note = f'{best["io_mode"]} w={best["workers"]} buf={short_size(int(best["buffer_size"]))}x{best["buffers"]}'
    if 'strategy' in best:
        used = [f'{k} {best[k]}' for k in ('read', 'mmap', 'direct') if best.get(k, '0') != '0']
        note += f' strategy={best["strategy"]}' + (f' ({", ".join(used)})' if used else '')
    if best.get('parallel', '0') != '0':
        note += f' parallel={best["parallel"]}'
    return note


def engine_row(h, name, algo, cache, repeat, extra=(), digests=False, tool='fhash engine', drop=False,
               variant=None):
    if drop:
        h.data.drop(name)
    best, n, digest_lines, p = run_engine(h, name, algo, cache, repeat, extra, digests)
    cpu = float(best['cpu_user_s']) + float(best['cpu_sys_s'])
    label = tool if not variant else f'{tool} --{variant}' if not variant.startswith('-') else f'{tool} {variant}'
    row = h.add_row(name, label, algo, cache, int(best['bytes']), int(best['files']), float(best['wall_s']),
                    cpu, engine_note(best), n, kind='fhash', rss_kib=p.maxrss_kib, rss_exact=p.rss_exact,
                    user=float(best['cpu_user_s']), sys=float(best['cpu_sys_s']),
                    ctxsw=p.ctxsw / n, faults=p.faults / n, variant=variant, extra_argv=list(extra))
    row['digests'] = digest_lines
    if cache == 'cold':
        row['cached_after'] = h.data.residency(name)
    return row


def fhashctl_args(h, name):
    """What a user gives `fhashctl hash` for a data set: `-r .` for the tree, the names otherwise."""
    if h.data.specs[name][0] == 'tree':
        return ['-r', '.'], ' -r'
    return h.data.files(name)[1], ''


def fhashctl_local_row(h, name, algo, cache, repeat):
    """`fhashctl hash --local` (in-process, the same engine) over a data set, best of `repeat`, its
    output checked like a peer's: what users run, next to bench-engine, which prints nothing."""
    args, suffix = fhashctl_args(h, name)
    label = f'fhashctl hash --local{suffix}'
    if not h.args.fhashctl or not os.access(h.args.fhashctl, os.X_OK):
        return h.skip_row(name, label, algo, cache, 'fhashctl not built', kind='fhash')
    cwd, names = h.data.files(name)
    cmd = [h.args.fhashctl, 'hash', '--local', '-a', algo, *args]
    best = None
    for _ in range(repeat):
        if cache == 'cold':
            h.data.drop(name)
        r = h.measure(cmd, cwd=cwd, capture=True)
        if best is None or r.wall < best[0].wall:
            best = (r, h.last_other, h.data.residency(name) if cache == 'cold' else None)
        if h.data.is_set(name):
            check_output(h, name, algo, label, r.out)
    r, h.last_other, cached = best
    row = h.add_row(name, label, algo, cache, h.data.nbytes(name), len(names), r.wall, r.user + r.sys,
                    n=repeat, kind='fhash', rss_kib=r.maxrss_kib, rss_exact=r.rss_exact, user=r.user,
                    sys=r.sys, ctxsw=r.ctxsw, faults=r.faults)
    if cache == 'cold':
        row['cached_after'] = cached
    return row


def engine_variants(h, name, algo, cache, repeat):
    """The ENGINE_VARIANTS rows that apply here; missing options make skipped rows."""
    if not h.args.bench_engine:
        return
    for v in ENGINE_VARIANTS:
        if cache not in v['caches'] or name not in v['datasets'] or algo not in v['algos']:
            continue
        label = f'fhash engine {" ".join(v["argv"])}'
        if not h.engine_supports(v['argv'][0]):
            h.skip_row(name, label, algo, cache, f'bench-engine has no {v["argv"][0]}', kind='fhash')
            continue
        row = h.guarded(f'engine {algo} {v["label"]}', engine_row, h, name, algo, cache,
                        repeat if cache == 'hot' else 1, extra=v['argv'], drop=cache == 'cold',
                        variant=' '.join(v['argv']))
        if row:
            row['neutral'] = bool(v.get('neutral'))


def run_engine_only(h, algos):
    name = 'big'
    h.section(f'{h.data.label(name)} file, hot, engine only')
    h.data.warm(name)
    for algo in algos:
        h.guarded(f'engine {algo}', engine_row, h, name, algo, 'hot', h.args.repeat or 5)


def run_sweep(h):
    name = 'sweep'
    h.data.make([name])
    h.section(f'sweep: buffer size x queue depth (--buffers) on the hot {h.data.label(name)} file')
    h.data.warm(name)
    repeat = 1 if h.args.quick else 2
    for algo in SWEEP_ALGOS:
        grid, modes = {}, set()
        for bs in SWEEP_BUFFER_SIZES:
            for q in SWEEP_DEPTHS:
                try:
                    best, _, _, _ = run_engine(h, name, algo, 'hot', repeat,
                                               extra=['--buffer-size', str(bs), '--buffers', str(q)])
                    grid[bs, q] = float(best['gbps'])
                    modes.add(best['io_mode'])
                    if int(best['buffers']) != q or int(best['buffer_size']) != bs:
                        grid[bs, q, 'adj'] = f'{short_size(int(best["buffer_size"]))}x{best["buffers"]}'
                except RuntimeError as e:
                    grid[bs, q] = None
                    # engine_new() validating its config is an answer, not a failure of the run.
                    refused = 'cannot start the engine: Invalid argument' in str(e)
                    grid[bs, q, 'refused' if refused else 'err'] = str(e)
        h.say('')
        h.say(f'{algo}: GB/s  (rows: --buffer-size, columns: --buffers; io mode: {", ".join(sorted(modes))};'
              f' load {loadavg():.2f})')
        h.say('%8s' % 'buf\\q' + ''.join('%8d' % q for q in SWEEP_DEPTHS))
        for bs in SWEEP_BUFFER_SIZES:
            cells = []
            for q in SWEEP_DEPTHS:
                v = grid[bs, q]
                if v is None:
                    cells.append('%8s' % ('-' if (bs, q, 'refused') in grid else 'err'))
                else:
                    cells.append('%8s' % (f'{v:.2f}' + ('*' if (bs, q, 'adj') in grid else '')))
            h.say('%8s' % short_size(bs) + ''.join(cells))
        adjusted = [f'{short_size(k[0])}x{k[1]}->{v}' for k, v in grid.items() if len(k) == 3 and k[2] == 'adj']
        if adjusted:
            h.say(f'  * the engine used another size/depth than asked: {", ".join(adjusted)}')
        refused = [f'{short_size(k[0])}x{k[1]}' for k in grid if len(k) == 3 and k[2] == 'refused']
        if refused:
            h.say(f'  - engine_new() refuses the configuration (EINVAL): {", ".join(refused)}')
        errs = [f'{short_size(k[0])}x{k[1]}: {v}' for k, v in grid.items() if len(k) == 3 and k[2] == 'err']
        for e in errs:
            h.error(f'sweep {algo} {e}')
        vals = [v for k, v in grid.items() if len(k) == 2 and v]
        level = None
        if vals:
            top = max(vals)
            # "Levels off": the cheapest point (memory = size x depth) within 5% of the best.
            ok = sorted((bs * q, bs, q) for (bs, q), v in ((k, v) for k, v in grid.items() if len(k) == 2)
                        if v and v >= 0.95 * top)
            _, bs, q = ok[0]
            level = [bs, q, top]
            h.say(f'  best {top:.2f} GB/s; levels off (>= 95% of best with the least memory) at '
                  f'{short_size(bs)} x {q} = {human_size(bs * q)} in flight')
        h.sweep[algo] = {
            'file': h.data.label(name), 'io_modes': sorted(modes), 'level': level,
            'cells': [[bs, q, grid[bs, q], grid.get((bs, q, 'adj')),
                       'refused' if (bs, q, 'refused') in grid else 'err' if (bs, q, 'err') in grid else None]
                      for bs in SWEEP_BUFFER_SIZES for q in SWEEP_DEPTHS]}
