#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""tests/tap.py PROGRAM [ARGS...]: runs a cmocka test for Meson's 'tap' protocol, so that a skip is
reported as a skip and never as a pass.

Every test case that cannot run here says so with cmocka's skip(), and Meson lists it as SKIP. Two
things stand in the way, and this wrapper takes them out:
- cmocka 1.1.5 (Debian 12) prints a skipped case as "not ok N # SKIP", which TAP reads as a failure:
  it becomes "ok N # SKIP".
- A case's own prints on stdout ("io mode: ...", "cancel took 4338 us") are not TAP, and Meson
  complains of each: they become TAP comments ("# io mode: ...").
- A program that cannot run at all exits 77 before its first case, having said why on stderr (the
  Meson convention); under the 'tap' protocol Meson would call that an error: it becomes "1..0 #
  SKIP <why>". A program that exits 77 after running cases is an error: its skips must be the cases'
  own.
"""
import os
import re
import subprocess
import sys

SKIPPED = re.compile(r'^not ok (\d+)( - | )?(.*?)\s*# SKIP\b(.*)$')
TAP_LINE = re.compile(r'^(ok|not ok|1\.\.|#|Bail out!|TAP version)')


def main():
    env = dict(os.environ, CMOCKA_MESSAGE_OUTPUT='TAP')
    p = subprocess.run(sys.argv[1:], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       errors='replace')
    sys.stderr.write(p.stderr)
    planned = False
    for line in p.stdout.splitlines():
        m = SKIPPED.match(line)
        if m:
            # cmocka puts the case's name after the directive: "not ok 7 # SKIP test_b3sum".
            name = m.group(3) or m.group(4).strip()
            line = f'ok {m.group(1)} - {name} # SKIP' if name else f'ok {m.group(1)} # SKIP'
        planned |= line.startswith('1..')
        print(line if TAP_LINE.match(line) or not line.strip() else '# ' + line)
    if p.returncode == 77:
        if planned:
            print(f'Bail out! {os.path.basename(sys.argv[1])} ran its cases, then exited 77: '
                  'a case that cannot run must skip() itself')
            return 1
        why = [x.strip() for x in (p.stderr + p.stdout).splitlines() if x.strip()]
        why = why[-1].removeprefix('SKIP:').strip() if why else 'the program says it cannot run here'
        print(f'1..0 # SKIP {why}')
        return 0
    return p.returncode


if __name__ == '__main__':
    sys.exit(main())
