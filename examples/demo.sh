#!/usr/bin/env bash
# Compress a synthetic GitClaw session in a throwaway repository, then prove the way back.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
git init -q
git config user.name "demo" && git config user.email "demo@example.invalid"
session=.GITCLAW/state/sessions/issue-1.jsonl
mkdir -p "$(dirname "$session")"
"$python" "$here/make_session.py" > "$session"
git add -A && git commit -qm "agent run"
before=$(sha256sum "$session" | cut -d' ' -f1)

gitclaw-compress compress "$session"
gitclaw-compress stats "$session"
git gc -q --prune=now
gitclaw-compress verify "$session"
gitclaw-compress restore "$session" -o restored.jsonl
after=$(sha256sum restored.jsonl | cut -d' ' -f1)
[ "$before" = "$after" ] && echo "restore after git gc: byte-identical (sha256 ${after:0:16}…)"
