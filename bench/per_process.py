# SPDX-License-Identifier: MIT
"""bench/run --per-process: one small file per process, fhashctl as the tool against the tool.

What `find -exec sha256sum {} \\;`, make rules, package scripts and git hooks do: a whole process
for one 4 KiB file. Each of fhashctl's tool personalities (a link named after the tool) runs 1,000
times in turn with the tool it replaces (bench-spawn: A B A B ..., from C, stdin and stdout on
/dev/null), and the ratio of their wall times per process is the figure (issue 26: target <= 1.2).
fhashctl's own `hash --local` and `hash` (system bus: fhashd, else in-process after a note) are
timed the same way against sha256sum, for the record: they start the engine, the personalities do
not. Standard library only; bench/run calls run() and prints the table it returns.
"""

import os
import re
import shutil
import subprocess
import tempfile

TARGET = 1.2
ROUNDS = 1000
FILE_SIZE = 4096

# (label, what runs as fhashctl: a link name or fhashctl's own argv, the tool it is held against)
RUNS = [
    ("sha256sum", "sha256sum", "sha256sum"), ("sha1sum", "sha1sum", "sha1sum"), ("md5sum", "md5sum", "md5sum"),
    ("sha512sum", "sha512sum", "sha512sum"), ("b2sum", "b2sum", "b2sum"), ("cksum", "cksum", "cksum"),
    ("sum", "sum", "sum"), ("b3sum", "b3sum", "b3sum"), ("xxhsum", "xxhsum", "xxhsum"),
    ("xxh128sum", "xxh128sum", "xxh128sum"),
    ("fhashctl hash --local", ["--local", "hash"], "sha256sum"),
    ("fhashctl hash", ["hash"], "sha256sum"),
]


def parse(line):
    return {k: float(v) for k, v in re.findall(r"(\w+)=([0-9.]+)", line)}


def run(fhashctl, bench_spawn, rounds=ROUNDS, log=print):
    """Rows of {label, ours_us, tool_us, ratio, verdict}; a row whose tool is missing is skipped."""
    rows = []
    tmp = tempfile.mkdtemp(prefix="fhash-per-process-")
    try:
        path = os.path.join(tmp, "f")
        with open(path, "wb") as f:
            f.write(os.urandom(FILE_SIZE))
        bindir = os.path.join(tmp, "bin")
        os.mkdir(bindir)
        for label, ours, tool in RUNS:
            real = shutil.which(tool, path="/usr/bin:/bin")
            if not real:
                rows.append({"label": label, "skipped": f"{tool} is not installed"})
                continue
            if isinstance(ours, str):
                link = os.path.join(bindir, ours)
                if not os.path.lexists(link):
                    os.symlink(fhashctl, link)
                a = [link, path]
            else:
                a = [fhashctl] + ours + [path]
            # One process of each first, so that neither pays for a cold page cache of its binary.
            p = subprocess.run([bench_spawn, "1", "--"] + a + ["--", real, path], capture_output=True, text=True)
            if p.returncode == 0:
                p = subprocess.run([bench_spawn, str(rounds), "--"] + a + ["--", real, path], capture_output=True,
                                   text=True)
            if p.returncode != 0:
                rows.append({"label": label, "skipped": f"failed: {p.stderr.strip()}"})
                continue
            v = parse(p.stdout)
            ratio = v["pair_ratio_median"]
            row = {"label": label, "tool": tool, "ours_us": v["a_median_us"], "tool_us": v["b_median_us"],
                   "ratio": ratio, "total_ratio": v["total_ratio"], "rounds": rounds,
                   "target": TARGET if isinstance(ours, str) else None}
            if row["target"]:
                row["verdict"] = "PASS" if ratio <= TARGET else "MISS"
            rows.append(row)
            log(f"  {label}: {row['ours_us']:.0f} µs per process vs {tool} {row['tool_us']:.0f} µs: {ratio:.3f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def table(rows):
    out = [f"One {FILE_SIZE} B file per process, {ROUNDS} processes each, in turn with the tool "
           f"(median per process; ratio: median of the pairs' ratios; target <= {TARGET} for the tools)",
           f"{'as':<24} {'µs':>8} {'tool':<10} {'µs':>8} {'ratio':>7} {'total':>7}  verdict"]
    for r in rows:
        if "skipped" in r:
            out.append(f"{r['label']:<24} skipped: {r['skipped']}")
            continue
        out.append(f"{r['label']:<24} {r['ours_us']:>8.0f} {r['tool']:<10} {r['tool_us']:>8.0f} "
                   f"{r['ratio']:>7.3f} {r['total_ratio']:>7.3f}  {r.get('verdict', '(for the record)')}")
    return "\n".join(out)
