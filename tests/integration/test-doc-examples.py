#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# test-doc-examples.py: every example in README.md and the man pages (fhashctl(1), fhashd(8),
# libfhash(3)), taken from the documents as they are and run (issue 26, item 7). Each fenced block
# is matched to a way of running it below; a block no entry matches fails the test, so a new example
# comes with its run. Transcripts ("$ command" then its output) are run line by line in a tree made
# for them and their output compared; command lists are run and must succeed; the C and Python
# snippets are compiled or run against this build's library; the configuration examples are given
# to this build's fhashd; "the system bus" is a private dbus-daemon with this build's fhashd on it
# (DBUS_SYSTEM_BUS_ADDRESS). What cannot run inside a test (systemctl without systemd as PID 1, the
# suite and the benchmarks themselves, installing packages) is named, and what checks it instead.
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fhashtest as ft  # noqa: E402

SRC = os.environ.get("FHASH_SOURCE_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("FHASH_BUILD_ROOT", os.path.join(SRC, "build"))
LIB = os.path.join(BUILD, "src", "libfhash.so")
DOCS = ["README.md", "systemd/fhashctl.1.scd", "systemd/fhashd.8.scd", "systemd/libfhash.3.scd"]
NOT_RUN = []  # (example, why, what checks it instead), said at the end


def blocks(doc):
    """The fenced blocks of doc: (line number, language, text); scdoc's escaped backslashes undone."""
    s = open(os.path.join(SRC, doc), encoding="utf-8").read()
    for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", s, re.S | re.M):
        text = m.group(2)
        if doc.endswith(".scd"):
            text = text.replace("\\\\", "\\")
        yield s[:m.start()].count("\n") + 1, m.group(1).strip(), text


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def lib_env(env):
    """A sanitizer build's library needs its runtime loaded first in programs not built with it."""
    return dict(env, **ft.sanitizer_env(LIB))


class Ctx:
    def __init__(self, tmp, bus):
        self.tmp = tmp
        self.bus = bus
        # fhashctl and fhashd as the documents name them: this build's, first on PATH, then the
        # system's tools (/usr/bin first: its python3 has GLib).
        self.bin = os.path.join(tmp, "bin")
        os.makedirs(self.bin)
        os.symlink(ft.fhashctl_path(), os.path.join(self.bin, "fhashctl"))
        os.symlink(ft.fhashd_path(), os.path.join(self.bin, "fhashd"))
        self.path = f"{self.bin}:/usr/bin:/bin:/usr/sbin:/sbin"
        self.nobus = f"unix:path={tmp}/no-system-bus"

    def env(self, daemon):
        """The system bus: the private one with fhashd (daemon), or none."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DBUS_")}
        env.update(PATH=self.path, LC_ALL="C.UTF-8", DBUS_SYSTEM_BUS_ADDRESS=self.bus.address if daemon else self.nobus,
                   ADDR=self.bus.address)
        return env

    def sh(self, line, cwd, daemon, check=True):
        r = subprocess.run(["bash", "-c", line], cwd=cwd, env=self.env(daemon), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
        out = r.stdout.decode("utf-8", "surrogateescape")
        if check and r.returncode != 0:
            ft.fail(f"`{line}` in {cwd}: exit {r.returncode}:\n{out}")
        return r.returncode, out

    def fixture(self, name):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        return d


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def transcript(text):
    """[(command, expected output)] of a block of "$ command" lines, each followed by its output."""
    steps = []
    for line in text.rstrip("\n").split("\n"):
        if line.startswith("$ "):
            steps.append([line[2:], []])
        elif steps:
            steps[-1][1].append(line)
        else:
            ft.fail(f"a transcript that does not start with a command: {line!r}")
    return [(cmd, "\n".join(out) + ("\n" if out else "")) for cmd, out in steps]


# ---- the examples ----------------------------------------------------------------------------------

def readme_using(ctx, text):
    """README's session: hash -r with no daemon (the fallback note), sha256sum -c of its output,
    check after a change, --tag, --json, then status through fhashd: output as printed."""
    d = ctx.fixture("using")
    write(os.path.join(d, "data/hello.txt"), b"hello\n")
    write(os.path.join(d, "data/sub/y"), b"y")
    write(os.path.join(d, "data/with space"), b"x")
    for cmd, want in transcript(text):
        _, got = ctx.sh(cmd, d, daemon=False, check=False)
        got = got.replace(ctx.nobus, "unix:path=/run/dbus/system_bus_socket")
        ft.check(got == want, f"README: `{cmd}` printed\n{got}\ninstead of\n{want}")


def fhashctl_examples(ctx, text):
    """fhashctl(1)'s EXAMPLES, each in a tree with what it names, through fhashd on "the system bus"."""
    d = ctx.fixture("fhashctl-examples")
    shutil.copy(os.path.join(SRC, "README.md"), d)
    write(os.path.join(d, "src/main.c"), b"int main(void) { return 0; }\n")
    write(os.path.join(d, "src/main.o"), b"\x7fELF")
    write(os.path.join(d, "one.iso"), os.urandom(1 << 20))
    write(os.path.join(d, "two.iso"), os.urandom(1 << 20))
    write(os.path.join(d, "data/a"), b"a")
    write(os.path.join(d, "data/sub/b"), b"b")
    write(os.path.join(d, "big.img"), os.urandom(3 << 20))
    for cmd, want in transcript(text):
        ft.check(want == "", f"fhashctl(1): an example with output: {cmd}")
        _, out = ctx.sh(cmd, d, daemon=True)
        if "jq" in cmd:
            # Only the names of files that failed: none here (it printed every name with != "").
            ft.check(out == "", f"fhashctl(1): `{cmd}` printed {out!r}")
        elif "> SUMS.b3" in cmd:
            sums = open(os.path.join(d, "SUMS.b3")).read()
            ft.check(sums.endswith("  src/main.c\n") and sums.count("\n") == 1, f"SUMS.b3: {sums!r}")
        elif cmd.startswith("fhashctl status"):
            ft.check("Workers: 2" in out, f"status: {out!r}")
        elif cmd.startswith("fhashctl jobs"):
            ft.check(out.startswith("JOB  STATE"), f"jobs: {out!r}")
        elif "audit" in cmd:
            ft.check(out.count(": ok\n") == 2, f"audit: {out!r}")
        elif cmd.startswith("fhashctl hash README.md"):
            ft.check(out == f"{sha256(open(os.path.join(d, 'README.md'), 'rb').read())}  README.md\n", out)


def fhashd_config_error(ctx, text):
    """fhashd(8): the message of a bad configuration file, from fhashd itself."""
    d = ctx.fixture("config-error")
    conf = os.path.join(d, "fhashd.conf")
    write(conf, b"# line 1\n[Daemon]\n\n\n\n\nBufferSize=12Q\n")
    r = subprocess.run([ft.fhashd_path(), "--address", ctx.nobus, "--config", conf], capture_output=True, text=True,
                       timeout=30)
    want = text.strip().replace("@sysconfdir@/fhash/fhashd.conf", conf)
    ft.check(r.returncode == 2 and want in r.stderr, f"fhashd(8)'s error: exit {r.returncode}, {r.stderr!r}, not {want!r}")


def config_dropin(ctx, conf_text, workers):
    """A drop-in as the documents write it, given to this build's fhashd: it takes its values."""
    d = ctx.fixture(f"dropin-{len(NOT_RUN)}-{workers}")
    conf = os.path.join(d, "50-local.conf")
    write(conf, conf_text.encode())
    with ft.Bus() as bus:
        with ft.Daemon(bus, "--config", conf):
            r = subprocess.run([ft.fhashctl_path(), "--address", bus.address, "status"], capture_output=True, text=True,
                               timeout=30)
            ft.check(f"Workers: {workers}\n" in r.stdout, f"the drop-in's Workers={workers}: {r.stdout!r} {r.stderr!r}")


def readme_dropin(ctx, text):
    config_dropin(ctx, text, 4)


def fhashd_dropin(ctx, text):
    """fhashd(8): mkdir and cat > the drop-in under a sysconfdir of our own, then fhashd reads it.
    systemctl restart needs systemd as PID 1."""
    d = ctx.fixture("sysconf")
    lines = [ln for ln in text.replace("@sysconfdir@", d).split("\n") if not ln.startswith("systemctl ")]
    ctx.sh("\n".join(lines), d, daemon=False)
    config_dropin(ctx, open(os.path.join(d, "fhash/fhashd.conf.d/50-local.conf")).read(), 4)
    NOT_RUN.append(("fhashd(8): systemctl restart fhashd.service", "no systemd as PID 1 here",
                    "test-install verifies the unit (systemd-analyze verify)"))


def fhashd_status(ctx, text):
    for line in text.strip().split("\n"):
        if line.startswith("systemctl "):
            NOT_RUN.append((f"fhashd(8): {line}", "no systemd as PID 1 here", "test-notify checks its STATUS= line"))
            continue
        _, out = ctx.sh(line, ctx.tmp, daemon=True)
        ft.check("Version: " in out and "Workers: 2" in out, f"fhashd(8): `{line}`: {out!r}")


def fhashd_python(ctx, text):
    """fhashd(8): HashFds from Python and GLib with an fd in an ah: the digest sha256sum gives."""
    _, out = ctx.sh(text, ctx.tmp, daemon=True)
    want = f"{sha256(open('/etc/os-release', 'rb').read())} /etc/os-release\n"
    ft.check(out == want, f"fhashd(8)'s Python example printed {out!r}, not {want!r}")


def fhashd_busctl(ctx, text):
    if not shutil.which("busctl"):
        NOT_RUN.append(("fhashd(8): busctl ListJobs", "busctl is not installed", "nothing"))
        return
    _, out = ctx.sh(text.strip(), ctx.tmp, daemon=True)
    ft.check(out.startswith("ao "), f"fhashd(8)'s busctl example: {out!r}")


def c_snippet(ctx, text, doc):
    """A snippet of C: its functions, then its statements in a main() whose arguments are the paths;
    built against this build's library and run through fhashd: sha256sum's lines."""
    split = text.index("\n}\n") + 3
    src = ("#include <fhash/fhash.h>\n#include <stdio.h>\n" + text[:split] +
           "int main(int argc, char *argv[])\n{\n        const char *const *paths = (const char *const *)argv + 1;\n"
           "        size_t n = (size_t)argc - 1;\n" + text[split:] + "        return 0;\n}\n")
    d = ctx.fixture(f"c-{os.path.basename(doc)}")
    write(os.path.join(d, "example.c"), src.encode())
    r = subprocess.run(["cc", "-Wall", "-Werror", "-Wno-unused-parameter", "example.c", "-o", "example",
                        "-I", os.path.join(SRC, "include"), "-I", os.path.join(BUILD, "include"),
                        "-L", os.path.dirname(LIB), "-lfhash", f"-Wl,-rpath,{os.path.dirname(LIB)}"],
                       cwd=d, capture_output=True, text=True)
    ft.check(r.returncode == 0, f"{doc}'s C example does not build:\n{src}\n{r.stderr}")
    write(os.path.join(d, "f1"), b"one\n")
    write(os.path.join(d, "f 2"), b"two\n")
    r = subprocess.run(["./example", "f1", "f 2"], cwd=d, env=lib_env(ctx.env(daemon=True)), capture_output=True,
                       text=True, timeout=60)
    want = subprocess.run(["sha256sum", "f1", "f 2"], cwd=d, capture_output=True, text=True).stdout
    ft.check(r.returncode == 0 and r.stdout == want and r.stderr == "", f"{doc}'s C example: {r.stdout!r} {r.stderr!r}")


def python_snippet(ctx, text):
    """README's Python: paths from the command line, through fhashd, sha256 and blake3 at once."""
    d = ctx.fixture("python")
    write(os.path.join(d, "f1"), b"one\n")
    write(os.path.join(d, "example.py"), ("import sys\npaths = sys.argv[1:]\n" + text).encode())
    env = lib_env(dict(ctx.env(daemon=True), PYTHONPATH=os.path.join(SRC, "python"), FHASH_LIBRARY=LIB))
    r = subprocess.run(["/usr/bin/python3", "example.py", "f1"], cwd=d, env=env, capture_output=True, text=True,
                       timeout=60)
    b3 = subprocess.run(["b3sum", "--no-names", "f1"], cwd=d, capture_output=True, text=True).stdout.strip()
    want = f"{sha256(b'one' + bytes([10]))},{b3} f1\n"
    ft.check(r.returncode == 0 and r.stdout == want, f"README's Python example: {r.stdout!r} {r.stderr!r}, not {want!r}")


def build_by_hand(ctx, text):
    """README: this build is the `meson setup build && ninja -C build` (the suite runs in it, which
    is `meson test`); its fhashctl line is run as written, with this build's directory."""
    for line in text.strip().split("\n"):
        cmd = line.split("#")[0].strip()
        if cmd.startswith("build/src/fhashctl"):
            d = ctx.fixture("by-hand")
            write(os.path.join(d, "one"), b"file\n")
            write(os.path.join(d, "two"), b"other\n")
            # FILE... is the placeholder for files: two here.
            _, out = ctx.sh(cmd.replace("build/src/fhashctl", os.path.join(BUILD, "src", "fhashctl"))
                            .replace("FILE...", "one two"), d, daemon=False)
            b3 = subprocess.run(["b3sum", "one", "two"], cwd=d, capture_output=True, text=True).stdout
            ft.check(out == b3, f"README: `{cmd}`: {out!r}, b3sum {b3!r}")
        else:
            ft.check(os.path.exists(os.path.join(BUILD, "build.ninja")), f"no build at {BUILD}")
            NOT_RUN.append((f"README: {cmd}", "it is how this build and this suite were made",
                            "this test runs in that build"))


def covered(what, test, files):
    """An example that a test of its own runs (or that cannot run inside a test at all)."""
    def check(ctx, text):
        for f in files:
            ft.check(os.path.exists(os.path.join(SRC, f)), f"{what}: {f} is gone")
        if test:
            tests = open(os.path.join(SRC, "tests", "meson.build")).read()
            ft.check(re.search(rf"['\"]{re.escape(test)}['\"]", tests), f"{what}: the test {test} is gone")
        NOT_RUN.append((what, "not here", f"the test '{test}'" if test else "see the reason"))
    return check


def bench_commands(ctx, text):
    """README: the benchmark commands take a quarter of an hour and the peers; their options exist."""
    r = subprocess.run([os.path.join(SRC, "bench", "run"), "--help"], capture_output=True, text=True, timeout=60)
    for opt in re.findall(r"(--[a-z-]+)", text):
        ft.check(opt in r.stdout, f"README's bench example: bench/run has no {opt}")
    NOT_RUN.append(("README: bench/run --all/--quick/--update-baseline", "speed is measured by bench/, not in the suite",
                    "bench/run --help lists every option they use"))


def libfhash_synopsis(ctx, text):
    """libfhash(3): every declaration of its SYNOPSIS is the header's."""
    header = re.sub(r"\s+", " ", open(os.path.join(SRC, "include", "fhash", "fhash.h")).read())
    for decl in re.split(r";\s*\n", text):
        decl = re.sub(r"\s+", " ", decl).strip()
        if not decl or decl.startswith("#include"):
            continue
        ft.check(decl + ";" in header, f"libfhash(3)'s SYNOPSIS: not in fhash.h: {decl}")


TOOLS = ["md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "sum",
         "b3sum", "xxhsum", "xxh32sum", "xxh64sum", "xxh128sum", "xxh3sum"]


def readme_tools(ctx, text):
    """README's fhashctl-as-the-tools session: /usr/lib/fhash/bin is a directory of this build's
    links (as the package installs them), put first on PATH by the session's `export`; output as
    printed."""
    d = ctx.fixture("tools")
    write(os.path.join(d, "data/sub/y"), b"y")
    tools = os.path.join(ctx.tmp, "toolsdir")
    os.makedirs(tools)
    for t in TOOLS:
        os.symlink(ft.fhashctl_path(), os.path.join(tools, t))
    prefix = ""
    for cmd, want in transcript(text):
        if cmd.startswith("export PATH=/usr/lib/fhash/bin:"):
            ft.check(want == "", f"README: `{cmd}` shows output")
            prefix = f"export PATH={tools}:$PATH; "
            continue
        _, got = ctx.sh(prefix + cmd, d, daemon=False, check=False)
        ft.check(got == want, f"README: `{cmd}` printed\n{got}\ninstead of\n{want}")
    ft.check(prefix != "", "README: the tools' session no longer puts /usr/lib/fhash/bin on PATH")


def diagram(ctx, text):
    """A drawing, not a command."""


EXAMPLES = [
    ("README.md", "scripts/quickstart", covered("README: scripts/quickstart, scripts/test", "quickstart",
                                                ["scripts/quickstart", "scripts/test"])),
    ("README.md", "meson setup build", build_by_hand),
    ("README.md", " callers (D-Bus", diagram),
    ("README.md", "$ fhashctl hash -r data > SUMS", readme_using),
    ("README.md", "$ export PATH=/usr/lib/fhash/bin:$PATH", readme_tools),
    ("README.md", "static void print_result", lambda ctx, t: c_snippet(ctx, t, "README.md")),
    ("README.md", "import fhash", python_snippet),
    ("README.md", "sudo apt-get install debhelper", covered("README: dpkg-buildpackage and apt-get install", "debian",
                                                            ["debian/control"])),
    ("README.md", "# /etc/fhash/fhashd.conf.d/50-local.conf", readme_dropin),
    ("README.md", "sudo bench/run --all", bench_commands),
    ("README.md", "basic → hash", diagram),
    ("systemd/fhashctl.1.scd", "$ fhashctl hash README.md", fhashctl_examples),
    ("systemd/fhashd.8.scd", "@sysconfdir@/fhash/fhashd.conf:7", fhashd_config_error),
    ("systemd/fhashd.8.scd", "systemctl status fhashd.service", fhashd_status),
    ("systemd/fhashd.8.scd", "mkdir -p @sysconfdir@", fhashd_dropin),
    ("systemd/fhashd.8.scd", "python3 - /etc/os-release", fhashd_python),
    ("systemd/fhashd.8.scd", "busctl call", fhashd_busctl),
    ("systemd/libfhash.3.scd", "#include <fhash/fhash.h>", libfhash_synopsis),
    ("systemd/libfhash.3.scd", "static void print_result", lambda ctx, t: c_snippet(ctx, t, "libfhash.3")),
]


def main():
    ft.require(("jq", "b3sum", "cc", "sha256sum"))
    try:
        from gi.repository import Gio  # noqa: F401
    except ImportError as e:
        ft.skip(f"/usr/bin/python3 lacks python3-gi (fhashd(8)'s example): {e}")
    tmp = tempfile.mkdtemp(prefix="fhash-docs-", dir="/var/tmp")
    ran = 0
    try:
        busdir = os.path.join(tmp, "bus")
        os.makedirs(busdir)
        with ft.Bus(tmpdir=busdir) as bus:
            with ft.Daemon(bus, "--workers", "2"):
                ctx = Ctx(tmp, bus)
                for doc in DOCS:
                    for line, lang, text in blocks(doc):
                        first = next((ln for ln in text.split("\n") if ln.strip()), "")
                        how = [h for d, start, h in EXAMPLES if d == doc and first.startswith(start)]
                        ft.check(len(how) == 1, f"{doc}:{line}: an example this test does not know how to run "
                                                f"({first!r}): add it to EXAMPLES")
                        how[0](ctx, text)
                        ran += 1
        ft.check(ran == len(EXAMPLES), f"{ran} examples found, {len(EXAMPLES)} expected: one is gone")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ft.log(f"{ran} examples of {len(DOCS)} documents")
    for what, why, instead in NOT_RUN:
        ft.log(f"not run here: {what} ({why}; checked by {instead})")


if __name__ == "__main__":
    main()
