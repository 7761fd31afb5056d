"""The fast read of a v3 marker, and of a v2 marker (one match of the line's last member),
gives what the full check of the parsed marker gives, on well-formed lines and on every
damaged one tried."""

from __future__ import annotations

import orjson
import pytest

from gitclaw_compress.core import marker as marker_module
from gitclaw_compress.core.lines import MARKER_BYTES, MARKER_KEY
from gitclaw_compress.core.marker import DamagedLineError, Marker, intact_marker, read_marker

SHA = "5" * 30 + "ab" * 17
BLOB = "0123456789abcdef0123456789abcdef01234567"


def marked(marker: object, body: bytes = b'{"type":"x","id":"a1","text":"hi"}') -> bytes:
    """A line as compress writes it: the marker member before the object's closing brace."""
    return body[:-1] + b"," + MARKER_BYTES + b":" + orjson.dumps(marker) + b"}"


def v3(
    blob: str = BLOB,
    line: object = 5,
    digest: str | None = None,
    size: object = 4108,
    lines: object = 6631,
    flag: str | None = None,
) -> str:
    """A v3 marker; `digest` (the sha256 field as written) defaults to SHA's."""
    if digest is None:
        digest = intact_marker(BLOB, 1, bytes.fromhex(SHA), 0, 0).split(":")[3]
    text = f"3:{blob}:{line}:{digest}:{size}:{lines}"
    return text if flag is None else f"{text}:{flag}"


def intact(**changes: object) -> dict[str, object]:
    fields: dict[str, object] = {
        "v": 2,
        "sha256": SHA,
        "size": 4108,
        "intact": {"blob": BLOB, "line": 5},
        "lines": 6631,
    }
    fields.update(changes)
    return {key: value for key, value in fields.items() if value is not None}


def outcome(data: bytes, fast: bool) -> tuple[str, Marker | str | None]:
    try:
        return "read", read_marker(data, "s.jsonl:7", fast=fast)
    except DamagedLineError as error:
        return "damaged", str(error)


def takes_fast_path(data: bytes) -> bool:
    start = data.rfind(b"," + MARKER_BYTES + b":")
    return start > 0 and any(
        pattern.fullmatch(data, start) is not None
        for pattern in (marker_module._WELL_FORMED_V3, marker_module._WELL_FORMED_V2)
    )


WELL_FORMED_V3 = [
    marked(v3()),
    marked(v3(size=0, lines=0)),
    marked(v3(flag="ui")),
    marked(v3(blob="f" * 64, line=1)),
    marked(v3(size=10**17 * 9, line=10**17)),
    marked(v3(digest="-_" * 21 + "w")),
    marked(v3(), b'{"nested":{"' + MARKER_KEY.encode() + b'":"3:x"},"k":[1,{"a":"}"}]}'),
    marked(v3(), b'{"' + MARKER_KEY.encode() + b'":"2:x","id":"a"}'),  # repeated key
]

ODD_V3 = [
    marked(v3(flag="UI")),
    marked(v3(flag="")),
    marked(v3() + ":ui:ui"),
    marked(v3()[:-5]),
    marked("2" + v3()[1:]),
    marked(" " + v3()),
    marked(v3(blob=BLOB.upper())),
    marked(v3(blob=BLOB[:-1])),
    marked(v3(line=0)),
    marked(v3(line="05")),
    marked(v3(line="+5")),
    marked(v3(size=10**18)),  # 19 digits: past what a marker holds
    marked(v3(size=-1)),
    marked(v3(lines="")),
    marked(v3(digest="5" * 43)),  # the last character's spare bits set
    marked(v3(digest="A" * 42)),
    marked(v3(digest="A" * 42 + "=")),
    marked(v3(digest="+" * 42 + "A")),  # base64, not base64url
    marked(v3(digest="A" * 44)),
    marked(v3()).replace(b'"3:', b'"\\u0033:'),  # an escape: the full check reads it
    marked(v3()).replace(b"5:", b"5\\u003a", 1),
    marked(3),
    marked(["3", BLOB]),
    b'{"a":{"b":1,' + MARKER_BYTES + b":" + orjson.dumps(v3()) + b"}}",  # nested member
    b"{" + MARKER_BYTES + b":" + orjson.dumps(v3()) + b"}",  # the only member
    marked(v3()) + b" ",
    marked(v3()).replace(b":" + orjson.dumps(v3()), b": " + orjson.dumps(v3())),
]


def test_a_v3_marker_reads_as_its_v2_twin() -> None:
    """The same fields, written either way, read to the same marker (sha256 in hex)."""
    twin = read_marker(marked(intact()), "s.jsonl:7")
    assert twin is not None and twin.sha256 == SHA
    assert read_marker(marked(v3()), "s.jsonl:7") == twin
    flagged = read_marker(marked({**intact(), "ui": True}), "s.jsonl:7")
    assert read_marker(marked(v3(flag="ui")), "s.jsonl:7") == flagged


@pytest.mark.parametrize("data", ODD_V3)
def test_odd_v3_lines_read_the_same(data: bytes) -> None:
    assert not takes_fast_path(data)
    assert outcome(data, fast=True) == outcome(data, fast=False)


@pytest.mark.parametrize("data", WELL_FORMED_V3[:3] + WELL_FORMED_V3[5:6])
def test_damaged_v3_lines_read_the_same(data: bytes) -> None:
    variants = damaged(data, len(data))
    fast = [variant for variant in variants if takes_fast_path(variant)]
    assert fast, "no variant took the fast path"
    for variant in variants:
        assert outcome(variant, fast=True) == outcome(variant, fast=False), variant


WELL_FORMED = [
    marked(intact()),
    marked(intact(lines=None)),
    marked(intact(size=0, lines=0)),
    marked(intact(intact={"blob": "f" * 64, "line": 1})),
    marked(intact(size=10**17 * 9, intact={"blob": BLOB, "line": 10**17})),
    marked({**intact(), "ui": True}),
    marked(intact(), b'{"nested":{"' + MARKER_KEY.encode() + b'":1},"k":[1,{"a":"}"}]}'),
]

ODD = [
    marked(intact(), b'{"' + MARKER_KEY.encode() + b'":{"v":9},"id":"a"}'),  # repeated key
    marked(intact(commit="c" * 40)),  # v2 with a commit: the full check reads it
    marked(intact(lines="many")),
    marked({**intact(), "ui": False}),
    marked({**intact(), "extra": 1}),
    marked(intact(size=10**18)),  # 19 digits: past what the fast read takes
    marked(intact(size=-1)),
    marked(intact(size=1.0)),
    marked(intact(v=1)),
    marked(intact(v=True)),
    marked(intact(sha256=SHA.upper())),
    marked(intact(intact={"blob": BLOB, "line": 0})),
    marked(intact(intact={"blob": BLOB[:-1], "line": 5})),
    marked({"v": 1, "sha256": SHA, "size": 3, "parts": [{"path": ["text"], "oid": BLOB}]}),
    b'{"a":{"b":1,' + MARKER_BYTES + b":" + orjson.dumps(intact()) + b"}}",  # nested member
    b"{" + MARKER_BYTES + b":" + orjson.dumps(intact()) + b"}",  # the only member
    marked(intact()) + b" ",
    marked(intact()).replace(b"{", b"{ ", 1),
    marked(intact()).replace(b'"size":4108', b'"size":04108'),
    marked(intact()).replace(b'"size":4108', b'"size":18446744073709551616'),
    b'["' + MARKER_KEY.encode() + b'"]',
    b'{"text":"\\"' + MARKER_KEY.encode() + b'\\" in a string"}',
]


@pytest.mark.parametrize("data", [*WELL_FORMED, *WELL_FORMED_V3])
def test_well_formed_markers_take_the_fast_path(data: bytes) -> None:
    assert takes_fast_path(data)
    assert outcome(data, fast=True) == outcome(data, fast=False)
    assert outcome(data, fast=True)[0] == "read"


@pytest.mark.parametrize("data", ODD)
def test_odd_lines_read_the_same(data: bytes) -> None:
    assert outcome(data, fast=True) == outcome(data, fast=False)


def damaged(data: bytes, tail: int) -> set[bytes]:
    """Every line one edit away in the last `tail` bytes: a byte dropped, replaced or
    doubled, and the line cut short there."""
    variants: set[bytes] = set()
    for position in range(max(0, len(data) - tail), len(data)):
        variants.add(data[:position] + data[position + 1 :])
        variants.add(data[:position])
        variants.add(data[: position + 1] + data[position:])
        for byte in b'0 9afAEw_+=/"{}[],:-.eg\\':
            variants.add(data[:position] + bytes([byte]) + data[position + 1 :])
    return variants


@pytest.mark.parametrize("data", WELL_FORMED[:2] + WELL_FORMED[5:])
def test_damaged_lines_read_the_same(data: bytes) -> None:
    variants = damaged(data, len(data))
    fast = [variant for variant in variants if takes_fast_path(variant)]
    assert fast, "no variant took the fast path"
    for variant in variants:
        assert outcome(variant, fast=True) == outcome(variant, fast=False), variant
