"""compression.json: lookup order, validation, and the docs kept in step with the code."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest
from conftest import REPO_ROOT

from gitclaw_compress.config import (
    OPTIONS,
    default_document,
    defaults,
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
    assert config["session.toolResultMaxBytes"] == 500


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (b'{"session": {"previewLines": -1}}', "session.previewLines must be at least 0"),
        (b'{"sessions": {"globs": [1]}}', "sessions.globs must be a list of strings"),
        (b'{"archive": {"ref": "gitclaw"}}', "archive.ref must be a ref under refs/gitclaw/"),
        (
            b'{"archive": {"ref": "refs/heads/main"}}',
            "archive.ref must be a ref under refs/gitclaw/",
        ),
        (b'{"archive": {"ref": "refs/gitclaw/../../x"}}', "is not a valid git ref name"),
        (b'{"archive": {"ref": "refs/gitclaw/a b"}}', "is not a valid git ref name"),
        (b'{"archive": {"ref": "refs/gitclaw/x.lock"}}', "is not a valid git ref name"),
        (b'{"session": []}', "session must be an object"),
        (b"[]", "must be a JSON object"),
        (b'{"prune": {"strategy": "newest"}}', "prune.strategy must be one of turns, tokens, both"),
        (b'{"tokens": {"estimator": "gpt"}}', "tokens.estimator must be one of chars4, bytes4"),
        (b'{"tokens": {"criticalPercent": 101}}', "tokens.criticalPercent must be at most 100"),
        (b'{"prune": {"targetPercent": 0}}', "prune.targetPercent must be at least 1"),
        (b'{"prune": {"protectedTools": "skill"}}', "prune.protectedTools must be a list"),
        (
            b'{"tokens": {"warningPercent": 95}}',
            "tokens.warningPercent (95) must not be above tokens.criticalPercent (90)",
        ),
        (b'{"models": {"overrides": []}}', "models.overrides must be an object"),
        (
            b'{"models": {"overrides": {"gpt-5.4": 272000}}}',
            "models.overrides['gpt-5.4']: model override 'gpt-5.4' must be an object",
        ),
        (
            b'{"models": {"overrides": {"gpt-5.4": {"window": 1}}}}',
            "models.overrides['gpt-5.4']: model override 'gpt-5.4' has unknown key 'window'",
        ),
        (
            b'{"models": {"overrides": {"x": {"context_window": true}}}}',
            "models.overrides['x']: model override 'x': context_window must be a positive",
        ),
    ],
)
def test_invalid_values_name_the_key(document: bytes, message: str) -> None:
    with pytest.raises(GitClawError, match=re.escape(message)):
        parse_config(document, "c.json")


def test_budget_settings_come_from_the_config() -> None:
    config = parse_config(
        b'{"tokens": {"estimator": "cjk", "reserve": 0}, "models": {"overrides": '
        b'{"m": {"contextWindow": 9000}}}, "prune": {"strategy": "both", "protectTokens": 5, '
        b'"minimumTokens": 6, "protectedTools": ["skill", "todo"], "protectTurns": 2}}',
        "c.json",
    )
    budget = config.compress_settings().budget
    assert (budget.strategy, budget.estimator, budget.reserve_tokens) == ("both", "cjk", 0)
    assert (budget.protect_tokens, budget.minimum_tokens, budget.protect_turns) == (5, 6, 2)
    assert budget.protected_tools == frozenset({"skill", "todo"})
    assert budget.model_overrides == {"m": {"contextWindow": 9000}}
    assert budget.target_percent is None and budget.active
    target = config.compress_settings(strategy="tokens", target_percent=60).budget
    assert (target.strategy, target.target_percent) == ("tokens", 60)
    assert not defaults().compress_settings().budget.active


def test_the_strategy_choices_are_the_cores() -> None:
    from gitclaw_compress.config import OPTIONS
    from gitclaw_compress.core.compressor import STRATEGIES

    [strategy] = [option for option in OPTIONS if option.key == "prune.strategy"]
    assert tuple(strategy.choices or ()) == STRATEGIES


@pytest.mark.parametrize(
    ("document", "keep"),
    [
        ("{}", False),
        ('{"session": {"keepUserImages": true}}', True),
        ('{"session": {"stripUserImages": true}}', False),
        ('{"session": {"stripUserImages": false}}', True),  # older shipped file: kept as before
        ('{"session": {"stripUserImages": false, "keepUserImages": true}}', True),
    ],
)
def test_strip_user_images_is_read_as_the_opposite_of_keep_user_images(
    document: str, keep: bool
) -> None:
    assert parse_config(document.encode(), "c.json")["session.keepUserImages"] is keep


def test_contradicting_image_keys_are_one_error() -> None:
    document = b'{"session": {"keepUserImages": true, "stripUserImages": true}}'
    with pytest.raises(GitClawError, match=r"c\.json: session\.stripUserImages contradicts"):
        parse_config(document, "c.json")


def test_the_stub_ui_copies_text_names_every_codex_copy_it_stubs() -> None:
    """Codex stubs the UI copies of command outputs, patch diffs, and of replies, plans and
    reasoning summaries (formats/codex/rules.py): the option's text, and the README's
    paragraph on it, name each, not the outputs alone."""
    doc = next(option.doc for option in OPTIONS if option.key == "session.stubUiCopies")
    readme = (REPO_ROOT / "README.md").read_text()
    paragraph = readme[readme.index("With `stubUiCopies: true`") :].split("\n\n")[0]
    for text in (doc, paragraph):
        codex = text[text.index("Codex") :]
        for kind in ("exec_command_end", "patch_apply_", "replies", "plans", "reasoning"):
            assert kind in codex, (kind, text)
