# SPDX-License-Identifier: MIT
"""fhash's benchmark harness, run as bench/run (or `python3 -m bench` from the top of the tree).

Makes its own data under bench/data/ (reused when present), runs the in-process engine (bench-engine),
fhashctl through fhashd, and the peer tools in the same run, and prints one table with GB/s, files/s,
CPU s/GB and peak RSS, ratios to the best peer and to the ceiling, and PASS/MISS against the targets.
`--all --save` also regenerates bench/RESULTS.md and bench/charts/*.png; `--quick` is the check to run
before committing engine changes. See bench/README.md.

The modules, in the order a run uses them:
  cli        the command line
  harness    one run's state (rows, targets, errors) and the primitives that measure and add rows
  datasets   the data sets: making them, their files, warming and dropping them, page-cache residency
  proc       child processes: wall time, CPU and peak RSS of one command
  peers      the other tools: how each runs over a file or a set, and the check of their digests
  ceilings   openssl speed, bench-hash and fio: what bounds each number
  engine     bench-engine and `fhashctl --local` rows, the engine's variants, the sweep
  scenarios  the main scenarios (the big file, the sets, cold, several algorithms in one read)
  daemon     fhashctl through fhashd on a private dbus-daemon
  targets    the targets and the ratios behind them
  report     the text table, RESULTS.md and the charts (pure functions of a saved run's JSON)
  quick      the quick regression check against bench/baseline-quick.json
  machine    what RESULTS.md says about the machine
  packages   the peers' Debian packages (installed only with --install)

Standard library only, plus Debian's python3-matplotlib for the charts (skipped without it).
"""
