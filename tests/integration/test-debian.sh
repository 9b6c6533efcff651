#!/bin/bash
# SPDX-License-Identifier: MIT
# test-debian.sh: debian/ builds fhash, libfhash0, libfhash-dev and python3-fhash with
# "dpkg-buildpackage -b -us -uc" from a copy of the source tree; lintian finds no error; installed
# on this machine they give a working fhashctl, the library, the Python module and the unit in
# systemd's directory; purged, they leave nothing behind. Needs root (it installs packages).
set -uo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

src=${FHASH_SOURCE_ROOT:?FHASH_SOURCE_ROOT must point at the source tree}
for p in dpkg-buildpackage dh lintian dpkg rsync sha256sum /usr/bin/python3; do
        command -v "$p" >/dev/null || skip "$p is not installed (scripts/deps.sh installs it)"
done
[ "$(id -u)" -eq 0 ] || skip "installing the packages needs root"
pkgs=(python3-fhash libfhash-dev libfhash0 fhash)
for p in "${pkgs[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' &&
                skip "$p is installed on this machine already; the test would replace it"
done

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/fhash-deb-XXXXXX")
cleanup() {
        dpkg --purge "${pkgs[@]/%/-dbgsym}" "${pkgs[@]}" >/dev/null 2>&1
        rm -rf "$tmp"
}
trap cleanup EXIT

# The tree as it is (committed or not), without build directories, git data or bench data.
mkdir "$tmp/fhash"
rsync -a --exclude '/.git' --exclude '/build*' --exclude '/bench/data' --exclude '__pycache__' "$src/" "$tmp/fhash/"
cd "$tmp/fhash" || fail "no copy"
if ! dpkg-buildpackage -b -us -uc >"$tmp/build.log" 2>&1; then
        tail -40 "$tmp/build.log"
        fail "dpkg-buildpackage failed"
fi
cd "$tmp" || fail "no tmp"
changes=$(ls fhash_*.changes)
for p in "${pkgs[@]}"; do
        ls "${p}"_*.deb >/dev/null 2>&1 || fail "no package $p was built: $(ls)"
done
echo "ok: dpkg-buildpackage built $(ls ./*.deb | xargs -n1 basename | tr '\n' ' ')"

# lintian: no error; the warnings kept are listed in debian/README.lintian with why.
lintian --fail-on error --tag-display-limit 0 "$changes" >"$tmp/lintian.log" 2>&1
rc=$?
cat "$tmp/lintian.log"
[ $rc -eq 0 ] || fail "lintian reports errors (above)"
echo "ok: lintian reports no error ($(grep -c '^W:' "$tmp/lintian.log") warnings)"

# Installed: the files where Debian wants them, and they work.
dpkg -i $(for p in "${pkgs[@]}"; do ls ./"${p}"_*.deb; done) >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i failed"; }
for f in /usr/bin/fhashctl /usr/libexec/fhashd /lib/systemd/system/fhashd.service /usr/lib/systemd/user/fhashd.service \
        /usr/share/dbus-1/system.d/org.fhash.Hasher1.conf /usr/share/dbus-1/system-services/org.fhash.Hasher1.service \
        /etc/fhash/fhashd.conf /usr/include/fhash/fhash.h /usr/share/man/man1/fhashctl.1.gz /usr/share/man/man3/libfhash.3.gz; do
        [ -e "$f" ] || fail "$f is not installed"
done
ls /usr/lib/*/libfhash.so.0 >/dev/null 2>&1 || fail "libfhash.so.0 is not installed"
grep -qx "ExecStart=/usr/libexec/fhashd --system" /lib/systemd/system/fhashd.service ||
        fail "the unit does not start /usr/libexec/fhashd"
printf 'some data\n' >"$tmp/f"
[ "$(cd "$tmp" && /usr/bin/fhashctl --local hash f)" = "$(cd "$tmp" && sha256sum f)" ] ||
        fail "the installed fhashctl does not print what sha256sum prints"
# The tools' links: beside coreutils', not over them; each is its tool.
for t in sha256sum md5sum b2sum cksum sum b3sum xxhsum; do
        [ "$(cd "$tmp" && /usr/lib/fhash/bin/$t f)" = "$(cd "$tmp" && /usr/bin/$t f 2>/dev/null)" ] ||
                fail "/usr/lib/fhash/bin/$t does not print what /usr/bin/$t prints"
done
[ "$(readlink -f /usr/bin/sha256sum)" != /usr/bin/fhashctl ] || fail "the package replaced coreutils' sha256sum"
dpkg-query -W -f='${Built-Using}' fhash | grep -q 'nettle (= ' || fail "fhash does not say it is Built-Using nettle"
got=$(env -u LD_LIBRARY_PATH -u PYTHONPATH -u FHASH_LIBRARY /usr/bin/python3 -c '
import sys, fhash
with fhash.Client(local=True) as c:
    r = c.hash([sys.argv[1]])[0]
print(r.digest)' "$tmp/f") || fail "the installed Python module does not work"
[ "$got" = "$(sha256sum <"$tmp/f" | cut -d' ' -f1)" ] || fail "python3-fhash gave $got"
# The scheduled audits and apt's hook, shipped off: the hook does nothing until VERIFY=yes.
for f in /lib/systemd/system/fhash-audit@.service /lib/systemd/system/fhash-audit@.timer /etc/fhash/audit.conf \
        /etc/fhash/apt-verify.conf /etc/apt/apt.conf.d/90fhash-verify /usr/libexec/fhash-apt-verify \
        /usr/share/man/man8/fhash-audit.8.gz; do
        [ -e "$f" ] || fail "$f is not installed"
done
grep -qx "VERIFY=no" /etc/fhash/apt-verify.conf || fail "the apt hook is not shipped disabled"
apt-config dump DPkg::Post-Invoke | grep -q '/usr/libexec/fhash-apt-verify || true' || fail "apt does not see the hook"
FHASH_APT_STAMP=$tmp/stamp /usr/libexec/fhash-apt-verify && [ ! -e "$tmp/stamp" ] || fail "the disabled hook did something"
pkgconf=$(pkg-config --cflags --libs fhash) || fail "pkg-config fhash"
echo "ok: installed: fhashctl, the unit, the bus files, libfhash ($pkgconf) and python3-fhash work"

# Purged: nothing of theirs is left.
# The packages' files and links (not their directories, which /lib -> usr/lib makes ambiguous).
files=$(for p in "${pkgs[@]}"; do dpkg-deb -c ./"${p}"_*.deb; done | awk '$1 ~ /^[-l]/ { print substr($6, 2) }' | sort -u)
[ -n "$files" ] || fail "no files listed in the packages"
dpkg --purge "${pkgs[@]}" >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "dpkg --purge failed"; }
left=$(while read -r f; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done <<<"$files")
[ -z "$left" ] || fail "left behind after purge: $left"
[ ! -e /etc/fhash ] || fail "/etc/fhash is left after purge"
echo "PASS: packages build, pass lintian, work installed and leave nothing behind"
