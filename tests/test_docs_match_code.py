"""docs/commit-flow.md says what the code does: the hooks of the manifest and their `files:`
pattern, the default globs, and the one line `step` prints on a fresh run; README's stub
example, commands and exit codes too."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import yaml
from synthetic import typical_session

from gitclaw_compress.config import defaults

PROJECT = Path(__file__).resolve().parent.parent
COMMIT_FLOW = (PROJECT / "docs" / "commit-flow.md").read_text()
MANIFEST = yaml.safe_load((PROJECT / ".pre-commit-hooks.yaml").read_text())


def fenced_after(marker: str) -> str:
    """The body of the code block that follows an HTML comment naming `marker`."""
    match = re.search(rf"<!-- {marker}:[^>]*-->\n```\w*\n(.*?)\n```", COMMIT_FLOW, re.S)
    assert match is not None, f"no `{marker}` block in docs/commit-flow.md"
    return match.group(1)


def setting_default(key: str) -> object:
    match = re.search(rf"^\| `{re.escape(key)}` \| `(.*?)` \|", COMMIT_FLOW, re.M)
    assert match is not None, key
    return orjson.loads(match.group(1))


def test_the_hooks_of_the_manifest_are_the_ones_described() -> None:
    ids = [hook["id"] for hook in MANIFEST]
    words = ["No", "One", "Two", "Three", "Four"]
    assert f"{words[len(ids)]} hooks in [`.pre-commit-hooks.yaml`]" in COMMIT_FLOW
    for hook_id in ids:
        assert f"**`{hook_id}`**" in COMMIT_FLOW, hook_id
    patterns = {hook["files"] for hook in MANIFEST if "files" in hook}
    assert patterns == {fenced_after("files-pattern")}


def test_the_settings_table_lists_the_real_defaults() -> None:
    config = defaults()
    for key in ("sessions.globs", "sessions.mappingGlobs", "archive.ref", "archive.remote"):
        assert setting_default(key) == config[key], key
    count = len(config["sessions.globs"])
    numbers = {11: "eleven", 12: "twelve", 10: "ten"}
    assert f"{numbers.get(count, count)} globs by default" in COMMIT_FLOW


def test_the_step_line_is_what_a_fresh_run_prints(repo: Path) -> None:
    session = repo / ".GITCLAW" / "state" / "sessions" / "issue-7.jsonl"
    session.parent.mkdir(parents=True)
    session.write_bytes(typical_session(turns=6).data())
    done = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "step"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout == fenced_after("step-output") + "\n"


def test_the_readme_stub_example_is_what_compress_writes(repo: Path) -> None:
    """README's "What a stub looks like": the first tool-result stub of the synthetic
    session, at the defaults (its preview lines, its `show` command), committed first."""
    readme = (PROJECT / "README.md").read_text()
    match = re.search(r"## What a stub looks like\n.*?\n```\n(.*?)\n```", readme, re.S)
    assert match is not None, "README: the stub example"
    relpath = ".GITCLAW/state/sessions/issue-1.jsonl"
    session = repo / relpath
    session.parent.mkdir(parents=True)
    session.write_bytes(typical_session(turns=6).data())
    for args in (["add", "-A"], ["commit", "-qm", "agent run"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "compress", "--force", relpath],
        cwd=repo,
        capture_output=True,
        check=True,
    )
    stubs = [
        block["text"]
        for line in session.read_bytes().splitlines()
        if (entry := orjson.loads(line)).get("message", {}).get("role") == "toolResult"
        for block in entry["message"]["content"]
        if block.get("text", "").startswith("[gitclaw-compress]")
    ]
    assert stubs and stubs[0] == match.group(1)


def test_the_readme_names_every_command_without_config_and_all_take_json() -> None:
    import click

    from gitclaw_compress.cli import cli

    readme = (PROJECT / "README.md").read_text()
    sentence = r"Every command takes `--json` and `--config FILE` \(all but ([^)]*)\)"
    match = re.search(sentence, readme)
    assert match is not None, "README: the sentence on --json and --config"
    named = set(re.findall(r"`(\w+)`", match.group(1)))
    without_config = set()
    context = click.Context(cli)
    for name in cli.list_commands(context):
        command = cli.get_command(context, name)
        assert command is not None
        if command.hidden:
            continue
        options = {opt for param in command.params for opt in param.opts}
        assert "--json" in options, name
        if "--config" not in options:
            without_config.add(name)
    assert without_config == named


def test_the_readme_exit_code_1_row_names_every_command_that_exits_1() -> None:
    readme = (PROJECT / "README.md").read_text()
    row = re.search(r"^\| 1 \| (.*) \|$", readme, re.M)
    assert row is not None
    named = set(re.findall(r"`(\w+)[ `]", row.group(1)))
    commands = PROJECT / "gitclaw_compress" / "commands"
    exiting = {p.stem for p in commands.glob("*.py") if "EXIT_PROBLEMS" in p.read_text()}
    assert exiting <= named
    assert "secret" in row.group(1)  # compress, step and pre-push stop on an unaccepted one


def test_the_action_inputs_and_outputs_are_the_ones_described() -> None:
    action = yaml.safe_load((PROJECT / "action.yml").read_text())
    flat = " ".join(COMMIT_FLOW.split())
    for heading, declared in (("Inputs (all optional):", "inputs"), ("Outputs:", "outputs")):
        start = flat.index(heading)
        sentence = flat[start : flat.index(".", start)]
        named = set(re.findall(r"`([\w-]+)`", sentence)) - {"true", "false"}  # defaults
        assert named == set(action[declared]), (heading, sorted(named ^ set(action[declared])))
