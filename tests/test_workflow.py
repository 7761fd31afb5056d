"""The GitHub Actions workflow runs the README's test command, unchanged, on Linux, macOS
and Windows (it cannot run here: this checks that it says what the README says)."""

from __future__ import annotations

from typing import Any

import yaml
from flow_helpers import PROJECT
from test_readme_snippet import readme_block

WORKFLOW = PROJECT / ".github" / "workflows" / "tests.yml"


def workflow() -> dict[Any, Any]:
    document = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(document, dict)
    return document


def test_the_workflow_runs_the_readme_test_command_on_every_platform() -> None:
    command = readme_block("test-command", "sh").strip()
    assert command.endswith("-m pytest -q") and "\n" not in command
    [job] = workflow()["jobs"].values()
    matrix = job["strategy"]["matrix"]
    assert matrix["os"] == ["ubuntu-latest", "macos-latest", "windows-latest"]
    assert matrix["python"] == ["3.11", "3.12"]
    assert job["defaults"]["run"]["shell"] == "bash"
    steps = job["steps"]
    uses = {step["uses"].split("@")[0]: step.get("with", {}) for step in steps if "uses" in step}
    assert uses["actions/setup-python"]["python-version"] == "${{ matrix.python }}"
    assert uses["actions/setup-node"]["node-version"] == "20"
    runs = [step for step in steps if "run" in step]
    assert runs[-1]["run"].strip() == command  # the README's, unchanged, on every platform
    # Before it, only what .ci/run installs beside (tmux), and on Windows what the command
    # expects there (python3, .venv/bin).
    tmux, *windows = runs[:-1]
    assert tmux["if"] == "runner.os != 'Windows'" and "install -y -q tmux" in tmux["run"]
    assert "install -y -q tmux" in (PROJECT / ".ci" / "run").read_text()
    assert [step.get("if") for step in windows] == ["runner.os == 'Windows'"]
    assert "-m pytest" not in "".join(step["run"] for step in runs[:-1])
