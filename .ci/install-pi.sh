#!/usr/bin/env bash
# Install the real pi coding agent into <repo>/.cache/pi (gitignored), for the
# resume tests in tests/test_pi_harness.py. Idempotent: does nothing when the
# pinned version is already installed.
#
# Usage: .ci/install-pi.sh            (from anywhere inside the repo)
# Needs: node >= 20.6 and npm; network access to the npm registry only.
set -euo pipefail

PI_VERSION="0.73.1"
PI_PACKAGE="@mariozechner/pi-coding-agent"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo/.cache/pi"
pkg_json="$prefix/node_modules/$PI_PACKAGE/package.json"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "install-pi: node and npm are required" >&2
    exit 1
fi

if [[ -f "$pkg_json" ]] && [[ -x "$prefix/node_modules/.bin/pi" ]]; then
    installed="$(node -p "require(process.argv[1]).version" "$pkg_json")"
    if [[ "$installed" == "$PI_VERSION" ]]; then
        echo "install-pi: $PI_PACKAGE@$PI_VERSION already installed in $prefix"
        exit 0
    fi
    echo "install-pi: found $PI_PACKAGE@$installed, installing $PI_VERSION" >&2
fi

mkdir -p "$prefix"
# A package.json of its own keeps npm from walking up to a parent project.
if [[ ! -f "$prefix/package.json" ]]; then
    printf '{\n  "name": "gitclaw-compress-pi-cache",\n  "private": true\n}\n' >"$prefix/package.json"
fi

npm install --prefix "$prefix" --no-audit --no-fund --save-exact \
    "$PI_PACKAGE@$PI_VERSION"

"$prefix/node_modules/.bin/pi" --version
echo "install-pi: installed $PI_PACKAGE@$PI_VERSION in $prefix"
