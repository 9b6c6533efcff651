#!/bin/bash
# SPDX-License-Identifier: MIT
# test-no-libc-override.sh FHASHD: fhashd defines no symbol that libc (or libsystemd) also exports,
# so no call of libsystemd's lands in fhashd's code by the dynamic linker's search order (issue 24:
# fhashd used to export its own recvmsg() to see the fds sd-bus received; a gate reads its sockets
# now). Exits 77 when nm is missing.
set -u
fhashd=${1:?usage: test-no-libc-override.sh FHASHD}
command -v nm >/dev/null || { echo "SKIP: nm is not installed (binutils)"; exit 77; }
libs=$(ldd "$fhashd" | awk '/libc\.so|libsystemd\.so/ {print $3}')
[ -n "$libs" ] || { echo "FAIL: ldd finds neither libc nor libsystemd in $fhashd"; exit 1; }
ours=$(nm -D --defined-only "$fhashd" | awk '$2 ~ /^[TWiV]$/ {print $3}' | sed 's/@.*//' | sort -u)
theirs=$(for l in $libs; do nm -D --defined-only "$l" | awk '{print $3}' | sed 's/@.*//'; done | sort -u)
both=$(comm -12 <(echo "$ours") <(echo "$theirs"))
echo "fhashd exports $(echo "$ours" | grep -c .) functions; libc and libsystemd $(echo "$theirs" | grep -c .)"
if [ -n "$both" ]; then
    echo "FAIL: fhashd defines what $libs also export: $both"
    exit 1
fi
echo "ok: fhashd overrides no symbol of libc or libsystemd"
