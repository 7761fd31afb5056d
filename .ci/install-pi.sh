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
    installed="$(node -p 'require(process.argv[1]).version' "$pkg_json")"
    if [[ "$installed" == "$PI_VERSION" ]]; then
        echo "install-pi: $PI_PACKAGE@$PI_VERSION already installed in $prefix"
        exit 0
    fi
    echo "install-pi: found $PI_PACKAGE@$installed, installing $PI_VERSION" >&2
fi

mkdir -p "$prefix"
# A package.json of its own keeps npm from walking up to a parent project. The overrides
# pin pi's sibling packages (declared as ^$PI_VERSION) to the same exact version, so a
# later patch release of pi-ai cannot change what the tests run.
cat >"$prefix/package.json" <<JSON
{
  "name": "gitclaw-compress-pi-cache",
  "private": true,
  "dependencies": {
    "$PI_PACKAGE": "$PI_VERSION"
  },
  "overrides": {
    "@mariozechner/pi-ai": "$PI_VERSION",
    "@mariozechner/pi-agent-core": "$PI_VERSION",
    "@mariozechner/pi-tui": "$PI_VERSION"
  }
}
JSON

npm install --prefix "$prefix" --no-audit --no-fund

for dep in pi-ai pi-agent-core pi-tui; do
    got="$(node -p 'require(process.argv[1]).version' "$prefix/node_modules/@mariozechner/$dep/package.json")"
    if [[ "$got" != "$PI_VERSION" ]]; then
        echo "install-pi: @mariozechner/$dep is $got, expected $PI_VERSION" >&2
        exit 1
    fi
done
"$prefix/node_modules/.bin/pi" --version
echo "install-pi: installed $PI_PACKAGE@$PI_VERSION in $prefix"
