# SPDX-License-Identifier: MIT
"""One run's state: its rows, targets and errors, and the primitives every scenario uses to measure a
command and add a row. The scenarios, the targets and the report are functions of a Harness, in their
own modules; main() runs them in order."""

import argparse
import datetime
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from . import ceilings, client, daemon, engine, scenarios
from .common import ALGOS, BASELINE_FULL, GB, HERE, TIMEOUT, cpu_busy_s, git_describe, loadavg, uptime, write_json
from .datasets import DataSets
from .machine import machine_info
from .proc import run_child
from .report import print_table, print_targets, report
from .targets import evaluate_targets, fill_ratios, leader_reference, perf_evidence, targets_json


class Harness:
    def __init__(self, args):
        self.args = args
        self.mode = 'quick' if args.quick else 'full'
        self.data_dir = os.path.abspath(args.data_dir)
        self.rows = []
        self.targets = {}
        self.errors = []
        self.out = [sys.stdout]
        self.speed = {}        # (algo, processes) -> (GB/s, label): in-memory hashing ceilings
        self.sweep = {}
        self.repeat = args.repeat or (1 if args.quick else 3)
        self.data = DataSets(self.mode, self.data_dir, self.say)
        self._help = {}
        # CPUs kept busy by anyone but the measured command during the last measurement: the load
        # average lags by a minute, this says whether *this* number was taken on a quiet machine.
        self.last_other = None
        self.started = datetime.datetime.now()
        self.uptime_start = uptime()
        self.ncpu = os.cpu_count()
        # (data set, algo) -> (who, {path: digest}): the first complete output over a data set, which
        # every later one must match (a peer or fhashctl that hashed wrong is an error, not a row).
        self.ref_digests = {}
        # What the L-* targets compare with: read from bench/baseline-full.json when a full run starts
        # (before --save overwrites it), kept in this run's JSON for --report.
        self.leader_ref = None

    @classmethod
    def from_json(cls, data):
        """A harness holding a saved run's measurements, to compute its ratios and targets again with
        this version's definitions (bench/run --report): nothing is measured."""
        a = argparse.Namespace(quick=data['mode'] == 'quick', data_dir=os.path.join(HERE, 'data'), repeat=None,
                               algos=None, datasets=None, no_perf=True, bench_engine=None, fhashctl=None,
                               note=data.get('note'), build_root='', client=False)
        h = cls(a)
        h.ncpu = data.get('cpus') or os.cpu_count()
        h.rows = data['rows']
        for r in h.rows:
            for k in ('vs_peer', 'best_peer', 'vs_ceiling', 'ceiling'):
                r.pop(k, None)
        h.speed = {(k.rsplit('/', 1)[0], int(k.rsplit('/', 1)[1])): tuple(v) for k, v in data['speed'].items()}
        h.leader_ref = data.get('leader_ref')
        return h

    def say(self, *a):
        line = ' '.join(str(x) for x in a)
        for f in self.out:
            print(line, file=f, flush=True)

    def error(self, msg):
        self.errors.append(msg)
        self.say(f'ERROR: {msg}')

    def measure(self, argv, cwd=None, stdin_data=None, capture=False):
        """Runs argv once; returns its ChildResult (wall, CPU, peak RSS of it and its children)."""
        b0 = cpu_busy_s()
        r = run_child(argv, cwd=cwd, stdin_data=stdin_data, capture=capture)
        b1 = cpu_busy_s()
        self.note_other(b1 - b0, r.user + r.sys, r.wall)
        if r.timed_out:
            raise RuntimeError(f'{" ".join(argv[:6])}: no answer in {TIMEOUT} s')
        if r.rc != 0:
            err = r.err.strip().splitlines()
            raise RuntimeError(f'{" ".join(argv[:6])}: exit {r.rc}: {err[-1] if err else ""}')
        return r

    def note_other(self, busy, ours, wall):
        self.last_other = max(0.0, busy - ours) / wall if wall > 0 else None

    def add_row(self, ds, tool, algo, cache, nbytes, nfiles, wall, cpu, note='', n=1, kind='peer',
                rss_kib=None, scenario=None, **extra):
        """One line of the table. kind: 'fhash' (engine, fhashctl), 'peer', 'ceiling' (openssl speed,
        bench-hash, fio); scenario: '<data set>-<cache>' unless given."""
        row = {'ds': ds, 'dataset': self.data.label(ds) if ds in self.data.specs else ds,
               'scenario': scenario or f'{ds}-{cache}', 'tool': tool, 'algo': algo, 'cache': cache,
               'kind': kind, 'bytes': nbytes, 'files': nfiles,
               'gbps': nbytes / wall / GB if wall > 0 else 0.0,
               'files_per_s': nfiles / wall if wall > 0 else 0.0,
               'cpu_per_gb': cpu / (nbytes / GB) if nbytes else 0.0,
               'wall': wall, 'cpu': cpu, 'note': note, 'n': n, 'load': loadavg(), 'ratio': '',
               'other': self.last_other, 'rss_kib': rss_kib, 'skipped': None}
        row.update(extra)
        self.last_other = None
        self.rows.append(row)
        return row

    def skip_row(self, ds, tool, algo, cache, reason, kind='peer', scenario=None):
        row = {'ds': ds, 'dataset': self.data.label(ds) if ds in self.data.specs else ds,
               'scenario': scenario or f'{ds}-{cache}', 'tool': tool, 'algo': algo, 'cache': cache,
               'kind': kind, 'skipped': reason, 'gbps': 0.0, 'files_per_s': 0.0, 'cpu_per_gb': 0.0,
               'n': 0, 'load': loadavg(), 'other': None, 'ratio': '', 'note': '', 'rss_kib': None}
        self.rows.append(row)
        self.say(f'# {tool} ({algo}, {row["dataset"]}, {cache}): skipped: {reason}')
        return row

    def help_text(self, argv):
        key = tuple(argv)
        if key not in self._help:
            try:
                p = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
                self._help[key] = p.stdout + p.stderr
            except (OSError, subprocess.TimeoutExpired):
                self._help[key] = ''
        return self._help[key]

    def engine_supports(self, option):
        return re.search(r'(^|[\s,])' + re.escape(option) + r'\b', self.help_text([self.args.bench_engine, '--help']),
                         re.M) is not None

    def fhashctl_supports(self, option):
        return re.search(r'(^|[\s,])' + re.escape(option) + r'\b',
                         self.help_text([self.args.fhashctl, 'hash', '--help']), re.M) is not None

    def outdir(self):
        """An empty directory for the outputs of `xargs -P` batches (set_peer_command())."""
        if not getattr(self, '_outdir', None):
            self._outdir = tempfile.mkdtemp(prefix='fhash-bench-out-')
        return self._outdir

    def section(self, title):
        self.say('')
        self.say(f'## {title}   [{uptime()}]')

    def guarded(self, what, fn, *a, **kw):
        try:
            return fn(*a, **kw)
        except (RuntimeError, OSError) as e:
            self.error(f'{what}: {e}')
            return None

    def big_algos(self):
        return self.args.algos or ALGOS

    def cleanup(self):
        if getattr(self, '_outdir', None):
            shutil.rmtree(self._outdir, ignore_errors=True)
            self._outdir = None

    def datasets(self):
        """The data sets this run measures (--datasets, default all)."""
        return [d for d in ('big', 'mid', 'small', 'mixed') if not self.args.datasets or d in self.args.datasets]

    def set_algos(self, algos):
        return [x for x in algos if not self.args.algos or x in self.args.algos]

    def target(self, tid, value, evidence='', **kw):
        self.targets[tid] = {'value': value, 'evidence': evidence, **kw}

    def live(self, scenario=None, **kw):
        """Measured (not skipped) rows matching scenario and the given fields."""
        return [r for r in self.rows if not r['skipped'] and (scenario is None or r['scenario'] == scenario)
                and all(r.get(k) == v for k, v in kw.items())]

    def best_peer(self, scenario, algo):
        peers = [r for r in self.live(scenario, algo=algo, kind='peer') if r['gbps'] > 0]
        return max(peers, key=lambda p: p['gbps']) if peers else None

    def header(self):
        self.say(f'# fhash bench/run {" ".join(sys.argv[1:])}   {datetime.datetime.now().isoformat(timespec="seconds")}')
        rev = git_describe()
        cpu = '?'
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
        self.say(f'# git {rev}; {os.cpu_count()} CPUs ({cpu}); kernel {os.uname().release}; '
                 f'{"root" if os.geteuid() == 0 else "not root"}; memlock {resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]}')
        self.say(f'# bench-engine: {self.args.bench_engine or "(not used)"}')
        self.say(f'# {uptime()}')

    def to_json(self, duration):
        rows = []
        for r in self.rows:
            rows.append({k: v for k, v in r.items() if k not in ('digests',)})
        targets = targets_json(self)
        titles = {}
        for name in self.data.specs:
            if os.path.exists(self.data.path(name)) and (not self.data.is_set(name) or
                                                         os.path.exists(self.data.path(name) + '.list')):
                titles[name] = self.data.title(name)
        return {
            'version': 1, 'mode': self.mode, 'args': sys.argv[1:],
            'started': self.started.isoformat(timespec='seconds'),
            'duration_s': duration, 'uptime_start': self.uptime_start, 'uptime_end': uptime(),
            'machine': machine_info(self.data_dir, self.args.build_root), 'rows': rows, 'targets': targets,
            'speed': {f'{a}/{p}': v for (a, p), v in self.speed.items()}, 'sweep': self.sweep,
            'errors': self.errors, 'datasets': titles, 'note': self.args.note or '',
            'residency_method': self.data.residency_method, 'cpus': os.cpu_count(),
            'leader_ref': self.leader_ref,
        }

    def main(self):
        a = self.args
        stamp = datetime.datetime.now().strftime('%Y-%m-%d-%H%M')
        if a.save:
            os.makedirs(os.path.join(HERE, 'results'), exist_ok=True)
            path = os.path.join(HERE, 'results', f'{stamp}{"-quick" if a.quick else ""}.txt')
            self.save_file = open(path, 'w')
            self.out.append(self.save_file)
        self.header()
        t0 = time.monotonic()
        if a.engine_only:
            self.data.make(['big'])
            engine.run_engine_only(self, a.algos or ['sha256', 'xxh3'])
        if a.main:
            if not a.quick:
                self.leader_ref = leader_reference()
            self.data.make(self.datasets())
            ceilings.run_peers_speed(self)
            if 'big' in self.datasets():
                scenarios.run_big(self)
            for name in ('small', 'mid', 'mixed'):
                if name in self.datasets():
                    scenarios.run_set(self, name)
            if not a.no_cold:
                scenarios.run_cold(self)
        if a.sweep:
            engine.run_sweep(self)
        if a.daemon:
            daemon.run_daemon(self)
        if a.multi:
            scenarios.run_multi(self)
        if a.client:
            client.run_client(self)
        self.cleanup()
        fill_ratios(self)
        evaluate_targets(self)
        perf_evidence(self)
        print_table(self)
        print_targets(self)
        duration = time.monotonic() - t0
        self.say('')
        self.say(f'# done in {duration:.0f} s; {len(self.errors)} error(s)   [{uptime()}]')
        if a.save:
            self.save_file.close()
            print(f'# saved to {os.path.relpath(self.save_file.name)}')
            data = self.to_json(duration)
            jpath = self.save_file.name[:-4] + '.json'
            write_json(jpath, data)
            print(f'# saved to {os.path.relpath(jpath)}')
            if a.main and a.sweep and a.daemon and not a.quick:
                # The full run is the committed one: its data, RESULTS.md rendered from it, the charts.
                write_json(BASELINE_FULL, data)
                report(data)
        return 1 if self.errors else 0
