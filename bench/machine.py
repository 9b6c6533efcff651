# SPDX-License-Identifier: MIT
"""The machine a run was made on, as RESULTS.md and the quick baseline record it."""

import json
import os
import resource
import shutil
import sys

from .common import command_output, git_describe


def machine_info(data_dir, build_dir):
    """What RESULTS.md says about the machine: CPU, memory, kernel, the disk and file system under the
    data, and the versions of every tool in the table."""
    m = {}
    cpu, flags = '?', []
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name') and cpu == '?':
                cpu = line.split(':', 1)[1].strip()
            elif line.startswith('flags') and not flags:
                have = set(line.split(':', 1)[1].split())
                flags = [x for x in ('sha_ni', 'avx2', 'avx512f', 'vaes', 'sse4_2') if x in have]
    m['cpu'] = cpu
    m['cpu_flags'] = ' '.join(flags)
    m['cpus'] = os.cpu_count()
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemTotal:'):
                m['ram'] = f'{int(line.split()[1]) / (1 << 20):.1f} GiB'
    m['kernel'] = os.uname().release
    vm = command_output(['systemd-detect-virt', '--vm']) or 'none'
    ct = command_output(['systemd-detect-virt', '--container']) or 'none'
    m['virt'] = f'VM {vm}, container {ct}'
    try:
        with open('/etc/os-release') as f:
            osr = dict(line.rstrip('\n').split('=', 1) for line in f if '=' in line)
        m['os'] = osr.get('PRETTY_NAME', '?').strip('"')
    except OSError:
        m['os'] = '?'
    src = fstype = opts = '?'
    fm = command_output(['findmnt', '-n', '-o', 'SOURCE,FSTYPE,OPTIONS', '-T', data_dir]).split()
    if len(fm) >= 3:
        src, fstype, opts = fm[0], fm[1], fm[2]
    m['filesystem'] = f'{fstype} ({opts})'
    disk = src
    dev = os.path.basename(src)
    parent = command_output(['lsblk', '-no', 'PKNAME', src]) or dev
    lb = command_output(['lsblk', '-dn', '-o', 'SIZE,MODEL', f'/dev/{parent}'])
    if lb:
        disk = f'{src} ({" ".join(lb.split())})'
    try:
        with open(f'/sys/block/{parent}/queue/scheduler') as f:
            disk += f'; scheduler {f.read().strip()}'
        with open(f'/sys/block/{parent}/queue/rotational') as f:
            disk += f'; queue/rotational={f.read().strip()}'
    except OSError:
        pass
    if os.path.exists(f'/sys/block/{parent}/device/driver'):
        disk += f'; driver {os.path.basename(os.path.realpath(f"/sys/block/{parent}/device/driver"))}'
    m['disk'] = disk
    m['memlock'] = resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]
    m['root'] = os.geteuid() == 0
    v = {}
    v['openssl'] = command_output(['openssl', 'version'])
    v['sha256sum'] = command_output(['sha256sum', '--version'])
    v['b3sum'] = command_output(['b3sum', '--version'])
    v['xxhsum'] = command_output(['xxhsum', '--version'], both=True)
    v['rhash'] = command_output(['rhash', '--version'])
    v['hashdeep'] = 'hashdeep ' + command_output(['hashdeep', '-V']) if shutil.which('hashdeep') else ''
    v['fio'] = command_output(['fio', '--version'])
    lu = command_output(['pkg-config', '--modversion', 'liburing'])
    if not lu:
        lu = command_output(['dpkg-query', '-W', '-f=${Version}', 'liburing-dev'])
    v['liburing'] = lu
    v['python'] = sys.version.split()[0]
    try:
        import matplotlib
        v['matplotlib'] = matplotlib.__version__
    except ImportError:
        v['matplotlib'] = ''
    try:
        with open(os.path.join(build_dir, 'meson-info', 'intro-buildoptions.json')) as f:
            bt = [o['value'] for o in json.load(f) if o['name'] in ('buildtype', 'b_sanitize')]
        m['build'] = f'{build_dir}: buildtype {bt[0]}'
        if len(bt) > 1 and bt[1] != 'none':
            m['build'] += f', sanitize {bt[1]}'
        with open(os.path.join(build_dir, 'meson-info', 'intro-compilers.json')) as f:
            cc = json.load(f).get('host', {}).get('c', {})
        v['cc'] = f'{cc.get("id", "?")} {cc.get("full_version", cc.get("version", ""))}'.strip()
    except (OSError, ValueError, KeyError, IndexError):
        m['build'] = build_dir
    m['versions'] = {k: x for k, x in v.items() if x}
    m['git'] = git_describe() or '?'
    return m


def machine_brief():
    cpu = '?'
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('model name'):
                cpu = line.split(':', 1)[1].strip()
                break
    return {'cpu': cpu, 'cpus': os.cpu_count(), 'kernel': os.uname().release, 'git': git_describe() or '?'}
