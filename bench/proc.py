# SPDX-License-Identifier: MIT
"""Child processes and what /proc says about them: wall time, CPU and peak RSS of one command."""

import os
import signal
import subprocess
import tempfile
import threading
import time

from .common import TIMEOUT


class ChildResult:
    """One finished command: wall time and its rusage from wait4(), i.e. of the child and every
    descendant it waited for (xargs and its sha256sums): CPU summed, ru_maxrss the largest (KiB)."""

    def __init__(self, wall, status, ru, out, err, timed_out):
        self.wall = wall
        self.rc = os.waitstatus_to_exitcode(status)
        self.user, self.sys = ru.ru_utime, ru.ru_stime
        self.maxrss_kib = ru.ru_maxrss
        self.ctxsw = ru.ru_nvcsw + ru.ru_nivcsw
        self.faults = ru.ru_minflt + ru.ru_majflt
        self.inblock = ru.ru_inblock
        self.out, self.err, self.timed_out = out, err, timed_out


# GNU time (Debian's "time") reports the peak RSS of the command alone. wait4() on a child of this
# Python process cannot: a forked child starts with the parent's memory map, and the kernel carries
# that map's high-water mark into the child's ru_maxrss across exec, so every command would show at
# least the harness's own peak (seen: 68 MiB for sha256sum). GNU time forks the command from a ~2 MiB
# process and prints the ru_maxrss of its own wait4() on it.
GNU_TIME = '/usr/bin/time'


def run_child(argv, cwd=None, stdin_data=None, capture=False, timeout=TIMEOUT):
    """Runs argv to its end and reaps it with os.wait4() for its own rusage (CPU of it and of every
    descendant it waited for); the peak RSS comes through GNU time when installed (see GNU_TIME), else
    from wait4() with the harness's own peak as a floor (rss_exact False). Output goes through
    temporary files, not pipes, so nothing has to be read while we block in wait4()."""
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout, tempfile.TemporaryFile() as ferr, \
            tempfile.NamedTemporaryFile(prefix='fhash-bench-rss-') as frss:
        if stdin_data is not None:
            fin.write(stdin_data)
            fin.seek(0)
        use_time = os.access(GNU_TIME, os.X_OK)
        if use_time:
            argv = [GNU_TIME, '-f', '%M', '-o', frss.name, '--', *argv]
        timed_out = []

        def kill(p):
            timed_out.append(True)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass

        t0 = time.monotonic()
        p = subprocess.Popen(argv, cwd=cwd, stdin=fin if stdin_data is not None else subprocess.DEVNULL,
                             stdout=fout if capture else subprocess.DEVNULL, stderr=ferr, start_new_session=True)
        timer = threading.Timer(timeout, kill, (p,))
        timer.start()
        try:
            _, status, ru = os.wait4(p.pid, 0)
        finally:
            timer.cancel()
        t1 = time.monotonic()
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
        fout.seek(0)
        ferr.seek(0)
        r = ChildResult(t1 - t0, status, ru, fout.read().decode(errors='replace') if capture else None,
                        ferr.read().decode(errors='replace'), bool(timed_out))
        r.rss_exact = False
        if use_time:
            # Its last line is the number ("Command exited with non-zero status N" may come first).
            lines = frss.read().decode(errors='replace').split()
            if lines and lines[-1].isdigit():
                r.maxrss_kib, r.rss_exact = int(lines[-1]), True
        return r


def proc_cpu(pid):
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    tick = os.sysconf('SC_CLK_TCK')
    return (int(fields[11]) + int(fields[12])) / tick   # utime, stime (fields 14 and 15)


def proc_hwm_kib(pid):
    """VmHWM of a running process (KiB): its peak RSS over its whole life, not one run's."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return None
