#!/usr/bin/env bash
# Install step of action.yml: a venv in $RUNNER_TEMP with gitclaw-compress from the action's
# own checkout, put on PATH for the job's later steps (so the agent can run
# `gitclaw-compress show`). Reads only environment variables:
#   GITCLAW_ACTION_PATH  the action's folder (github.action_path)
#   GITCLAW_PYTHON       the Python to build the venv with (input python)
set -euo pipefail
venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/gitclaw-compress-venv"
if [ ! -x "$venv/bin/gitclaw-compress" ]; then
  "${GITCLAW_PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$GITCLAW_ACTION_PATH"
fi
"$venv/bin/gitclaw-compress" --version
if [ -n "${GITHUB_PATH:-}" ]; then
  echo "$venv/bin" >> "$GITHUB_PATH"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
  echo "python=$venv/bin/python" >> "$GITHUB_OUTPUT"
  # The secret scan engine's version keys the cache of its compiled rules (action.yml).
  engine=$("$venv/bin/python" -c \
    'from gitclaw_compress.secrets.engine import engine_version; print(engine_version())')
  echo "kingfisher=$engine" >> "$GITHUB_OUTPUT"
fi
