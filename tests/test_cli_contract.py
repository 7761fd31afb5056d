"""The command-line contract every agent format keeps, through the real CLI in a hermetic
repository, checked the same way for each format of `format_cases.FORMAT_CASES`.

On every synthetic case of the format, committed where its agent puts it:
- `compress --keep-turns 1 --force` rewrites it and says so; a second run changes nothing,
  neither the file nor the archive ref;
- `verify` says ok; `show L<n> --raw` of a stubbed line prints the original line;
- `restore -o -` gives the original bytes back, also after `git gc --prune=now`;
- the pre-commit path: staged by the agent's run, `compress --stage` rewrites and stages it,
  the commit holds the compressed file and the original restores from it.
Then: the default globs find a transcript in every place its agent commits one (and no
file outside them), the hooks' `files` pattern agrees; and the corpus files of the format,
compressed by the CLI, shrink to the format's ratio, keep every line, newline, sealed value
and the kept turn, do not change on a second run, and restore byte for byte after gc.
Every synthetic case is also served by `status`, `context` and `prune` in text and JSON
(budget pruning restorable after gc), and `status --all` reports every format at once.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from conftest import REPO_ROOT, accept_corpus_secrets, commit_session, git
from format_cases import FORMAT_CASES, FormatCase

from gitclaw_compress.cli import cli
from gitclaw_compress.core.compressor import CompressSettings, plan_lines
from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats import FORMATS
from gitclaw_compress.formats.base import Format
from gitclaw_compress.model import TOOL_CALL, TOOL_RESULT

ARCHIVE = "refs/gitclaw/archive"
KEEP_ONE = CompressSettings(keep_turns=1)
NOTHING_PROTECTED = {"protectTokens": 0, "minimumTokens": 0, "protectTurns": 0}
SEPARATORS = ("\u2028".encode(), "\u2029".encode())


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def ok(*args: str) -> Result:
    done = run(*args)
    assert done.exit_code == 0, f"{args}: exit {done.exit_code}\n{done.output}"
    return done


def _synthetic() -> list[object]:
    return [
        pytest.param(case, make, id=f"{case.name}-{label}")
        for case in FORMAT_CASES
        for label, make in case.synthetic
    ]


def _by_format() -> list[object]:
    return [pytest.param(case, id=case.name) for case in FORMAT_CASES]


def archive_tip(repo: Path) -> str:
    return git(repo, "rev-parse", ARCHIVE).strip()


@pytest.mark.parametrize(("case", "make"), _synthetic())
def test_compress_verify_show_and_restore_after_gc(
    case: FormatCase, make: Callable[[], bytes], repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = make()
    relpath = case.place("s1")
    path = commit_session(repo, relpath, original)
    monkeypatch.chdir(repo)

    done = ok("compress", "--keep-turns", "1", "--force", relpath)
    assert re.search(rf"^compressed {re.escape(relpath)}:", done.stdout, re.M), done.stdout
    compressed = path.read_bytes()
    assert compressed != original and len(compressed) < len(original)
    tip = archive_tip(repo)

    again = ok("compress", "--keep-turns", "1", "--force", relpath)
    assert again.stdout.startswith(f"unchanged {relpath}: nothing new to compress"), again.stdout
    assert path.read_bytes() == compressed and archive_tip(repo) == tip

    verified = ok("verify", relpath)
    assert verified.stdout.startswith("ok:"), verified.stdout

    # `show` of the first stubbed line prints that line as it was.
    before, after = lines_from_bytes(original), lines_from_bytes(compressed)
    stubbed = next(old for old, new in zip(before, after, strict=True) if old.data != new.data)
    shown = ok("show", relpath, f"L{stubbed.number}", "--raw")
    assert shown.stdout_bytes == stubbed.data + b"\n"

    assert ok("restore", relpath, "-o", "-").stdout_bytes == original
    git(repo, "gc", "-q", "--prune=now")
    assert ok("verify", relpath).stdout.startswith("ok:")
    assert ok("restore", relpath, "-o", "-").stdout_bytes == original
    ok("restore", relpath, "-o", "restored.jsonl")
    assert (repo / "restored.jsonl").read_bytes() == original
    ok("restore", relpath)
    assert path.read_bytes() == original


@pytest.mark.parametrize("case", _by_format())
def test_the_pre_commit_path_compresses_and_stages(
    case: FormatCase, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    commit_session(repo, "README.md", b"a project\n")
    _, make = case.synthetic[0]
    original = make()
    relpath = case.place("s2")
    path = repo / relpath
    path.parent.mkdir(parents=True)
    path.write_bytes(original)
    git(repo, "add", relpath)  # the agent's run staged it; the hook runs before the commit
    monkeypatch.chdir(repo)

    # (--force: a synthetic case may be under session.sizeThresholdKB)
    done = ok("compress", "--stage", "--force", "--keep-turns", "1")
    assert f"staged {relpath}" in done.stdout, done.stdout
    compressed = path.read_bytes()
    assert compressed != original
    assert git(repo, "diff", "--name-only").strip() == ""  # nothing left unstaged
    git(repo, "commit", "-qm", "agent run")
    assert git(repo, "show", f"HEAD:{relpath}").encode() == compressed
    git(repo, "gc", "-q", "--prune=now")
    assert ok("restore", relpath, "-o", "-").stdout_bytes == original


HOOKS = [
    hook
    for hook in yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    if "files" in hook  # the pre-push hook takes no files
]


@pytest.mark.parametrize("case", _by_format())
def test_default_globs_and_the_hooks_find_it_where_its_agent_commits_it(
    case: FormatCase, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, make = case.synthetic[0]
    data = make()
    places = [layout.format(id=f"s{n}") for n, layout in enumerate(case.layouts)]
    elsewhere = [path.format(id="s9") for path in case.not_sessions]
    for place in places + elsewhere:
        commit_session(repo, place, data)
    monkeypatch.chdir(repo)

    done = ok("compress", "--all", "--force", "--keep-turns", "1", "--json")
    assert sorted(entry["path"] for entry in json.loads(done.stdout)["files"]) == sorted(places)
    for place in places:
        assert (repo / place).read_bytes() != data, place
    for path in elsewhere:
        assert (repo / path).read_bytes() == data, path

    assert len(HOOKS) == 2
    for hook in HOOKS:
        files = re.compile(hook["files"])
        for place in places:
            assert files.search(place), (hook["id"], place)
        for path in elsewhere:
            assert not files.search(path), (hook["id"], path)


def test_every_registered_format_has_a_case() -> None:
    assert [case.name for case in FORMAT_CASES] == list(FORMATS)


def check_invariants(fmt: Format, original: bytes, compressed: bytes, relpath: str) -> None:
    """Every line and its newline stay, the kept turn byte for byte, every sealed value; a
    changed line holds no raw U+2028/U+2029."""
    old, new = lines_from_bytes(original), lines_from_bytes(compressed)
    assert len(new) == len(old) and [n.newline for n in new] == [o.newline for o in old]
    window = plan_lines(old, KEEP_ONE, session_ref=relpath, fmt=fmt).window_start
    for before, after in zip(old, new, strict=True):
        where = f"{relpath}:{before.number}"
        if before.number >= window or parse_entry(before.data) is None:
            assert after.data == before.data, where
        if after.data == before.data:
            continue
        assert not any(separator in after.data for separator in SEPARATORS), where
        entry_before, entry_after = parse_entry(before.data), parse_entry(after.data)
        assert entry_before is not None and entry_after is not None, where
        assert list(fmt.sealed(entry_before)) == list(fmt.sealed(entry_after)), where


def _corpus() -> list[object]:
    params: list[object] = [
        pytest.param(case, id=case.name) for case in FORMAT_CASES if case.corpus()
    ]
    return params or [pytest.param(None, id="no-corpus", marks=pytest.mark.skip("no corpus"))]


@pytest.mark.parametrize("case", _corpus())
def test_corpus_files_shrink_and_restore_byte_for_byte_after_gc(
    case: FormatCase, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = case.corpus()
    originals = {case.place(f"c{n}-{source.stem}"): source for n, source in enumerate(sources)}
    for relpath, source in originals.items():
        path = repo / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source.read_bytes())
    accept_corpus_secrets(repo)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "sessions as the agents committed them")
    monkeypatch.chdir(repo)
    relpaths = list(originals)

    ok("compress", "--keep-turns", "1", "--force", *relpaths)
    compressed = {relpath: (repo / relpath).read_bytes() for relpath in relpaths}
    for relpath, source in originals.items():
        check_invariants(FORMATS[case.name], source.read_bytes(), compressed[relpath], relpath)
    before = sum(source.stat().st_size for source in sources)
    after = sum(len(data) for data in compressed.values())
    assert after <= before * case.corpus_ratio, f"{before} -> {after} bytes"
    tip = archive_tip(repo)
    again = ok("compress", "--keep-turns", "1", "--force", *relpaths)
    assert not re.search(r"^compressed ", again.stdout, re.M), again.stdout
    assert {relpath: (repo / relpath).read_bytes() for relpath in relpaths} == compressed
    assert archive_tip(repo) == tip

    git(repo, "gc", "-q", "--prune=now")
    ok("verify", *relpaths)
    for relpath, source in originals.items():
        restored = ok("restore", relpath, "-o", "-").stdout_bytes
        assert restored == source.read_bytes(), relpath


@pytest.mark.parametrize(("case", "make"), _synthetic())
def test_status_context_and_prune_serve_it_in_text_and_json(
    case: FormatCase, make: Callable[[], bytes], repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = make()
    relpath = case.place("s1")
    path = commit_session(repo, relpath, original)
    monkeypatch.chdir(repo)
    for command in (["status"], ["context"], ["prune", "--dry-run"]):
        assert relpath in ok(*command, relpath).stdout, command
        report = json.loads(ok(*command, "--json", relpath).stdout)
        assert relpath in json.dumps(report), command
    context = json.loads(ok("context", "--json", relpath).stdout)
    assert context["format"] == case.name and context["messages"]
    status = json.loads(ok("status", "--json", relpath).stdout)
    assert status["path"] == relpath and status["context_tokens"] > 0
    assert path.read_bytes() == original  # none of them wrote

    # Budget pruning with nothing protected stubs the completed tool outputs, restorably.
    config = repo.parent / "budget.json"
    config.write_text(json.dumps({"prune": NOTHING_PROTECTED}))
    done = ok("prune", "--config", str(config), relpath)
    assert done.stdout.startswith(f"pruned {relpath}:"), done.stdout
    assert len(path.read_bytes()) < len(original)
    git(repo, "gc", "-q", "--prune=now")
    assert ok("verify", relpath).stdout.startswith("ok:")
    assert ok("restore", relpath, "-o", "-").stdout_bytes == original


def test_status_all_reports_every_format_in_one_repository(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    places = []
    for case in FORMAT_CASES:
        _, make = case.synthetic[0]
        places.append(case.place("s1"))
        commit_session(repo, places[-1], make())
    monkeypatch.chdir(repo)
    report = json.loads(ok("status", "--all", "--json").stdout)
    assert sorted(entry["path"] for entry in report["files"]) == sorted(places)
    text = ok("status", "--all").stdout
    assert all(place in text for place in places)


@pytest.mark.parametrize(
    "case",
    # Claude Code's synthetic replies record a tiny usage, which the context size rightly
    # trusts: its target mode is exercised on the corpus by bench/layers.py instead.
    [pytest.param(case, id=case.name) for case in FORMAT_CASES if case.name != "claude"],
)
def test_target_mode_compresses_the_oldest_lines_down_toward_the_target(
    case: FormatCase, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _label, make = case.synthetic[0]  # each format's typical session: several turns
    original = make()
    relpath = case.place("s1")
    path = commit_session(repo, relpath, original)
    monkeypatch.chdir(repo)
    model = json.loads(ok("status", "--json", relpath).stdout)["model"]
    config = repo.parent / "small-window.json"
    window = {"context_window": 24000, "max_output": 1000}
    config.write_text(json.dumps({"models": {"overrides": {model: window}}}))
    report = json.loads(
        ok("prune", "--config", str(config), "--target", "--dry-run", "--json", relpath).stdout
    )
    [file] = report["files"]
    assert file["budget"]["freed_tokens"] > 0, file["budget"]["decision"]
    assert path.read_bytes() == original
    done = ok("prune", "--config", str(config), "--target", relpath)
    assert done.stdout.startswith(f"pruned {relpath}:"), done.stdout
    assert len(path.read_bytes()) < len(original)
    git(repo, "gc", "-q", "--prune=now")
    assert ok("restore", relpath, "-o", "-").stdout_bytes == original


@pytest.mark.parametrize("case", _by_format())
def test_show_names_the_tool_and_the_call_of_a_result(
    case: FormatCase, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The header of a tool result names the tool of its call and the call id, also where the
    result's own line names no tool and after compress stubbed the output."""
    original = case.synthetic[0][1]()
    relpath = case.place("s1")
    commit_session(repo, relpath, original)
    monkeypatch.chdir(repo)
    fmt = FORMATS[case.name]
    views = list(fmt.views(lines_from_bytes(original)))
    tools = {
        part.call_id: part.name
        for view in views
        for message in view.messages
        for part in message.parts
        if part.kind == TOOL_CALL
    }
    result, call_id = next(
        (view, part.call_id)
        for view in views
        for message in view.messages
        for part in message.parts
        if part.kind == TOOL_RESULT and part.call_id in tools
    )
    name = tools[call_id]
    assert name and call_id
    ok("compress", "--keep-turns", "1", "--force", relpath)
    shown = ok("show", relpath, result.id or f"L{result.number}").stdout
    assert f"[tool result {name} id={call_id}]" in shown, shown
