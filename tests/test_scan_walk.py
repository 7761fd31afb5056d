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
from gitclaw_compress.core.lines import MARKER_KEY, RawLine
from gitclaw_compress.formats import registry
from gitclaw_compress.formats.base import SECRET_SCAN, SECRET_SEALED, SECRET_SKIP, FormatBase
from gitclaw_compress.secrets.assignments import RULE, as_member
from gitclaw_compress.secrets.engine import MIN_VALUE, Hit
from gitclaw_compress.secrets.scan import (
    JSON_STEP,
    Where,
    _line_values,
    place_where,
    string_values,
    value_strings,
)


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


def reference_lines(
    lines: list[bytes], fmt: FormatBase | None
) -> tuple[list[tuple[Where, str]], list[Hit[Where]]]:
    """What the scan read of each line as it was worked out: `value_strings` of the parsed
    line, each string's scope from `secret_scope` on its path before any `(json)` step, and
    a member whose key names a secret."""
    values: list[tuple[Where, str]] = []
    members: list[Hit[Where]] = []
    for number, data in enumerate(lines, 1):
        try:
            entry = orjson.loads(data)
        except orjson.JSONDecodeError:
            values.append(((number, (), False), data.decode("utf-8", "replace")))
            continue
        for path, text in value_strings(entry):
            outer = path[: path.index(JSON_STEP)] if JSON_STEP in path else path
            scope = fmt.secret_scope(outer, text) if fmt is not None else SECRET_SCAN
            if scope == SECRET_SKIP:
                continue
            where = (number, path, scope == SECRET_SEALED)
            name = path[-1] if path else None
            if isinstance(name, str) and as_member(name, text) is not None:
                members.append(Hit(where, RULE, text.strip()))
            values.append((where, text))
    return values, members


def walked_lines(lines: list[bytes], fmt: Any) -> tuple[list[tuple[Where, str]], list[Hit[Where]]]:
    members: list[Hit[Where]] = []
    raw = [RawLine(number, data, True) for number, data in enumerate(lines, 1)]
    values = [(place_where(place), text) for place, text in _line_values(raw, fmt, {}, members)]
    return values, members


def held_json(value: Any) -> str:
    return orjson.dumps(value).decode()


LINES: list[Any] = [
    *VALUES[:-1],
    deep(200),  # orjson writes at most 255 levels
    {"thinking": "sealed thinking text", "content": [{"text": "a plain text value"}]},
    {"api_key": "Zx81kQ0pLr7TnB4vWc2Y", "nested": {"authToken": "  Q9w8E7r6T5y4U3i2O1p0  "}},
    {"arguments": held_json({"command": "echo something", "env": {"SECRET_TOKEN": "x" * 20}})},
    {"arguments": held_json({"a": held_json({"b": held_json(["deep", "deeper value"])})})},
    {"thinking": held_json({"inner": "inside sealed text"}), "id": "an id long enough"},
    {"data": "data:image/png;base64,AAAAAAAA", "x": ["data:image/png;base64,BBBBBBBB"]},
    held_json({"a line that is": "a string holding JSON"}),
    "  " + held_json(["blank first, a JSON list"]),
]


@pytest.mark.parametrize("name", [*sorted(registry()), None])
def test_line_walk_matches_value_strings(name: str | None) -> None:
    """The scan's one-loop walk (`_line_values`) reads what `value_strings` and the format's
    `secret_scope` read: the same strings, paths, scopes and members, in the same order."""
    fmt = registry()[name] if name else None
    assert fmt is None or isinstance(fmt, FormatBase)
    lines = [orjson.dumps(value) for value in LINES] + [b"{not json at all"]
    assert walked_lines(lines, fmt) == reference_lines(lines, fmt)


def test_no_format_has_its_own_scope() -> None:
    """`_line_values` applies `FormatBase.secret_scope` itself (per container, not per
    string): a format with a scope of its own would need the walk to ask it."""
    for fmt in registry().values():
        mro = type(fmt).__mro__
        assert not any("secret_scope" in vars(cls) for cls in mro[: mro.index(FormatBase)])


@needs_corpus
@pytest.mark.parametrize("kind", ["pi", "claude", "codex", "copilot"])
def test_line_walk_matches_on_the_corpus(kind: str) -> None:
    for path in sorted((CORPUS / kind).glob("*.jsonl")):
        lines = path.read_bytes().splitlines()
        fmt = registry()[kind]
        assert isinstance(fmt, FormatBase)
        assert walked_lines(lines, fmt) == reference_lines(lines, fmt)
