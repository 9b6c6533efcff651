# SPDX-License-Identifier: MIT
"""The Debian packages of the peers (scripts/deps.sh: fhash_bench_packages): which are missing, and
installing them when asked to (--install). A benchmark never installs anything on its own: it says
what is missing, and those rows say "skipped"."""

import os
import shutil
import subprocess
import sys

from .common import ROOT

DEPS_SH = os.path.join(ROOT, 'scripts', 'deps.sh')


def bench_packages():
    p = subprocess.run(['bash', '-c', '. "$1" && echo "${fhash_bench_packages[@]}"', 'bash', DEPS_SH],
                       capture_output=True, text=True, check=False)
    return p.stdout.split()


def missing_packages():
    """The packages of fhash_bench_packages that dpkg does not have installed ([] where there is no dpkg)."""
    if not shutil.which('dpkg-query') or not os.path.exists(DEPS_SH):
        return []
    missing = []
    for p in bench_packages():
        q = subprocess.run(['dpkg-query', '-W', '-f=${Status}', p], capture_output=True, text=True, check=False)
        if q.stdout.strip() != 'install ok installed':
            missing.append(p)
    return missing


def ensure_bench_packages(install):
    """With install (--install): installs the missing packages through scripts/deps.sh's
    fhash_install_deps (root, or sudo without a password). Without it, or when that cannot be done,
    says exactly what to install; the run goes on either way, with "skipped" rows."""
    missing = missing_packages()
    if not missing:
        return
    cmd = f'sudo apt-get install --no-install-recommends {" ".join(missing)}'
    can = os.geteuid() == 0
    if install and not can and shutil.which('sudo'):
        # sudo -n: a password prompt in the middle of a benchmark run is worse than a "skipped" row.
        can = subprocess.run(['sudo', '-n', 'true'], capture_output=True, check=False).returncode == 0
    if not install or not can:
        print(f'bench/run: missing benchmark packages: {" ".join(missing)}; their rows will say "skipped". '
              f'Install them with:\n    {cmd}\n(or: bench/run --install, or: . scripts/deps.sh && fhash_install_deps '
              '"${fhash_bench_packages[@]}")', file=sys.stderr)
        return
    print(f'bench/run: installing {" ".join(missing)} (scripts/deps.sh: fhash_bench_packages)', file=sys.stderr)
    p = subprocess.run(['bash', '-c', '. "$1" && fhash_install_deps "${fhash_bench_packages[@]}"', 'bash', DEPS_SH],
                       check=False)
    if p.returncode != 0:
        print(f'bench/run: installing failed; install by hand:\n    {cmd}', file=sys.stderr)
