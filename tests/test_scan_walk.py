"""The scan's walk over a line's string values gives what the plain walk gave: the same
values with the same paths in document order, the marker skipped at the top level only,
and with `shortest` only the values that long (the engine drops shorter ones unscanned)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from conftest import CORPUS, needs_corpus

from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import MARKER_KEY
from gitclaw_compress.formats import registry
from gitclaw_compress.formats.base import SECRET_SCAN, SECRET_SEALED, SECRET_SKIP, FormatBase
from gitclaw_compress.secrets.engine import MIN_VALUE
from gitclaw_compress.secrets.scan import string_values


def reference(value: Any, path: JsonPath = ()) -> Iterator[tuple[JsonPath, str]]:
    """The walk as it was: a path for every member, children pushed in reverse."""
    stack: list[tuple[JsonPath, Any]] = [(path, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, str):
            yield here, item
        elif isinstance(item, dict):
            members = [
                ((*here, key), child)
                for key, child in item.items()
                if not (here == () and key == MARKER_KEY)
            ]
            stack.extend(reversed(members))
        elif isinstance(item, list):
            stack.extend(reversed([((*here, index), child) for index, child in enumerate(item)]))


def deep(levels: int) -> Any:
    value: Any = "a secret-sized string"
    for level in range(levels):
        value = [value, "short"] if level % 2 else {"k": value, "n": level, "s": "long enough"}
    return value


VALUES: list[Any] = [
    "a lone string value",
    "short",
    7,
    None,
    [],
    {},
    {"a": "x" * 8, "b": "x" * 7, "c": ["y" * 9, 1, True, None, {"d": "z" * 20}], "e": {}},
    {MARKER_KEY: {"sha256": "f" * 64}, "text": "visible text"},
    {MARKER_KEY: ["a list under the marker key"], "n": {MARKER_KEY: ["kept when nested"]}},
    {MARKER_KEY: "a string under the marker key", "t": "visible text"},
    {"nested": {MARKER_KEY: "kept below the top level"}},
    [{MARKER_KEY: "kept inside a list"}, "another long value"],
    [[[]], [["deep inside lists"]], {"": "empty key value"}],
    deep(3000),
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("shortest", [0, MIN_VALUE])
def test_walk_matches_the_plain_walk(value: Any, shortest: int) -> None:
    expected = [(path, text) for path, text in reference(value) if len(text) >= shortest]
    assert list(string_values(value, shortest=shortest)) == expected
    assert list(string_values(value, ("root",), shortest)) == [
        (path, text) for path, text in reference(value, ("root",)) if len(text) >= shortest
    ]


@needs_corpus
@pytest.mark.parametrize("kind", ["pi", "claude", "codex", "copilot"])
def test_walk_matches_on_the_corpus(kind: str) -> None:
    walked = 0
    for path in sorted((CORPUS / kind).glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            expected = [(where, text) for where, text in reference(entry) if len(text) >= MIN_VALUE]
            assert list(string_values(entry, shortest=MIN_VALUE)) == expected
            walked += len(expected)
    assert walked > 0


def reference_scope(fmt: FormatBase, path: JsonPath, value: str) -> str:
    """The scope as it was worked out: generators over the whole path."""
    key = next((step for step in reversed(path) if isinstance(step, str)), "")
    if key in fmt.secret_free_keys or value.startswith("data:image/"):
        return SECRET_SKIP
    sealed = any(step in fmt.secret_sealed_keys for step in path if isinstance(step, str))
    return SECRET_SEALED if sealed else SECRET_SCAN


@pytest.mark.parametrize("name", sorted(registry()))
def test_scope_matches_the_plain_one(name: str) -> None:
    fmt = registry()[name]
    assert isinstance(fmt, FormatBase)
    keys = [*sorted(fmt.secret_free_keys | fmt.secret_sealed_keys), "other", ""]
    paths: list[JsonPath] = [(), (0,), (3, 1)]
    for key in keys:
        for other in keys:
            paths += [(key,), (key, 0), (key, 2, 0), (other, key), (other, 1, key, 0)]
            paths += [(key, other), (key, 0, other, 5), (0, key, other)]
    for path in paths:
        for value in ("plain text value", "data:image/png;base64,AAAA"):
            assert fmt.secret_scope(path, value) == reference_scope(fmt, path, value), path
