#!/bin/bash
# SPDX-License-Identifier: MIT
# test-personality.sh: how fhashctl becomes a tool (a link's name, or --as NAME first), what it says
# when asked to be one it cannot be, that its verbs still come from their module, and that the binary
# itself needs nothing but libc (the start-up of one small file per process depends on it).
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

fhashctl=${FHASHCTL:?FHASHCTL must point at the fhashctl under test}
[ -x "$fhashctl" ] || skip "no fhashctl at $fhashctl"
command -v sha256sum >/dev/null || skip "coreutils' sha256sum is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fhash-persona-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf 'some data\n' > f
want=$(sha256sum f)

# A link of the tool's name, anywhere, and through a chain of links.
mkdir -p a/b
ln -s "$fhashctl" a/b/sha256sum
ln -s b/sha256sum a/sha256sum
[ "$(a/b/sha256sum f)" = "$want" ] || fail "a link named sha256sum is not sha256sum"
[ "$(a/sha256sum f)" = "$want" ] || fail "a link to a link named sha256sum is not sha256sum"
echo "ok: links of the tool's name"

# --as NAME and --as=NAME, first only; the tool names itself as such.
[ "$("$fhashctl" --as sha256sum f)" = "$want" ] || fail "--as sha256sum"
[ "$("$fhashctl" --as=sha256sum f)" = "$want" ] || fail "--as=sha256sum"
err=$("$fhashctl" --as md5sum nosuch 2>&1 >/dev/null) && fail "md5sum of a missing file succeeded"
[ "$err" = "md5sum: nosuch: No such file or directory" ] || fail "--as md5sum names itself: $err"
echo "ok: --as NAME, --as=NAME"

rc=0; err=$("$fhashctl" --as nosuchtool f 2>&1) || rc=$?
[ $rc -eq 2 ] || fail "--as nosuchtool exited $rc, not 2"
case $err in *"'nosuchtool' is not a tool fhashctl can be"*sha256sum*xxhsum*) ;; *) fail "--as nosuchtool: $err" ;; esac
rc=0; "$fhashctl" --as >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "--as without a name exited $rc, not 2"
echo "ok: --as of no tool is a usage error that lists the tools"

# Anywhere but first, --as is not fhashctl's: the verb sees it.
rc=0; "$fhashctl" hash --as sha256sum f >/dev/null 2>&1 || rc=$?
[ $rc -eq 2 ] || fail "'hash --as' exited $rc, not a usage error"
echo "ok: --as only as the first argument"

# The verbs come from their module; without it, fhashctl says where it looked.
[ "$("$fhashctl" --local hash f)" = "$want" ] || fail "fhashctl --local hash"
cp "$fhashctl" ./fhashctl-alone
rc=0; err=$(./fhashctl-alone --local hash f 2>&1) || rc=$?
if [ $rc -eq 0 ]; then
        # An installed module in FHASH_PKGLIBDIR served it: fine, but then it must be that one.
        echo "ok: the copy found an installed module"
else
        case $err in *"cannot load its verbs from"*fhashctl-verbs.so*) ;; *) fail "without the module: $err" ;; esac
        echo "ok: without its module fhashctl says so"
fi
[ "$(./fhashctl-alone --as sha256sum f)" = "$want" ] || fail "a tool must not need the module"

# Nothing but libc (and the loader): no libcrypto, libsystemd, liburing, libfhash.
if command -v readelf >/dev/null; then
        needed=$(readelf -d "$fhashctl" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^libc\.so\.' |
                grep -v '^ld-linux' | grep -v '^lib\(a\|ub\|t\)san' | grep -v '^libstdc++\|^libm\.so\|^libgcc_s' || true)
        [ -z "$needed" ] || fail "fhashctl needs more than libc: $needed"
        echo "ok: fhashctl's binary needs libc alone"
fi
echo "PASS"
