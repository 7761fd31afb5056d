"""compression.json: lookup order, validation, and the docs kept in step with the code."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import REPO_ROOT

from gitclaw_compress.config import (
    OPTIONS,
    default_document,
    load_config,
    options_markdown,
    parse_config,
)
from gitclaw_compress.errors import GitClawError


def test_shipped_compression_json_holds_every_default() -> None:
    shipped = orjson.loads((REPO_ROOT / "compression.json").read_bytes())
    assert shipped == default_document()
    assert parse_config((REPO_ROOT / "compression.json").read_bytes(), "x").values == {
        option.key: option.default for option in OPTIONS
    }


def test_docs_table_matches_the_declared_options() -> None:
    assert options_markdown() in (REPO_ROOT / "docs" / "configuration.md").read_text()


def test_lookup_order_explicit_then_agent_folder_then_root(tmp_path: Path) -> None:
    session = tmp_path / ".GITCLAW" / "state" / "sessions" / "s.jsonl"
    session.parent.mkdir(parents=True)
    (tmp_path / "compression.json").write_text('{"session": {"previewLines": 1}}')
    assert load_config(session, tmp_path)["session.previewLines"] == 1
    (tmp_path / ".GITCLAW" / "compression.json").write_text('{"session": {"previewLines": 2}}')
    assert load_config(session, tmp_path)["session.previewLines"] == 2
    explicit = tmp_path / "other.json"
    explicit.write_text('{"session": {"previewLines": 5}}')
    assert load_config(session, tmp_path, explicit)["session.previewLines"] == 5
    with pytest.raises(GitClawError, match="config file not found"):
        load_config(session, tmp_path, tmp_path / "missing.json")


def test_comments_and_partial_files_are_fine() -> None:
    config = parse_config(b'{"//": "hi", "session": {"//": "x", "enabled": false}}', "c.json")
    assert config["session.enabled"] is False
    assert config["session.toolResultMaxBytes"] == 1000


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b'{"session": {"previewLines": -1}}', "session.previewLines must be at least 0"),
        (b'{"sessions": {"globs": [1]}}', "sessions.globs must be a list of strings"),
        (b'{"archive": {"ref": "gitclaw"}}', "archive.ref must start with refs/"),
        (b'{"session": []}', "session must be an object"),
        (b"[]", "must be a JSON object"),
    ],
)
def test_invalid_values_name_the_key(document: bytes, message: str) -> None:
    with pytest.raises(GitClawError, match=message.replace(".", r"\.")):
        parse_config(document, "c.json")
