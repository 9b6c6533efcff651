# SPDX-License-Identifier: MIT
"""The daemon scenario: `fhashctl hash` through fhashd on a private dbus-daemon, next to
`fhashctl hash --local` and bench-engine on the same data, hot and cold."""

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from . import engine
from .proc import proc_cpu, proc_hwm_kib

# The daemon scenario: fhashctl through fhashd vs fhashctl --local (and bench-engine), per regime.
DAEMON_HOT = [(ds, a) for ds in ('big', 'mid', 'small', 'mixed') for a in ('sha256', 'blake3', 'xxh3')]
DAEMON_COLD = [(ds, 'sha256') for ds in ('big', 'mid', 'small', 'mixed')]

# The same for `fhashctl hash` through the daemon (options looked up in `fhashctl hash --help`).
FHASHCTL_VARIANTS = [
    {'label': 'no-cache', 'argv': ['--no-cache'], 'caches': ('cold',), 'datasets': ('big',), 'neutral': True},
]


def run_daemon(h):
    for exe in (h.args.fhashd, h.args.fhashctl):
        if not exe or not os.access(exe, os.X_OK):
            h.error(f'daemon mode: {exe} not built')
            return
    names = h.datasets()
    h.data.make(names)
    h.section('daemon path: fhashctl --address (via fhashd on a private dbus-daemon) vs --local')
    tmp = tempfile.mkdtemp(prefix='fhash-bench-')
    bus = daemon = None
    died = set()
    try:
        conf = os.path.join(tmp, 'bus.conf')
        sock = os.path.join(tmp, 'bus')
        with open(conf, 'w') as f:
            f.write(f'''<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={sock}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  <limit name="max_message_unix_fds">64</limit>
</busconfig>
''')
        buslog = open(os.path.join(tmp, 'dbus-daemon.log'), 'w')
        bus = subprocess.Popen(['dbus-daemon', f'--config-file={conf}', '--nofork', '--print-address=1'],
                               stdout=subprocess.PIPE, stderr=buslog, text=True)
        addr = bus.stdout.readline().strip()
        if not addr:
            raise RuntimeError('dbus-daemon printed no address')
        log = open(os.path.join(tmp, 'fhashd.log'), 'a')

        def start_daemon():
            # --idle-exit 0: the harness's own pauses (warm-ups, --local runs) must not end it.
            d = subprocess.Popen([h.args.fhashd, '--address', addr, '--idle-exit', '0'],
                                 stdout=log, stderr=log)
            wait_for_name(h, addr, d, os.path.join(tmp, 'fhashd.log'))
            h.say(f'# bus {addr}, fhashd pid {d.pid}')
            return d

        daemon = start_daemon()
        steps = [(name, 'hot', algo, None) for name, algo in DAEMON_HOT]
        steps += [(name, 'cold', algo, None) for name, algo in DAEMON_COLD]
        steps += [(name, 'cold', 'sha256', v) for v in FHASHCTL_VARIANTS
                  for name in ('big', 'mid', 'small', 'mixed') if 'cold' in v['caches'] and name in v['datasets']]
        steps = [x for x in steps if x[0] in names and x[2] in h.set_algos([x[2]])]
        warm = None
        for name, cache, algo, variant in steps:
            if cache == 'cold' and not h.data.can_drop_caches():
                h.skip_row(name, 'fhashctl hash', algo, cache, 'not root: cannot drop the page cache',
                           kind='fhash', scenario='daemon')
                continue
            if variant and not h.fhashctl_supports(variant['argv'][0]):
                h.skip_row(name, f'fhashctl hash --address {" ".join(variant["argv"])}', algo, cache,
                           f'fhashctl hash has no {variant["argv"][0]}', kind='fhash', scenario='daemon')
                continue
            if daemon.poll() is not None:
                daemon = start_daemon()
            if cache == 'hot' and warm != name:
                h.data.warm(name)
            warm = name if cache == 'hot' else None
            what = (f'daemon mode, {h.data.label(name)} {algo} {cache}' +
                    (f' {variant["label"]}' if variant else ''))
            pids = [daemon.pid, bus.pid]
            if cache == 'hot':
                ok = h.guarded(what, daemon_pair, h, name, addr, pids, algo)
            else:
                ok = h.guarded(what, daemon_cold, h, name, addr, pids, variant, algo)
            if not ok:
                # A failed run may be fhashd on its way out: give it a moment to finish dying.
                try:
                    daemon.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            if daemon.poll() is not None:
                died.add(daemon.pid)
                with open(os.path.join(tmp, 'fhashd.log')) as f:
                    logtail = ' | '.join(f.read().strip().splitlines()[-3:])
                with open(os.path.join(tmp, 'dbus-daemon.log')) as f:
                    buslog = [x for x in f.read().strip().splitlines() if 'fd limit' not in x]
                h.error(f'fhashd died (exit {daemon.returncode}) during {h.data.label(name)}: '
                        f'{logtail}' + (f'; dbus-daemon: {buslog[-1]}' if buslog else ''))
    except (RuntimeError, OSError) as e:
        h.error(f'daemon mode: {e}')
    finally:
        for p in (daemon, bus):
            if p and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if died or (daemon and daemon.returncode not in (0, None, -signal.SIGTERM)):
            if daemon and daemon.pid not in died and daemon.returncode not in (0, None, -signal.SIGTERM):
                h.error(f'fhashd exited {daemon.returncode} on SIGTERM')
            h.say(f'# logs kept in {tmp}')
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def wait_for_name(h, addr, daemon, logpath):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if daemon.poll() is not None:
            with open(logpath) as f:
                raise RuntimeError(f'fhashd exited {daemon.returncode}: {f.read().strip()[-300:]}')
        p = subprocess.run(['busctl', f'--address={addr}', 'call', 'org.freedesktop.DBus',
                            '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner', 's',
                            'org.fhash.Hasher1'], capture_output=True, text=True, check=False)
        if p.stdout.strip() == 'b true':
            return
        time.sleep(0.05)
    raise RuntimeError('fhashd did not take org.fhash.Hasher1 within 10 s')


def fhashctl_run(h, name, opt, algo, daemon_pids, cache='hot', repeat=None):
    """Best of `repeat` runs of fhashctl hash on a data set; CPU includes fhashd's and dbus-daemon's
    (they are not our children: read from /proc) when daemon_pids is given."""
    cwd, _ = h.data.files(name)
    args, _ = engine.fhashctl_args(h, name)
    best, outs = None, None
    for _ in range(repeat or h.repeat):
        if cache == 'cold':
            h.data.drop(name)
        d0 = sum(proc_cpu(pid) for pid in daemon_pids)
        r = h.measure([h.args.fhashctl, 'hash', *opt, '-a', algo, *args], cwd=cwd, capture=True)
        d1 = sum(proc_cpu(pid) for pid in daemon_pids)
        if best is None or r.wall < best[0].wall:
            # fhashd and dbus-daemon are not reaped children: their CPU is "other" to measure(),
            # but it is this row's.
            other = None if h.last_other is None else max(0.0, h.last_other - (d1 - d0) / r.wall)
            cached = h.data.residency(name) if cache == 'cold' else None
            best = (r, r.user + r.sys + (d1 - d0), other, d1 - d0, cached)
        outs = r.out
    return best, outs


def daemon_pair(h, name, addr, daemon_pids, algo='sha256'):
    nbytes, nfiles = h.data.nbytes(name), len(h.data.files(name)[1])
    results, outputs = {}, {}
    erow = None
    if h.args.bench_engine:
        erow = h.guarded(f'engine {algo}', engine.engine_row, h, name, algo, 'hot', h.repeat)
        if erow:
            erow['scenario'] = 'daemon'
    # --daemon: without it fhashctl falls back to in-process hashing when fhashd is gone, and the
    # "daemon" row would silently measure --local.
    ways = [('--local', ['--local']), ('--address', ['--daemon', '--address', addr])]
    # fhashctl passes fds on a direct connection to fhashd when it can; the same run through
    # dbus-daemon shows what that saves (SHA-256 only: the fd passing does not depend on the hash).
    if algo == 'sha256' and re.search(r'--no-direct\b', h.help_text([h.args.fhashctl, '--help'])):
        ways.append(('--address --no-direct', ['--daemon', '--no-direct', '--address', addr]))
    for how, opt in ways:
        best, outputs[how] = fhashctl_run(h, name, opt, algo, daemon_pids if how != '--local' else [])
        r, cpu, other, dcpu, _ = best
        h.last_other = other
        note, extra = '', {}
        if how.startswith('--address'):
            hwm = proc_hwm_kib(daemon_pids[0])
            note = 'CPU = fhashctl + fhashd + dbus-daemon'
            if hwm:
                note += f'; fhashd VmHWM {hwm / 1024:.1f} MiB (its lifetime peak)'
            extra = {'daemon_cpu': dcpu, 'fhashd_hwm_kib': hwm}
        results[how] = h.add_row(name, f'fhashctl hash {how}{engine.fhashctl_args(h, name)[1]}', algo, 'hot',
                                 nbytes, nfiles, r.wall, cpu,
                                 note=note, n=h.repeat, kind='fhash', rss_kib=r.maxrss_kib,
                                 rss_exact=r.rss_exact,
                                 scenario='daemon', user=r.user, sys=r.sys, **extra)
    for how in results:
        if outputs[how] != outputs['--local']:
            h.error(f'{name}: fhashctl {how} output differs from --local')
    loc, bus = results['--local'], results['--address']
    if '--address --no-direct' in results:
        nd = results['--address --no-direct']
        nd['ratio'] = f'{nd["gbps"] / loc["gbps"]:.3f}x --local'
        nd['vs_local'] = nd['gbps'] / loc['gbps']
    bus['ratio'] = f'{bus["gbps"] / loc["gbps"]:.3f}x --local'
    bus['vs_local'] = bus['gbps'] / loc['gbps']
    if erow:
        erow['ratio'] = f'(daemon: {bus["gbps"] / erow["gbps"]:.3f}x this)'
        loc['ratio'] = f'{loc["gbps"] / erow["gbps"]:.3f}x bench-engine'
        bus['vs_engine'] = bus['gbps'] / erow['gbps']
        loc['vs_engine'] = loc['gbps'] / erow['gbps']
    return True


def daemon_cold(h, name, addr, daemon_pids, variant, algo='sha256'):
    """fhashctl through fhashd on cold data next to `fhashctl --local` (best of `repeat` each, after a
    drop each), or with a FHASHCTL_VARIANTS option once; for one file also how much of it the page
    cache holds afterwards."""
    suffix = engine.fhashctl_args(h, name)[1]
    ways = [('--local', ['--local'], []), ('--address', ['--daemon', '--address', addr], daemon_pids)]
    if variant:
        ways = [(f'--address {" ".join(variant["argv"])}', ['--daemon', '--address', addr] + variant['argv'],
                 daemon_pids)]
    results, outputs = {}, {}
    for how, opt, pids in ways:
        best, outputs[how] = fhashctl_run(h, name, opt, algo, pids, cache='cold',
                                          repeat=1 if variant else h.repeat)
        r, cpu, other, dcpu, cached = best
        h.last_other = other
        extra = {'daemon_cpu': dcpu} if pids else {}
        results[how] = h.add_row(name, f'fhashctl hash {how}{suffix}', algo, 'cold', h.data.nbytes(name),
                                 len(h.data.files(name)[1]), r.wall, cpu,
                                 note='CPU = fhashctl + fhashd + dbus-daemon' if pids else '', kind='fhash',
                                 rss_kib=r.maxrss_kib, rss_exact=r.rss_exact, n=1 if variant else h.repeat,
                                 scenario='daemon', user=r.user, sys=r.sys, cached_after=cached,
                                 neutral=bool(variant and variant.get('neutral')), **extra)
    if '--local' in results:
        loc, bus = results['--local'], results['--address']
        if outputs['--address'] != outputs['--local']:
            h.error(f'{name}: fhashctl --address output differs from --local (cold)')
        bus['vs_local'] = bus['gbps'] / loc['gbps']
        bus['ratio'] = f'{bus["vs_local"]:.3f}x --local'
    return True
