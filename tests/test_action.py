"""The GitHub Action: its script against a bare origin, and action.yml itself, run locally
the way a runner runs a composite action."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from flow_helpers import (
    PROJECT,
    SESSIONS,
    Origin,
    commit_all,
    git,
    make_origin,
    marker_count,
    ok,
    project_snapshot,
    session_bytes,
    write,
)
from secret_fixtures import planted
from synthetic import SessionBuilder, big_text, text, tool_call

from gitclaw_compress.secrets.engine import engine_version
from gitclaw_compress.units import human_bytes

SESSION = f"{SESSIONS}/issue-3.jsonl"
EXPRESSION = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def action() -> dict[str, Any]:
    document = yaml.safe_load((PROJECT / "action.yml").read_text())
    assert isinstance(document, dict)
    return document


@pytest.fixture
def agent_ran(tmp_path: Path) -> tuple[Origin, bytes]:
    """A checkout where the agent just appended a run to a committed session."""
    origin = make_origin(tmp_path)
    session = write(origin.work / SESSION, session_bytes(3))
    write(origin.work / f"{SESSIONS}/unrelated.jsonl", session_bytes(5, session_id="u"))
    commit_all(origin.work, "earlier runs")
    origin.push("main")
    with open(session, "ab") as handle:
        handle.write(session_bytes(3).split(b"\n", 1)[1])
    return origin, session.read_bytes()


def run_script(
    cwd: Path, tmp_path: Path, **inputs: str
) -> tuple[subprocess.CompletedProcess[str], str, dict[str, str]]:
    summary, outputs = tmp_path / "summary.md", tmp_path / "output.txt"
    env = dict(os.environ)
    env.update(
        {
            "GITHUB_STEP_SUMMARY": str(summary),
            "GITHUB_OUTPUT": str(outputs),
            "GITCLAW_COMPRESS_KEEP_TURNS": "1",
        }
    )
    env.update({f"GITCLAW_COMPRESS_{key.upper()}": value for key, value in inputs.items()})
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress.action"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    values = {}
    if outputs.exists():
        for line in outputs.read_text().splitlines():
            key, _, value = line.partition("=")
            values[key] = value
    return done, summary.read_text() if summary.exists() else "", values


def test_script_compresses_pushes_and_writes_the_summary(
    tmp_path: Path, agent_ran: tuple[Origin, bytes]
) -> None:
    origin, original = agent_ran
    unrelated = (origin.work / f"{SESSIONS}/unrelated.jsonl").read_bytes()
    done, summary, outputs = run_script(origin.work, tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    assert done.stdout.count("\n") == 1 and "pushed to origin" in done.stdout
    assert (
        "| Session | Original | Before this run | After | Change vs original | Turns kept "
        "| New archive objects | Result |"
    ) in summary
    session = origin.work / SESSION
    after = session.stat().st_size
    row = next(line for line in summary.splitlines() if SESSION in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1:4] == [human_bytes(len(original))] * 2 + [human_bytes(after)]
    assert cells[4].startswith("-") and cells[4].endswith("%")
    assert cells[5] == "1 of 6" and int(cells[6]) > 0 and cells[7] == "compressed"
    assert "unrelated" not in summary
    assert (origin.work / f"{SESSIONS}/unrelated.jsonl").read_bytes() == unrelated
    assert outputs["compressed"] == "1" and outputs["pushed"] == "true"
    assert outputs["bytes-before"] == str(len(original)) and outputs["bytes-after"] == str(after)
    assert (
        git(origin.bare, "rev-parse", "refs/gitclaw/archive").strip()
        == git(origin.work, "rev-parse", "refs/gitclaw/archive").strip()
    )
    # The workflow commits and pushes the branch; a depth-1 clone restores the original.
    commit_all(origin.work, "agent run")
    origin.push("main")
    clone = origin.clone(tmp_path / "check", "--depth", "1")
    ok(clone, "restore", SESSION)
    assert (clone / SESSION).read_bytes() == original


def test_summary_compares_with_the_original_when_an_earlier_run_compressed_it(
    tmp_path: Path, agent_ran: tuple[Origin, bytes]
) -> None:
    """The second run's "before" is already compressed; the summary still starts from the
    session as the agent wrote it (issue 10: "saved 3.3%" where it went from 804 KB to 367)."""
    origin, original = agent_ran
    ok(origin.work, "compress", "--force", "--keep-turns", "1", SESSION)
    compressed = (origin.work / SESSION).read_bytes()
    appended = session_bytes(2).split(b"\n", 1)[1]
    with open(origin.work / SESSION, "ab") as handle:
        handle.write(appended)
    done, summary, outputs = run_script(origin.work, tmp_path, push="false")
    assert done.returncode == 0, done.stderr
    row = next(line for line in summary.splitlines() if SESSION in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == human_bytes(len(original) + len(appended))
    assert cells[2] == human_bytes(len(compressed) + len(appended))
    assert outputs["bytes-original"] == str(len(original) + len(appended))
    ok(origin.work, "restore", SESSION, "-o", str(tmp_path / "restored.jsonl"))
    assert (tmp_path / "restored.jsonl").read_bytes() == original + appended


def test_script_with_push_false_leaves_the_ref_ready(
    tmp_path: Path, agent_ran: tuple[Origin, bytes]
) -> None:
    origin, _ = agent_ran
    done, summary, outputs = run_script(origin.work, tmp_path, push="false")
    assert done.returncode == 0, done.stderr
    assert "left ready to push" in summary and outputs["pushed"] == "false"
    assert git(origin.bare, "for-each-ref", "refs/gitclaw") == ""
    assert marker_count((origin.work / SESSION).read_bytes()) > 0


def test_script_reports_a_bad_input_as_an_annotation(
    tmp_path: Path, agent_ran: tuple[Origin, bytes]
) -> None:
    origin, original = agent_ran
    done, summary, _ = run_script(origin.work, tmp_path, push="maybe")
    assert done.returncode == 3
    assert done.stdout.startswith("::error title=gitclaw-compress::input push must be true")
    assert (origin.work / SESSION).read_bytes() == original and summary == ""


def test_inputs_reach_scripts_only_through_env() -> None:
    document = action()
    inputs = document["inputs"]
    assert isinstance(inputs, dict)
    runs = document["runs"]
    assert isinstance(runs, dict) and runs["using"] == "composite"
    used: set[str] = set()
    for step in runs["steps"]:
        if "uses" in step:  # no script: an action of the runner's, given no input
            assert "inputs." not in str(step["with"]), step["name"]
            used.update(re.findall(r"inputs\.([\w-]+)", step.get("if", "")))
            continue
        assert "${{" not in step["run"], step["name"]  # never interpolated into a script
        assert step["shell"] == "bash"
        for expression in EXPRESSION.findall(" ".join(map(str, step.get("env", {}).values()))):
            if expression.startswith("inputs."):
                used.add(expression.removeprefix("inputs."))
        if "if" in step:
            used.update(re.findall(r"inputs\.([\w-]+)", step["if"]))
    assert used == set(inputs), set(inputs) ^ used
    for name, spec in inputs.items():
        assert spec.get("description") and "default" in spec, name


def _evaluate(text: str, context: dict[str, str]) -> str:
    return EXPRESSION.sub(lambda match: context[match.group(1)], text)


def test_action_yml_runs_like_a_runner_runs_it(
    tmp_path: Path, agent_ran: tuple[Origin, bytes]
) -> None:
    """Each step of action.yml, with its env evaluated as a runner would, then bash."""
    origin, original = agent_ran
    action_path, _ = project_snapshot(tmp_path / "action")
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    files = {name: tmp_path / f"{name}.txt" for name in ("path", "env", "summary")}
    for path in files.values():
        path.touch()
    document = action()
    inputs = {name: str(spec["default"]) for name, spec in document["inputs"].items()}
    inputs["keep-turns"] = "1"
    context = {f"inputs.{name}": value for name, value in inputs.items()}
    context["github.action_path"] = str(action_path)
    caches: list[dict[str, Any]] = []
    for step in document["runs"]["steps"]:
        condition = step.get("if")
        if condition is not None:
            assert condition == "inputs.install-only != 'true'"
            if inputs["install-only"] == "true":
                continue
        if "uses" in step:  # the cache of the compiled rules; the runner's job, not ours
            assert step["uses"].startswith("actions/cache@"), step
            caches.append(step)
            continue
        output_file = tmp_path / f"output-{step['id']}.txt"
        output_file.touch()
        env = dict(os.environ)
        env.update(
            {
                "RUNNER_TEMP": str(runner_temp),
                "GITHUB_PATH": str(files["path"]),
                "GITHUB_ENV": str(files["env"]),
                "GITHUB_STEP_SUMMARY": str(files["summary"]),
                "GITHUB_OUTPUT": str(output_file),
            }
        )
        env.update({key: _evaluate(str(value), context) for key, value in step["env"].items()})
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]],
            cwd=origin.work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, (step["name"], done.stdout, done.stderr)
        for line in output_file.read_text().splitlines():
            key, _, value = line.partition("=")
            context[f"steps.{step['id']}.outputs.{key}"] = value
    # The compiled rules are cached where the engine keeps them, keyed by its version.
    [cache] = caches
    assert cache["with"]["path"] == "~/.cache/kingfisher"
    assert "${{ steps.install.outputs.kingfisher }}" in cache["with"]["key"]
    assert context["steps.install.outputs.kingfisher"] == engine_version() != "none"
    venv_bin = runner_temp / "gitclaw-compress-venv" / "bin"
    assert files["path"].read_text().strip() == str(venv_bin)  # on PATH for the agent
    assert (venv_bin / "gitclaw-compress").exists()
    assert context["steps.compress.outputs.compressed"] == "1"
    assert context["steps.compress.outputs.pushed"] == "true"
    assert SESSION in files["summary"].read_text()
    assert git(origin.bare, "for-each-ref", "refs/gitclaw/archive") != ""
    ok(origin.work, "restore", SESSION, "-o", "restored.jsonl", "--no-fetch")
    assert (origin.work / "restored.jsonl").read_bytes() == original


def _archived_secret(tmp_path: Path) -> tuple[Origin, str, Path]:
    """An earlier run with `scan.block` off archived a secret; the session is clean now.
    Returns the origin, the secret and that lenient config."""
    origin = make_origin(tmp_path)
    line, secret = planted(5)["github"]
    session = SessionBuilder()
    for turn in range(3):
        session.user(f"task {turn}")
        session.assistant(tool_call(f"c{turn}", "bash", {"command": "env"}))
        output = big_text(f"out{turn}", 30) + (f"\n{line}\n" if turn == 0 else "\n")
        session.tool_result(f"c{turn}", "bash", output + big_text(f"tail{turn}", 30))
        session.assistant(text(f"done {turn}"))
    write(origin.work / SESSION, session.data())
    settings = '"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}'
    lenient = write(tmp_path / "lenient.json", b'{%s,"scan":{"block":false}}' % settings.encode())
    write(origin.work / "compression.json", b"{%s}" % settings.encode())
    ok(origin.work, "compress", SESSION, "--config", str(lenient))
    assert secret.encode() not in (origin.work / SESSION).read_bytes()  # only archived
    return origin, secret, lenient


def test_script_refuses_to_push_archive_objects_that_hold_a_secret(tmp_path: Path) -> None:
    """As `push`, `step --push` and the pre-push hook do: an earlier run with `scan.block`
    off archived a secret; the Action's push must not send it (the session is clean now)."""
    origin, secret, _ = _archived_secret(tmp_path)

    done, summary, outputs = run_script(origin.work, tmp_path)
    assert done.returncode == 1, done.stderr + done.stdout
    assert "secret(s) found in archive objects" in done.stderr
    assert git(origin.bare, "for-each-ref", "refs/gitclaw") == ""  # nothing sent
    assert outputs["pushed"] == "false" and "failed" in summary
    assert secret not in done.stdout + done.stderr + summary


def test_script_with_scan_block_off_pushes_with_a_masked_warning(tmp_path: Path) -> None:
    origin, secret, lenient = _archived_secret(tmp_path)
    done, summary, outputs = run_script(origin.work, tmp_path, config=str(lenient))
    assert done.returncode == 0, done.stderr + done.stdout
    warning = "::warning title=gitclaw-compress::secret in archive objects"
    assert warning in done.stdout and "github-pat" in done.stdout, done.stdout
    assert outputs["pushed"] == "true"
    assert secret not in done.stdout + done.stderr + summary


def test_script_names_each_secret_that_stops_it_masked(tmp_path: Path) -> None:
    """The error line gives ids only; the findings (file, line, path, rule, mask) go to the
    log before it, as the CLI prints them, so the job log says where to look."""
    origin = make_origin(tmp_path)
    line, secret = planted(6)["github"]
    session = SessionBuilder()
    session.user(f"here: {line}")
    session.assistant(text("ok"))
    original = write(origin.work / SESSION, session.data()).read_bytes()
    done, summary, _ = run_script(origin.work, tmp_path)
    assert done.returncode == 1, done.stderr + done.stdout
    assert f"{SESSION}:3 " in done.stderr and "github-pat" in done.stderr, done.stderr
    assert "::error title=gitclaw-compress::held " in done.stdout
    assert "1 secret(s) found in session files" in done.stdout
    assert secret not in done.stdout + done.stderr + summary
    assert (origin.work / SESSION).read_bytes() == original
