#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/quickstart, as the README tells a new user to run it: it must hash the file through fhashd
# with fhashctl (not some other client) and print what sha256sum prints. Uses the suite's build.
set -euo pipefail
: "${FHASH_SOURCE_ROOT:?}" "${FHASH_BUILD_ROOT:?}" "${FHASHCTL:?}"
command -v dbus-daemon >/dev/null || { echo "SKIP: dbus-daemon is not installed"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A wrapper that records how quickstart runs fhashctl, then runs it.
cat > "$tmp/fhashctl" <<WRAP
#!/bin/bash
printf '%s\n' "\$*" >> "$tmp/calls"
exec "$FHASHCTL" "\$@"
WRAP
chmod +x "$tmp/fhashctl"
printf 'quickstart test file\n' > "$tmp/file with space"

out=$(FHASH_BUILD="$FHASH_BUILD_ROOT" FHASHCTL="$tmp/fhashctl" "$FHASH_SOURCE_ROOT/scripts/quickstart" "$tmp/file with space")
want=$(cd "$tmp" && sha256sum "$tmp/file with space")
if [ "$out" != "$want" ]; then
    echo "FAIL: quickstart printed '$out', sha256sum prints '$want'"
    exit 1
fi
if ! grep -q -- '--daemon .*hash ' "$tmp/calls"; then
    echo "FAIL: quickstart did not hash with fhashctl --daemon; fhashctl calls were:"
    cat "$tmp/calls" 2>/dev/null || echo "(none)"
    exit 1
fi
echo "ok: quickstart hashed through fhashd with fhashctl: $out"
