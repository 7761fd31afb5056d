"""Byte spans of JSON values in raw text, including escapes and whitespace."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitclaw_compress.core.jsonspan import SpanError, locate, object_close, splice

RAW = (
    b'{"a": "x\\"y\\\\", "b" :[1, {"c":"\\u00e9\\n"}, [2,3], true],'
    b'"d\\"k":{"e":null}, "f":-1.5e-06 }  \r'
)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("a",), b'"x\\"y\\\\"'),
        (("b",), b'[1, {"c":"\\u00e9\\n"}, [2,3], true]'),
        (("b", 1, "c"), b'"\\u00e9\\n"'),
        (("b", 2), b"[2,3]"),
        (("b", 3), b"true"),
        (('d"k', "e"), b"null"),
        (("f",), b"-1.5e-06"),
    ],
)
def test_locates_values(path: tuple[str | int, ...], value: bytes) -> None:
    span = locate(RAW, [path])[path]
    assert RAW[span.start : span.end] == value


def test_missing_paths_are_absent_and_key_start_points_at_the_key() -> None:
    spans = locate(RAW, [("zz",), ("b", 9), ("a",)])
    assert set(spans) == {("a",)}
    assert RAW[spans[("a",)].key_start :].startswith(b'"a"')


def test_splice_and_object_close() -> None:
    assert splice(b"0123456789", [(6, 8, b"X"), (1, 3, b"")]) == b"0345X89"
    assert RAW[object_close(RAW)] == ord("}")
    with pytest.raises(SpanError):
        object_close(b"[1]")
    with pytest.raises(SpanError):
        splice(b"abc", [(0, 2, b""), (1, 3, b"")])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=6), json_values, min_size=1, max_size=5))
def test_every_top_level_value_round_trips(document: dict[str, object]) -> None:
    raw = orjson.dumps(document)
    spans = locate(raw, [(key,) for key in document])
    for key, value in document.items():
        span = spans[(key,)]
        assert orjson.loads(raw[span.start : span.end]) == value
