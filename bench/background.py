# SPDX-License-Identifier: MIT
"""bench/run --background: what a background job costs the foreground, beside what the same job costs
at normal priority and what `nice -n19 ionice -c3` sha256sum costs (issue 28).

Three foreground workloads, each measured alone and then beside a job that loops over a large set
(cold: its page cache dropped before every pass; hot: kept in the cache), in one run, alternating:
  fio       4 KiB random O_DIRECT reads (one in flight) of a 1 GiB file on the same file system:
            IOPS and p50/p99 completion latency;
  openssl   `openssl speed -seconds N -multi <cores> -evp sha256`: every core busy hashing;
  fhashctl  `fhashctl hash -r` of a hot 1 GiB set by nobody, through the same fhashd, in a loop.
The jobs beside it, each restarted as soon as it ends while the foreground runs:
  background  `fhashctl --background hash -r SET` through fhashd (priority "background");
  normal      the same job at normal priority;
  nice-ionice `find SET -type f -print0 | nice -n19 ionice -c3 xargs -0 -P<cores> -n 64 sha256sum`,
              the polite background hash a user has today.
A job that runs when the foreground stops must then finish (its last pass is waited for). Figures
are ratios to the foreground alone, measured right before or after it (in turn); the whole plan is
run ROUNDS times, every other round in reverse order, and the median kept. Goal (issue 28): beside the background job the foreground keeps >= 0.95
of its throughput and its p99 latency rises <= 10%. Also measured: the background job alone against
the same job at normal priority (goal >= 0.9).

Needs root (dropping a set's page cache, a client as nobody), fio, openssl, setpriv, dbus-daemon.
"""

import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time

from .common import GiB, MiB

SECONDS = 8          # per measurement
ROUNDS = 3           # forward, reversed, forward
GOAL_THROUGHPUT = 0.95
GOAL_P99 = 1.10
GOAL_ALONE = 0.90
# fhashd's background engine holds back for ENGINE_YIELD_WINDOW_USEC (100 ms, engine.h) after the
# normal engine's last progress, on purpose: a normal job is often followed by the next. A job "alone"
# has had no normal job in that window, so each timed run of alone_ratio() waits this long first.
ALONE_GAP_S = 0.25

# The sets: (name, files, size of each). Cold and background hot: larger than the foreground's.
SETS = {'cold': (1024, 2 * MiB), 'hot': (1024, 1 * MiB), 'fg': (1024, 1 * MiB)}
FIO_SIZE = 1 * GiB
BACKGROUNDS = ('background', 'normal', 'nice-ionice')
FOREGROUNDS = ('fio', 'openssl', 'fhashctl')

BUS_CONF = '''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={sock}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    <allow own="*"/>
  </policy>
  <limit name="max_message_unix_fds">64</limit>
</busconfig>
'''


def ncpu():
    return len(os.sched_getaffinity(0))


class Data:
    """The sets under data_dir/background, made once and kept; readable by nobody."""

    def __init__(self, data_dir, log):
        self.dir = os.path.join(data_dir, 'background')
        self.log = log

    def path(self, name):
        return os.path.join(self.dir, name)

    def files(self, name):
        d = self.path(name)
        return [os.path.join(d, f) for f in sorted(os.listdir(d))]

    def nbytes(self, name):
        n, size = SETS[name]
        return n * size

    def make(self):
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o755)
        for name, (n, size) in SETS.items():
            d = self.path(name)
            if os.path.isdir(d) and len(os.listdir(d)) == n and all(
                    os.path.getsize(os.path.join(d, f)) == size for f in os.listdir(d)):
                continue
            self.log(f'# making {name}: {n} x {size // MiB} MiB in {d}')
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            os.chmod(d, 0o755)
            for i in range(n):
                p = os.path.join(d, f'f{i:05d}')
                with open(p, 'wb') as f:
                    f.write(os.urandom(size))
                os.chmod(p, 0o644)
        fio = self.path('fio.dat')
        if not os.path.exists(fio) or os.path.getsize(fio) != FIO_SIZE:
            self.log(f'# making {fio}: {FIO_SIZE // GiB} GiB')
            with open(fio, 'wb') as f:
                for _ in range(FIO_SIZE // (64 * MiB)):
                    f.write(os.urandom(64 * MiB))
        subprocess.run(['sync'], check=False)

    def drop(self, name):
        """Evicts the set from the page cache, file by file (the rest of the machine keeps its own)."""
        for p in self.files(name):
            fd = os.open(p, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)

    def warm(self, name):
        for p in self.files(name):
            with open(p, 'rb') as f:
                while f.read(8 * MiB):
                    pass


class Daemon:
    """A private dbus-daemon every uid may use, and fhashd on it."""

    def __init__(self, fhashd):
        self.fhashd = fhashd
        self.tmp = tempfile.mkdtemp(prefix='fhash-bench-bg-')
        os.chmod(self.tmp, 0o755)
        self.bus = self.daemon = None
        self.address = None

    def __enter__(self):
        conf = os.path.join(self.tmp, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(BUS_CONF.format(sock=os.path.join(self.tmp, 'bus')))
        self.bus = subprocess.Popen(['dbus-daemon', f'--config-file={conf}', '--nofork', '--print-address=1'],
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.address = self.bus.stdout.readline().strip()
        self.logpath = os.path.join(self.tmp, 'fhashd.log')
        self.daemon = subprocess.Popen([self.fhashd, '--address', self.address, '--idle-exit', '0', '--config',
                                        '/dev/null'], stdout=open(self.logpath, 'w'), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            p = subprocess.run(['busctl', f'--address={self.address}', 'call', 'org.freedesktop.DBus',
                                '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner', 's',
                                'org.fhash.Hasher1'], capture_output=True, text=True, check=False)
            if p.stdout.strip() == 'b true':
                return self
            time.sleep(0.05)
        raise RuntimeError('fhashd did not take its name in 10 s')

    def __exit__(self, *exc):
        for p in (self.daemon, self.bus):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Loop:
    """A job restarted as soon as it ends, until stop(); then its last pass is waited for."""

    def __init__(self, argv, before=None, shell=False):
        self.argv, self.before, self.shell = argv, before, shell
        self.passes, self.failed, self.errors = 0, 0, []
        self.busy_s = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            if self.before:
                self.before()
            t0 = time.monotonic()
            p = subprocess.run(self.argv, shell=self.shell, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, check=False)
            self.busy_s += time.monotonic() - t0
            if p.returncode == 0:
                self.passes += 1
            else:
                self.failed += 1
                self.errors.append(p.stderr.strip()[-200:])

    def stop(self, timeout=300):
        """Stops restarting; returns the seconds the last pass took to finish after the stop."""
        t0 = time.monotonic()
        self._stop.set()
        self._thread.join(timeout)
        return time.monotonic() - t0, not self._thread.is_alive()


def fio_run(path, seconds):
    p = subprocess.run(['fio', '--name=fg', f'--filename={path}', '--rw=randread', '--bs=4k', '--direct=1',
                        '--ioengine=psync', '--iodepth=1', f'--runtime={seconds}', '--time_based',
                        f'--size={FIO_SIZE}', '--output-format=json'], capture_output=True, text=True, check=True)
    j = json.loads(p.stdout[p.stdout.index('{'):])
    r = j['jobs'][0]['read']
    pct = r['clat_ns']['percentile']
    return {'throughput': r['iops'], 'unit': 'IOPS', 'p50_us': pct['50.000000'] / 1000,
            'p99_us': pct['99.000000'] / 1000}


def openssl_run(seconds):
    p = subprocess.run(['openssl', 'speed', '-seconds', str(seconds), '-multi', str(ncpu()), '-evp', 'sha256',
                        '-bytes', '16384'], capture_output=True, text=True, check=True)
    m = re.search(r'^sha256\s+([0-9.]+)k\s*$', p.stdout, re.M)
    if not m:
        raise RuntimeError(f'openssl speed: no figure in {p.stdout[-300:]!r}')
    return {'throughput': float(m.group(1)) * 1000 / 1e9, 'unit': 'GB/s'}


def fhashctl_fg_run(ctl, address, data, seconds):
    """nobody's `fhashctl hash -r` of the hot foreground set, again and again for `seconds`."""
    argv = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', ctl, '--address', address,
            '--daemon', 'hash', '-r', data.path('fg')]
    done, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
        done += data.nbytes('fg')
    return {'throughput': done / (time.monotonic() - t0) / 1e9, 'unit': 'GB/s'}


class Bench:
    def __init__(self, args, log):
        self.a = args
        self.log = log
        self.data = Data(args.data_dir, log)
        self.seconds = args.background_seconds or SECONDS
        self.rounds = args.background_rounds or ROUNDS

    def background(self, kind, set_name, address):
        s = self.data.path(set_name)
        before = (lambda: self.data.drop(set_name)) if set_name == 'cold' else None
        if kind == 'nice-ionice':
            cmd = (f'find {s} -type f -print0 | nice -n19 ionice -c3 xargs -0 -P{ncpu()} -n 64 sha256sum')
            return Loop(cmd, before, shell=True)
        argv = [self.a.fhashctl, '--address', address, '--daemon', 'hash', '-r', s]
        if kind == 'background':
            argv.insert(5, '--background')
        return Loop(argv, before)

    def foreground(self, kind, address):
        if kind == 'fio':
            return fio_run(self.data.path('fio.dat'), self.seconds)
        if kind == 'openssl':
            return openssl_run(self.seconds)
        return fhashctl_fg_run(self.a.fhashctl, address, self.data, self.seconds)

    def measure(self, fg, bg, set_name, address):
        if fg == 'fhashctl':
            self.data.warm('fg')
        if set_name == 'hot':
            self.data.warm('hot')
        loop = self.background(bg, set_name, address).start() if bg else None
        if loop:
            time.sleep(0.5)  # under way before the foreground starts
        try:
            r = self.foreground(fg, address)
        finally:
            tail, finished = loop.stop() if loop else (0.0, True)
        if loop:
            r.update({'bg_passes': loop.passes, 'bg_failed': loop.failed, 'bg_finished': finished and not loop.failed,
                      'bg_tail_s': round(tail, 2), 'bg_errors': loop.errors[:2]})
        return r

    def alone_ratio(self, address):
        """The background job alone against the same job at normal priority, on each set: best of 3,
        alternating, each run ALONE_GAP_S after the last (past the yield window that follows a normal
        job, which a background job started right after one waits out)."""
        out = {}
        for set_name in ('hot', 'cold'):
            times = {'background': [], 'normal': []}
            for _ in range(3):
                for kind in ('normal', 'background'):
                    if set_name == 'cold':
                        self.data.drop(set_name)
                    else:
                        self.data.warm(set_name)
                    argv = [self.a.fhashctl, '--address', address, '--daemon', 'hash', '-r', self.data.path(set_name)]
                    if kind == 'background':
                        argv.insert(5, '--background')
                    time.sleep(ALONE_GAP_S)
                    t0 = time.monotonic()
                    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True)
                    times[kind].append(time.monotonic() - t0)
            gbs = {k: self.data.nbytes(set_name) / min(v) / 1e9 for k, v in times.items()}
            out[set_name] = {'background_gbs': round(gbs['background'], 3), 'normal_gbs': round(gbs['normal'], 3),
                             'ratio': round(gbs['background'] / gbs['normal'], 3)}
            self.log(f'  alone, {set_name}: background {gbs["background"]:.2f} GB/s, normal {gbs["normal"]:.2f}'
                     f' GB/s: {out[set_name]["ratio"]:.3f}')
        return out

    def run(self):
        missing = [p for p in ('fio', 'openssl', 'setpriv', 'dbus-daemon', 'busctl', 'ionice') if not shutil.which(p)]
        if missing:
            return {'skipped': f'missing {", ".join(missing)}'}
        if os.geteuid() != 0:
            return {'skipped': 'needs root (page cache of the sets, a client as nobody)'}
        self.data.make()
        result = {'seconds': self.seconds, 'rounds': self.rounds, 'cpus': ncpu(), 'sets': {
            k: f'{n} x {size // MiB} MiB' for k, (n, size) in SETS.items()}, 'runs': [], 'loadavg_start':
            os.getloadavg()[0]}
        with Daemon(self.a.fhashd) as d:
            # Once, so that the background engine exists before anything is timed.
            subprocess.run([self.a.fhashctl, '--address', d.address, '--daemon', 'hash', '--background',
                            self.data.files('hot')[0]], stdout=subprocess.DEVNULL, check=True)
            result['alone'] = self.alone_ratio(d.address)
            plan = [(fg, bg, s) for fg in FOREGROUNDS for s in ('cold', 'hot') for bg in BACKGROUNDS]
            for rnd in range(self.rounds):
                for fg, bg, s in (plan if rnd % 2 == 0 else plan[::-1]):
                    # Alone and beside next to each other, in turn first: the machine's other load
                    # drifts over minutes, a pair's two runs see about the same.
                    pair = [(None, None), (bg, s)]
                    for b, ss in (pair if rnd % 2 == 0 else pair[::-1]):
                        r = self.measure(fg, b, ss, d.address)
                        r.update({'round': rnd, 'fg': fg, 'bg': b, 'set': ss, 'pair': (fg, bg, s)})
                        result['runs'].append(r)
                        what = f'beside {b} ({ss})' if b else 'alone'
                        extra = f', p99 {r["p99_us"]:.0f} us' if 'p99_us' in r else ''
                        bgs = (f'; bg {r["bg_passes"]} passes, last ended {r["bg_tail_s"]} s after'
                               f'{"" if r["bg_finished"] else " NOT FINISHED"}') if b else ''
                        self.log(f'  {fg} {what}: {r["throughput"]:.3f} {r["unit"]}{extra}{bgs}')
        result['loadavg_end'] = os.getloadavg()[0]
        result['summary'] = summarize(result['runs'])
        return result


def summarize(runs):
    """Per foreground, set and job beside it: the median over rounds of throughput / alone and
    p99 / alone, alone being the run paired with it."""
    out = []
    for fg in FOREGROUNDS:
        for s in ('cold', 'hot'):
            for bg in BACKGROUNDS:
                tr, pr, finished = [], [], True
                for rnd in sorted({r['round'] for r in runs}):
                    pair = [r for r in runs if r['round'] == rnd and r['pair'] == (fg, bg, s)]
                    alone = [r for r in pair if r['bg'] is None]
                    beside = [r for r in pair if r['bg'] is not None]
                    if not alone or not beside:
                        continue
                    tr.append(beside[0]['throughput'] / alone[0]['throughput'])
                    if 'p99_us' in beside[0]:
                        pr.append(beside[0]['p99_us'] / alone[0]['p99_us'])
                    finished &= beside[0]['bg_finished']
                if not tr:
                    continue
                row = {'fg': fg, 'set': s, 'bg': bg, 'throughput_ratio': round(statistics.median(tr), 3),
                       'p99_ratio': round(statistics.median(pr), 3) if pr else None, 'bg_finished': finished,
                       'n': len(tr)}
                if bg == 'background':
                    ok = row['throughput_ratio'] >= GOAL_THROUGHPUT and (row['p99_ratio'] is None or
                                                                          row['p99_ratio'] <= GOAL_P99)
                    row['verdict'] = 'PASS' if ok and finished else 'MISS'
                out.append(row)
    return out


def table(result):
    if 'skipped' in result:
        return f'background section skipped: {result["skipped"]}'
    lines = [f'Foreground beside a job over a large set ({result["sets"]}), {result["seconds"]} s per run, '
             f'{result["rounds"]} rounds alternating, {result["cpus"]} CPUs, load {result["loadavg_start"]:.2f} -> '
             f'{result["loadavg_end"]:.2f}',
             f'goal beside the background job: throughput >= {GOAL_THROUGHPUT}, p99 <= {GOAL_P99} x alone',
             f'{"foreground":<10} {"set":<5} {"beside":<12} {"throughput":>10} {"p99":>7}  finished  verdict']
    for r in result['summary']:
        p99 = f'{r["p99_ratio"]:.3f}' if r['p99_ratio'] is not None else '-'
        lines.append(f'{r["fg"]:<10} {r["set"]:<5} {r["bg"]:<12} {r["throughput_ratio"]:>10.3f} {p99:>7}  '
                     f'{"yes" if r["bg_finished"] else "NO":<8}  {r.get("verdict", "(reference)")}')
    lines.append(f'background job alone / the same at normal priority (goal >= {GOAL_ALONE}): ' + ', '.join(
        f'{s} {v["ratio"]:.3f} ({v["background_gbs"]:.2f} vs {v["normal_gbs"]:.2f} GB/s)'
        for s, v in result['alone'].items()))
    return '\n'.join(lines)


def misses(result):
    if 'skipped' in result:
        return []
    m = [r for r in result['summary'] if r.get('verdict') == 'MISS']
    m += [{'alone': s} for s, v in result['alone'].items() if v['ratio'] < GOAL_ALONE]
    return m
