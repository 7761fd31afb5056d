"""A splice is made only when it saves more than it costs the line's marker.

A v3 marker (the line intact in a committed blob) costs one fixed member per line, which
pass 2 weighs against the whole line's saving; a v1 marker also gains a part per splice
(its path and the payload's id), so a stub that saves less than that part would make the
line longer than leaving its value whole.
"""

from __future__ import annotations

import orjson
from synthetic_codex import SESSION_ID, RolloutBuilder

from gitclaw_compress.core import stubs
from gitclaw_compress.core.compressor import (
    CompressSettings,
    compress_lines,
    git_blob_id,
    plan_lines,
)
from gitclaw_compress.core.lines import MARKER_KEY, RawLine, lines_from_bytes
from gitclaw_compress.core.marker import read_marker
from gitclaw_compress.formats import detect

DEEP = CompressSettings(keep_turns=1, deep=True)
PART_BYTES = 1 + len(b'{"path":["payload","detail"],"oid":""}') + 40  # SHA-1 ids


def _detail(number: int) -> str:
    """A string the deep rules stub on a superseded line, its stub saving more than
    the core's minimum (48 bytes) but less than a v1 part."""
    show = f"{stubs.SHOW} {SESSION_ID} L{number}"
    for size in range(161, 600):
        text = "d" * size
        saving = len(orjson.dumps(text)) - len(
            orjson.dumps(stubs.superseded_stub("detail", text, show))
        )
        if 48 < saving < PART_BYTES:
            return text
    raise AssertionError("no size fits")


def _rollout() -> tuple[bytes, int, str]:
    """A rollout with an old event (before a compaction record) holding a long message and
    a `detail` whose stub barely pays: (its bytes, that line's number, the detail)."""
    builder = RolloutBuilder()
    builder.full_turn(1)
    detail = _detail(len(builder.lines) + 1)
    number = builder.event("background_event", message="m" * 5000, detail=detail)
    builder.line("compacted", {"message": "summary of turn 1", "replacement_history": []})
    builder.full_turn(2)
    builder.full_turn(3)
    return builder.data(), number, detail


def _compressed_line(data: bytes, number: int, *, intact: bool) -> RawLine:
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, DEEP, session_ref="r.jsonl", fmt=detect(lines, "r.jsonl"))
    assert number in plan.superseded
    blob = git_blob_id(data)
    output = compress_lines(
        lines,
        plan,
        DEEP,
        session_ref="r.jsonl",
        intact_blob=(lambda line: blob) if intact else None,
    )
    return next(result.line for result in output if result.line.number == number)


def test_a_v3_marker_takes_every_splice_that_saves_more_than_the_minimum() -> None:
    data, number, detail = _rollout()
    line = _compressed_line(data, number, intact=True)
    payload = orjson.loads(line.data)["payload"]
    assert payload["message"] != "m" * 5000
    assert payload["detail"] != detail and stubs.is_stub(payload["detail"])


def test_a_v1_marker_leaves_whole_a_value_whose_stub_saves_less_than_its_part() -> None:
    data, number, detail = _rollout()
    line = _compressed_line(data, number, intact=False)
    entry = orjson.loads(line.data)
    assert entry["payload"]["detail"] == detail
    assert stubs.is_stub(entry["payload"]["message"])
    marker = read_marker(line.data, "r.jsonl")
    assert marker is not None and MARKER_KEY in entry
    assert [path for path, _ in marker.parts] == [("payload", "message")]
