#!/bin/bash
# SPDX-License-Identifier: MIT
# test-install.sh: "meson install --destdir" puts the units, bus files, config and man pages where
# pkg-config (or the meson option overriding it) says; the installed units pass
# "systemd-analyze verify" without a word, and the system units' security exposure is <= 2.0 (fhashd's,
# and an instance of the scheduled audit's with its timer).
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

build=${FHASH_BUILD_ROOT:?FHASH_BUILD_ROOT must point at the build directory under test}
for p in meson pkg-config systemd-analyze /usr/bin/python3; do
        command -v "$p" >/dev/null || skip "$p is not installed"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fhash-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root=$tmp/root

if ! meson install -C "$build" --destdir "$root" --no-rebuild --quiet >"$tmp/install.log" 2>&1; then
        cat "$tmp/install.log"
        fail "meson install failed"
fi

# The build's options: an override wins, else pkg-config's variable, exactly as the meson.build files
# decide. Install dirs that meson gets relative to the prefix are joined to it.
opt() {
        /usr/bin/python3 - "$build" "$1" <<'PY'
import json, subprocess, sys
opts = json.loads(subprocess.check_output(["meson", "introspect", "--buildoptions", sys.argv[1]]))
v = {o["name"]: o["value"] for o in opts}
name = sys.argv[2]
val = v[name]
if name in ("libexecdir", "sysconfdir", "mandir", "bindir", "datadir") and not val.startswith("/"):
        val = v["prefix"].rstrip("/") + "/" + val
print(val)
PY
}
dir_of() { # option pc-module pc-variable
        local o
        o=$(opt "$1")
        if [ -n "$o" ]; then echo "$o"; else pkg-config --variable="$3" "$2"; fi
}

unitdir=$(dir_of systemdsystemunitdir systemd systemdsystemunitdir)
userunitdir=$(dir_of systemduserunitdir systemd systemduserunitdir)
policydir=$(opt dbus_system_policy_dir)
[ -n "$policydir" ] || policydir=$(pkg-config --variable=datadir dbus-1)/dbus-1/system.d
sysservicedir=$(dir_of dbus_system_services_dir dbus-1 system_bus_services_dir)
sessservicedir=$(dir_of dbus_session_services_dir dbus-1 session_bus_services_dir)
libexecdir=$(opt libexecdir)
sysconfdir=$(opt sysconfdir)
mandir=$(opt mandir)

echo "system units:     $unitdir"
echo "user units:       $userunitdir"
echo "bus policy:       $policydir"
echo "system services:  $sysservicedir"
echo "session services: $sessservicedir"

expect_file() {
        [ -f "$root$1" ] || { echo "installed files:"; (cd "$root" && find . -type f | sort); fail "$1 was not installed"; }
        echo "ok: $1"
}
expect_file "$unitdir/fhashd.service"
expect_file "$userunitdir/fhashd.service"
expect_file "$policydir/org.fhash.Hasher1.conf"
expect_file "$sysservicedir/org.fhash.Hasher1.service"
expect_file "$sessservicedir/org.fhash.Hasher1.service"
expect_file "$sysconfdir/fhash/fhashd.conf"
expect_file "$mandir/man8/fhashd.8"
expect_file "$mandir/man1/fhashctl.1"
expect_file "$mandir/man3/libfhash.3"
libdir=$(opt libdir)
case $libdir in /*) ;; *) libdir=$(opt prefix)/$libdir ;; esac
expect_file "$libdir/fhash/fhashctl-verbs.so"

# The tools' links: in a directory of their own, each resolving to the installed fhashctl.
toolsdir=$(opt toolsdir)
[ -n "$toolsdir" ] || toolsdir=$(opt prefix)/lib/fhash/bin
bindir=$(opt bindir)
case $bindir in /*) ;; *) bindir=$(opt prefix)/$bindir ;; esac
for t in md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum b3sum xxhsum xxh32sum xxh64sum \
        xxh128sum xxh3sum; do
        [ -L "$root$toolsdir/$t" ] || fail "$toolsdir/$t is not a link"
        [ "$(cd "$root$toolsdir" && realpath -m --relative-base="$root" "$t")" = "${bindir#/}/fhashctl" ] ||
                [ "$(readlink "$root$toolsdir/$t")" = "$bindir/fhashctl" ] ||
                fail "$toolsdir/$t points at $(readlink "$root$toolsdir/$t"), not $bindir/fhashctl"
done
echo "ok: the tools' links in $toolsdir"

# Every placeholder was filled in, and every file points at the installed daemon.
daemon=$libexecdir/fhashd
if grep -l '@[a-z_]*@' "$root$unitdir/fhashd.service" "$root$userunitdir/fhashd.service" \
        "$root$sysservicedir/org.fhash.Hasher1.service" "$root$sessservicedir/org.fhash.Hasher1.service" \
        "$root$mandir/man8/fhashd.8" "$root$mandir/man1/fhashctl.1"; then
        fail "unsubstituted @placeholder@ in the files above"
fi
check_line() { # file expected-line
        grep -qxF -- "$2" "$1" || { cat "$1"; fail "$1 lacks the line '$2'"; }
}
check_line "$root$unitdir/fhashd.service" "ExecStart=$daemon --system"
check_line "$root$unitdir/fhashd.service" "BusName=org.fhash.Hasher1"
check_line "$root$userunitdir/fhashd.service" "ExecStart=$daemon --user"
check_line "$root$sysservicedir/org.fhash.Hasher1.service" "Exec=$daemon --system"
check_line "$root$sysservicedir/org.fhash.Hasher1.service" "SystemdService=fhashd.service"
check_line "$root$sysservicedir/org.fhash.Hasher1.service" "User=root"
check_line "$root$sysservicedir/org.fhash.Hasher1.service" "Name=org.fhash.Hasher1"
check_line "$root$sessservicedir/org.fhash.Hasher1.service" "Exec=$daemon --user"
check_line "$root$sessservicedir/org.fhash.Hasher1.service" "Name=org.fhash.Hasher1"
/usr/bin/python3 -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' \
        "$root$policydir/org.fhash.Hasher1.conf" || fail "the bus policy is not well-formed XML"

# verify and security look at the unit as it is installed: --root makes ExecStart= resolve inside the
# destdir, so a missing or misplaced daemon is an error. The root also needs the host's own units
# (sysinit.target and the other default dependencies), copied underneath; ours are copied last.
[ -x "$root$daemon" ] || skip "fhashd is not built and installed yet ($daemon missing in the destdir), so the units cannot be verified"
vroot=$tmp/vroot
mkdir -p "$vroot"
for d in /usr/lib/systemd/system /lib/systemd/system /usr/lib/systemd/user; do
        if [ -d "$d" ]; then
                mkdir -p "$vroot$d"
                cp -a "$d/." "$vroot$d/"
        fi
done
cp -a "$root/." "$vroot/"
# A unit dir given by a meson option may lie outside systemd's search path, where --root cannot find
# the unit by name: verify the installed file from /etc/systemd/system of the root instead.
mkdir -p "$vroot/etc/systemd/system"
cp "$root$unitdir/fhashd.service" "$vroot/etc/systemd/system/fhashd.service"

export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-$tmp/xdg}
mkdir -p -m 0700 "$XDG_RUNTIME_DIR"
run_silent() { # any output at all, or a non-zero exit, is a failure
        local out rc=0
        out=$("$@" 2>&1) || rc=$?
        if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
                printf '%s\n' "$out"
                fail "'$*' exited $rc and/or printed the above"
        fi
        echo "ok: $* (silent)"
}
run_silent systemd-analyze verify --man=no --root="$vroot" "$vroot/etc/systemd/system/fhashd.service"
# The user manager has no --root mode: verify a copy whose ExecStart= names the daemon in the destdir
# (the only line that differs, which check_line above pinned to the installed path).
mkdir -p "$tmp/user"
sed "s|^ExecStart=$daemon |ExecStart=$root$daemon |" "$root$userunitdir/fhashd.service" >"$tmp/user/fhashd.service"
check_line "$tmp/user/fhashd.service" "ExecStart=$root$daemon --user"
run_silent systemd-analyze verify --user --man=no "$tmp/user/fhashd.service"

out=$(systemd-analyze security --offline=yes --root="$vroot" "$vroot/etc/systemd/system/fhashd.service" 2>&1) || {
        printf '%s\n' "$out"; fail "systemd-analyze security failed"; }
score_line=$(printf '%s\n' "$out" | grep 'Overall exposure level') || { printf '%s\n' "$out"; fail "no score"; }
echo "$score_line"
score=$(printf '%s\n' "$score_line" | grep -oE '[0-9]+\.[0-9]+' | head -n1)
/usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 2.0 else 1)' "$score" || {
        printf '%s\n' "$out" | grep '✗' || true
        fail "security exposure $score is above 2.0"
}
# The scheduled audits (fhash-audit(8)): the template, an instance of it (/usr) and its timer verify
# silently and the instance's exposure is <= 2.0; the man page, the options file and apt's hook are
# installed, with every placeholder filled in.
expect_file "$unitdir/fhash-audit@.service"
expect_file "$unitdir/fhash-audit@.timer"
expect_file "$mandir/man8/fhash-audit.8"
expect_file "$sysconfdir/fhash/audit.conf"
expect_file "$sysconfdir/fhash/apt-verify.conf"
expect_file "$sysconfdir/apt/apt.conf.d/90fhash-verify"
expect_file "$libexecdir/fhash-apt-verify"
[ -x "$root$libexecdir/fhash-apt-verify" ] || fail "$libexecdir/fhash-apt-verify is not executable"
if grep -l '@[a-z_]*@' "$root$unitdir/fhash-audit@.service" "$root$mandir/man8/fhash-audit.8" \
        "$root$sysconfdir/apt/apt.conf.d/90fhash-verify" "$root$libexecdir/fhash-apt-verify"; then
        fail "unsubstituted @placeholder@ in the files above"
fi
check_line "$root$unitdir/fhash-audit@.service" \
        "ExecStart=$bindir/fhashctl audit --background --create --journal --quiet --no-progress \$FHASH_AUDIT_OPTIONS %S/fhash/audit/%i.sums %f"
check_line "$root$sysconfdir/fhash/apt-verify.conf" "VERIFY=no"
sysd=$vroot/etc/systemd/system
cp "$root$unitdir/fhash-audit@.service" "$root$unitdir/fhash-audit@.timer" "$sysd/"
ln -sf fhash-audit@.service "$sysd/fhash-audit@usr.service"
ln -sf fhash-audit@.timer "$sysd/fhash-audit@usr.timer"
run_silent systemd-analyze verify --man=no --root="$vroot" "$sysd/fhash-audit@usr.service" "$sysd/fhash-audit@usr.timer"
# Its warnings would go to stderr beside a passing score: they count as failures, as verify's do.
out=$(systemd-analyze security --offline=yes --root="$vroot" "$sysd/fhash-audit@usr.service" 2>"$tmp/security.err") || {
        printf '%s\n' "$out"; cat "$tmp/security.err"; fail "systemd-analyze security of fhash-audit@usr.service failed"; }
[ ! -s "$tmp/security.err" ] || { cat "$tmp/security.err"; fail "systemd-analyze security of fhash-audit@usr.service wrote to stderr"; }
audit_score=$(printf '%s\n' "$out" | grep 'Overall exposure level' | grep -oE '[0-9]+\.[0-9]+' | head -n1)
[ -n "$audit_score" ] || { printf '%s\n' "$out"; fail "no score for fhash-audit@usr.service"; }
/usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 2.0 else 1)' "$audit_score" || {
        printf '%s\n' "$out" | grep '✗' || true
        fail "fhash-audit@usr.service: security exposure $audit_score is above 2.0"
}
echo "ok: fhash-audit@usr.service and its timer verify silently, exposure $audit_score, nothing on stderr"

echo "PASS: installed files in place, units verify silently, exposure $score (fhashd) and $audit_score (audit) <= 2.0"
