#!/bin/bash
# SPDX-License-Identifier: MIT
# libfhash's API reference: doxygen over <fhash/fhash.h> with every warning an error (a public
# declaration, member or macro without a comment fails), and each function the header declares has
# its entry in the generated page.
# Usage: test-api-docs.sh DOXYFILE HEADER
set -euo pipefail
doxyfile=$1 header=$2
command -v doxygen >/dev/null || { echo "SKIP: doxygen is not installed (scripts/deps.sh installs it)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! { cat "$doxyfile"; echo "OUTPUT_DIRECTORY = $tmp"; } | doxygen - >"$tmp/log" 2>&1; then
    cat "$tmp/log"
    echo "FAIL: doxygen found undocumented or ill-documented declarations in $header"
    exit 1
fi
page=$tmp/html/fhash_8h.html
[ -s "$page" ] || { echo "FAIL: doxygen wrote no page for fhash.h"; ls "$tmp/html" | head; exit 1; }
n=0
for fn in $(grep -oE '^[a-z0-9_ *]+\bfhash_[a-z_]+\(' "$header" | grep -oE 'fhash_[a-z_]+'); do
    grep -q ">$fn<" "$page" ||
        { echo "FAIL: $fn has no entry in the API reference"; exit 1; }
    n=$((n + 1))
done
[ "$n" -ge 15 ] || { echo "FAIL: only $n functions found in $header"; exit 1; }
echo "ok: the API reference documents all $n functions of fhash.h, with no doxygen warning"
