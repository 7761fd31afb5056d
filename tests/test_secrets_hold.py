"""One finding holds its own session only: `compress --all` and `step` compress every other
session, leave the held ones byte for byte, name them with their ids and the commands to go
on, and exit 1; `--json` lists both."""

from __future__ import annotations

from pathlib import Path

import orjson
from flow_helpers import SESSIONS, git, init, tool, write
from secret_fixtures import planted
from synthetic import typical_session

from gitclaw_compress.secrets.cleanlines import CLEAN_LINES

CONFIG = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}'


def _repo(tmp_path: Path, count: int = 6) -> tuple[Path, dict[str, bytes]]:
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    git(repo, "add", "compression.json")
    git(repo, "commit", "-qm", "config")
    originals = {}
    for number in range(count):
        data = typical_session(turns=6).data()
        if number in (1, 4):  # two sessions hold a secret, in an old turn's user text
            line, _ = planted(number)["github"]
            data = data.replace(b'"text":"', f'"text":"{line} '.encode(), 1)
        rel = f"{SESSIONS}/issue-{number}.jsonl"
        write(repo / rel, data)
        originals[rel] = data
    return repo, originals


def test_compress_all_holds_the_two_sessions_with_findings_and_compresses_the_others(
    tmp_path: Path,
) -> None:
    repo, originals = _repo(tmp_path)
    held = {f"{SESSIONS}/issue-1.jsonl", f"{SESSIONS}/issue-4.jsonl"}
    done = tool(repo, "compress", "--all", "--json")
    assert done.returncode == 1, done.stderr.decode()
    document = orjson.loads(done.stdout)
    assert {entry["path"] for entry in document["held"]} == held
    for entry in document["held"]:
        assert entry["ids"] and all(len(i) == 12 for i in entry["ids"])
        assert "gitclaw-compress redact" in entry["advice"] and "--accept" in entry["advice"]
    status = {report["path"]: report["status"] for report in document["files"]}
    assert {path for path, s in status.items() if s == "held"} == held
    assert {s for path, s in status.items() if path not in held} == {"compressed"}
    for rel, data in originals.items():
        assert ((repo / rel).read_bytes() == data) == (rel in held), rel
    for _, secret in (planted(1)["github"], planted(4)["github"]):
        assert secret.encode() not in done.stdout + done.stderr


def test_step_names_each_held_session_with_its_ids_and_the_commands(tmp_path: Path) -> None:
    repo, originals = _repo(tmp_path, count=3)
    done = tool(repo, "step", "--all")
    assert done.returncode == 1, done.stderr.decode()
    assert done.stdout.count(b"\n") == 1  # the one line of stats
    assert b"2 compressed" in done.stdout
    held_line = [row for row in done.stderr.splitlines() if b"held " in row]
    assert len(held_line) == 1 and f"{SESSIONS}/issue-1.jsonl".encode() in held_line[0]
    assert b"redact" in held_line[0] and b"--accept" in held_line[0]
    assert (repo / f"{SESSIONS}/issue-1.jsonl").read_bytes() == originals[
        f"{SESSIONS}/issue-1.jsonl"
    ]
    again = tool(repo, "step", "--all")  # the others are done; the held one still holds
    assert again.returncode == 1 and b"held " in again.stderr


def test_a_line_whose_findings_are_accepted_is_settled_until_the_baseline_drops_one(
    tmp_path: Path,
) -> None:
    """After `scan --accept-all`, a run finds every line scanned (known_clean: no scan, no
    engine); with the baseline entry removed the line is scanned again and holds the
    session; accepted again, it is settled again."""
    from gitclaw_compress.secrets.cleanlines import accepted_hashes, known_clean
    from gitclaw_compress.store.archive import Repository

    repo, _ = _repo(tmp_path, count=2)
    rel = f"{SESSIONS}/issue-1.jsonl"
    assert tool(repo, "scan", rel, "--accept-all").returncode == 0
    assert tool(repo, "step", "--all").returncode == 0
    repository = Repository(repo)
    baseline = repo / ".gitclaw-secrets.json"

    def settled() -> bool:
        accepted = accepted_hashes(repo, ".gitclaw-secrets.json")
        return known_clean(repository, [repo / rel], accepted)

    assert settled()
    assert tool(repo, "step", "--all").returncode == 0  # a no-op: nothing to scan
    kept = baseline.read_bytes()
    document = orjson.loads(kept)
    document["accepted"] = []
    baseline.write_bytes(orjson.dumps(document))
    assert not settled()
    again = tool(repo, "step", "--all")
    assert again.returncode == 1 and b"held " + rel.encode() in again.stderr
    baseline.write_bytes(kept)
    assert tool(repo, "step", "--all").returncode == 0
    assert settled()


def test_dry_runs_say_which_sessions_the_run_would_hold_and_exit_as_it_would(
    tmp_path: Path,
) -> None:
    """`--dry-run` and `--check` scan as the run does: the same held sessions, named the same
    way ("would hold"), exit 1 as the run would; never the secret, nothing written (not even
    the record of lines scanned clean). Before, they said "would compress" and exited 0."""
    repo, originals = _repo(tmp_path, count=3)
    held = f"{SESSIONS}/issue-1.jsonl"
    for flag in ("--dry-run", "--check"):
        done = tool(repo, "compress", "--all", flag)
        assert done.returncode == 1, (flag, done.stderr.decode())
        assert f"unchanged {held}: holds a secret".encode() in done.stdout
        assert f"would compress {held}".encode() not in done.stdout
        [line] = [row for row in done.stderr.splitlines() if b"would hold " in row]
        opening = f"gitclaw-compress: would hold {held} (untouched): 1 secret"
        assert line.startswith(opening.encode())
        assert b"redact" in line and b"--accept" in line
        assert planted(1)["github"][1].encode() not in done.stdout + done.stderr
    document = orjson.loads(tool(repo, "compress", "--all", "--dry-run", "--json").stdout)
    assert [entry["path"] for entry in document["held"]] == [held]
    status = {report["path"]: report["status"] for report in document["files"]}
    assert status.pop(held) == "would-hold"
    assert set(status.values()) == {"would-compress"}
    assert {rel: (repo / rel).read_bytes() for rel in originals} == originals
    assert not (repo / ".git" / "gitclaw-compress" / CLEAN_LINES).exists()
    real = tool(repo, "compress", "--all", "--json")  # what the dry runs said
    assert real.returncode == 1
    assert [entry["path"] for entry in orjson.loads(real.stdout)["held"]] == [held]
