#!/bin/bash
# SPDX-License-Identifier: MIT
# test-system-bus.sh: fhashd on a real system bus with the INSTALLED policy and activation file.
#
# Inside a private mount namespace (tmpfs on /run/dbus, bind mounts over dbus-1's system.d and
# system-services holding copies of their contents plus our installed files), "dbus-daemon --system"
# runs with the stock system.conf. A client running as nobody then:
#   - activates fhashd with its first call; the daemon runs as root (uid from the bus and /proc);
#   - hashes an fd it opened (digest == sha256sum) and receives its own FilesHashed/JobFinished;
#   - is refused HashPaths on /etc/shadow with org.freedesktop.DBus.Error.AccessDenied, cannot open
#     the file, and gets nothing for an O_PATH fd of it: shadow's digest never reaches it;
#   - cannot own org.fhash.Hasher1 and cannot become a monitor;
#   - while it listens (match rules for FilesHashed/JobFinished, and an eavesdrop attempt), root
#     hashes files including /etc/shadow by path: none of those results reach the nobody client.
# Needs root (mount namespace, dbus-daemon --system, setpriv); exits 77 with a reason otherwise.
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

if [ "${1:-}" != "--inner" ]; then
        [ "$(id -u)" -eq 0 ] || skip "needs root (mount namespace, dbus-daemon --system, setpriv)"
        build=${FHASH_BUILD_ROOT:?FHASH_BUILD_ROOT must point at the build directory under test}
        FHASHD=${FHASHD:?FHASHD must point at the built daemon}
        for p in meson pkg-config unshare mount dbus-daemon setpriv sha256sum /usr/bin/python3; do
                command -v "$p" >/dev/null || skip "$p is not installed"
        done
        /usr/bin/python3 -c 'import dbus, dbus.mainloop.glib; from gi.repository import GLib' 2>/dev/null ||
                skip "/usr/bin/python3 lacks dbus or gi (python3-dbus, python3-gi)"
        "$FHASHD" --version >/dev/null 2>&1 || skip "$FHASHD is not a working daemon yet (--version failed)"
        getent passwd nobody >/dev/null || skip "no user 'nobody'"
        getent passwd messagebus >/dev/null || skip "no user 'messagebus' for dbus-daemon --system"
        [ -r /etc/shadow ] || skip "/etc/shadow is not readable by root here"
        helper=$(sed -n 's|.*<servicehelper>\(.*\)</servicehelper>.*|\1|p' /usr/share/dbus-1/system.conf 2>/dev/null || true)
        [ -n "$helper" ] && [ -u "$helper" ] || skip "dbus-daemon-launch-helper (setuid) is needed for system bus activation"

        tmp=$(mktemp -d "${TMPDIR:-/tmp}/fhash-sysbus-XXXXXX")
        trap 'rm -rf "$tmp"' EXIT
        # The installed files, not the sources: the test is about what "meson install" ships.
        if ! meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >"$tmp/install.log" 2>&1; then
                cat "$tmp/install.log"
                fail "meson install failed"
        fi
        if ! unshare --mount --propagation private true 2>/dev/null; then
                skip "unshare --mount is not permitted here"
        fi
        rc=0
        FHASH_TMP=$tmp FHASHD=$FHASHD FHASH_BUILD_ROOT=$build \
                unshare --mount --propagation private -- "$0" --inner || rc=$?
        if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
                for f in dbus.log; do
                        [ -s "$tmp/$f" ] && { echo "--- $f ---"; cat "$tmp/$f"; }
                done
        fi
        exit "$rc"
fi

# ---------------------------------------------------------------------------------------------------
# Inside the private mount namespace. Nothing below is visible to the rest of the machine.
tmp=$FHASH_TMP
root=$tmp/root
build=$FHASH_BUILD_ROOT
fhashd_real=$(readlink -f "$FHASHD")

opt() {
        meson introspect --buildoptions "$build" | /usr/bin/python3 -c \
                'import json, sys; print({o["name"]: o["value"] for o in json.load(sys.stdin)}[sys.argv[1]])' "$1"
}
# Where meson installed our files (an option overrides pkg-config) ...
policy_inst=$(opt dbus_system_policy_dir)
[ -n "$policy_inst" ] || policy_inst=$(pkg-config --variable=datadir dbus-1)/dbus-1/system.d
services_inst=$(opt dbus_system_services_dir)
[ -n "$services_inst" ] || services_inst=$(pkg-config --variable=system_bus_services_dir dbus-1)
policy_file=$root$policy_inst/org.fhash.Hasher1.conf
service_file=$root$services_inst/org.fhash.Hasher1.service
[ -f "$policy_file" ] || fail "installed policy missing: $policy_file"
[ -f "$service_file" ] || fail "installed activation file missing: $service_file"
# ... and where this machine's dbus-daemon reads them.
dbus_datadir=$(pkg-config --variable=datadir dbus-1)/dbus-1
sysd_dir=$dbus_datadir/system.d
services_dir=$(pkg-config --variable=system_bus_services_dir dbus-1)

# Copies of the real directories plus ours, bound over the originals: the stock policies keep
# working, and a stale org.fhash.* from a real installation cannot interfere.
overlay_dir() { # target-dir name [file-to-add]
        local target=$1 copy=$tmp/$2
        mkdir -p "$copy" "$target"
        cp -a "$target/." "$copy/" 2>/dev/null || true
        rm -f "$copy"/org.fhash.Hasher1.*
        [ -z "${3:-}" ] || cp "$3" "$copy/"
        chmod 0755 "$copy"
        mount --bind "$copy" "$target"
}
mount -t tmpfs -o mode=0755 tmpfs /run/dbus 2>/dev/null || { mkdir -p /run/dbus && mount -t tmpfs -o mode=0755 tmpfs /run/dbus; } ||
        fail "cannot mount a tmpfs on /run/dbus"
overlay_dir "$sysd_dir" system.d "$policy_file"
[ -d /etc/dbus-1/system.d ] && overlay_dir /etc/dbus-1/system.d etc-system.d
# The activation file as installed, with only Exec= pointing at the daemon under test.
grep -q '^Exec=' "$service_file" || fail "no Exec= in $service_file"
mkdir -p "$tmp/activation"
# fhashd in a mount namespace of its own, a slave of the test's, as its unit gives it one
# (PrivateMounts=, ProtectSystem=...): the mounts of the fds callers pass are then another
# namespace's, and their file systems must still be known (unshare execs fhashd: same pid).
sed "s|^Exec=[^ ]*|Exec=$(command -v unshare) --mount --propagation slave $fhashd_real|" "$service_file" \
        >"$tmp/activation/org.fhash.Hasher1.service"
echo "activation file under test:"; sed 's/^/    /' "$tmp/activation/org.fhash.Hasher1.service"
overlay_dir "$services_dir" system-services "$tmp/activation/org.fhash.Hasher1.service"
for d in /usr/local/share/dbus-1/system-services /lib/dbus-1/system-services /run/dbus-1/system-services; do
        if [ "$d" != "$services_dir" ] && [ -d "$d" ]; then
                overlay_dir "$d" "other-$(echo "$d" | tr / _)"
        fi
done

# Nobody must be able to reach the data file and the client script, and nothing more.
chmod 0755 "$tmp"
head -c 3000000 /dev/urandom >"$tmp/data"
chmod 0644 "$tmp/data"
data_digest=$(sha256sum <"$tmp/data" | cut -d' ' -f1)
shadow_digest=$(sha256sum </etc/shadow | cut -d' ' -f1)

if pgrep -x -f "$fhashd_real --system" >/dev/null 2>&1; then
        fail "an fhashd --system from this build is already running; cannot prove activation"
fi

# DBUS_DEBUG_OUTPUT keeps dbus-daemon's stderr (and so the activated daemon's log) after --fork.
export DBUS_DEBUG_OUTPUT=1
unset DBUS_SYSTEM_BUS_ADDRESS DBUS_SESSION_BUS_ADDRESS DBUS_STARTER_ADDRESS DBUS_STARTER_BUS_TYPE
out=$(dbus-daemon --system --fork --print-address=1 --print-pid=1 2>>"$tmp/dbus.log") ||
        fail "dbus-daemon --system did not start: $(cat "$tmp/dbus.log")"
bus_address=$(echo "$out" | sed -n 1p)
bus_pid=$(echo "$out" | sed -n 2p)
echo "system bus: $bus_address (dbus-daemon pid $bus_pid)"
fhashd_pid=
our_ns=$(readlink /proc/self/ns/mnt)
# Every fhashd of this build in this mount namespace was started by our bus (activation may happen
# even when the client fails before it learns the pid): stop them all, then the bus.
cleanup() {
        local p
        for p in /proc/[0-9]*; do
                if [ "$(readlink "$p/exe" 2>/dev/null)" = "$fhashd_real" ] &&
                        [ "$(readlink "$p/ns/mnt" 2>/dev/null)" = "$our_ns" ]; then
                        kill "${p#/proc/}" 2>/dev/null || true
                fi
        done
        [ -z "$bus_pid" ] || kill "$bus_pid" 2>/dev/null || true
}
trap cleanup EXIT
export DBUS_SYSTEM_BUS_ADDRESS=unix:path=/run/dbus/system_bus_socket

cat >"$tmp/client.py" <<'PY'
# The unprivileged client. Protocol on stdout: "LISTENING" once it listens for root's job, then it
# waits for a line on stdin saying root's job is done. Everything else goes to stderr.
import os, sys, time
import dbus, dbus.mainloop.glib
from gi.repository import GLib

data_path, data_digest, shadow_digest = sys.argv[1:4]
NAME, PATH, MGR, JOB = "org.fhash.Hasher1", "/org/fhash/Hasher1", "org.fhash.Hasher1.Manager", "org.fhash.Hasher1.Job"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def fail(msg):
    log(f"FAIL (client as uid {os.getuid()}): {msg}")
    sys.exit(1)


def expect_error(name, fn, what):
    try:
        fn()
    except dbus.exceptions.DBusException as e:
        if e.get_dbus_name() != name:
            fail(f"{what}: expected {name}, got {e.get_dbus_name()}: {e.get_dbus_message()}")
        return e
    fail(f"{what}: succeeded, expected {name}")


if os.getuid() == 0 or os.geteuid() == 0:
    fail("the client must not run as root")
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
dbus_iface = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus")

if dbus_iface.NameHasOwner(NAME):
    fail(f"{NAME} already has an owner before the first call: cannot prove activation")
if NAME not in dbus_iface.ListActivatableNames():
    fail(f"{NAME} is not activatable on this bus (activation file not picked up)")
log(f"ok: {NAME} activatable and not running")

# Every signal of the interface that reaches us, from anyone, whatever its destination.
seen = []
def on_signal(*args, **kw):
    seen.append((kw.get("member"), str(args[0]) if args else "", args))
for member in ("FilesHashed", "JobFinished"):
    bus.add_signal_receiver(on_signal, signal_name=member, dbus_interface=MGR,
                            member_keyword="member", path_keyword="path")
# Try to see other people's traffic: an eavesdropping match (the stock policy ignores it) and a
# monitor (refused to non-root).
try:
    bus.add_match_string("type='signal',interface='org.fhash.Hasher1.Manager',eavesdrop='true'")
except dbus.exceptions.DBusException as e:
    log(f"ok: eavesdropping match refused ({e.get_dbus_name()})")
monitor = dbus.Interface(bus.get_object("org.freedesktop.DBus", "/org/freedesktop/DBus"), "org.freedesktop.DBus.Monitoring")
expect_error("org.freedesktop.DBus.Error.AccessDenied",
             lambda: monitor.BecomeMonitor(dbus.Array([], signature="s"), dbus.UInt32(0)), "BecomeMonitor")
log("ok: BecomeMonitor refused")


def run_loop(seconds, until=None):
    loop = GLib.MainLoop()
    deadline = time.monotonic() + seconds
    def tick():
        if (until and until()) or time.monotonic() > deadline:
            loop.quit()
            return False
        return True
    GLib.timeout_add(20, tick)
    loop.run()


# 1. The first call activates fhashd; the fd we opened is hashed.
mgr = dbus.Interface(bus.get_object(NAME, PATH), MGR)
fd = os.open(data_path, os.O_RDONLY | os.O_CLOEXEC)
my_job = str(mgr.HashFds([dbus.types.UnixFd(fd)], "sha256", dbus.Dictionary({}, signature="sv"), timeout=60))
os.close(fd)
owner = dbus_iface.GetNameOwner(NAME)
owner_uid = int(dbus_iface.GetConnectionUnixUser(owner))
owner_pid = int(dbus_iface.GetConnectionUnixProcessID(owner))
print(f"DAEMON {owner_pid} {owner_uid}", flush=True)
if owner_uid != 0:
    fail(f"activated fhashd runs as uid {owner_uid}, expected 0")
log(f"ok: the call activated fhashd (pid {owner_pid}, bus says uid {owner_uid})")

run_loop(30, until=lambda: any(m == "JobFinished" and a == my_job for m, a, _ in seen))
finished = [args for m, a, args in seen if m == "JobFinished" and a == my_job]
if not finished:
    fail(f"no JobFinished for our job {my_job} within 30 s (signals seen: {seen})")
if str(finished[0][1]) != "done":
    fail(f"our job finished {finished[0][1]!r}, expected 'done'")
digests = [str(r[3]) for m, a, args in seen if m == "FilesHashed" and a == my_job for r in args[1]]
results = dbus.Interface(bus.get_object(NAME, my_job), JOB).GetResults()
if [str(r[3]) for r in results] != [data_digest]:
    fail(f"GetResults gave {[tuple(map(str, r)) for r in results]}, expected digest {data_digest}")
if digests != [data_digest]:
    fail(f"FilesHashed carried {digests}, expected [{data_digest}]")
log("ok: hashed an fd we opened: digest equals sha256sum, delivered by FilesHashed and GetResults")

# 2. /etc/shadow: no path access, cannot open it, and an O_PATH fd of it gives nothing.
e = expect_error("org.freedesktop.DBus.Error.AccessDenied",
                 lambda: mgr.HashPaths(["/etc/shadow"], "sha256", dbus.Dictionary({}, signature="sv")),
                 "HashPaths(/etc/shadow) as nobody")
if "Rejected send message" in (e.get_dbus_message() or ""):
    fail("HashPaths was refused by the bus policy, not by fhashd: the policy must allow the Manager interface")
log(f"ok: HashPaths(/etc/shadow) refused by fhashd: {e.get_dbus_message()}")
for p in ("/proc/self/root/etc/shadow", "/etc/../etc/shadow", data_path):
    expect_error("org.freedesktop.DBus.Error.AccessDenied",
                 lambda: mgr.HashPaths([p], "sha256", dbus.Dictionary({}, signature="sv")), f"HashPaths({p})")
log("ok: HashPaths refused for every path, even readable ones")
try:
    os.close(os.open("/etc/shadow", os.O_RDONLY))
    fail("nobody could open /etc/shadow: the test machine is misconfigured")
except PermissionError:
    log("ok: /etc/shadow cannot be opened by nobody")
opath = os.open("/etc/shadow", os.O_PATH | os.O_CLOEXEC)
try:
    job = str(mgr.HashFds([dbus.types.UnixFd(opath)], "sha256", dbus.Dictionary({}, signature="sv")))
    run_loop(10, until=lambda: any(m == "JobFinished" and a == job for m, a, _ in seen))
    res = dbus.Interface(bus.get_object(NAME, job), JOB).GetResults()
    if any(str(r[3]) for r in res):
        fail(f"an O_PATH fd of /etc/shadow was hashed: {[tuple(map(str, r)) for r in res]}")
    log(f"ok: O_PATH fd of /etc/shadow: per-file error {[str(r[4]) for r in res]}")
except dbus.exceptions.DBusException as e:
    log(f"ok: O_PATH fd of /etc/shadow refused: {e.get_dbus_name()}: {e.get_dbus_message()}")
os.close(opath)

# 3. The name is root's.
expect_error("org.freedesktop.DBus.Error.AccessDenied", lambda: bus.request_name(NAME), f"RequestName({NAME})")
log(f"ok: RequestName({NAME}) refused")

# 4. Root hashes /etc/shadow and more while we listen: nothing of it may reach us.
mine = {my_job} | {a for m, a, _ in seen}
n_before = len(seen)
print("LISTENING", flush=True)
stop = []
GLib.io_add_watch(sys.stdin.fileno(), GLib.IO_IN | GLib.IO_HUP, lambda *a: (stop.append(sys.stdin.readline()), False)[1])
run_loop(120, until=lambda: bool(stop))
if not stop or stop[0].strip() != "ROOT-DONE":
    fail(f"no word from root's job (got {stop})")
run_loop(1.5)
foreign = [(m, a) for m, a, _ in seen[n_before:]] + [(m, a) for m, a, _ in seen[:n_before] if a not in mine]
leaked = [args for m, a, args in seen if shadow_digest in repr(args)]
if foreign or leaked:
    fail(f"received signals of jobs not ours: {foreign} / shadow digest seen: {bool(leaked)}")
log(f"ok: no signal of root's job reached us ({len(seen)} signals, all for our own jobs)")
print("CLIENT-PASS", flush=True)
PY
cat >"$tmp/root-client.py" <<'PY'
# Root's job: HashPaths on /etc/shadow and the data file, waited for through JobFinished.
import sys, time
import dbus, dbus.mainloop.glib
from gi.repository import GLib

data_path, data_digest, shadow_digest = sys.argv[1:4]
dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
bus = dbus.SystemBus()
mgr = dbus.Interface(bus.get_object("org.fhash.Hasher1", "/org/fhash/Hasher1"), "org.fhash.Hasher1.Manager")
seen = {}
def on_finished(job, result, ok, failed):
    seen[str(job)] = (str(result), int(ok), int(failed))
bus.add_signal_receiver(on_finished, signal_name="JobFinished", dbus_interface="org.fhash.Hasher1.Manager")
job = str(mgr.HashPaths(["/etc/shadow", data_path], "sha256", dbus.Dictionary({}, signature="sv")))
loop = GLib.MainLoop()
deadline = time.monotonic() + 30
def tick():
    if job in seen or time.monotonic() > deadline:
        loop.quit()
        return False
    return True
GLib.timeout_add(20, tick)
loop.run()
if job not in seen:
    sys.exit(f"FAIL: root's job {job} did not finish")
res = dbus.Interface(bus.get_object("org.fhash.Hasher1", job), "org.fhash.Hasher1.Job").GetResults()
got = sorted((int(r[0]), str(r[3]), str(r[4])) for r in res)
if got != [(0, shadow_digest, ""), (1, data_digest, "")]:
    sys.exit(f"FAIL: root's HashPaths results {got}")
print(f"ok: root hashed /etc/shadow by path ({seen[job]})", file=sys.stderr)
PY
chmod 0644 "$tmp/client.py" "$tmp/root-client.py"

coproc CLIENT { exec setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
        /usr/bin/python3 -u "$tmp/client.py" "$tmp/data" "$data_digest" "$shadow_digest"; }
client_pid=$CLIENT_PID
client_out=${CLIENT[0]}
client_in=${CLIENT[1]}

line=
read -r -t 90 line <&"$client_out" || true
case $line in
DAEMON\ *)
        set -- $line
        fhashd_pid=$2
        ;;
*)
        wait "$client_pid" || true
        fail "the client did not get the daemon activated (said: '$line'); dbus log: $(cat "$tmp/dbus.log")"
        ;;
esac
# The process behind the name is the daemon under test, running as root (all four uids).
[ -d "/proc/$fhashd_pid" ] || fail "no process $fhashd_pid"
[ "$(readlink -f "/proc/$fhashd_pid/exe")" = "$fhashd_real" ] ||
        fail "the name's owner $fhashd_pid is $(readlink -f "/proc/$fhashd_pid/exe"), not $fhashd_real"
uids=$(awk '/^Uid:/ { print $2, $3, $4, $5 }' "/proc/$fhashd_pid/status")
[ "$uids" = "0 0 0 0" ] || fail "fhashd runs with uids '$uids', expected root"
echo "ok: fhashd pid $fhashd_pid is $fhashd_real, uids $uids"

line=
read -r -t 120 line <&"$client_out" || true
[ "$line" = "LISTENING" ] || { wait "$client_pid" || true; fail "client stopped before listening for root's job (said: '$line')"; }
/usr/bin/python3 "$tmp/root-client.py" "$tmp/data" "$data_digest" "$shadow_digest" || fail "root's job failed"
echo "ROOT-DONE" >&"$client_in"
line=
read -r -t 60 line <&"$client_out" || true
rc=0
wait "$client_pid" || rc=$?
[ "$line" = "CLIENT-PASS" ] && [ "$rc" -eq 0 ] || fail "the nobody client failed (exit $rc)"
echo "PASS: activation as root, fd hashing, AccessDenied for /etc/shadow, name ownership and signal privacy"
