# SPDX-License-Identifier: MIT
"""`bench/run --client`: what the layers above the engine cost. `fhashctl hash --local` (the whole
program: start-up, libfhash's run, in-order delivery, the output) next to bench-engine (the engine's
job alone) on the same hot 20,000 x 4 KiB files, alternating, side by side; issue 25 holds the ratio
of their files/s to 0.9 or more (target E-small-hot-sha256 in the full run)."""

from . import engine
from .common import uptime

CLIENT_DATASET, CLIENT_ALGO = 'small', 'sha256'
CLIENT_ROUNDS = 3


def run_client(h):
    name, algo = CLIENT_DATASET, CLIENT_ALGO
    rounds = h.args.repeat or CLIENT_ROUNDS
    h.data.make([name])
    h.section(f'{h.data.title(name)}, hot: `fhashctl hash --local` next to bench-engine, {rounds} alternating rounds')
    h.data.warm(name)
    best_e = best_c = None
    for _ in range(rounds):
        # Best of 3 each per round: the engine's runs inside one process, fhashctl's as processes.
        e = h.guarded(f'engine {algo}', engine.engine_row, h, name, algo, 'hot', 3)
        c = h.guarded(f'fhashctl --local {algo}', engine.fhashctl_local_row, h, name, algo, 'hot', 3)
        for row in (e, c):
            if row:
                row['scenario'] = 'client'
        if e and (not best_e or e['files_per_s'] > best_e['files_per_s']):
            best_e = e
        if c and (not best_c or c['files_per_s'] > best_c['files_per_s']):
            best_c = c
    # The table keeps the best of each, which the target (E-small-hot-sha256) is computed from.
    h.rows = [r for r in h.rows if r.get('scenario') != 'client' or r is best_e or r is best_c]
    if not best_e or not best_c:
        return
    ratio = best_c['files_per_s'] / best_e['files_per_s']
    best_c['ratio'] = f'{ratio:.3f}x bench-engine'
    h.say(f'{"":<24}{"files/s":>12}{"CPU s/GB":>10}{"other":>7}')
    for label, r in (('bench-engine (the job)', best_e), ('fhashctl hash --local', best_c)):
        h.say(f'{label:<24}{r["files_per_s"]:>12,.0f}{r["cpu_per_gb"]:>10.3f}'
              f'{"" if r["other"] is None else format(r["other"], ".2f"):>7}')
    h.say(f'fhashctl ÷ bench-engine: {ratio:.3f} (best of {rounds} rounds each; target >= 0.9)   [{uptime()}]')
