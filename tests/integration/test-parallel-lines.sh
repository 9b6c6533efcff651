#!/bin/bash
# SPDX-License-Identifier: MIT
# test-parallel-lines.sh: processes that share one pipe never interleave their lines (issue 26,
# item 3). As coreutils' md5sum-parallel.sh, but 25 rounds (FHASH_PARALLEL_ROUNDS; fewer in a
# sanitizer's build) of xargs -P4 over 1,500 names each, for
# fhashctl hash (in-process), fhashctl check, and the md5sum, b3sum and xxhsum personalities: every
# line of the pipe must be a whole line of the expected form, and every name must come back exactly
# as often as it was given.
set -euo pipefail

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

fhashctl=${FHASHCTL:?FHASHCTL must point at the fhashctl under test}
[ -x "$fhashctl" ] || skip "no fhashctl at $fhashctl"
rounds=${FHASH_PARALLEL_ROUNDS:-25}
command -v xargs >/dev/null || skip "xargs is not installed"
xargs -P2 </dev/null >/dev/null 2>&1 || skip "xargs -P is not supported"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fhash-parallel-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir bin t
for tool in md5sum b3sum xxhsum; do ln -s "$fhashctl" "bin/$tool"; done
# Names of several lengths, so that the lines of different processes differ in size and a torn
# write would show as a line of the wrong form; files of a few bytes, some empty.
for i in $(seq 500); do
        printf '%*s' $((i % 7)) '' > "t/$(printf 'f%0*d' $((1 + i % 40)) "$i")"
done
find t t t -type f | sort > names
n=$(wc -l < names)

# round LABEL PATTERN COMMAND...: $rounds runs of the command over all names, 4 at a time, 100 names each
round() {
        local label=$1 pattern=$2
        shift 2
        for run in $(seq "$rounds"); do
                xargs -n100 -P4 "$@" < names > out 2> err || { cat err; fail "$label: run $run failed"; }
                [ ! -s err ] || { head err; fail "$label: run $run wrote to stderr"; }
                if grep -qvE "$pattern" out; then
                        grep -nvE "$pattern" out | head -5
                        fail "$label: run $run: lines torn or mixed (above)"
                fi
                sed -E "s#$pattern#\\1#" out | sort > got
                cmp -s got names || fail "$label: run $run: names missing, doubled or garbled"
        done
        echo "ok: $label: $rounds runs of $n lines, every line whole"
}

round "fhashctl hash --local" '^[0-9a-f]{32}  (t/f[0-9]+)$' "$fhashctl" --local hash -a md5
round "md5sum" '^[0-9a-f]{32}  (t/f[0-9]+)$' bin/md5sum
round "b3sum" '^[0-9a-f]{64}  (t/f[0-9]+)$' bin/b3sum
round "xxhsum" '^[0-9a-f]{16}  (t/f[0-9]+)$' bin/xxhsum

# check: each process checks a manifest of its own; the OK lines share the pipe.
bin/md5sum $(sort -u names) > MD5SUMS
split -l 60 MD5SUMS part.
ls part.* > parts
for run in $(seq "$rounds"); do
        xargs -n1 -P4 "$fhashctl" --local check < parts > out 2> err || { cat err; fail "check: run $run failed"; }
        [ ! -s err ] || { head err; fail "check: run $run wrote to stderr"; }
        if grep -qvE '^t/f[0-9]+: OK$' out; then
                grep -nvE '^t/f[0-9]+: OK$' out | head -5
                fail "check: run $run: lines torn or mixed (above)"
        fi
        [ "$(wc -l < out)" -eq "$(wc -l < MD5SUMS)" ] || fail "check: run $run: $(wc -l < out) lines"
done
echo "ok: fhashctl check: $rounds runs, every line whole"
