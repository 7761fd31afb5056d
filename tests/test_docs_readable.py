"""README and docs say what the tool does: sizes in the units it prints, which sessions
`status` and `context` take with no path, when the secret engine loads, and what the rules
do not find."""

from __future__ import annotations

import json
import os
import random
import string
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT, cli, commit_session, git
from secret_fixtures import planted
from synthetic import typical_session

from gitclaw_compress.units import human_bytes

README = (REPO_ROOT / "README.md").read_text()
LAYERS = (REPO_ROOT / "docs" / "layers.md").read_text()
SECRETS_DOC = (REPO_ROOT / "docs" / "secrets.md").read_text()
SESSIONS = ".GITCLAW/state/sessions"


def one_line(text: str) -> str:
    return " ".join(text.split())


def test_sizes_read_as_the_tool_prints_them() -> None:
    assert human_bytes(1024) == "1.0 KB" and human_bytes(503_600) == "491.8 KB"
    assert "(1 KB = 1024 bytes) in every command" in one_line(README)


def test_status_and_context_with_no_path_take_what_compress_would_take(repo: Path) -> None:
    for name in ("a", "b", "c"):
        commit_session(repo, f"{SESSIONS}/{name}.jsonl", typical_session(turns=2).data())
    touched = repo / SESSIONS / "b.jsonl"
    touched.write_bytes(touched.read_bytes() + typical_session(turns=1).data().split(b"\n")[1])
    touched.write_bytes(touched.read_bytes() + b"\n")
    for command in ("status", "context"):
        alone = json.loads(cli(command, "--json", cwd=repo).stdout)["files"]
        every = json.loads(cli(command, "--all", "--json", cwd=repo).stdout)["files"]
        assert [one["path"] for one in alone] == [f"{SESSIONS}/b.jsonl"], command
        assert len(every) == 3, command
    wanted = "(with no path, the sessions `compress` would take)"
    assert wanted in one_line(README) and "(or no path)" not in README
    assert "(with no path: the sessions `compress` would take)" in one_line(LAYERS)
    assert "(or no path)" not in LAYERS


def test_the_engine_claim_is_what_a_no_op_step_does_with_an_accepted_finding(
    repo: Path, tmp_path: Path
) -> None:
    line, _ = next(value for value in planted(5).values() if value[0])
    session = typical_session(turns=2)
    session.user(f"here: {line}")
    (repo / "compression.json").write_text('{"session": {"sizeThresholdKB": 0}}')
    commit_session(repo, f"{SESSIONS}/s.jsonl", session.data())
    cli("scan", "--accept-all", cwd=repo)
    cli("step", "--keep-turns", "1", cwd=repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    shim = tmp_path / "shim" / "kingfisher_sdk" / "__init__.py"
    shim.parent.mkdir(parents=True)
    shim.write_text("raise ImportError('the engine was loaded')\n")
    env = {**os.environ, "PYTHONPATH": str(shim.parent.parent)}
    quiet = subprocess.run(
        [sys.executable, "-m", "gitclaw_compress", "step", "--keep-turns", "1"],
        cwd=repo,
        env=env,
        capture_output=True,
        check=False,
    )
    loads = quiet.returncode != 0
    said = "loads no engine, unless a session holds a finding (an accepted one too)"
    assert (said in one_line(README)) == loads, quiet.stderr


def test_what_the_rules_do_not_find_is_what_the_docs_say() -> None:
    from gitclaw_compress.secrets.engine import scan_values

    rnd = random.Random(9)
    letters = string.ascii_letters + string.digits
    secret = "".join(rnd.choice(letters + "/+") for _ in range(40))
    pair = planted(2)["aws"][0]
    missed = {
        "alone": secret,
        "service account": '{"type": "service_account", "project_id": "p1", '
        '"client_email": "x@p1.iam.gserviceaccount.com"}',
        "free text": "my password is " + "".join(rnd.choice(letters) for _ in range(12)),
    }
    found = {"pair": pair, "keyword": f"aws_secret_access_key={secret}"}
    hits = scan_values([*missed.items(), *found.items()])
    assert {hit.key for hit in hits} == set(found)
    readme = one_line(README)
    said = "assigned to a name such as `aws_secret_access_key=`"
    assert "an AWS secret access key alone (found beside its access key id, or " + said in readme
    assert "a password in free text" in readme and "service-account file" in readme
    assert "an AWS secret access key alone (it is found beside its access key id" in one_line(
        SECRETS_DOC
    )


def test_the_progress_verbs_of_the_docs_are_the_code_s() -> None:
    """Every verb a use case hands its progress is listed in docs/output.md, and no other."""
    import re

    source = "\n".join(path.read_text() for path in (REPO_ROOT / "gitclaw_compress").rglob("*.py"))
    calls = re.findall(r'running\(\s*[\w()]+,\s*"(\w+)"', source)
    chosen = re.findall(r'verb = "(\w+ing)" if [^\n]+ else "(\w+ing)"', source)
    verbs = set(calls) | {verb for pair in chosen for verb in pair}
    output = (REPO_ROOT / "docs" / "output.md").read_text()
    listed = re.search(r"It says what the run does \((.*?)\), how many", output, re.S)
    assert listed is not None
    named = set(re.findall(r"`(\w+ing)`", listed.group(1)))
    assert named == verbs, (named, verbs)


def test_the_readme_names_the_json_refusals() -> None:
    """tests/test_readable.py refuses these two; the README says so."""
    assert "`restore PATH -o -` (stdout holds the session) and `show --raw` refuse `--json`" in (
        one_line(README)
    )
