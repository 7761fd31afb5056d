"""Copies of one session share its header, so they share one list of file records (Entire
keeps a `full.jsonl` copy in each checkpoint; agents fork sessions). The whole-file check
must cost the same per file for a thousand copies as for a thousand distinct sessions:
each byte hashed once whatever the number of records, and the records listed once per
run, not once per copy. Counted, not timed (bench/verify_copies.py times it)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from conftest import commit_session, git
from synthetic import typical_session

from gitclaw_compress.cli import cli
from gitclaw_compress.ops import check
from gitclaw_compress.store.archive_layout import FileRecord
from gitclaw_compress.store.repository import Repository

REAL_SHA256 = hashlib.sha256


class CountingSha256:
    """hashlib.sha256 that counts the bytes it is given, copies included."""

    hashed = 0

    def __init__(self, inner: Any = None) -> None:
        self._inner = inner if inner is not None else REAL_SHA256()

    def update(self, data: bytes) -> None:
        CountingSha256.hashed += len(data)
        self._inner.update(data)

    def copy(self) -> CountingSha256:
        return CountingSha256(self._inner.copy())

    def hexdigest(self) -> str:
        return str(self._inner.hexdigest())


def test_each_byte_is_hashed_once_whatever_the_number_of_records(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = typical_session(turns=3).data()
    wanted = FileRecord(REAL_SHA256(data).hexdigest(), len(data), data.count(b"\n"))
    others = [FileRecord("0" * 64, len(data) - n, 1) for n in range(0, 900, 3)]  # forks
    same = [FileRecord(f"{n:064x}", len(data), 1) for n in range(300)]  # copies, one size
    monkeypatch.setattr(hashlib, "sha256", CountingSha256)  # the module check.py uses
    CountingSha256.hashed = 0
    chunks = iter([data[: len(data) // 2], data[len(data) // 2 :]])
    assert check._matching_record(chunks, [*others, *same, wanted]) == wanted
    assert CountingSha256.hashed == len(data)  # was about 600 times that


def test_verifying_copies_lists_the_records_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = typical_session(turns=3).data()
    folder = ".GITCLAW/state/sessions"
    for number in range(8):
        commit_session(repo, f"{folder}/copy{number}.jsonl", data)
    (repo / "compression.json").write_bytes(b'{"session": {"sizeThresholdKB": 0}}')
    monkeypatch.chdir(repo)
    with pytest.raises(SystemExit) as done:
        cli.main(["compress", "--keep-turns", "1", folder], prog_name="gitclaw-compress")
    assert done.value.code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "compressed")
    listed: list[str] = []
    ls_tree = Repository.ls_tree

    def counting(self: Repository, tree: str, *paths: str, recursive: bool = False) -> Any:
        if ":files/" in tree:
            listed.append(tree)
        return ls_tree(self, tree, *paths, recursive=recursive)

    monkeypatch.setattr(Repository, "ls_tree", counting)
    with pytest.raises(SystemExit) as done:
        cli.main(["verify", "--no-fetch", folder], prog_name="gitclaw-compress")
    assert done.value.code == 0
    assert len(listed) == 1, listed  # one header, one listing (was one per copy)
