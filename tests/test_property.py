"""restore(compress(x)) == x for generated sessions: random turns, tools, unicode, junk lines."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import SessionBuilder, text, thinking, tool_call

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines
from gitclaw_compress.core.lines import join_lines, lines_from_bytes
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.formats import detect

APIS = ["anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai"]
TOOLS = ["read", "write", "edit", "bash", "grep", "web_fetch", "exec"]

unicode_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), min_size=0, max_size=60)
big = st.builds(lambda s, n: (s + "\n") * n, unicode_text, st.integers(1, 400))
junk = st.sampled_from(
    [b"", b"   ", b"{not json", b"\xff\xfe\x00", b"[1,2,3]", b'{"type":"custom"}\r', b"null"]
)


@st.composite
def sessions(draw: st.DrawFn) -> bytes:
    session = SessionBuilder(api=draw(st.sampled_from(APIS)))
    for turn in range(draw(st.integers(0, 6))):
        session.user(draw(unicode_text) or f"turn {turn}")
        for step in range(draw(st.integers(0, 4))):
            tool = draw(st.sampled_from(TOOLS))
            arguments: dict[str, Any] = {"path": draw(unicode_text)}
            if draw(st.booleans()):
                arguments["content"] = draw(big)
            if tool == "edit" and draw(st.booleans()):
                arguments["edits"] = [{"oldText": draw(big), "newText": draw(unicode_text)}]
            call_id = f"c{turn}_{step}"
            blocks = [tool_call(call_id, tool, arguments, partial=draw(st.booleans()))]
            if draw(st.booleans()):
                blocks.insert(0, thinking(draw(big), draw(st.none() | unicode_text)))
            session.assistant(*blocks)
            details = {"diff": draw(big)} if draw(st.booleans()) else None
            session.tool_result(
                call_id, tool, draw(big), error=draw(st.booleans()), details=details
            )
        session.assistant(text(draw(unicode_text) or "done"), stop="stop")
    lines = list(session.lines)
    for _ in range(draw(st.integers(0, 3))):
        lines.insert(draw(st.integers(1, len(lines))), draw(junk))
    if draw(st.booleans()):
        index = draw(st.integers(1, len(lines) - 1))
        lines[index] += b"\r"
    data = b"\n".join(lines)
    return data if draw(st.booleans()) else data + b"\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=sessions(),
    keep=st.integers(0, 3),
    limits=st.sampled_from([(500, 1000), (0, 0), (50, 64)]),
    strip=st.booleans(),
)
def test_restore_of_compress_is_identity(
    data: bytes, keep: int, limits: tuple[int, int], strip: bool
) -> None:
    config = CompressSettings(
        keep_turns=keep,
        tool_call_max_bytes=limits[0],
        tool_result_max_bytes=limits[1],
        strip_thinking=strip,
        keep_user_images=not strip,
        redundancy_min_bytes=64,
    )
    lines, payloads = compress_entry_lines(
        lines_from_bytes(data), config, "s.jsonl", fmt=detect(lines_from_bytes(data), "s.jsonl")
    )
    compressed = join_lines(lines)
    restored = join_lines(restore_line(line, "s", payloads.get) for line in lines)
    assert restored == data
    assert compressed.split(b"\n")[0] == data.split(b"\n")[0]
    assert compressed.count(b"\n") == data.count(b"\n")
    for line in compressed.split(b"\n"):
        if b'"gitclawCompress"' in line:
            orjson.loads(line)  # every stub line is valid JSON
    again, more = compress_entry_lines(lines, config, "s.jsonl", fmt=detect(lines, "s.jsonl"))
    assert join_lines(again) == compressed and not more
