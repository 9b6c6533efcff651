#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The checksum tools' own test suites, as cases run against fhashctl's personalities.

The cases are ours: each one restates a check of an upstream test (coreutils' tests/cksum/,
BLAKE3's b3sum/tests/cli_tests.rs and b3sum/src/unit_tests.rs, xxHash's Makefile targets check and
test-xxhsum-c and its tests/cli-*.sh) and names it in `src`. Nothing of their code is here; the
expected outputs are the tools' behaviour as those tests state it.

Every claimed case runs in up to three modes:
  new   fhashctl as the tool (a link named after it), expected to behave as the newest release
        (coreutils 9.11, b3sum 1.8.6, xxhsum 0.8.3);
  d12   the same with FHASH_COMPAT=debian12, expected to behave as Debian 12's tool (coreutils 9.1,
        b3sum 1.2.0, xxhsum 0.8.1) where that differs (a case's d12 overrides), else as new;
  real  Debian 12's tool itself, held to the d12 expectation: this is what proves that expectation.
A case whose feature Debian 12's tool lacks is d12=NA and runs only as new. Unclaimed cases are
listed with why, never run.

Usage: harness.py [--suite NAME]... [--mode new,d12,real] [--case ID-SUBSTRING] [-v] [--unclaimed]
Environment: FHASHCTL (the binary; default: the build tree's). Exit 0 if every claimed case passed,
1 otherwise, 77 when fhashctl is missing.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

TOOLS = ["md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
         "b3sum", "xxhsum", "xxh32sum", "xxh64sum", "xxh128sum", "xxh3sum"]


class Matcher:
    def test(self, data):
        raise NotImplementedError


class _Any(Matcher):
    def test(self, data):
        return True

    def __repr__(self):
        return "ANY"


ANY = _Any()


def _b(s):
    return s.encode("utf-8", "surrogateescape") if isinstance(s, str) else s


class Has(Matcher):
    """Each of the strings occurs somewhere."""
    def __init__(self, *subs):
        self.subs = [_b(s) for s in subs]

    def test(self, data):
        return all(s in data for s in self.subs)

    def __repr__(self):
        return f"Has{tuple(self.subs)}"


class Lacks(Matcher):
    def __init__(self, *subs):
        self.subs = [_b(s) for s in subs]

    def test(self, data):
        return not any(s in data for s in self.subs)

    def __repr__(self):
        return f"Lacks{tuple(self.subs)}"


class Re(Matcher):
    def __init__(self, pattern, flags=0):
        self.re = re.compile(_b(pattern), flags)

    def test(self, data):
        return self.re.search(data) is not None

    def __repr__(self):
        return f"Re({self.re.pattern!r})"


class All(Matcher):
    def __init__(self, *ms):
        self.ms = ms

    def test(self, data):
        return all(match(m, data) for m in self.ms)

    def __repr__(self):
        return f"All{self.ms}"


class Fn(Matcher):
    """A predicate over the bytes, with a description."""
    def __init__(self, fn, what):
        self.fn, self.what = fn, what

    def test(self, data):
        return self.fn(data)

    def __repr__(self):
        return self.what


def match(expect, data):
    if isinstance(expect, Matcher):
        return expect.test(data)
    return _b(expect) == data


class _NonZero:
    def __repr__(self):
        return "non-zero"


NZ = _NonZero()
SAME = "same"
NA = "n/a"
DIR = object()  # a files entry that is a directory


class Case:
    def __init__(self, id, src, cmd, files=None, stdin=b"", out=ANY, err=b"", exit=0, d12=SAME, tools=None,
                 env=None, timeout=30, needs=()):
        self.id, self.src, self.cmd = id, src, cmd
        self.files = files or {}
        self.stdin = _b(stdin) if stdin is not None else None
        self.out, self.err, self.exit = out, err, exit
        self.d12 = d12
        self.env = env or {}
        self.timeout = timeout
        self.needs = needs  # other programs the case runs: without them it is skipped, and says so
        if tools is None:
            tools = [cmd[0]] if isinstance(cmd, list) else TOOLS
        self.tools = tools

    def expect(self, mode):
        e = {"out": self.out, "err": self.err, "exit": self.exit}
        if mode != "new" and isinstance(self.d12, dict):
            e.update(self.d12)
        return e


class Unclaimed:
    def __init__(self, id, src, why):
        self.id, self.src, self.why = id, src, why


def C(*a, **k):
    return Case(*a, **k)


def U(*a, **k):
    return Unclaimed(*a, **k)


def write_files(root, files):
    for name, content in files.items():
        path = os.path.join(root, os.fsdecode(_b(name)))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if content is DIR:
            os.makedirs(path, exist_ok=True)
        else:
            with open(path, "wb") as f:
                f.write(_b(content))


def make_bin(root, mode, fhashctl):
    """A directory of links named after the tools: to fhashctl, or (real) to Debian's own."""
    bindir = os.path.join(root, ".bin")
    os.mkdir(bindir)
    for t in TOOLS:
        if mode == "real":
            target = shutil.which(t, path="/usr/bin:/bin")
            if not target:
                continue
        else:
            target = fhashctl
        os.symlink(target, os.path.join(bindir, t))
    return bindir


def run_case(case, mode, fhashctl, verbose=False):
    """None if it passed, else a description of what differed."""
    tmp = tempfile.mkdtemp(prefix=f"upstream-{mode}-")
    try:
        work = os.path.join(tmp, "w")
        os.mkdir(work)
        bindir = make_bin(tmp, mode, fhashctl)
        write_files(work, case.files)
        env = {"PATH": f"{bindir}:/usr/bin:/bin", "LC_ALL": "C", "HOME": tmp, "TMPDIR": tmp}
        # A sanitizer build keeps its options (scripts/test sets them for the suite).
        env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
        if mode == "d12":
            env["FHASH_COMPAT"] = "debian12"
        env.update(case.env)
        if isinstance(case.cmd, list):
            # By name through PATH, as the upstream tests run them: coreutils names itself by argv[0].
            argv = [case.cmd[0]] + [os.fsdecode(_b(a)) for a in case.cmd[1:]]
        else:
            argv = ["/bin/sh", "-c", case.cmd]
        try:
            p = subprocess.run(argv, cwd=work, env=env, input=case.stdin,
                               stdin=None if case.stdin is not None else subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=case.timeout)
        except subprocess.TimeoutExpired:
            return f"timed out after {case.timeout} s"
        e = case.expect(mode)
        bad = []
        ok_exit = (e["exit"] is ANY or (e["exit"] is NZ and p.returncode != 0) or
                   (isinstance(e["exit"], int) and p.returncode == e["exit"]))
        if not ok_exit:
            bad.append(f"exit {p.returncode}, want {e['exit']}")
        if not match(e["out"], p.stdout):
            bad.append(f"stdout {p.stdout[:600]!r}, want {e['out'] if isinstance(e['out'], Matcher) else _b(e['out'])[:600]!r}")
        if not match(e["err"], p.stderr):
            bad.append(f"stderr {p.stderr[:600]!r}, want {e['err'] if isinstance(e['err'], Matcher) else _b(e['err'])[:600]!r}")
        if bad and verbose:
            bad.append(f"(stdout {p.stdout[:300]!r}, stderr {p.stderr[:300]!r})")
        return "; ".join(bad) if bad else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_suites():
    import cases_b3sum
    import cases_coreutils
    import cases_xxhsum
    return {"coreutils": cases_coreutils.CASES, "b3sum": cases_b3sum.CASES, "xxhsum": cases_xxhsum.CASES}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--suite", action="append")
    ap.add_argument("--mode", default="new,d12,real")
    ap.add_argument("--case")
    ap.add_argument("-v", action="store_true")
    ap.add_argument("--unclaimed", action="store_true", help="list the unclaimed cases and why")
    a = ap.parse_args()

    suites = load_suites()
    names = a.suite or list(suites)
    if a.unclaimed:
        for n in names:
            for c in suites[n]:
                if isinstance(c, Unclaimed):
                    print(f"{n}\t{c.id}\t{c.src}\t{c.why}")
        return 0

    fhashctl = os.environ.get("FHASHCTL") or os.path.join(os.environ.get("FHASH_BUILD_ROOT", "build"), "src",
                                                           "fhashctl")
    fhashctl = os.path.abspath(fhashctl)
    if not os.access(fhashctl, os.X_OK):
        print(f"SKIP: no fhashctl at {fhashctl}", file=sys.stderr)
        return 77
    modes = a.mode.split(",")
    failed = 0
    for n in names:
        counts = {m: [0, 0] for m in modes}  # passed, failed
        skipped_real = 0
        skipped = []
        unclaimed = []
        ids = set()
        for c in suites[n]:
            if c.id in ids:
                print(f"{n}: duplicate case id {c.id}")
                failed += 1
            ids.add(c.id)
            if isinstance(c, Unclaimed):
                unclaimed.append(c)
                continue
            if a.case and a.case not in c.id:
                continue
            missing = [p for p in c.needs if not shutil.which(p, path="/usr/bin:/bin:/usr/sbin:/sbin")]
            if missing:
                skipped.append(f"{c.id} (no {', '.join(missing)})")
                continue
            for m in modes:
                if m != "new" and c.d12 == NA:
                    continue
                if m == "real" and not all(shutil.which(t, path="/usr/bin:/bin") for t in c.tools):
                    skipped_real += 1
                    continue
                why = run_case(c, m, fhashctl, a.v)
                if why:
                    counts[m][1] += 1
                    failed += 1
                    print(f"not ok {n} {m} {c.id} [{c.src}]: {why}")
                else:
                    counts[m][0] += 1
                    if a.v:
                        print(f"ok {n} {m} {c.id}")
        claimed = sum(1 for c in suites[n] if isinstance(c, Case))
        summary = ", ".join(f"{m} {p}/{p + f}" for m, (p, f) in counts.items())
        print(f"# {n}: {claimed} claimed cases ({summary}; real-tool runs skipped: {skipped_real}), "
              f"{len(unclaimed)} unclaimed")
        for s in skipped:
            print(f"#   skipped {s}")
        for u in unclaimed:
            print(f"#   unclaimed {u.id} [{u.src}]: {u.why}")
    return 1 if failed else 0


if __name__ == "__main__":
    # Through the module's own name, so that the cases (which import harness) and this code share
    # one set of classes.
    import harness
    sys.exit(harness.main())
