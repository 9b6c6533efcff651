#!/bin/bash
# SPDX-License-Identifier: MIT
# test-python-types.sh: the fhash Python package's type hints (it ships py.typed) hold under
# mypy --strict, and a client typed against them (examples/hash_files.py) checks too. 77 without mypy.
set -uo pipefail
src=${FHASH_SOURCE_ROOT:?FHASH_SOURCE_ROOT must point at the source tree}
/usr/bin/python3 -c 'import mypy' 2>/dev/null || { echo "SKIP: mypy is not installed (python3-mypy: scripts/deps.sh)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src" || exit 1
MYPYPATH="$src/python" /usr/bin/python3 -m mypy --strict --no-incremental --cache-dir="$tmp" \
        python/fhash examples/hash_files.py
