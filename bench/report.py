# SPDX-License-Identifier: MIT
"""What a run reports: the text table and target list as it goes, and RESULTS.md with the charts,
which are pure functions of a saved run's JSON (bench/run --report renders them again)."""

import os
import sys

from .common import ANALYSIS_MD, CHARTS_DIR, RESULTS_MD, short_size
from .engine import SWEEP_BUFFER_SIZES, SWEEP_DEPTHS
from .targets import OP_MD, OP_TEXT, TARGETS, fmt_value

SCENARIO_ORDER = ['big-hot', 'big-cold', 'mid-hot', 'mid-cold', 'small-hot', 'small-cold', 'mixed-hot',
                  'mixed-cold', 'daemon']


# ---- the text table, as the run goes ---------------------------------------------------------------
def print_table(h):
    h.say('')
    h.say('## results (best of n runs; GB = 10^9 bytes; CPU = user + sys of all threads/processes;')
    h.say('##  RSS = peak resident set (MiB; GNU time); load = 1-min load average; other = CPUs busy')
    h.say('##  with anything else during the kept run; ratio = to the best peer; ceil = to the ceiling)')
    hdr = ('dataset', 'tool', 'algo', 'cache', 'GB/s', 'files/s', 'CPU s/GB', 'RSS', 'n', 'load', 'other',
           'ratio', 'ceil', 'engine/notes')
    fmt = '%-16s %-34s %-8s %-5s %7s %10s %8s %6s %2s %5s %5s  %-28s %5s %s'
    h.say(fmt % hdr)
    h.say('-' * 160)
    for r in h.rows:
        if r['skipped']:
            h.say(fmt % (r['dataset'], r['tool'], r['algo'], r['cache'], '', '', '', '', '', '', '', '', '',
                         f'skipped: {r["skipped"]}'))
            continue
        files = '-' if r['dataset'] == 'memory' else f'{r["files_per_s"]:.0f}'
        rss = '-' if not r['rss_kib'] else ('' if r.get('rss_exact', True) else '<') + f'{r["rss_kib"] / 1024:.1f}'
        note = r['note']
        if r.get('cached_after') is not None:
            note = (note + '; ' if note else '') + f'{100 * r["cached_after"]:.1f}% cached after'
        h.say(fmt % (r['dataset'], r['tool'], r['algo'], r['cache'], f'{r["gbps"]:.3f}', files,
                     f'{r["cpu_per_gb"]:.3f}', rss,
                     r['n'], f'{r["load"]:.2f}', '-' if r['other'] is None else f'{r["other"]:.2f}',
                     r['ratio'], f'{r["vs_ceiling"]:.2f}' if 'vs_ceiling' in r else '', note))


def print_targets(h):
    if not h.targets:
        return
    h.say('')
    h.say('## targets (informational: PASS/MISS never changes the exit status)')
    for tid, (desc, thr, op, _) in TARGETS.items():
        if tid not in h.targets:
            continue
        t = h.targets[tid]
        h.say(f'{tid:<22} {"PASS" if t["pass"] else "MISS"}  {fmt_value(t["value"], thr, tid):>11} '
              f'{OP_TEXT[op]:<2} {fmt_value(thr, thr, tid):<9} {desc}')


# ---- RESULTS.md and the charts: pure functions of a saved run's JSON ---------------------------------
SCENARIO_TITLES = {'big': 'one big file', 'mid': '1 MiB files', 'small': '4 KiB files', 'mixed': 'the mixed tree'}


def scenario_title(data, sc):
    if sc == 'daemon':
        return 'Through the daemon (`fhashctl` → fhashd on a private dbus-daemon) vs in-process'
    ds, cache = sc.rsplit('-', 1)
    t = data['datasets'].get(ds, SCENARIO_TITLES.get(ds, ds))
    return f'{t[0].upper() + t[1:]}, {cache}'


def md_num(v, digits=3):
    if v is None:
        return ''
    if v >= 100:
        return f'{v:,.0f}'
    if v >= 10:
        return f'{v:.2f}'
    return f'{v:.{digits}f}'


def md_rss(r):
    if not r.get('rss_kib'):
        return ''
    return ('' if r.get('rss_exact', True) else '≤ ') + f'{r["rss_kib"] / 1024:.1f} MiB'


def md_escape(s):
    return str(s).replace('|', '\\|')


def scenario_table(data, sc):
    rows = [r for r in data['rows'] if r['scenario'] == sc]
    cold = any(r.get('cached_after') is not None for r in rows)
    daemon = sc == 'daemon'
    hdr = (['data'] if daemon else []) + ['tool', 'algo'] + (['cache'] if daemon else []) + \
        ['GB/s', 'files/s', 'CPU s/GB', 'peak RSS', '× best peer', '× ceiling'] + \
        (['cached after'] if cold else []) + ['n', 'other', 'notes']
    out = ['| ' + ' | '.join(hdr) + ' |',
           '|' + '|'.join('---:' if h in ('GB/s', 'files/s', 'CPU s/GB', 'peak RSS', 'cached after', 'n', 'other')
                          else '---' for h in hdr) + '|']
    for r in rows:
        tool = f'**{r["tool"]}**' if r['kind'] == 'fhash' else r['tool']
        if r['kind'] == 'ceiling':
            tool = f'{r["tool"]} *(ceiling)*'
        cells = ([r['dataset']] if daemon else []) + [tool, r['algo']] + ([r['cache']] if daemon else [])
        if r['skipped']:
            cells += [''] * (len(hdr) - len(cells) - 1) + [f'skipped: {r["skipped"]}']
        else:
            vp = f'{r["vs_peer"]:.2f}' if 'vs_peer' in r else ''
            if 'vs_peer' in r and r['kind'] == 'fhash':
                vp = f'**{vp}** ({r["best_peer"]})'
            vc = f'{r["vs_ceiling"]:.2f} ({r["ceiling"]})' if 'vs_ceiling' in r else ''
            note = r['note']
            if daemon and 'vs_engine' in r:
                note = (note + '; ' if note else '') + f'{r["vs_engine"]:.3f}× bench-engine'
            if daemon and 'vs_local' in r:
                note = (note + '; ' if note else '') + f'{r["vs_local"]:.3f}× --local'
            many = r.get('files', 0) > 1 or r['ds'] in ('small', 'mid', 'mixed')
            cells += [md_num(r['gbps']), f'{r["files_per_s"]:,.0f}' if many else '', f'{r["cpu_per_gb"]:.3f}',
                      md_rss(r), vp, vc]
            if cold:
                cells.append(f'{100 * r["cached_after"]:.1f}%' if r.get('cached_after') is not None else '')
            cells += [str(r['n']), '' if r['other'] is None else f'{r["other"]:.2f}', md_escape(note)]
        out.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(out)


def render_results_md(data, charts):
    m = data['machine']
    L = []
    L.append('# fhash benchmark results')
    L.append('')
    L.append('<!-- Generated by bench/run from bench/baseline-full.json: do not edit. Regenerate with '
             '`bench/run --all --save` (a new run) or `bench/run --report` (the same data); hand-written '
             'analysis goes in bench/ANALYSIS.md, which is included at the end. -->')
    L.append('')
    args = [x for i, x in enumerate(data['args']) if not x.startswith('--note')
            and not (i and data['args'][i - 1] == '--note')]
    L.append(f'Made by `bench/run {" ".join(args)}` on {data["started"].replace("T", " ")}, git '
             f'`{m.get("git", "?")}`, in {data["duration_s"] / 60:.1f} min. GB = 10^9 bytes (as `openssl speed`). '
             'Every number is the best of n runs (n is in the tables); CPU is user + system time of every '
             'thread and child process; peak RSS is the command\'s `ru_maxrss` (through GNU time\'s `wait4()`). '
             'See bench/README.md for the '
             'method and for how to read the tables.')
    L.append('')
    if data['errors']:
        L.append(f'**{len(data["errors"])} error(s) in this run:** ' + '; '.join(md_escape(e) for e in data['errors']))
        L.append('')
    L.append('## The machine')
    L.append('')
    v = m.get('versions', {})
    L.append('| | |')
    L.append('|---|---|')
    L.append(f'| CPU | {m.get("cpu")} × {m.get("cpus")} (flags: {m.get("cpu_flags")}) |')
    L.append(f'| memory | {m.get("ram")} |')
    L.append(f'| OS, kernel | {m.get("os")}, Linux {m.get("kernel")}; virtualization: {m.get("virt")} |')
    L.append(f'| disk under bench/data | {md_escape(m.get("disk"))} |')
    L.append(f'| file system | {md_escape(m.get("filesystem"))} |')
    L.append(f'| fhash build | {m.get("build")}{", " + v["cc"] if v.get("cc") else ""}; '
             f'liburing {v.get("liburing", "?")}; '
             f'{v.get("openssl", "OpenSSL ?")}; RLIMIT_MEMLOCK {m.get("memlock")}; '
             f'{"root" if m.get("root") else "not root"} |')
    tools = ', '.join(f'{v[k]}' for k in ('sha256sum', 'b3sum', 'xxhsum', 'rhash', 'hashdeep', 'fio') if v.get(k))
    L.append(f'| peers | {md_escape(tools)} |')
    L.append(f'| harness | Python {v.get("python")}, matplotlib {v.get("matplotlib") or "(absent: no charts)"}; '
             f'page-cache residency by {data.get("residency_method") or "?"} |')
    L.append('')
    L.append('## Load during the run')
    L.append('')
    L.append(f'- start: `{data["uptime_start"]}`')
    L.append(f'- end: `{data["uptime_end"]}`')
    others = [r['other'] for r in data['rows'] if not r['skipped'] and r.get('other') is not None]
    if others:
        busy = sum(1 for o in others if o > 0.2)
        L.append(f'- "other" (CPUs kept busy by anything but the measured command, per row): median '
                 f'{sorted(others)[len(others) // 2]:.2f}, max {max(others):.2f}; {busy} of {len(others)} rows '
                 f'above 0.2 — on {data["cpus"]} CPUs those rows are low and their ratios unreliable.')
    if data.get('note'):
        L.append(f'- note: {data["note"]}')
    L.append('')
    L.append('## Targets')
    L.append('')
    L.append('| id | target | measured | needed | result |')
    L.append('|---|---|---:|---:|---|')
    for t in data['targets']:
        if not t['issue']:
            continue
        L.append(target_line(t))
    extra = [t for t in data['targets'] if not t['issue'] and t['value'] is not None]
    if extra:
        L.append('')
        L.append('Also measured (earlier targets, informational):')
        L.append('')
        L.append('| id | target | measured | needed | result |')
        L.append('|---|---|---:|---:|---|')
        for t in extra:
            L.append(target_line(t))
    L.append('')
    L.append('## Ceilings')
    L.append('')
    L.append('In-memory hashing, no I/O: what one core (or every core, `-multi`) can hash. The ceiling of a '
             'scenario is the lower of this (one core for one file, every core for sets and for BLAKE3; '
             'bench-hash × cores where openssl has no such algorithm) and fio reading the same data.')
    L.append('')
    L.append('| tool | algo | GB/s | CPU s/GB | n | other | notes |')
    L.append('|---|---|---:|---:|---:|---:|---|')
    for r in data['rows']:
        if r['scenario'] == 'ceiling' and not r['skipped']:
            L.append(f'| {r["tool"]} | {r["algo"]} | {md_num(r["gbps"])} | {r["cpu_per_gb"]:.3f} | {r["n"]} | '
                     f'{"" if r["other"] is None else "%.2f" % r["other"]} | {md_escape(r["note"])} |')
    scenarios = [s for s in SCENARIO_ORDER if any(r['scenario'] == s for r in data['rows'])]
    for sc in scenarios:
        L.append('')
        L.append(f'## {scenario_title(data, sc)}')
        L.append('')
        if sc in charts:
            L.append(f'![{sc}](charts/{os.path.basename(charts[sc])})')
            L.append('')
        L.append(scenario_table(data, sc))
    if data.get('sweep'):
        L.append('')
        L.append('## Buffer size × queue depth')
        L.append('')
        L.append('bench-engine on the hot file with `--buffer-size` (rows) × `--buffers` (columns, the reads and '
                 'hashing in flight), GB/s, best of 2 (1 with --quick). SHA-256 shows where hashing stops waiting '
                 'for reads; XXH3 '
                 'shows the I/O path\'s own limit. `-` = the engine refuses the configuration; `*` = it used '
                 'another size or depth than asked.')
        if 'sweep' in charts:
            L.append('')
            L.append(f'![sweep](charts/{os.path.basename(charts["sweep"])})')
        for algo, s in data['sweep'].items():
            L.append('')
            L.append(f'**{algo}** on the {s["file"]} file (io mode: {", ".join(s["io_modes"]) or "?"})'
                     + (f'; best {s["level"][2]:.2f} GB/s, levels off (≥ 95% of the best with the least memory) '
                        f'at {short_size(s["level"][0])} × {s["level"][1]}' if s.get('level') else ''))
            L.append('')
            L.append('| buffer \\ depth | ' + ' | '.join(str(q) for q in SWEEP_DEPTHS) + ' |')
            L.append('|---|' + '---:|' * len(SWEEP_DEPTHS))
            cells = {(c[0], c[1]): c for c in s['cells']}
            for bs in SWEEP_BUFFER_SIZES:
                row = []
                for q in SWEEP_DEPTHS:
                    c = cells.get((bs, q))
                    if not c or c[2] is None:
                        row.append('-' if c and c[4] == 'refused' else 'err' if c else '')
                    else:
                        row.append(f'{c[2]:.2f}' + ('*' if c[3] else ''))
                L.append(f'| {short_size(bs)} | ' + ' | '.join(row) + ' |')
    L.append('')
    L.append('## Where targets are missed and why')
    L.append('')
    missed = [t for t in data['targets'] if t['value'] is not None and not t['pass']]
    unmeasured = [t for t in data['targets'] if t['issue'] and t['value'] is None]
    if not missed:
        L.append('Every measured target passed in this run.')
    else:
        L.append('What the harness measured about each miss (the ceilings, the CPU split, `perf stat` of the '
                 'engine where perf is installed). Hand-written analysis belongs in bench/ANALYSIS.md, below.')
    for t in missed:
        L.append('')
        L.append(f'### {t["id"]}: {t["desc"]} — {fmt_value(t["value"], t["threshold"], t["id"])}, needed '
                 f'{OP_MD[t["op"]]} {fmt_value(t["threshold"], t["threshold"], t["id"])}')
        L.append('')
        L.append(t['evidence'] or '(no evidence recorded)')
        if t.get('perf'):
            L.append('')
            L.append(t['perf'])
    if unmeasured:
        L.append('')
        L.append('Not measured in this run: ' + ', '.join(f'{t["id"]} ({t["desc"]})' for t in unmeasured) +
                 ' — a missing peer, not root (cold runs), or a mode not run.')
    L.append('')
    try:
        with open(ANALYSIS_MD) as f:
            analysis = f.read().strip()
    except OSError:
        analysis = ''
    if analysis:
        L.append('<!-- bench/ANALYSIS.md, included verbatim -->')
        L.append('')
        L.append(analysis)
    else:
        L.append('*(No bench/ANALYSIS.md: write one to add the human part of this section; regenerating keeps '
                 'it.)*')
    L.append('')
    return '\n'.join(L)


def target_line(t):
    thr = f'{OP_MD[t["op"]]} {fmt_value(t["threshold"], t["threshold"], t["id"])}'
    if t['value'] is None:
        return f'| {t["id"]} | {t["desc"]} | not measured | {thr} | — |'
    return (f'| {t["id"]} | {t["desc"]} | {fmt_value(t["value"], t["threshold"], t["id"])} | {thr} | '
            f'{"PASS" if t["pass"] else "**MISS**"} |')


def make_charts(data, outdir):
    """PNG charts with matplotlib (Agg: no display needed): GB/s (files/s for the 4 KiB files) of every
    tool in each scenario, and the sweep's GB/s against queue depth, a line per buffer size. Returns
    {name: path}; empty without matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')
        import matplotlib.pyplot as plt
    except ImportError:
        print('bench/run: no charts: python3-matplotlib is not installed (apt-get install python3-matplotlib)',
              file=sys.stderr)
        return {}
    os.makedirs(outdir, exist_ok=True)
    for fn in os.listdir(outdir):
        if fn.endswith('.png'):
            os.unlink(os.path.join(outdir, fn))
    colors = {'fhash': '#1f77b4', 'peer': '#8c8c8c', 'ceiling': '#ff7f0e', 'daemon': '#2ca02c'}
    made = {}
    for sc in SCENARIO_ORDER:
        rows = [r for r in data['rows'] if r['scenario'] == sc and not r['skipped'] and r['gbps'] > 0]
        if not rows:
            continue
        small = sc.startswith('small-')
        key, unit = ('files_per_s', 'files/s') if small else ('gbps', 'GB/s (10^9 B/s)')
        labels = [(f'{r["dataset"]}: ' if sc == 'daemon' else '') + f'{r["tool"]} [{r["algo"]}]'
                  + (f' {r["cache"]}' if sc == 'daemon' and r['cache'] != 'hot' else '') for r in rows]
        vals = [r[key] for r in rows]
        fig, ax = plt.subplots(figsize=(9, 0.28 * len(rows) + 1.4))
        y = range(len(rows))
        via = [sc == 'daemon' and '--address' in r['tool'] for r in rows]
        ax.barh(y, vals, color=[colors['daemon'] if v else colors[r['kind']] for r, v in zip(rows, via)])
        ax.set_yticks(list(y))
        ax.set_yticklabels(labels, fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel(unit)
        ax.set_title(scenario_title(data, sc).replace('`', ''), fontsize=9)
        top = max(vals)
        for i, v in enumerate(vals):
            ax.text(v + top * 0.005, i, f'{v:,.0f}' if small else f'{v:.2f}', va='center', fontsize=6)
        ax.set_xlim(0, top * 1.12)
        ax.grid(axis='x', alpha=0.3)
        from matplotlib.patches import Patch
        kinds = (('fhash', 'fhash in-process'), ('daemon', 'fhashctl through fhashd')) if sc == 'daemon' else \
            (('fhash', 'fhash'), ('peer', 'peer'), ('ceiling', 'ceiling'))
        ax.legend(handles=[Patch(color=colors[k], label=lab) for k, lab in kinds], fontsize=7, loc='lower right')
        fig.tight_layout()
        path = os.path.join(outdir, f'{sc}.png')
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made[sc] = path
    if data.get('sweep'):
        algos = list(data['sweep'])
        fig, axes = plt.subplots(1, len(algos), figsize=(5 * len(algos), 3.8), squeeze=False)
        for ax, algo in zip(axes[0], algos):
            s = data['sweep'][algo]
            for bs in SWEEP_BUFFER_SIZES:
                pts = [(c[1], c[2]) for c in s['cells'] if c[0] == bs and c[2] is not None]
                if pts:
                    ax.plot([p[0] for p in pts], [p[1] for p in pts], marker='o', ms=3, label=short_size(bs))
            ax.set_xscale('log', base=2)
            ax.set_xticks(SWEEP_DEPTHS)
            ax.set_xticklabels([str(q) for q in SWEEP_DEPTHS])
            ax.set_xlabel('--buffers (queue depth)')
            ax.set_ylabel('GB/s')
            ax.set_title(f'{algo}, hot {s["file"]} file', fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(title='--buffer-size', fontsize=7, title_fontsize=7)
        fig.tight_layout()
        path = os.path.join(outdir, 'sweep.png')
        fig.savefig(path, dpi=90)
        plt.close(fig)
        made['sweep'] = path
    return made


def report(data, md_path=RESULTS_MD, charts_dir=CHARTS_DIR):
    charts = make_charts(data, charts_dir)
    with open(md_path + '.tmp', 'w') as f:
        f.write(render_results_md(data, charts))
    os.rename(md_path + '.tmp', md_path)
    print(f'# wrote {os.path.relpath(md_path)}' + (f' and {len(charts)} chart(s) in {os.path.relpath(charts_dir)}/'
                                                   if charts else ''))
