#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs the Debian 12 packages fhash builds and tests with; idempotent, quiet when all are present.
# Sourced by scripts/test and scripts/quickstart.

fhash_build_packages=(
    gcc meson ninja-build pkg-config
    liburing-dev libssl-dev libsystemd-dev libxxhash-dev libb2-dev libcmocka-dev nettle-dev zlib1g-dev
    librust-blake3-dev libdbus-1-dev systemd scdoc bash-completion
    uthash-dev
    libglib2.0-dev gobject-introspection libgirepository1.0-dev gir1.2-glib-2.0
)
fhash_test_packages=(
    dbus python3-dbus python3-gi libglib2.0-bin
    coreutils b3sum xxhash openssl util-linux procps gdb hashdeep tmux jq strace
    fsverity libarchive-tools e2fsprogs
    cppcheck clang-tidy clang doxygen
    debhelper dh-python lintian rsync
    gjs gi-docgen
    python3-setuptools python3-wheel python3-pip python3-venv python3-mypy
)
# bench/run only (`bench/run --install` installs the missing ones); the build and the tests never need them.
fhash_bench_packages=(
    rhash hashdeep fio python3-matplotlib
    coreutils b3sum xxhash openssl util-linux findutils dbus linux-perf time fsverity
)

fhash_install_deps() {
    local want=("$@") missing=() p
    for p in "${want[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "fhash: installing ${missing[*]}" >&2
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
