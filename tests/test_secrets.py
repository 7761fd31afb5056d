"""Secrets planted at run time (tests/secret_fixtures.py) in synthetic sessions: `scan`
finds each, `step` and the hooks stop, `redact` removes them from the file and from every
object of the repository, `restore` and `verify` still work, and no command prints one."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from flow_helpers import (
    SESSIONS,
    git,
    init,
    make_origin,
    marker_count,
    needs_pre_commit,
    path_with,
    pre_commit_exe,
    shim_bin,
    tool,
    write,
    writing_v2_markers,
)
from secret_fixtures import planted
from synthetic import SessionBuilder, big_text, text, thinking, tool_call

from gitclaw_compress.cli import cli

SECRETS = planted(7)
CONFIG = b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}'
LENIENT = (
    b'{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1},"scan":{"block":false}}'
)


def pi_session() -> SessionBuilder:
    """Every kind in old turns (tool output, tool arguments, user text) and one in the kept
    turn's user text."""
    kinds = [kind for kind, (line, _) in SECRETS.items() if line]
    session = SessionBuilder()
    for turn, kind in enumerate(kinds[:-1]):
        line, _ = SECRETS[kind]
        where = turn % 3
        session.user(f"task {turn}" + (f": {line}" if where == 0 else ""))
        arguments = {"path": f"src/f{turn}.py", "content": big_text(f"f{turn}", 40)}
        if where == 1:
            arguments["content"] += f"\n{line}\n"
        session.assistant(thinking(f"thinking {turn}"), tool_call(f"c{turn}", "write", arguments))
        output = big_text(f"out{turn}", 60) + (f"\n{line}\n" if where == 2 else "")
        session.tool_result(f"c{turn}", "bash", output)
        session.assistant(text(f"done {turn}"))
    session.user(f"last: {SECRETS[kinds[-1]][0]}")
    session.assistant(text("ok"))
    return session


class Runs:
    """Runs the CLI and keeps everything it printed, to check that no secret leaks."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.printed: list[bytes] = []

    def __call__(self, *args: str, code: int | None = 0) -> subprocess.CompletedProcess[bytes]:
        done = tool(self.cwd, *args)
        self.printed += [done.stdout, done.stderr]
        if code is not None:
            assert done.returncode == code, (args, done.returncode, done.stderr.decode())
        return done

    def assert_no_secret(self) -> None:
        for output in self.printed:
            for _, secret in SECRETS.values():
                for form in (secret.encode(), orjson.dumps(secret)[1:-1]):
                    assert form not in output


def redacted(data: bytes, findings: list[dict[str, Any]], secrets: list[str]) -> bytes:
    rules = {f["hash"]: f["rule"] for f in findings}
    # A secret inside a JSON string inside JSON (pi's partialJson) is found escaped once more.
    secrets = secrets + [orjson.dumps(secret)[1:-1].decode() for secret in secrets]
    for secret in sorted(set(secrets), key=len, reverse=True):
        rule = rules.get(hashlib.sha256(secret.encode()).hexdigest())
        if rule is None:
            continue
        data = data.replace(orjson.dumps(secret)[1:-1], b"[REDACTED:%s]" % rule.encode())
    return data


def _pi_repo(tmp_path: Path, config: bytes = CONFIG) -> tuple[Path, str]:
    """A repository with a scan config and an uncommitted pi session holding secrets."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", config)
    rel = f"{SESSIONS}/issue-1.jsonl"
    write(repo / rel, pi_session().data())
    return repo, rel


def test_scan_step_redact_restore_verify_pi(tmp_path: Path) -> None:
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    git(repo, "add", "compression.json")
    git(repo, "commit", "-qm", "config")
    rel = f"{SESSIONS}/issue-1.jsonl"
    original = pi_session().data()
    path = write(repo / rel, original)
    run = Runs(repo)

    found = orjson.loads(run("scan", "--json", code=1).stdout)["findings"]
    hashes = {f["hash"] for f in found}

    for kind, (_, secret) in SECRETS.items():
        assert hashlib.sha256(secret.encode()).hexdigest() in hashes, kind
    assert all(f["line"] >= 2 and f["file"] == rel for f in found)

    step = run("step", code=1)
    assert b"secret(s) found" in step.stderr and path.read_bytes() == original
    for finding in found:
        assert finding["id"].encode() in step.stderr

    lenient = write(tmp_path / "lenient.json", LENIENT)
    run("compress", rel, "--config", str(lenient))
    assert path.read_bytes() != original  # old turns compressed, payloads in the archive
    archived = git(repo, "rev-list", "--objects", "refs/gitclaw/archive")
    assert "blobs/" in archived

    entries = sorted({f["entry"] for f in found})
    for entry in entries:  # show and context print what holds them: masked
        assert "…".encode() in run("show", rel, entry).stdout
    run("show", rel, entries[0], "--raw")
    run("show", rel, entries[0], "--json")
    run("context", rel)
    run("context", rel, "--json")
    run.assert_no_secret()

    run("redact", rel, "--all")
    data = path.read_bytes()
    for _, secret in SECRETS.values():
        assert orjson.dumps(secret)[1:-1] not in data
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    everything = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True
    ).stdout
    for kind, (_, secret) in SECRETS.items():
        assert orjson.dumps(secret)[1:-1] not in everything, kind
        assert secret.encode() not in everything, kind

    restored = _restores_redacted(run, rel, original, found)
    assert restored.count(b"\n") == original.count(b"\n")
    assert restored.count(b"[REDACTED:") >= len(SECRETS)
    run("verify", rel)
    run("scan", rel)
    run.assert_no_secret()


def _restores_redacted(run: Runs, rel: str, original: bytes, found: list[dict[str, Any]]) -> bytes:
    """Restore gives the original with every secret redacted (the lines that hold the key
    block twice aside) and says a redaction happened; the restored bytes."""
    restored = run("restore", rel, "-o", "-")
    for _, secret in SECRETS.values():
        assert orjson.dumps(secret)[1:-1] not in restored.stdout
    simple = [secret for kind, (_, secret) in SECRETS.items() if kind != "private-key"]
    expected = redacted(original, found, simple).split(b"\n")
    same = sum(a == b for a, b in zip(restored.stdout.split(b"\n"), expected, strict=True))
    assert same >= len(expected) - 2  # all but the lines that hold the key block twice
    assert b"redacted" in restored.stderr
    return bytes(restored.stdout)


@pytest.mark.parametrize("version", [3, 2])
def test_redact_keeps_intact_markers_in_their_form(
    tmp_path: Path, version: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session committed before it was compressed: each marker names the committed blob,
    which holds the secrets. `redact` archives a redacted copy of the blob and points each
    marker at it in the form it had (a v3 string, or a v2 object as the release before v3
    wrote it); restore gives the redacted original and says a redaction happened."""
    repo, rel = _pi_repo(tmp_path, LENIENT)
    path = repo / rel
    original = path.read_bytes()
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    run = Runs(repo)
    if version == 2:
        monkeypatch.chdir(repo)
        with writing_v2_markers():
            result = CliRunner().invoke(cli, ["compress", rel], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    else:
        run("compress", rel)
    form = b'"gitclawCompress":"3:' if version == 3 else b'"gitclawCompress":{"v":2,'
    compressed = path.read_bytes()
    assert marker_count(compressed) == compressed.count(form) > 0
    found = orjson.loads(run("scan", rel, "--json", code=None).stdout)["findings"]

    run("redact", rel, "--all")
    data = path.read_bytes()
    assert marker_count(data) == data.count(form) == marker_count(compressed)
    blob = git(repo, "rev-parse", f"HEAD:{rel}").strip()
    assert blob.encode() in compressed and blob.encode() not in data  # the redacted copy
    _restores_redacted(run, rel, original, found)
    run("verify", rel)
    run.assert_no_secret()


def test_pre_push_refuses_archive_objects_that_hold_a_secret(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    repo = init(tmp_path / "repo")
    git(repo, "remote", "add", "origin", origin.url)
    write(repo / "compression.json", LENIENT)
    rel = f"{SESSIONS}/issue-1.jsonl"
    path = write(repo / rel, pi_session().data())
    run = Runs(repo)
    run("compress", rel)
    run("install")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    write(repo / "compression.json", CONFIG)  # scan.block on again
    git(repo, "commit", "-qam", "block")
    env = path_with(shim_bin(tmp_path / "bin"))
    pushed = subprocess.run(
        ["git", "push", "origin", "HEAD:refs/heads/main"], cwd=repo, capture_output=True, env=env
    )
    assert pushed.returncode != 0
    assert b"archive objects" in pushed.stderr
    assert f"`gitclaw-compress redact {rel} --all`".encode() in pushed.stderr  # a real path
    remote_refs = git(repo, "ls-remote", origin.url)
    assert "refs/gitclaw/archive" not in remote_refs
    run.printed.append(pushed.stderr + pushed.stdout)
    commit = git(repo, "log", "--format=%H", "--reverse", "--", rel).split()[0]
    first = run("redact", rel, "--all").stdout  # committed before: only history can lose it
    assert f"commit {commit[:12]}".encode() in first and b"git filter-repo" in first
    again = run("redact", rel, "--all").stdout  # nothing left to redact: says so
    assert again.endswith(
        b": nothing to redact: no secret found in the session or its archive "
        b"objects; nothing was changed\n"
    )
    # The remote holds no archive yet, so nothing there could bring the secret back: a plain
    # push sends the rewritten archive (a forced one is needed only to replace a copy).
    run("push")
    assert "refs/gitclaw/archive" in git(repo, "ls-remote", origin.url)
    assert path.exists()
    run.assert_no_secret()


def test_unblocked_archive_secrets_are_pushed_with_a_masked_warning_each(tmp_path: Path) -> None:
    """docs/secrets.md: with `scan.block` false a finding is a warning each, so `push`,
    `step --push` and the pre-push hook name each archived secret (masked) as they send it."""
    origin = make_origin(tmp_path)
    repo = init(tmp_path / "repo")
    git(repo, "remote", "add", "origin", origin.url)
    write(repo / "compression.json", LENIENT)
    rel = f"{SESSIONS}/issue-1.jsonl"
    write(repo / rel, pi_session().data())
    run = Runs(repo)
    run("compress", rel)
    run("install")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    env = path_with(shim_bin(tmp_path / "bin"))
    hook = subprocess.run(
        ["git", "push", "origin", "HEAD:refs/heads/main"], cwd=repo, capture_output=True, env=env
    )
    assert hook.returncode == 0, hook.stderr
    run.printed.append(hook.stderr + hook.stdout)
    outputs = {
        "hook": hook.stderr,
        "push": run("push").stderr,
        "step --push": run("step", "--push").stderr,
    }
    for name, stderr in outputs.items():
        warnings = [
            line
            for line in stderr.decode().splitlines()
            if line.startswith("gitclaw-compress: warning: secret in archive objects")
        ]
        assert len(warnings) >= len(SECRETS) - 1, (name, stderr.decode())
        assert all(" id " in line for line in warnings), name
    assert "refs/gitclaw/archive" in git(repo, "ls-remote", origin.url)
    run.assert_no_secret()


def test_a_rewritten_archive_replaces_the_remotes_copy_only_with_force(tmp_path: Path) -> None:
    origin = make_origin(tmp_path)
    repo = init(tmp_path / "repo")
    git(repo, "remote", "add", "origin", origin.url)
    write(repo / "compression.json", LENIENT)  # the secret is archived and pushed
    rel = f"{SESSIONS}/issue-1.jsonl"
    write(repo / rel, pi_session().data())
    run = Runs(repo)
    run("compress", rel)
    run("push")
    before = git(repo, "ls-remote", origin.url, "refs/gitclaw/archive").split()[0]
    run("redact", rel, "--all")
    refused = run("push", code=3)
    assert b"--force" in refused.stderr
    assert git(repo, "ls-remote", origin.url, "refs/gitclaw/archive").split()[0] == before
    run("push", "--force")
    after = git(repo, "ls-remote", origin.url, "refs/gitclaw/archive").split()[0]
    assert after != before and after == git(repo, "rev-parse", "refs/gitclaw/archive").strip()
    run.assert_no_secret()


def _claude() -> bytes:
    from synthetic_claude import ClaudeSession

    session = ClaudeSession()
    kinds = [kind for kind, (line, _) in SECRETS.items() if line]
    for turn, kind in enumerate(kinds[:-1]):
        line, _ = SECRETS[kind]
        where = turn % 4
        session.user(f"task {turn}" + (f": {line}" if where == 0 else ""))
        command = f"cat .env{turn}" + (f" && echo '{line}'" if where == 1 else "")
        call = f"toolu_{turn:020d}"
        session.tool_use(call, "Bash", {"command": command})
        output = big_text(f"out{turn}", 60) + (f"\n{line}\n" if where == 2 else "")
        ui = big_text(f"ui{turn}", 60) + (f"\n{line}\n" if where == 3 else "")
        session.tool_result(call, output, {"stdout": ui, "stderr": "", "interrupted": False})
        session.assistant({"type": "text", "text": f"done {turn}"})
    session.user(f"last: {SECRETS[kinds[-1]][0]}")
    session.assistant({"type": "text", "text": "ok"})
    return session.data()


def _codex() -> bytes:
    from synthetic_codex import RolloutBuilder

    rollout = RolloutBuilder()
    kinds = [kind for kind, (line, _) in SECRETS.items() if line]
    for turn, kind in enumerate(kinds[:-1]):
        line, _ = SECRETS[kind]
        where = turn % 3
        turn_id = rollout.start_turn(f"task {turn}" + (f": {line}" if where == 0 else ""))
        command = f"cat .env{turn}" + (f" && export {line.splitlines()[0]}" if where == 1 else "")
        output = big_text(f"out{turn}", 60) + (f"\n{line}\n" if where == 2 else "")
        rollout.shell(turn_id, command, output)  # the output is copied into an event_msg too
        rollout.reply(turn_id, f"done {turn}")
    last = rollout.start_turn(f"last: {SECRETS[kinds[-1]][0]}")
    rollout.reply(last, "ok")
    return rollout.data()


def _copilot() -> bytes:
    from synthetic_copilot import EventsBuilder

    events = EventsBuilder()
    events.start()
    kinds = [kind for kind, (line, _) in SECRETS.items() if line]
    for turn, kind in enumerate(kinds[:-1]):
        line, _ = SECRETS[kind]
        where = turn % 3
        events.user(f"task {turn}" + (f": {line}" if where == 0 else ""))
        command = f"cat .env{turn}" + (f" && echo '{line}'" if where == 1 else "")
        output = big_text(f"out{turn}", 60) + (f"\n{line}\n" if where == 2 else "")
        result = {"content": output, "detailedContent": output}
        events.turn([("bash", {"command": command}, result)], f"done {turn}")
    events.user(f"last: {SECRETS[kinds[-1]][0]}")
    events.turn([], "ok")
    return events.data()


def _pi() -> bytes:
    return pi_session().data()


FORMATS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "pi": (f"{SESSIONS}/issue-1.jsonl", _pi),
    "claude": (".claude/projects/-repo/00000000-0000-4000-8000-000000000001.jsonl", _claude),
    "codex": (".codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-x.jsonl", _codex),
    "copilot": (
        ".copilot/session-state/00000000-0000-4000-8000-000000000002/events.jsonl",
        _copilot,
    ),
}


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_format_found_blocked_and_redacted(tmp_path: Path, name: str) -> None:
    rel, build = FORMATS[name]
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    git(repo, "add", "compression.json")
    git(repo, "commit", "-qm", "config")
    original = build()
    path = write(repo / rel, original)
    run = Runs(repo)
    found = orjson.loads(run("scan", rel, "--json", code=1).stdout)["findings"]
    lines = original.split(b"\n")
    for kind, (_, secret) in SECRETS.items():
        digest = hashlib.sha256(secret.encode()).hexdigest()
        at = [f for f in found if f["hash"] == digest]
        assert at, (name, kind)
        for finding in at:  # "line" is the file's line, and that line holds the secret
            assert orjson.dumps(secret)[1:-1] in lines[finding["line"] - 1], (name, kind)
    assert len({f["line"] for f in found}) >= len(SECRETS) - 1
    step = run("step", code=1)
    assert path.read_bytes() == original
    assert all(f["id"].encode() in step.stderr for f in found)
    run("compress", rel, "--config", str(write(tmp_path / "lenient.json", LENIENT)))
    assert path.read_bytes() != original
    run("redact", rel, "--all")
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    everything = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True
    ).stdout
    everything += path.read_bytes()
    for kind, (_, secret) in SECRETS.items():
        assert orjson.dumps(secret)[1:-1] not in everything, (name, kind)
    restored = run("restore", rel, "-o", "-")
    assert restored.stdout.count(b"\n") == original.count(b"\n")
    assert b"[REDACTED:" in restored.stdout
    run("verify", rel)
    run("scan", rel)
    run.assert_no_secret()


@needs_pre_commit
def test_the_real_pre_commit_hook_fails_on_a_secret(
    tmp_path: Path,
    hook_source: tuple[Path, str],
    pre_commit_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source, rev = hook_source
    monkeypatch.setenv("PRE_COMMIT_HOME", str(pre_commit_home))
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    repo = init(tmp_path / "agent-repo")
    config = {"repos": [{"repo": str(source), "rev": rev, "hooks": [{"id": "gitclaw-compress"}]}]}
    write(repo / ".pre-commit-config.yaml", orjson.dumps(config))
    write(repo / "compression.json", CONFIG)
    subprocess.run([pre_commit_exe(), "install"], cwd=repo, check=True, capture_output=True)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "pre-commit config")
    rel = f"{SESSIONS}/issue-1.jsonl"
    original = pi_session().data()
    path = write(repo / rel, original)
    git(repo, "add", rel)
    done = subprocess.run(["git", "commit", "-m", "agent run"], cwd=repo, capture_output=True)
    printed = done.stdout + done.stderr
    assert done.returncode != 0, printed.decode()
    assert b"secret(s) found in session files" in printed
    assert git(repo, "log", "--format=%s", "-1").strip() == "pre-commit config"
    assert path.read_bytes() == original
    run = Runs(repo)
    run.printed.append(printed)
    run.assert_no_secret()


def test_accepted_findings_pass_and_the_baseline_holds_no_secret(tmp_path: Path) -> None:
    repo, rel = _pi_repo(tmp_path)
    run = Runs(repo)
    found = orjson.loads(run("scan", rel, "--json", code=1).stdout)["findings"]
    run("scan", rel, "--accept", "0" * 12, code=3)  # an unknown id: one line, nothing kept
    run("scan", rel, "--accept", found[0]["id"], code=1)  # the others still block
    run("scan", rel, "--accept-all", code=0)
    listed = orjson.loads(run("scan", rel, "--json").stdout)["findings"]
    assert listed and all(f["accepted"] for f in listed)
    run("step")  # accepted: compresses
    baseline = (repo / ".gitclaw-secrets.json").read_bytes()
    assert {f["hash"] for f in found} <= {e["hash"] for e in orjson.loads(baseline)["accepted"]}
    run.printed.append(baseline)
    run.assert_no_secret()


def test_scan_gives_one_count_for_one_content_whatever_earlier_runs_recorded(
    tmp_path: Path,
) -> None:
    """Accepted findings are listed on every run, not only until a run records their lines as
    settled: the same file gives the same findings and the same count line each time (before,
    "N findings (0 not accepted)" right after the accept, then "0 findings")."""
    repo, rel = _pi_repo(tmp_path)
    run = Runs(repo)
    accepted = run("scan", rel, "--accept-all", "--no-archive")
    runs = [run("scan", rel, "--no-archive") for _ in range(3)]
    counts = {done.stdout.splitlines()[-1] for done in runs}
    assert len(counts) == 1, counts
    assert accepted.stdout.splitlines()[-1] in counts
    [count] = counts
    assert not count.startswith(b"0 findings"), count
    assert len({done.stdout for done in runs}) == 1
    listed = [orjson.loads(run("scan", rel, "--json").stdout)["findings"] for _ in range(2)]
    assert listed[0] == listed[1] and all(f["accepted"] for f in listed[0])
    run.assert_no_secret()


def test_a_secret_across_a_window_edge_of_a_long_value_is_found() -> None:
    from gitclaw_compress.secrets.engine import OVERLAP, WINDOW, scan_values

    _, secret = SECRETS["github"]
    filler = "lorem ipsum dolor sit amet\n" * (3 * WINDOW // 27)
    at = WINDOW - len(secret) // 2  # straddles the end of the first window
    value = filler[:at] + f" {secret} " + filler[at:]
    hits = scan_values([("long", value), ("short", f"token {secret}")])
    assert {(hit.key, hit.secret) for hit in hits} == {("long", secret), ("short", secret)}
    assert len(SECRETS["private-key"][1]) < OVERLAP


def test_a_secret_in_signed_thinking_is_reported_sealed_and_left(tmp_path: Path) -> None:
    """pi sends signed thinking back on resume: redact leaves it and says why."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    rel = f"{SESSIONS}/issue-1.jsonl"
    session = SessionBuilder()
    session.user("go")
    session.assistant(thinking(f"the key is {SECRETS['stripe'][0]}"), text("ok"))
    original = session.data()
    path = write(repo / rel, original)
    run = Runs(repo)
    found = orjson.loads(run("scan", rel, "--json", code=1).stdout)["findings"]
    assert [(f["sealed"], f["path"][-1]) for f in found] == [(True, "thinking")]
    done = run("redact", rel, "--all")
    assert b"left as it is" in done.stderr
    assert b"nothing to redact: no secret found outside signed or encrypted" in done.stdout
    assert path.read_bytes() == original
    run.assert_no_secret()


def test_the_secrets_found_error_names_the_files_ids_and_the_way_past_a_sealed_one(
    tmp_path: Path,
) -> None:
    """The error gives commands to paste (real path, real ids); a secret only in an old
    turn's signed thinking, which `redact` leaves, is accepted, then compressed away into the
    archive, where `redact` removes it."""
    repo = init(tmp_path / "repo")
    write(repo / "compression.json", CONFIG)
    sealed_rel, plain_rel = f"{SESSIONS}/issue-1.jsonl", f"{SESSIONS}/issue-2.jsonl"
    sealed = SessionBuilder()
    sealed.user("go")
    sealed.assistant(thinking(f"the key is {SECRETS['stripe'][0]}"), text("ok"))
    for turn in range(3):
        sealed.user(f"task {turn}")
        sealed.assistant(tool_call(f"c{turn}", "bash", {"command": "ls"}))
        sealed.tool_result(f"c{turn}", "bash", big_text(f"out{turn}", 60))
        sealed.assistant(text(f"done {turn}"))
    write(repo / sealed_rel, sealed.data())
    plain = SessionBuilder()
    plain.user(f"here: {SECRETS['github'][0]}")
    plain.assistant(text("ok"))
    write(repo / plain_rel, plain.data())
    run = Runs(repo)
    found = orjson.loads(run("scan", "--json", code=1).stdout)["findings"]
    ids = {f["file"]: f["hash"][:12] for f in found}

    error = run("compress", plain_rel, code=1).stderr.decode().splitlines()[-1]
    assert f"`gitclaw-compress redact {plain_rel} --all`" in error, error
    assert f"`gitclaw-compress scan --accept {ids[plain_rel]}`" in error, error
    assert "PATH" not in error and "sealed" not in error

    error = run("compress", sealed_rel, "--keep-turns", "1", code=1).stderr.decode()
    error = error.splitlines()[-1]
    accept = f"gitclaw-compress scan --accept {ids[sealed_rel]}"
    assert f"id {ids[sealed_rel]}: only inside signed thinking" in error, error
    assert f"`{accept}`" in error and "docs/secrets.md" in error, error
    assert "redact" not in error.split("only inside")[0], error  # redact cannot remove it

    accepted = run(*accept.split()[1:], code=1).stdout  # issue-2's finding stays open
    assert b"accepted 1 secret" in accepted
    run("compress", sealed_rel, "--keep-turns", "1")
    removed = run("redact", sealed_rel, "--all").stdout
    assert b"redacted 1 secret in " in removed and b" 1 archive object" in removed
    assert run("scan", sealed_rel, "--json").returncode == 0
    run.assert_no_secret()


@pytest.mark.parametrize("remote", ["none", "without the archive", "with the archive"])
def test_redact_advises_a_forced_push_only_when_the_remote_holds_the_archive(
    tmp_path: Path, remote: str
) -> None:
    repo, rel = _pi_repo(tmp_path, LENIENT)  # the secrets are archived
    run = Runs(repo)
    run("compress", rel)
    if remote != "none":
        origin = make_origin(tmp_path)
        git(repo, "remote", "add", "origin", origin.url)
    if remote == "with the archive":
        run("push")
    done = run("redact", rel, "--all")
    assert b"archive object" in done.stdout
    assert (b"push --force" in done.stdout) == (remote == "with the archive"), done.stdout
    run.assert_no_secret()


def test_restore_names_the_markers_redact_left_in_the_original(tmp_path: Path) -> None:
    repo, rel = _pi_repo(tmp_path, LENIENT)  # the secrets are archived
    run = Runs(repo)
    run("compress", rel)
    found = orjson.loads(run("scan", rel, "--json", code=None).stdout)["findings"]
    run("redact", rel, "--all")
    note = run("restore", rel, "-o", "-").stderr.decode()
    assert "[REDACTED:rule]" not in note, note
    for rule in {f["rule"] for f in found}:
        assert f"[REDACTED:{rule}]" in note, (rule, note)
    run.assert_no_secret()


def test_accept_with_accept_all_is_a_usage_error_and_accepts_nothing(tmp_path: Path) -> None:
    repo, _ = _pi_repo(tmp_path)
    run = Runs(repo)
    done = run("scan", "--accept", "X", "--accept-all", code=2)
    error = done.stderr.decode()
    assert error.startswith("gitclaw-compress: error: ") and error.count("\n") == 1, error
    assert "--accept-all" in error and done.stdout == b""
    assert not (repo / ".gitclaw-secrets.json").exists()


def test_the_advice_names_a_few_files_shell_quoted_and_counts_the_rest() -> None:
    from gitclaw_compress.secrets.check import fix_advice
    from gitclaw_compress.secrets.findings import Finding

    def finding(file: str, number: int) -> Finding:
        return Finding(file, 2, "L2", ("text",), "rule", f"{number:012x}".ljust(64, "0"), "…")

    names = ["a b.jsonl", "c.jsonl", "d.jsonl", "e.jsonl", "f.jsonl"]
    advice = fix_advice([finding(name, number) for number, name in enumerate(names)])
    assert "`gitclaw-compress redact 'a b.jsonl' --all`" in advice, advice
    assert "e.jsonl" not in advice and "2 more files" in advice, advice
    assert f"--accept {0:012x} --accept {1:012x}" in advice, advice
