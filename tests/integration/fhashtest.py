# SPDX-License-Identifier: MIT
"""fhashtest: fixtures for integration tests of fhashd on a private dbus-daemon.

Reusable by any integration test (import it with tests/integration on sys.path):

    import fhashtest as ft
    ft.require()                       # exit 77 unless python3-dbus, GLib, dbus-daemon, $FHASHD
    with ft.Bus(anyone=True) as bus:   # private dbus-daemon; anyone=True lets every uid connect
        with ft.Daemon(bus, "--workers", "2") as d:
            conn = bus.connect()       # python-dbus connection with a GLib main loop
            d.fd_count()               # the daemon's open fds, from /proc
            d.stop()                   # SIGTERM, returns the exit status

Everything lives in one temporary directory (mode 0755, so that a client running as nobody can reach
the bus socket and the test files), removed on exit.
"""
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BUS_NAME = "org.fhash.Hasher1"
MANAGER_PATH = "/org/fhash/Hasher1"
MANAGER_IFACE = "org.fhash.Hasher1.Manager"
JOB_IFACE = "org.fhash.Hasher1.Job"
PROPS_IFACE = "org.freedesktop.DBus.Properties"
ERR_INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
ERR_ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"
ERR_PREFIX = "org.fhash.Hasher1.Error."

ALGORITHMS = ["sha256", "sha512", "sha1", "md5", "sha3-256", "blake2b", "blake3", "xxh3", "xxh128", "crc32c",
              "sha224", "sha384", "sha3-384", "sha3-512", "sm3", "blake2s", "xxh32", "xxh64",
              "sha3-224", "fsverity", "fsverity-sha512"]


def skip(msg):
    print(f"SKIP: {msg}", file=sys.stderr)
    sys.exit(77)


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def log(msg):
    print(msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)


def fhashd_path():
    p = os.environ.get("FHASHD", "")
    if not p:
        build = os.environ.get("FHASH_BUILD_ROOT", "")
        p = os.path.join(build, "src", "fhashd") if build else ""
    return p


def fhashctl_path():
    """$FHASHCTL (or the build root's), or exit 77 saying it is missing."""
    p = os.environ.get("FHASHCTL", "")
    if not p:
        build = os.environ.get("FHASH_BUILD_ROOT", "")
        p = os.path.join(build, "src", "fhashctl") if build else ""
    if not p or not os.access(p, os.X_OK):
        skip("$FHASHCTL is not set or not executable")
    return p


def require_root_clients(programs=()):
    """require(), and exit 77 unless we are root with setpriv (tests that run a client as nobody);
    then installs the GLib main loop for python-dbus."""
    require(programs)
    if os.geteuid() != 0:
        skip("needs root: a client switched to nobody")
    if not shutil.which("setpriv"):
        skip("setpriv is not installed")
    glib_mainloop()


def files_dir(bus, name="files"):
    """A directory for test files in the bus's temporary directory, readable by nobody."""
    d = os.path.join(bus.dir, name)
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    return d


def require(programs=()):
    """Exit 77 with the reason unless everything a daemon test needs is there."""
    try:
        import dbus  # noqa: F401
        import dbus.mainloop.glib  # noqa: F401
        from gi.repository import GLib  # noqa: F401
    except ImportError as e:
        skip(f"/usr/bin/python3 lacks python3-dbus or python3-gi: {e}")
    for prog in ("dbus-daemon",) + tuple(programs):
        if not shutil.which(prog):
            skip(f"{prog} is not installed")
    p = fhashd_path()
    if not p or not os.access(p, os.X_OK):
        skip("$FHASHD is not set or not executable")
    r = subprocess.run([p, "--version"], capture_output=True)
    if r.returncode != 0:
        skip(f"{p} is not a working daemon yet (--version failed)")


def glib_mainloop():
    import dbus.mainloop.glib
    return dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)


BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={path}</listen>
  <auth>EXTERNAL</auth>
{servicedir}
  <policy context="default">
{users}
    <allow send_destination="*"/>
    <allow own="*"/>
    <!-- Without a receive rule dbus-daemon drops even the Hello reply; no eavesdrop="true". -->
    <allow receive_sender="*"/>
  </policy>
  <limit name="max_message_unix_fds">64</limit>
  <!-- As on the system bus (dbus-daemon's default): fhashd must not need a match rule per job. -->
  <limit name="max_match_rules_per_connection">512</limit>
</busconfig>
"""


class Bus:
    """A private dbus-daemon on a unix socket in a fresh temporary directory.

    anyone: let every uid connect (for clients running as nobody). No eavesdropping is allowed:
    only the addressed connection gets a unicast signal. servicedir: a directory of .service files
    for activation."""

    def __init__(self, anyone=False, servicedir=None, tmpdir=None):
        self.anyone = anyone
        self.servicedir = servicedir
        self.own_tmp = tmpdir is None
        self.dir = tmpdir or tempfile.mkdtemp(prefix="fhash-test-", dir=os.environ.get("TMPDIR", "/var/tmp"))
        os.chmod(self.dir, 0o755)
        self.address = None
        self.pid = None

    def start(self):
        conf = os.path.join(self.dir, "bus.conf")
        with open(conf, "w") as f:
            f.write(BUS_CONFIG.format(
                path=os.path.join(self.dir, "bus"),
                servicedir=f"  <servicedir>{self.servicedir}</servicedir>" if self.servicedir else "",
                users='    <allow user="*"/>' if self.anyone else ""))
        r = subprocess.run(["dbus-daemon", f"--config-file={conf}", "--fork", "--print-address=1",
                            "--print-pid=1"], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            fail(f"dbus-daemon failed: {r.stderr.strip()}")
        lines = r.stdout.split()
        self.address, self.pid = lines[0], int(lines[1])
        return self

    def connect(self):
        import dbus
        return dbus.bus.BusConnection(self.address, mainloop=glib_mainloop())

    def stop(self):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.pid = None
        if self.own_tmp:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        self.stop()


class Daemon:
    """fhashd --address <bus> with extra arguments; its stderr goes to a log file printed on failure."""

    def __init__(self, bus, *args, env=None, preexec=None):
        self.bus = bus
        self.args = list(args)
        self.env = env
        self.preexec = preexec  # run in the child before exec (e.g. to lower an rlimit)
        self.proc = None
        self.logpath = os.path.join(bus.dir, f"fhashd-{time.monotonic_ns()}.log")

    def start(self, timeout=15):
        import dbus
        self.logfile = open(self.logpath, "w")
        # --config /dev/null: the host's /etc/fhash must not change what a test sees; --idle-exit 0:
        # the built-in 30 s idle exit would end a daemon between a test's phases (tests that
        # exercise idle exit pass their own value, which comes later and wins).
        self.proc = subprocess.Popen([fhashd_path(), "--address", self.bus.address, "--log-level", "debug",
                                      "--config", "/dev/null", "--idle-exit", "0"]
                                     + self.args, stdout=self.logfile, stderr=subprocess.STDOUT,
                                     env=self.env, preexec_fn=self.preexec)
        c = dbus.bus.BusConnection(self.bus.address)
        deadline = time.monotonic() + timeout
        # The name must be owned by *this* process: right after a previous daemon exits, the bus
        # may still list it as the owner (it has not yet read the hang-up), and a test would then
        # talk to a dead daemon or race this one for the name.
        while not self._owns_name(c):
            if self.proc.poll() is not None:
                fail(f"fhashd exited with {self.proc.returncode} at start:\n{self.log()}")
            if time.monotonic() > deadline:
                fail(f"fhashd did not take {BUS_NAME} within {timeout} s:\n{self.log()}")
            time.sleep(0.02)
        c.close()
        return self

    def _owns_name(self, c):
        import dbus
        try:
            dbus_iface = dbus.Interface(c.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"),
                                        "org.freedesktop.DBus")
            return int(dbus_iface.GetConnectionUnixProcessID(BUS_NAME)) == self.proc.pid
        except dbus.exceptions.DBusException:
            return False

    @property
    def pid(self):
        return self.proc.pid

    def fd_count(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def log(self):
        try:
            with open(self.logpath) as f:
                return f.read()
        except OSError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=15):
        if not self.proc:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                fail(f"fhashd did not exit within {timeout} s of signal {sig}:\n{self.log()}")
        self.logfile.close()
        return self.proc.returncode

    def __enter__(self):
        return self.start()

    def __exit__(self, *a):
        alive = self.alive()
        rc = self.stop()
        if a[0] is not None:
            # The test failed inside the block: what fhashd saw is usually the explanation.
            sys.stderr.write(f"fhashd (pid {self.proc.pid}, {'alive' if alive else f'had exited with {rc}'}"
                             f" when the test failed) logged:\n{self.log()}\n")
        if a[0] is None and rc not in (0, None):
            fail(f"fhashd exited with {rc}:\n{self.log()}")


def vmrss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def is_asan(pid):
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def sanitizer_env(lib):
    """What an interpreter loading lib (a libfhash.so.0 of this build) needs in its environment: a
    sanitized library needs its runtime preloaded, first (and no leak check of the interpreter)."""
    ldd = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    runtimes = [line.split("=>")[1].split()[0] for line in ldd.splitlines()
                if "=>" in line and any(s in line for s in ("libasan", "libubsan", "libtsan"))]
    if not runtimes:
        return {}
    return {"LD_PRELOAD": " ".join(runtimes), "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1:halt_on_error=1"}


RSS_SETTLE_S = 5   # fhashd gives memory back (malloc_trim) a second after its last job ended


def check_rss(d, before, after, limit_kib, what):
    """VmRSS growth below limit_kib; under ASan (quarantine keeps freed memory) only reported.
    Growth over the limit is sampled again for up to RSS_SETTLE_S: fhashd trims its heap once no job
    has been active for a second, and on a busy machine that second starts late. Memory that is
    still held after that fails."""
    if is_asan(d.pid):
        log(f"note: ASan build, VmRSS {before} -> {after} KiB after {what} not judged (quarantine)")
        return
    if after - before >= limit_kib and d.alive():
        settled = wait_for(lambda: vmrss_kib(d.pid) - before < limit_kib, RSS_SETTLE_S, 0.1)
        now = vmrss_kib(d.pid)
        log(f"note: VmRSS {before} -> {after} KiB after {what}; {now} KiB after up to {RSS_SETTLE_S} s"
            + ("" if settled else " (not settled)"))
        after = now
    check(after - before < limit_kib, f"VmRSS grew {after - before} KiB after {what}")


def wait_for(pred, timeout, step=0.02):
    """Polls pred() until it is true or timeout passes; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


# ---- reference digests ----

def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


_CRC_TABLE = None


def crc32c(data):
    global _CRC_TABLE
    if _CRC_TABLE is None:
        _CRC_TABLE = _crc32c_table()
    t, c = _CRC_TABLE, 0xFFFFFFFF
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _first_hex(out):
    # GNU style "<hex>  <file>" or BSD style "ALGO (<file>) = <hex>".
    line = out.strip().splitlines()[0]
    return line.rsplit(" = ", 1)[1].strip() if " = " in line else line.split()[0]


REFERENCE_TOOLS = {
    "sha256": ["sha256sum"],
    "sha512": ["sha512sum"],
    "sha1": ["sha1sum"],
    "md5": ["md5sum"],
    "sha3-256": ["openssl", "dgst", "-sha3-256", "-r"],
    "blake2b": ["b2sum"],
    "blake3": ["b3sum", "--no-names"],
    "xxh3": ["xxhsum", "-H3"],
    "xxh128": ["xxhsum", "-H2"],
    "sha224": ["sha224sum"],
    "sha384": ["sha384sum"],
    "sha3-384": ["openssl", "dgst", "-sha3-384", "-r"],
    "sha3-512": ["openssl", "dgst", "-sha3-512", "-r"],
    "sha3-224": ["openssl", "dgst", "-sha3-224", "-r"],
    "sm3": ["openssl", "dgst", "-sm3", "-r"],
    "blake2s": ["openssl", "dgst", "-blake2s256", "-r"],
    "xxh32": ["xxhsum", "-H0"],
    "xxh64": ["xxhsum", "-H1"],
    "fsverity": ["fsverity", "digest", "--compact"],
    "fsverity-sha512": ["fsverity", "digest", "--compact", "--hash-alg=sha512"],
}


def reference_digest(algo, path):
    """The digest from the algorithm's reference CLI (crc32c: a bitwise Python implementation, for
    want of a CLI in Debian)."""
    if algo == "crc32c":
        with open(path, "rb") as f:
            return "%08x" % crc32c(f.read())
    tool = REFERENCE_TOOLS[algo]
    if not shutil.which(tool[0]):
        skip(f"{tool[0]} (reference for {algo}) is not installed")
    r = subprocess.run(tool + [path], capture_output=True, text=True, check=True)
    return _first_hex(r.stdout)


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def make_files(dirpath, n, max_size=65536, seed=1):
    """n files of pseudo-random sizes (0..max_size) and contents; returns their paths."""
    import random
    rnd = random.Random(seed)
    os.makedirs(dirpath, exist_ok=True)
    os.chmod(dirpath, 0o755)
    paths = []
    for i in range(n):
        p = os.path.join(dirpath, f"f{i:05d}")
        size = rnd.randint(0, max_size) if i % 7 else 0
        with open(p, "wb") as f:
            f.write(rnd.randbytes(size))
        os.chmod(p, 0o644)
        paths.append(p)
    return paths


class JobWatcher:
    """Collects FilesHashed/FilesDigested/JobFinished for one connection, by job path (add it before
    calling). A FilesDigested result is kept as FilesHashed has it, with no label."""

    def __init__(self, conn):
        self.conn = conn
        self.results = {}    # job -> {index: (name, size, digest, error)}
        self.finished = {}   # job -> (result, ok, failed)
        self.kinds = {}      # job -> {"FilesHashed": signals, "FilesDigested": signals}
        self.signals = 0
        self.receivers = [
            conn.add_signal_receiver(self._files, signal_name="FilesHashed", dbus_interface=MANAGER_IFACE,
                                     path=MANAGER_PATH),
            conn.add_signal_receiver(self._digested, signal_name="FilesDigested", dbus_interface=MANAGER_IFACE,
                                     path=MANAGER_PATH, byte_arrays=True),
            conn.add_signal_receiver(self._finished, signal_name="JobFinished", dbus_interface=MANAGER_IFACE,
                                     path=MANAGER_PATH),
        ]

    def _count(self, job, kind):
        self.signals += 1
        k = self.kinds.setdefault(str(job), {})
        k[kind] = k.get(kind, 0) + 1

    def _digested(self, job, lengths, indices, sizes, digests, others):
        self._count(job, "FilesDigested")
        each = sum(int(n) for n in lengths)
        if len(sizes) != len(indices) or len(digests) != each * len(indices) or any(int(n) == 0 for n in lengths):
            fail(f"{job}: FilesDigested with {len(indices)} indices, {len(sizes)} sizes, {len(digests)} digest "
                 f"bytes of lengths {[int(n) for n in lengths]}")
        d = self.results.setdefault(str(job), {})
        for k, (i, size) in enumerate(zip(indices, sizes)):
            chunk, parts = bytes(digests[k * each:(k + 1) * each]), []
            for n in lengths:
                parts.append(chunk[:int(n)].hex())
                chunk = chunk[int(n):]
            if int(i) in d:
                fail(f"{job}: result {i} reported twice")
            d[int(i)] = ("", int(size), ",".join(parts), "")
        self._add(job, others)

    def _files(self, job, results):
        self._count(job, "FilesHashed")
        self._add(job, results)

    def _add(self, job, results):
        d = self.results.setdefault(str(job), {})
        for (i, name, size, digest, error) in results:
            if int(i) in d:
                fail(f"{job}: result {i} reported twice")
            d[int(i)] = (str(name), int(size), str(digest), str(error))

    def _finished(self, job, result, ok, failed):
        if str(job) in self.finished:
            fail(f"{job}: JobFinished twice")
        self.finished[str(job)] = (str(result), int(ok), int(failed))

    def wait(self, jobs, timeout=60):
        """Runs the GLib loop until every job in jobs has finished; fails on timeout."""
        deadline = time.monotonic() + timeout
        self.iterate_until(lambda: all(str(j) in self.finished for j in jobs), timeout)
        if time.monotonic() > deadline:
            missing = [str(j) for j in jobs if str(j) not in self.finished]
            fail(f"no JobFinished within {timeout} s for {len(missing)} jobs, e.g. {missing[:3]}")

    @staticmethod
    def iterate_until(pred, timeout):
        """Runs the default GLib main context until pred() or timeout; returns pred()."""
        from gi.repository import GLib
        ctx = GLib.MainContext.default()
        # A ticking source bounds each blocking iteration, so the deadline is honoured.
        tick = GLib.timeout_add(20, lambda: True)
        deadline = time.monotonic() + timeout
        try:
            while not pred() and time.monotonic() < deadline:
                ctx.iteration(True)
        finally:
            GLib.source_remove(tick)
        return pred()

    def pump(self, seconds):
        self.iterate_until(lambda: False, seconds)


def manager(conn):
    import dbus
    return dbus.Interface(conn.get_object(BUS_NAME, MANAGER_PATH, introspect=False), MANAGER_IFACE)


def job_iface(conn, path, iface=JOB_IFACE):
    import dbus
    return dbus.Interface(conn.get_object(BUS_NAME, path, introspect=False), iface)


def job_prop(conn, path, name):
    return job_iface(conn, path, PROPS_IFACE).Get(JOB_IFACE, name)


def options(**kw):
    """a{sv} from keyword arguments (max_size -> "max-size"), with the D-Bus types fhashd expects."""
    import dbus
    d = dbus.Dictionary({}, signature="sv")
    for k, v in kw.items():
        key = k.replace("_", "-")
        if isinstance(v, bool):
            d[key] = dbus.Boolean(v)
        elif isinstance(v, int):
            d[key] = dbus.UInt64(v)
        elif isinstance(v, (list, tuple)):
            d[key] = dbus.Array(v, signature="s")
        else:
            d[key] = v
    return d


def fds(*paths_or_fds):
    import dbus
    out = []
    for p in paths_or_fds:
        if isinstance(p, int):
            out.append(dbus.types.UnixFd(p))
        else:
            fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
            out.append(dbus.types.UnixFd(fd))
            os.close(fd)  # UnixFd keeps its own dup
    return dbus.Array(out, signature="h")


def dbus_error_name(e):
    return e.get_dbus_name() if hasattr(e, "get_dbus_name") else None


def expect_error(name, fn, *args, **kw):
    """Calls fn and fails unless it raises the D-Bus error name; returns the message."""
    import dbus
    try:
        fn(*args, **kw)
    except dbus.exceptions.DBusException as e:
        if e.get_dbus_name() != name:
            fail(f"expected {name}, got {e.get_dbus_name()}: {e.get_dbus_message()}")
        return e.get_dbus_message()
    fail(f"expected {name}, but the call succeeded")
