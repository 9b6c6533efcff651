#!/bin/bash
# SPDX-License-Identifier: MIT
# test-debian.sh: debian/ builds fhash, libfhash0, libfhash-dev, python3-fhash, libfhash-glib0,
# libfhash-glib-dev and gir1.2-fhash-1.0 with "dpkg-buildpackage -b -us -uc" from a copy of the
# source tree, touching nothing in it but debhelper's places ("debian/rules clean" leaves it as it
# was); lintian --pedantic finds no tag that debian/README.lintian does not explain; fhash and
# libfhash0 name BLAKE3's source in Static-Built-Using; no maintainer script starts fhashd;
# installed they give a working fhashctl, the library, the Python module, the GObject library
# through introspection, the unit in systemd's directory, the README, the examples and the API
# reference; purged, they leave nothing behind.
#
# The packages are installed and purged in a throwaway root, never on this machine: a mount
# namespace of this script's own (unshare) where an overlay has this machine's / as its lower,
# read-only layer and a tmpfs as the layer written to; dpkg runs chrooted there, so what it writes
# (its database in /var/lib/dpkg, /usr, /etc) goes to the tmpfs and is gone with the namespace. The
# root has every dependency the packages have (this machine's), and an fhash this machine has
# installed is purged there first. The host's record of the packages is compared before and after.
# Needs root (a mount namespace, overlayfs).
set -uo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# This script by its full path: it runs itself again in a mount namespace from another directory.
self=$(readlink -f "$0")
pkgs=(gir1.2-fhash-1.0 libfhash-glib-dev libfhash-glib0 python3-fhash libfhash-dev libfhash0 fhash)

# The second stage, in the mount namespace: "test-debian.sh --in-root DIR" where DIR holds the .debs.
if [ "${1:-}" = --in-root ]; then
        tmp=$2
        root=$tmp/root
        # Private from here on: nothing mounted below is seen outside, and it all goes at exit.
        mount --make-rprivate / || fail "cannot make the namespace's mounts private"
        mkdir -p "$root" "$tmp/layer"
        mount -t tmpfs -o mode=0755 fhash-deb-layer "$tmp/layer" || fail "cannot mount a tmpfs"
        mkdir "$tmp/layer/upper" "$tmp/layer/work"
        mount -t overlay -o "lowerdir=/,upperdir=$tmp/layer/upper,workdir=$tmp/layer/work" fhash-deb-root "$root" ||
                skip "cannot mount an overlay of / (overlayfs): no throwaway root to install into"
        for d in proc sys dev; do
                mount --rbind "/$d" "$root/$d" || fail "cannot bind /$d into the root"
        done
        # A /run and a /tmp of the root's own: no bus socket of this machine's for maintainer
        # scripts to talk to, no files of its /tmp.
        mount -t tmpfs -o mode=0755 fhash-deb-run "$root/run" || fail "cannot mount /run in the root"
        mount -t tmpfs -o mode=1777 fhash-deb-tmp "$root/tmp" || fail "cannot mount /tmp in the root"
        # Nothing started by maintainer scripts (invoke-rc.d's convention for chroots).
        printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d" && chmod 755 "$root/usr/sbin/policy-rc.d"
        # The stage below runs chrooted: the .debs and a scratch directory inside the root.
        mkdir "$root/tmp/debs" && cp "$tmp"/*.deb "$root/tmp/debs/" || fail "cannot copy the packages into the root"
        # An fhash of this machine's goes in the root only, so that purging ours leaves nothing.
        for p in "${pkgs[@]}"; do
                chroot "$root" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' &&
                        { chroot "$root" dpkg --purge "$p" >/dev/null 2>&1 || fail "cannot purge this machine's $p in the root"; }
        done
        exec chroot "$root" /bin/bash -s -- "${pkgs[@]}" <<'ROOT'
set -uo pipefail
fail() { echo "FAIL: $*"; exit 1; }
pkgs=("$@")
tmp=/tmp/debs
cd "$tmp" || fail "no $tmp in the root"
# Installed: the files where Debian wants them, and they work.
dpkg -i $(for p in "${pkgs[@]}"; do ls ./"${p}"_*.deb; done) >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i failed"; }
for f in /usr/bin/fhashctl /usr/libexec/fhashd /lib/systemd/system/fhashd.service /usr/lib/systemd/user/fhashd.service \
        /usr/share/dbus-1/system.d/org.fhash.Hasher1.conf /usr/share/dbus-1/system-services/org.fhash.Hasher1.service \
        /etc/fhash/fhashd.conf /usr/include/fhash/fhash.h /usr/share/man/man1/fhashctl.1.gz /usr/share/man/man3/libfhash.3.gz; do
        [ -e "$f" ] || fail "$f is not installed"
done
ls /usr/lib/*/libfhash.so.0 >/dev/null 2>&1 || fail "libfhash.so.0 is not installed"
ls /usr/lib/*/libfhash-glib.so.0 /usr/lib/*/girepository-1.0/Fhash-1.0.typelib /usr/share/gir-1.0/Fhash-1.0.gir \
        >/dev/null 2>&1 || fail "libfhash-glib.so.0, its typelib or its .gir is not installed"
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
pkg-config --exists fhash-glib || fail "pkg-config fhash-glib"
# The typelib as PyGObject finds it (no GI_TYPELIB_PATH): a local run of the installed library.
got=$(env -u LD_LIBRARY_PATH -u GI_TYPELIB_PATH /usr/bin/python3 -c '
import sys, gi
gi.require_version("Fhash", "1.0")
from gi.repository import Fhash, GLib
c = Fhash.Client.new_for_address(None, Fhash.ClientFlags.LOCAL)
loop, box = GLib.MainLoop(), {}
c.hash_async([sys.argv[1]], None, lambda o, r: (box.update(r=o.hash_finish(r)), loop.quit()))
loop.run()
print(box["r"][0].get_digest())' "$tmp/f") || fail "the installed typelib and libfhash-glib do not work"
[ "$got" = "$(sha256sum <"$tmp/f" | cut -d' ' -f1)" ] || fail "libfhash-glib through the typelib gave $got"
# The documentation and examples: README, the C, Python, PyGObject and GJS examples, and
# libfhash-glib's API reference (with its search index uncompressed, and found by devhelp).
for f in /usr/share/doc/fhash/README.md /usr/share/doc/python3-fhash/README.md \
        /usr/share/doc/libfhash-dev/examples/hash-files.c /usr/share/doc/libfhash-dev/examples/hash-files-async.c \
        /usr/share/doc/libfhash-dev/examples/hash-files-event.c /usr/share/doc/python3-fhash/examples/hash_files.py \
        /usr/share/doc/libfhash-glib-dev/examples/hash_files_gi.py /usr/share/doc/libfhash-glib-dev/examples/hash-files.js \
        /usr/share/doc/fhash-glib/index.html /usr/share/doc/fhash-glib/class.Client.html /usr/share/doc/fhash-glib/index.json \
        /usr/share/devhelp/books/fhash-glib/fhash-glib.devhelp2 /usr/share/man/man8/fhash-apt-verify.8.gz; do
        # dh_compress compresses what is over 4 kB.
        [ -e "$f" ] || [ -e "$f.gz" ] || fail "$f is not installed"
done
# The installed C example builds against the installed library.
cc -Wall -Werror -o "$tmp/hash-files" /usr/share/doc/libfhash-dev/examples/hash-files.c $pkgconf 2>"$tmp/cc.log" ||
        { cat "$tmp/cc.log"; fail "the installed examples/hash-files.c does not build with pkg-config fhash"; }
echo "ok: installed: fhashctl, the unit, the bus files, libfhash ($pkgconf), python3-fhash and libfhash-glib (typelib) work; README, examples and the API reference are there"

# Purged: nothing of theirs is left.
# The packages' files and links (not their directories, which /lib -> usr/lib makes ambiguous).
files=$(for p in "${pkgs[@]}"; do dpkg-deb -c ./"${p}"_*.deb; done | awk '$1 ~ /^[-l]/ { print substr($6, 2) }' | sort -u)
[ -n "$files" ] || fail "no files listed in the packages"
dpkg --purge "${pkgs[@]}" >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "dpkg --purge failed"; }
left=$(while read -r f; do if [ -e "$f" ] || [ -L "$f" ]; then echo "$f"; fi; done <<<"$files")
[ -z "$left" ] || fail "left behind after purge: $left"
[ ! -e /etc/fhash ] || fail "/etc/fhash is left after purge"
echo "ok: purged in the root: nothing of the packages is left"
ROOT
fi

src=${FHASH_SOURCE_ROOT:?FHASH_SOURCE_ROOT must point at the source tree}
for p in dpkg-buildpackage dh lintian dpkg rsync git sha256sum unshare chroot /usr/bin/python3; do
        command -v "$p" >/dev/null || skip "$p is not installed (scripts/deps.sh installs it)"
done
[ "$(id -u)" -eq 0 ] || skip "a mount namespace and an overlay to install the packages into need root"

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/fhash-deb-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# The tree as it is (committed or not), without build directories, git data or bench data, made a
# git repository of its own so that what the build leaves in it shows.
mkdir "$tmp/fhash"
rsync -a --exclude '/.git' --exclude '/build*' --exclude '/bench/data' --exclude '__pycache__' "$src/" "$tmp/fhash/"
cd "$tmp/fhash" || fail "no copy"
git init -q && git add -A && git -c user.name=test -c user.email=test@invalid commit -q -m copy ||
        fail "cannot make the copy a git repository"
if ! dpkg-buildpackage -b -us -uc >"$tmp/build.log" 2>&1; then
        tail -40 "$tmp/build.log"
        fail "dpkg-buildpackage failed"
fi
# The build writes nowhere in the tree but debhelper's and meson's own places (debian/PACKAGE/,
# debian/tmp/, debian/files, their logs and substvars, the obj-* build directory), which dpkg-genchanges
# reads after the build and "debian/rules clean" removes; no file of the tree changes. Then the clean
# leaves the tree as it was, ignored files included (meson's build directory ignores itself).
pkgre=$(IFS='|'; echo "${pkgs[*]}" | sed 's/\./\\./g')
stray=$(git status --porcelain --ignored --untracked-files=normal | grep -Ev \
        "^(\?\?|!!) (debian/(files|tmp/|\.debhelper/|debhelper-build-stamp|($pkgre)(-dbgsym)?/|($pkgre)\.(substvars|debhelper\.log|[a-z]+\.debhelper))|obj-[^/]*/)$")
[ -z "$stray" ] || fail "the build changed or left in the tree: $stray"
dpkg-buildpackage -T clean >"$tmp/clean.log" 2>&1 || { cat "$tmp/clean.log"; fail "debian/rules clean failed"; }
left=$(git status --porcelain --ignored --untracked-files=all)
[ -z "$left" ] || fail "the tree is not as it was after the build and debian/rules clean: $left"
echo "ok: the build touched nothing in the tree outside debhelper's places; clean leaves it as it was"
cd "$tmp" || fail "no tmp"
changes=$(ls fhash_*.changes)
for p in "${pkgs[@]}"; do
        ls "${p}"_*.deb >/dev/null 2>&1 || fail "no package $p was built: $(ls)"
done
echo "ok: dpkg-buildpackage built $(ls ./*.deb | xargs -n1 basename | tr '\n' ' ')"

# lintian, pedantic and with the informational and experimental tags: no error, and no tag at all
# but the ones debian/README.lintian lists with why (the packages' own are explained in their
# debian/PACKAGE.lintian-overrides, which silence them).
lintian --pedantic -I -E --fail-on error --tag-display-limit 0 "$changes" >"$tmp/lintian.log" 2>&1
rc=$?
cat "$tmp/lintian.log"
[ $rc -eq 0 ] || fail "lintian reports errors (above)"
unexplained=$(grep -E '^[EWIPXCO]: ' "$tmp/lintian.log" | grep -vxF -f <(grep -E '^[EWIPXCO]: ' "$src/debian/README.lintian"))
[ -z "$unexplained" ] || fail "lintian tags that debian/README.lintian does not explain: $unexplained"
echo "ok: lintian --pedantic: no tag but the $(grep -cE '^[EWIPXCO]: ' "$tmp/lintian.log") that debian/README.lintian explains"

# BLAKE3's code, compiled into fhashd, fhashctl and libfhash from librust-blake3-dev, is named with
# the version of its source the packages were built with.
blake3=$(dpkg-query -W -f='${source:Package} (= ${source:Version})' librust-blake3-dev) || fail "no librust-blake3-dev"
for p in fhash libfhash0; do
        got=$(dpkg-deb -f ./"${p}"_*.deb Static-Built-Using)
        [ "$got" = "$blake3" ] || fail "$p: Static-Built-Using is '$got', not '$blake3'"
done
grep -q '^License: CC0-1.0 or Apache-2.0' "$src/debian/copyright" || fail "debian/copyright has no stanza for BLAKE3"
echo "ok: fhash and libfhash0 say Static-Built-Using: $blake3"

# fhashd is bus-activated: the maintainer scripts neither start, restart nor stop it.
mkdir "$tmp/ctrl" && dpkg-deb -e ./fhash_*.deb "$tmp/ctrl" || fail "cannot read fhash's control files"
starts=$(cat "$tmp/ctrl"/preinst "$tmp/ctrl"/postinst "$tmp/ctrl"/prerm 2>/dev/null |
        grep -E '(deb-systemd-invoke|systemctl|invoke-rc\.d).*(start|stop|restart)')
[ -z "$starts" ] || fail "fhash's maintainer scripts start or stop fhashd: $starts"
echo "ok: fhash's maintainer scripts neither start nor restart fhashd"

# This machine's record of the packages (installed or not, which version), to compare after.
host_state() { dpkg-query -W -f='${Package} ${Status} ${Version}\n' "${pkgs[@]}" 2>&1; sha256sum /var/lib/dpkg/status | cut -d' ' -f1; }
before=$(host_state)
unshare --mount --propagation private -- "$BASH" "$self" --in-root "$tmp"
rc=$?
after=$(host_state)
[ "$before" = "$after" ] || fail "this machine's dpkg state changed: before: $before; after: $after"
[ $rc -eq 0 ] || exit $rc
echo "ok: this machine's dpkg state is as it was (/var/lib/dpkg/status unchanged)"
echo "PASS: packages build, pass lintian, work installed and leave nothing behind, in a throwaway root"
