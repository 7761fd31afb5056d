#!/usr/bin/env bash
# Install the real Claude Code, OpenAI Codex and GitHub Copilot CLIs into
# <repo>/.cache/agents (gitignored), for the resume tests in tests/test_agent_resume.py.
# Idempotent: does nothing when the pinned versions are already installed and run.
#
# Usage: .ci/install-agents.sh        (from anywhere inside the repo)
# Needs: node >= 20 and npm; network access to the npm registry only. Claude Code's
# linux binary comes in an optional platform package of about 500 MB.
set -euo pipefail

CLAUDE_VERSION="2.1.332"
CODEX_VERSION="0.171.0"
COPILOT_VERSION="1.0.102"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix="$repo/.cache/agents"
bin="$prefix/node_modules/.bin"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "install-agents: node and npm are required" >&2
    exit 1
fi

installed_version() {  # package name -> its installed version, or nothing
    local pkg_json="$prefix/node_modules/$1/package.json"
    if [[ -f "$pkg_json" ]]; then
        node -p 'require(process.argv[1]).version' "$pkg_json"
    fi
}

all_installed() {
    [[ "$(installed_version @anthropic-ai/claude-code)" == "$CLAUDE_VERSION" ]] &&
        [[ "$(installed_version @openai/codex)" == "$CODEX_VERSION" ]] &&
        [[ "$(installed_version @github/copilot)" == "$COPILOT_VERSION" ]] &&
        [[ -x "$bin/claude" && -x "$bin/codex" && -x "$bin/copilot" ]]
}

# --version must print the pinned version: a placeholder binary (a skipped platform package)
# or a self-updated one fails here, not in the tests.
verify() {
    local name="$1" want="$2" got
    got="$("$bin/$name" --version 2>&1)" || {
        echo "install-agents: $name --version failed: $got" >&2
        exit 1
    }
    if [[ "$got" != *"$want"* ]]; then
        echo "install-agents: $name --version printed '$got', expected $want" >&2
        exit 1
    fi
    echo "install-agents: $name $got"
}

verify_all() {
    # Hermetic: the CLIs must not read or write the caller's config while printing versions.
    local home
    home="$(mktemp -d)"
    trap 'rm -rf "$home"' RETURN
    mkdir -p "$home/.claude" "$home/.codex"
    # XDG_CACHE_HOME: Copilot unpacks its runtime (about 235 MB) there on first start; the
    # tests share this one copy (tests/agent_harness.py, COPILOT_XDG_CACHE).
    HOME="$home" CLAUDE_CONFIG_DIR="$home/.claude" CODEX_HOME="$home/.codex" \
        XDG_CACHE_HOME="$prefix/xdg-cache" DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 COPILOT_OFFLINE=true \
        bash -c "$(declare -f verify); bin='$bin'; verify claude '$CLAUDE_VERSION' &&
            verify codex '$CODEX_VERSION' && verify copilot '$COPILOT_VERSION'"
}

if all_installed; then
    verify_all
    echo "install-agents: pinned versions already installed in $prefix"
    exit 0
fi

mkdir -p "$prefix"
# A package.json of its own keeps npm from walking up to a parent project. Exact versions: each
# CLI pins its platform package (the binary) to its own version.
cat >"$prefix/package.json" <<JSON
{
  "name": "gitclaw-compress-agents-cache",
  "private": true,
  "dependencies": {
    "@anthropic-ai/claude-code": "$CLAUDE_VERSION",
    "@openai/codex": "$CODEX_VERSION",
    "@github/copilot": "$COPILOT_VERSION"
  }
}
JSON

npm install --prefix "$prefix" --no-audit --no-fund

if ! all_installed; then
    echo "install-agents: npm finished but a pinned CLI is missing from $prefix" >&2
    exit 1
fi
verify_all
echo "install-agents: installed claude-code $CLAUDE_VERSION, codex $CODEX_VERSION," \
    "copilot $COPILOT_VERSION in $prefix"
