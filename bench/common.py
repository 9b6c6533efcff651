# SPDX-License-Identifier: MIT
"""Units, paths, the algorithm table and small helpers every part of the harness uses."""

import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
TIMEOUT = 900  # seconds for any one command: a hung engine or daemon is an error, not a stuck run
GB = 1e9  # throughput is in 10^9 bytes/s, like `openssl speed` (which prints 1000s of bytes/s)

RESULTS_MD = os.path.join(HERE, 'RESULTS.md')
ANALYSIS_MD = os.path.join(HERE, 'ANALYSIS.md')
CHARTS_DIR = os.path.join(HERE, 'charts')
BASELINE_FULL = os.path.join(HERE, 'baseline-full.json')
BASELINE_QUICK = os.path.join(HERE, 'baseline-quick.json')

ALGOS = ['sha256', 'sha512', 'sha1', 'md5', 'sha3-256', 'blake2b', 'blake3', 'xxh3', 'xxh128', 'crc32c',
         'sha224', 'sha384', 'sha3-384', 'sha3-512', 'sm3', 'blake2s', 'xxh32', 'xxh64', 'fsverity']
DIGEST_HEX = {'sha256': 64, 'sha512': 128, 'sha1': 40, 'md5': 32, 'sha3-256': 64, 'blake2b': 128,
              'blake3': 64, 'xxh3': 16, 'xxh128': 32, 'crc32c': 8, 'sha224': 56, 'sha384': 96, 'sha3-384': 96,
              'sha3-512': 128, 'sm3': 64, 'blake2s': 64, 'xxh32': 8, 'xxh64': 16, 'fsverity': 64}
# Hashes whose one file can use several cores (BLAKE3's tree, fs-verity's): their ceiling on one file
# is all cores.
PARALLEL_ALGOS = {'blake3', 'fsverity'}
# `openssl speed -evp` names; the other algorithms' in-memory ceiling comes from bench-hash.
OPENSSL_SPEED_NAMES = {'sha256': 'sha256', 'sha512': 'sha512', 'sha1': 'sha1', 'md5': 'md5',
                       'sha3-256': 'sha3-256', 'blake2b': 'blake2b512'}


def human_size(n):
    for unit, div in (('GiB', GiB), ('MiB', MiB), ('KiB', KiB)):
        if n >= div and n % div == 0:
            return f'{n // div} {unit}'
    return f'{n} B'


def short_size(n):
    for unit, div in (('G', GiB), ('M', MiB), ('K', KiB)):
        if n >= div and n % div == 0:
            return f'{n // div}{unit}'
    return str(n)


def loadavg():
    return os.getloadavg()[0]


def cpu_busy_s():
    """Seconds of CPU time the whole machine has spent busy (all CPUs), from /proc/stat."""
    with open('/proc/stat') as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest time is already in user)
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf('SC_CLK_TCK')


def uptime():
    try:
        return subprocess.run(['uptime'], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return 'load average: %.2f, %.2f, %.2f' % os.getloadavg()


def command_output(argv, both=False):
    """First line of a command's output ('' when it is missing or fails): for version strings."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ''
    out = (p.stdout + (p.stderr if both else '')).strip()
    return out.splitlines()[0].strip() if out else ''


def write_json(path, data):
    with open(path + '.tmp', 'w') as f:
        json.dump(data, f, indent=1, sort_keys=False, default=str)
        f.write('\n')
    os.rename(path + '.tmp', path)


def git_describe():
    try:
        return subprocess.run(['git', '-C', ROOT, 'describe', '--always', '--dirty'], capture_output=True,
                              text=True, check=False).stdout.strip()
    except OSError:
        return '?'
