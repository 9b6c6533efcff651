#!/bin/bash
# SPDX-License-Identifier: MIT
# fhashctl against coreutils 9.1, b3sum and xxhsum on a tree of awkward names, in-process and through a
# real fhashd on a private dbus-daemon: byte-identical output, each accepts the other's manifests,
# check-mode messages and exit codes, JSON that Python parses, progress only on a terminal.
set -u

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
failures=0

: "${FHASHCTL:?}" "${FHASHD:?}"
for p in sha256sum sha512sum sha1sum md5sum b2sum cksum b3sum xxhsum dbus-daemon /usr/bin/python3 script; do
    command -v "$p" >/dev/null || skip "$p is not installed"
done
export LC_ALL=C.UTF-8

tmp=$(mktemp -d /var/tmp/fhash-ctl-XXXXXX) || exit 1
bus_pid=
fhashd_pid=
cleanup() {
    [ -n "$fhashd_pid" ] && kill "$fhashd_pid" 2>/dev/null && wait "$fhashd_pid" 2>/dev/null
    [ -n "$bus_pid" ] && kill "$bus_pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# The tree: every name sha256sum must escape, plus ones it must not touch.
mkdir "$tmp/t" && cd "$tmp/t" || exit 1
printf 'a' > 'sp ace'
printf 'b' > $'new\nline'
printf 'c' > 'back\slash'
printf 'd' > $'cr\rret'
printf 'e' > $'bad\xffutf'
printf 'f' > '-dash'
printf '' > 'empty'
printf 'g' > $'b\\o\nth'
head -c 300000 /dev/urandom > 'big file'
names=(* )
# b3sum 1.2 neither escapes '\r' nor keeps bytes that are not UTF-8 (it prints U+FFFD): compare it on
# the names where both conventions agree, and check that fhashctl keeps coreutils' (lossless) one.
b3names=('sp ace' $'new\nline' 'back\slash' '-dash' 'empty' $'b\\o\nth' 'big file')

# check's verdicts escape names as the newest coreutils does, as digest lines do: 9.1 escaped them
# only for a newline, and printed '\r' and '\\' raw. Its lines, as the newer rule writes them.
coreutils_escape() { sed '/^\\/!{/[\\\r]/{s/\\/\\\\/g; s/\r/\\r/g; s/^/\\/}}'; }

# --- fhashd on a private bus ---------------------------------------------------------------------
cat > "$tmp/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=$tmp/bus</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/>
<allow own="*"/><allow user="*"/></policy></busconfig>
EOF
out=$(dbus-daemon --config-file="$tmp/bus.conf" --fork --print-address=1 --print-pid=1) || skip "dbus-daemon would not start"
addr=$(sed -n 1p <<<"$out")
bus_pid=$(sed -n 2p <<<"$out")
"$FHASHD" --address "$addr" --config /dev/null --idle-exit 0 --log-level warning 2>"$tmp/fhashd.log" &
fhashd_pid=$!
for _ in $(seq 50); do
    "$FHASHCTL" --address "$addr" status >/dev/null 2>&1 && break
    sleep 0.1
done
"$FHASHCTL" --address "$addr" status >/dev/null 2>&1 || skip "fhashd did not come up: $(cat "$tmp/fhashd.log")"

modes=("--local" "--daemon --address $addr")
head -c 3000017 /dev/urandom > "$tmp/p3m"
head -c 32 /dev/urandom > "$tmp/key"

# --- hash: byte-identical to the reference tools -------------------------------------------------
for mode in "${modes[@]}"; do
    for pair in sha256:sha256sum sha512:sha512sum sha1:sha1sum md5:md5sum blake2b:b2sum; do
        algo=${pair%%:*} tool=${pair#*:}
        $tool -- "${names[@]}" > "$tmp/ref" 2>/dev/null
        # shellcheck disable=SC2086
        "$FHASHCTL" $mode hash -a "$algo" -- "${names[@]}" > "$tmp/out" 2>"$tmp/err" || fail "$mode $algo: exit $?"
        cmp -s "$tmp/ref" "$tmp/out" || fail "$mode $algo: output differs from $tool"
        $tool -z -- "${names[@]}" > "$tmp/ref"
        "$FHASHCTL" $mode hash -z -a "$algo" -- "${names[@]}" > "$tmp/out" 2>/dev/null
        cmp -s "$tmp/ref" "$tmp/out" || fail "$mode $algo -z: output differs from $tool -z"
        $tool --tag -- "${names[@]}" > "$tmp/ref"
        "$FHASHCTL" $mode hash --tag -a "$algo" -- "${names[@]}" > "$tmp/out" 2>/dev/null
        cmp -s "$tmp/ref" "$tmp/out" || fail "$mode $algo --tag: output differs from $tool --tag"
    done
    cksum --tag -a sha256 -- "${names[@]}" > "$tmp/ref"
    "$FHASHCTL" $mode hash --tag -- "${names[@]}" > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --tag differs from cksum --tag -a sha256"

    b3sum -- "${b3names[@]}" > "$tmp/ref"
    "$FHASHCTL" $mode hash -a blake3 -- "${b3names[@]}" > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: blake3 differs from b3sum"
    xxhsum -H128 -- 'sp ace' 'big file' -dash > "$tmp/ref"
    "$FHASHCTL" $mode hash -a xxh128 -- 'sp ace' 'big file' -dash > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: xxh128 differs from xxhsum -H128"
    xxhsum -H3 -- 'sp ace' 'big file' > "$tmp/ref"   # 0.8.1 prints XXH3 in BSD form
    "$FHASHCTL" $mode hash --tag -a xxh3 -- 'sp ace' 'big file' > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --tag xxh3 differs from xxhsum -H3"
    # coreutils' and b3sum's flags: byte-identical to the tools for the same flags.
    sha256sum -b -- "${names[@]}" > "$tmp/ref"
    "$FHASHCTL" $mode hash -b -- "${names[@]}" > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: -b differs from sha256sum -b"
    sha256sum -t -- "${names[@]}" > "$tmp/ref"
    "$FHASHCTL" $mode hash -t --untagged -- "${names[@]}" > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: -t --untagged differs from sha256sum -t"
    b3sum --raw -- 'big file' > "$tmp/ref"
    "$FHASHCTL" $mode hash -a blake3 --raw -- 'big file' > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --raw differs from b3sum --raw"
    "$FHASHCTL" $mode hash --raw -- 'sp ace' 'big file' > /dev/null 2>&1
    [ $? = 2 ] || fail "$mode: --raw with two inputs must be a usage error"
    b3sum --no-names -- "${b3names[@]}" > "$tmp/ref"
    "$FHASHCTL" $mode hash -a blake3 --no-names -- "${b3names[@]}" > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --no-names differs from b3sum --no-names"
    # b2sum -l, b3sum --length/--derive-key/--keyed: lengths in bits (b3sum's are bytes); a 3 MB
    # file goes to both workers as pieces, merged in the keyed / derive-key mode.
    p=("${b3names[@]}" "$tmp/p3m")
    for bits in 8 256 384; do
        b2sum -l "$bits" -- "${names[@]}" > "$tmp/ref"
        "$FHASHCTL" $mode hash -a blake2b -l "$bits" -- "${names[@]}" > "$tmp/out" 2>/dev/null
        cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: -l $bits differs from b2sum -l $bits"
        b2sum --tag -l "$bits" -- "${names[@]}" > "$tmp/ref"
        "$FHASHCTL" $mode hash --tag -a blake2b -l "$bits" -- "${names[@]}" > "$tmp/out" 2>/dev/null
        cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --tag -l $bits differs from b2sum --tag -l $bits"
    done
    for bytes in 1 17 64; do
        b3sum --length "$bytes" -- "${p[@]}" > "$tmp/ref"
        "$FHASHCTL" $mode hash -a blake3 --length $((bytes * 8)) -- "${p[@]}" > "$tmp/out" 2>/dev/null
        cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --length $((bytes * 8)) differs from b3sum --length $bytes"
    done
    b3sum --derive-key "fhash test 2026-11-24 context" -- "${p[@]}" > "$tmp/ref"
    "$FHASHCTL" $mode hash -a blake3 --derive-key "fhash test 2026-11-24 context" -- "${p[@]}" > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --derive-key differs from b3sum --derive-key"
    b3sum --keyed --length 40 -- "${p[@]}" < "$tmp/key" > "$tmp/ref"
    "$FHASHCTL" $mode hash -a blake3 --keyed -l 320 -- "${p[@]}" < "$tmp/key" > "$tmp/out" 2>"$tmp/err"
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: --keyed -l 320 differs from b3sum --keyed --length 40: $(cat "$tmp/err")"
    head -c 31 "$tmp/key" | "$FHASHCTL" $mode hash -a blake3 --keyed -- 'sp ace' > /dev/null 2> "$tmp/err"
    [ $? = 1 ] && grep -q "expected 32 key bytes" "$tmp/err" || fail "$mode: a 31-byte key: $(cat "$tmp/err")"
    for bad in "-l 256" "-a blake2s -l 264" "-a blake2b -l 12" "-a blake2b --keyed" "-a blake3 --keyed --derive-key x" "--derive-key x"; do
        # shellcheck disable=SC2086
        "$FHASHCTL" $mode hash $bad -- 'sp ace' < "$tmp/key" > /dev/null 2> "$tmp/err"
        [ $? = 2 ] && [ -s "$tmp/err" ] || fail "$mode: hash $bad must be a usage error: $(cat "$tmp/err")"
    done
    # check reads b2sum -l lines as b2sum -c does: the length from the tag, or from the hex of an
    # untagged line of -a blake2b (with or without -l); BLAKE3 lines of another length with -l.
    { b2sum --tag -l 256 -- "${p[@]}"; b2sum --tag -l 8 -- 'sp ace'; b2sum --tag -- 'empty'; } > "$tmp/b2tag"
    { b2sum -l 256 -- "${p[@]}"; b2sum -l 128 -- 'sp ace'; } > "$tmp/b2len"
    for m in "b2tag" "b2len"; do
        b2sum -c "$tmp/$m" 2>&1 | coreutils_escape > "$tmp/ref"; ref_rc=${PIPESTATUS[0]}
        "$FHASHCTL" $mode check -a blake2b "$tmp/$m" > "$tmp/out" 2>&1; rc=$?
        [ "$rc" = "$ref_rc" ] && cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: check -a blake2b $m differs from b2sum -c: $(diff "$tmp/ref" "$tmp/out")"
        "$FHASHCTL" $mode check -a blake2b -l 512 "$tmp/$m" > "$tmp/out" 2>&1 && cmp -s "$tmp/ref" "$tmp/out" ||
            fail "$mode: check -a blake2b -l 512 $m differs from b2sum -c"
    done
    "$FHASHCTL" $mode check "$tmp/b2tag" > "$tmp/out" 2>&1 && b2sum -c "$tmp/b2tag" 2>&1 | coreutils_escape | cmp -s - "$tmp/out" ||
        fail "$mode: check of b2sum --tag -l lines without -a"
    sed '1s/^\([0-9a-f]\)/\1\1/; 1s/^\(.\{64\}\)./\1/' "$tmp/b2len" > "$tmp/b2bad"   # a changed digest
    b2sum -c "$tmp/b2bad" 2>&1 | coreutils_escape > "$tmp/ref"; ref_rc=${PIPESTATUS[0]}
    "$FHASHCTL" $mode check -a blake2b "$tmp/b2bad" > "$tmp/out" 2>&1; rc=$?
    [ "$rc" = "$ref_rc" ] && [ "$rc" = 1 ] && sed 's/^b2sum:/fhashctl:/' "$tmp/ref" | cmp -s - "$tmp/out" ||
        fail "$mode: a changed b2sum -l 256 line: rc $rc (b2sum $ref_rc): $(diff "$tmp/ref" "$tmp/out")"
    b3sum --length 16 -- "${p[@]}" > "$tmp/b3len"
    "$FHASHCTL" $mode check -a blake3 -l 128 "$tmp/b3len" > "$tmp/out" 2>&1 || fail "$mode: check -a blake3 -l 128 of b3sum --length 16: $(cat "$tmp/out")"
    [ "$(grep -c ': OK$' "$tmp/out")" = "${#p[@]}" ] || fail "$mode: check -a blake3 -l 128: $(cat "$tmp/out")"
    "$FHASHCTL" $mode check -a blake3 "$tmp/b3len" > /dev/null 2>&1 && fail "$mode: 128-bit BLAKE3 lines taken without -l"
    for bad in "--keyed" "-a blake3 --derive-key x" "-a sha256 -l 256"; do
        # shellcheck disable=SC2086
        "$FHASHCTL" $mode check $bad "$tmp/b3len" < "$tmp/key" > /dev/null 2> "$tmp/err"
        [ $? = 2 ] && [ -s "$tmp/err" ] || fail "$mode: check $bad must be a usage error: $(cat "$tmp/err")"
    done
    sha256sum -b -- 'sp ace' 'big file' > "$tmp/bsum"
    "$FHASHCTL" $mode hash -c "$tmp/bsum" > "$tmp/out" 2>/dev/null || fail "$mode: hash -c of sha256sum -b lines"
    sha256sum -c "$tmp/bsum" | cmp -s - "$tmp/out" || fail "$mode: hash -c differs from sha256sum -c"
    "$FHASHCTL" $mode check -q "$tmp/bsum" > "$tmp/out" 2>/dev/null || fail "$mode: check -q exit"
    [ -s "$tmp/out" ] && fail "$mode: check -q printed $(cat "$tmp/out")"
    # Without --tag too: an untagged XXH3 line would be read as XXH64 by xxhsum -c.
    xxhsum -H3 -- 'sp ace' 'big file' > "$tmp/ref"
    "$FHASHCTL" $mode hash -a xxh3 -- 'sp ace' 'big file' > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: xxh3 differs from xxhsum -H3"
    xxhsum -c "$tmp/out" > /dev/null 2>&1 || fail "$mode: xxhsum -c does not accept fhashctl's xxh3 lines"

    # Several algorithms in one read: per file, a tagged line per algorithm in the order asked,
    # each what that algorithm's tool prints with --tag; cksum -c and our check accept them.
    : > "$tmp/ref"
    for n in "${names[@]}" "$tmp/p3m"; do
        { sha256sum --tag -- "$n"; b2sum --tag -- "$n"; md5sum --tag -- "$n"; } >> "$tmp/ref"
    done
    "$FHASHCTL" $mode hash -a sha256,blake2b,md5 -- "${names[@]}" "$tmp/p3m" > "$tmp/out" 2>"$tmp/err"
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: -a sha256,blake2b,md5 differs from sha256sum/b2sum/md5sum --tag: $(cat "$tmp/err")"
    cksum -c "$tmp/out" > /dev/null 2>&1 || fail "$mode: cksum -c rejects -a sha256,blake2b,md5 lines"
    "$FHASHCTL" $mode check "$tmp/out" > /dev/null 2>&1 || fail "$mode: check rejects -a sha256,blake2b,md5 lines"
    : > "$tmp/ref"
    for n in 'sp ace' 'big file' "$tmp/p3m"; do
        { xxhsum -H3 -- "$n"; printf 'BLAKE3 (%s) = %s\n' "$n" "$(b3sum --no-names -- "$n")"; xxhsum -H0 --tag -- "$n"; } >> "$tmp/ref"
    done
    "$FHASHCTL" $mode hash -a xxh3,blake3,xxh32 -- 'sp ace' 'big file' "$tmp/p3m" > "$tmp/out" 2>"$tmp/err"
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: -a xxh3,blake3,xxh32 differs from xxhsum/b3sum: $(diff "$tmp/ref" "$tmp/out")"
    for bad in "hash -a sha256,sha256" "hash -a md5,sha1,sha256,sha512,blake3" "hash -a sha256,md5 -b" \
               "hash -a sha256,md5 --no-names" "hash -a blake3,md5 -l 128" "hash -a sha256," "check -a md5,sha1"; do
        # shellcheck disable=SC2086
        "$FHASHCTL" $mode $bad -- 'sp ace' > /dev/null 2> "$tmp/err"
        [ $? = 2 ] && [ -s "$tmp/err" ] || fail "$mode: $bad must be a usage error: $(cat "$tmp/err")"
    done

    # Standard input, and a missing file among good ones: message and exit code as sha256sum.
    printf 'stdin data' | sha256sum > "$tmp/ref"
    printf 'stdin data' | "$FHASHCTL" $mode hash - > "$tmp/out" 2>/dev/null
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: stdin"
    sha256sum -- 'sp ace' 'no such' 'sp ace' > "$tmp/ref" 2> "$tmp/referr"; ref_rc=$?
    "$FHASHCTL" $mode hash -- 'sp ace' 'no such' 'sp ace' > "$tmp/out" 2> "$tmp/err"; rc=$?
    [ "$rc" = "$ref_rc" ] || fail "$mode: missing file exit $rc, sha256sum $ref_rc"
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode: missing file stdout"
    sed 's/^sha256sum:/fhashctl:/' "$tmp/referr" | cmp -s - "$tmp/err" || fail "$mode: missing file stderr: $(cat "$tmp/err")"
    "$FHASHCTL" $mode hash -- . > /dev/null 2> "$tmp/err" && fail "$mode: a directory hashed"
    grep -qx 'fhashctl: .: Is a directory' "$tmp/err" || fail "$mode: directory message: $(cat "$tmp/err")"
done

# --- the reference tools accept fhashctl's output -------------------------------------------------
"$FHASHCTL" --local hash -- "${names[@]}" > "$tmp/m256"
sha256sum --strict -c "$tmp/m256" > /dev/null || fail "sha256sum -c rejects fhashctl's manifest"
"$FHASHCTL" --local hash --tag -a md5 -- "${names[@]}" > "$tmp/mmd5"
md5sum --strict -c "$tmp/mmd5" > /dev/null || fail "md5sum -c rejects fhashctl --tag"
"$FHASHCTL" --local hash -a blake3 -- "${b3names[@]}" > "$tmp/mb3"
b3sum --check "$tmp/mb3" > /dev/null || fail "b3sum --check rejects fhashctl's manifest"

# --- fhashctl check accepts theirs ----------------------------------------------------------------
sha256sum -- "${names[@]}" > "$tmp/c256"
sha512sum -- "${names[@]}" > "$tmp/c512"
b2sum -- "${names[@]}" > "$tmp/cb2"
cksum --tag -a sha256 -- "${names[@]}" > "$tmp/ctag"
b3sum -- "${b3names[@]}" > "$tmp/cb3"
xxhsum -H128 -- 'sp ace' 'big file' -dash > "$tmp/cxx128"   # xxhsum 0.8.1 does not escape names
xxhsum -H3 -- 'sp ace' 'big file' > "$tmp/cxx3" 2>/dev/null
# Mixed tags in one file: the algorithm comes from each line.
{ md5sum --tag 'sp ace'; b2sum --tag 'big file'; sha1sum --tag -- -dash; } > "$tmp/cmixed"
# The bad one: a mismatch, a missing file, a malformed line, as sha256sum -c sees them.
{ cat "$tmp/c256"; echo "garbage line"
  echo "0000000000000000000000000000000000000000000000000000000000000000  sp ace"
  echo "ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb  missing"; } > "$tmp/cbad"
: > "$tmp/cempty"

for mode in "${modes[@]}"; do
    for m in c256 c512 ctag cmixed cxx3; do
        "$FHASHCTL" $mode check "$tmp/$m" > "$tmp/out" 2> "$tmp/err" || fail "$mode check $m: exit $? $(cat "$tmp/err")"
    done
    "$FHASHCTL" $mode check -a blake2b "$tmp/cb2" > /dev/null 2>&1 || fail "$mode check b2sum manifest"
    "$FHASHCTL" $mode check -a blake3 "$tmp/cb3" > /dev/null 2>&1 || fail "$mode check b3sum manifest"
    "$FHASHCTL" $mode check -a xxh128 "$tmp/cxx128" > /dev/null 2>&1 || fail "$mode check xxhsum -H128 manifest"
    # Untagged lines: the manifest's name, then the length as its most common writer reads it.
    xxhsum -- 'sp ace' 'big file' > "$tmp/cxx64"
    "$FHASHCTL" $mode check "$tmp/cxx64" > /dev/null 2>&1 || fail "$mode check xxhsum's default (XXH64) manifest"
    xxhsum -H0 -- 'sp ace' 'big file' > "$tmp/cxx32"
    "$FHASHCTL" $mode check "$tmp/cxx32" > /dev/null 2>&1 || fail "$mode check xxhsum -H0 manifest"
    cp "$tmp/cb3" "$tmp/sums.b3"
    "$FHASHCTL" $mode check "$tmp/sums.b3" > /dev/null 2>&1 || fail "$mode check a b3sum manifest named *.b3"
    "$FHASHCTL" $mode check "$tmp/cb3" > /dev/null 2> "$tmp/err" && fail "$mode: b3sum lines taken as sha256"
    [ "$(grep -c 'try.*-a blake3' "$tmp/err")" = 1 ] || fail "$mode: no single hint to try -a blake3: $(cat "$tmp/err")"
    "$FHASHCTL" $mode hash -a crc32c -- 'sp ace' > "$tmp/ccrc"
    grep -q '^CRC32C (sp ace) = ' "$tmp/ccrc" || fail "$mode: crc32c lines are not tagged: $(cat "$tmp/ccrc")"
    "$FHASHCTL" $mode check "$tmp/ccrc" > /dev/null 2>&1 || fail "$mode: our crc32c lines do not check"
    # Same stdout, same stderr (but the program name), same exit code as sha256sum -c.
    for opts in "" "--quiet" "--status" "--strict" "-w" "--ignore-missing"; do
        for m in c256 cbad cempty; do
            # shellcheck disable=SC2086
            sha256sum -c $opts "$tmp/$m" 2> "$tmp/referr" | coreutils_escape > "$tmp/ref"; ref_rc=${PIPESTATUS[0]}
            # shellcheck disable=SC2086
            "$FHASHCTL" $mode check $opts "$tmp/$m" > "$tmp/out" 2> "$tmp/err"; rc=$?
            [ "$rc" = "$ref_rc" ] || fail "$mode check $opts $m: exit $rc, sha256sum $ref_rc"
            cmp -s "$tmp/ref" "$tmp/out" || fail "$mode check $opts $m: stdout differs: $(diff "$tmp/ref" "$tmp/out")"
            sed 's/^sha256sum:/fhashctl:/; s/improperly formatted SHA256 checksum line/improperly formatted checksum line/' \
                "$tmp/referr" | cmp -s - "$tmp/err" || fail "$mode check $opts $m: stderr differs: $(sed 's/^sha256sum:/fhashctl:/' "$tmp/referr" | diff - "$tmp/err")"
        done
    done
    "$FHASHCTL" $mode check "$tmp/does-not-exist" > /dev/null 2> "$tmp/err"
    [ $? = 1 ] || fail "$mode check of a missing manifest must exit 1"
    # shellcheck disable=SC2086
    "$FHASHCTL" $mode check < "$tmp/c256" > /dev/null 2>&1 || fail "$mode check from standard input"
done

# --- JSON -----------------------------------------------------------------------------------------
for mode in "${modes[@]}"; do
    "$FHASHCTL" $mode hash --json -a blake3 -- "${names[@]}" 'no such' > "$tmp/json" 2>/dev/null
    [ $? = 1 ] || fail "$mode --json with a missing file must exit 1"
    /usr/bin/python3 - "$tmp/json" "${names[@]}" <<'EOF' || fail "$mode: --json does not parse or is wrong"
import json, os, subprocess, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
objs = [json.loads(l) for l in lines]
files, summary = objs[:-1], objs[-1]
names = [os.fsencode(n) for n in sys.argv[2:]] + [b"no such"]
assert [os.fsencode(o["name"]) for o in files] == names, [o["name"] for o in files]
for o, n in zip(files, names):
    assert o["algorithm"] == "blake3"
    if n == b"no such":
        assert o["digest"] is None and o["error"] == "No such file or directory", o
        continue
    ref = subprocess.run(["b3sum", "--no-names", "--", n], capture_output=True, check=True).stdout.split()[0]
    assert o["digest"] == ref.decode() and o["error"] is None and o["size"] == os.path.getsize(n), o
assert summary["summary"] is True and summary["ok"] == len(names) - 1 and summary["failed"] == 1, summary
EOF
    # -a with several: a "digests" object per file, each as -a alone gives it.
    "$FHASHCTL" $mode hash --json -a sha512,blake3 -- "${names[@]}" 'no such' > "$tmp/json" 2>/dev/null
    [ $? = 1 ] || fail "$mode --json -a sha512,blake3 with a missing file must exit 1"
    "$FHASHCTL" $mode hash --json -a sha512 -- "${names[@]}" > "$tmp/json512" 2>/dev/null
    "$FHASHCTL" $mode hash --json -a blake3 -- "${names[@]}" > "$tmp/jsonb3" 2>/dev/null
    /usr/bin/python3 - "$tmp/json" "$tmp/json512" "$tmp/jsonb3" <<'EOF' || fail "$mode: --json with two algorithms"
import json, sys
objs, o512, ob3 = ([json.loads(l) for l in open(p, encoding="utf-8")][:-1] for p in sys.argv[1:])
summary = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8")][-1]
files = objs[:-1]
assert len(files) == len(o512) and summary["algorithm"] == "sha512,blake3" and summary["failed"] == 1, summary
for o, a, b in zip(files, o512, ob3):
    assert o["algorithm"] == "sha512,blake3" and "digest" not in o, o
    assert o["digests"] == {"sha512": a["digest"], "blake3": b["digest"]} and o["size"] == a["size"], (o, a, b)
assert objs[-1]["digests"] is None and objs[-1]["error"] == "No such file or directory", objs[-1]
EOF
    "$FHASHCTL" $mode check --json "$tmp/cbad" > "$tmp/json" 2>/dev/null
    /usr/bin/python3 -c '
import json, sys
objs = [json.loads(l) for l in open(sys.argv[1])]
st = [o.get("status") for o in objs[:-1]]
assert st.count("mismatch") == 1 and st.count("unreadable") == 1 and objs[-1]["improperly_formatted"] == 1, objs
' "$tmp/json" || fail "$mode: check --json"
done

# --- -r: sorted, stable, same through the daemon ---------------------------------------------------
mkdir -p "$tmp/r/sub/deeper" "$tmp/r/x"
printf 1 > "$tmp/r/b"; printf 2 > "$tmp/r/a"; printf 3 > "$tmp/r/sub/deeper/z"; printf 4 > "$tmp/r/x/skip.o"
ln -s b "$tmp/r/link"
(cd "$tmp/r" && find . -type f ! -name '*.o' | LC_ALL=C sort | sed 's|^\./||' | xargs -d '\n' sha256sum) > "$tmp/ref"
for mode in "${modes[@]}"; do
    (cd "$tmp/r" && "$FHASHCTL" $mode hash -r --exclude '*.o' a b sub x) > "$tmp/out" 2> "$tmp/err" || fail "$mode -r exit"
    cmp -s "$tmp/ref" "$tmp/out" || fail "$mode -r: $(diff "$tmp/ref" "$tmp/out")"
done

# --- no daemon: one line, then in-process; --daemon makes it an error -----------------------------
"$FHASHCTL" --address "unix:path=$tmp/nobody" hash 'sp ace' > "$tmp/out" 2> "$tmp/err" || fail "fallback exit"
[ "$(wc -l < "$tmp/err")" = 1 ] || fail "fallback must say one line: $(cat "$tmp/err")"
sha256sum 'sp ace' | cmp -s - "$tmp/out" || fail "fallback output"
"$FHASHCTL" --daemon --address "unix:path=$tmp/nobody" hash 'sp ace' > /dev/null 2>&1 && fail "--daemon without fhashd succeeded"
"$FHASHCTL" --local hash -a nosuch x > /dev/null 2> "$tmp/err"
[ $? = 2 ] && grep -q 'sha256, sha512' "$tmp/err" || fail "unknown algorithm: usage error listing names"

# --- progress: on a terminal only -----------------------------------------------------------------
head -c 64M /dev/zero > "$tmp/zero"
script -qec "$FHASHCTL --local hash --progress -a sha512 $tmp/zero $tmp/zero $tmp/zero" "$tmp/tty" > /dev/null 2>&1
grep -q 'files' "$tmp/tty" || fail "no progress on a terminal: $(cat -A "$tmp/tty" | head -3)"
"$FHASHCTL" --local hash --progress "$tmp/zero" > /dev/null 2> "$tmp/err"
[ -s "$tmp/err" ] && fail "progress written to a pipe"
# --- jobs and cancel through fhashd; option errors name the program as their hint does ----------
mkfifo "$tmp/fifo"
"$FHASHCTL" --daemon --address "$addr" hash "$tmp/fifo" > "$tmp/fifo-out" 2> "$tmp/fifo-err" &
hasher=$!
# A writer that writes a byte, then nothing: the job waits in fhashd. (libfhash hands fhashd a FIFO
# once it has data or its writer went: before that the FIFO waits in fhashctl's loop, with no job.)
exec 7> "$tmp/fifo"
printf x >&7
job=
for _ in $(seq 50); do
    job=$("$FHASHCTL" --address "$addr" jobs 2>/dev/null | awk '/running|queued/ {print $1; exit}')
    [ -n "$job" ] && break
    sleep 0.1
done
[ -n "$job" ] || fail "no running job listed: $("$FHASHCTL" --address "$addr" jobs 2>&1)"
"$FHASHCTL" --address "$addr" cancel "$job" > /dev/null 2> "$tmp/err"
rc=$?
[ "$rc" = 0 ] || fail "cancel of a running job exits $rc: $(cat "$tmp/err")"
exec 7>&-
wait "$hasher"
grep -q -i 'cancel' "$tmp/fifo-err" || fail "the cancelled hash does not say so: $(cat "$tmp/fifo-err")"
"$FHASHCTL" --bogus-option > /dev/null 2> "$tmp/err"
[ $? = 2 ] && [ "$(head -c 10 "$tmp/err")" = "fhashctl: " ] && grep -q "Try 'fhashctl --help'" "$tmp/err" ||
    fail "bad option: $(cat "$tmp/err")"

for verb in hash check jobs watch cancel status algorithms; do
    "$FHASHCTL" "$verb" --help | grep -q "Usage: fhashctl $verb" || fail "$verb --help"
done
"$FHASHCTL" --version | grep -q '^fhashctl ' || fail "--version"

[ "$failures" = 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
echo "ok"
