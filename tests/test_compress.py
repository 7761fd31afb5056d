"""The pure core: what is compressed, what never changes, and the exact way back."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from synthetic import (
    SessionBuilder,
    big_text,
    text,
    thinking,
    tool_call,
    typical_session,
)

from gitclaw_compress.core.compressor import (
    CompressSettings,
    compress_entry_lines,
    git_blob_id,
)
from gitclaw_compress.core.lines import LineBatch, iter_lines, join_lines, lines_from_bytes
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.core.stubs import STUB_PREFIX
from gitclaw_compress.formats import detect

REF = ".GITCLAW/state/sessions/s.jsonl"


def run(data: bytes, **settings: Any) -> tuple[bytes, dict[str, bytes]]:
    lines, payloads = compress_entry_lines(
        lines_from_bytes(data),
        CompressSettings(**settings),
        REF,
        fmt=detect(lines_from_bytes(data), REF),
    )
    return join_lines(lines), payloads


def restore(data: bytes, payloads: dict[str, bytes]) -> bytes:
    return join_lines(restore_line(line, "s", payloads.get) for line in lines_from_bytes(data))


def entries(data: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def by_id(data: bytes, entry_id: str) -> dict[str, Any]:
    return next(e for e in entries(data) if e.get("id") == entry_id)


def test_roundtrip_is_byte_identical_and_payloads_are_content_addressed() -> None:
    original = typical_session().data()
    compressed, payloads = run(original, keep_turns=1)
    assert len(compressed) < len(original) * 0.5
    assert restore(compressed, payloads) == original
    assert all(git_blob_id(blob) == oid for oid, blob in payloads.items())


def test_header_line_count_and_last_turns_are_untouched() -> None:
    original = typical_session(turns=6).data()
    compressed, _ = run(original, keep_turns=2)
    before, after = original.split(b"\n"), compressed.split(b"\n")
    assert len(before) == len(after)
    assert before[0] == after[0]
    user_lines = [i for i, line in enumerate(before) if b'"role":"user"' in line]
    window = user_lines[-2]
    assert before[window:] == after[window:]
    assert before[:window] != after[:window]


def test_second_run_is_a_byte_identical_no_op() -> None:
    compressed, _ = run(typical_session().data(), keep_turns=1)
    again, payloads = run(compressed, keep_turns=1)
    assert again == compressed
    assert payloads == {}


def test_appended_turns_compress_only_what_fell_out_of_the_window() -> None:
    session = typical_session(turns=3)
    first, first_payloads = run(session.data(), keep_turns=1)
    old_lines = len(session.lines)
    session.user("next task")
    session.assistant(text("ok"), stop="stop")
    grown = first + b"".join(line + b"\n" for line in session.lines[old_lines:])
    second, payloads = run(grown, keep_turns=1)
    first_lines, second_lines = first.split(b"\n"), second.split(b"\n")
    # Lines compressed before are untouched; the turn that left the window is compressed now.
    assert second_lines[: old_lines - 12] == first_lines[: old_lines - 12]
    assert (payloads and set(payloads).isdisjoint(first_payloads) is False) or payloads
    assert restore(second, {**first_payloads, **payloads}) == session.data()


def test_write_edit_and_bash_arguments_keep_what_identifies_the_call() -> None:
    session = SessionBuilder()
    session.user("go")
    write_id = session.assistant(
        tool_call("w", "write", {"path": "src/app.py", "content": big_text("app", 300)}),
        tool_call(
            "e1",
            "edit",
            {"path": "a.py", "oldText": big_text("old", 30), "newText": big_text("new", 30)},
        ),
        tool_call(
            "e2",
            "edit",
            {"path": "b.py", "edits": [{"oldText": big_text("o", 30), "newText": "short"}]},
        ),
        tool_call("b", "bash", {"command": "echo " + "x" * 2000, "timeout": 10}),
        tool_call("r", "read", {"path": "README.md", "offset": 10, "limit": 50}),
        tool_call("t", "custom_tool", {"flag": True, "n": 3, "blob": big_text("blob", 40)}),
    )
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    calls = {b["id"]: b for b in by_id(compressed, write_id)["message"]["content"]}
    write = calls["w"]["arguments"]
    assert write["path"] == "src/app.py"
    assert write["content"].startswith(STUB_PREFIX)
    assert "300 lines" in write["content"] and "first line: 'app line 0:" in write["content"]
    assert "last line: 'app line 299:" in write["content"]
    assert f"gitclaw-compress show {REF} {write_id}" in write["content"]
    assert calls["w"]["partialJson"] == ""
    assert calls["e1"]["arguments"]["path"] == "a.py"
    assert calls["e1"]["arguments"]["oldText"].startswith(STUB_PREFIX)
    edits = calls["e2"]["arguments"]["edits"]
    assert edits[0]["oldText"].startswith(STUB_PREFIX) and edits[0]["newText"] == "short"
    bash = calls["b"]["arguments"]
    assert bash["command"].startswith("echo " + "x" * 195) and STUB_PREFIX in bash["command"]
    assert bash["timeout"] == 10
    assert calls["r"]["arguments"] == {"path": "README.md", "offset": 10, "limit": 50}
    custom = calls["t"]["arguments"]
    assert custom["flag"] is True and custom["n"] == 3 and custom["blob"].startswith(STUB_PREFIX)


def test_tool_results_become_text_stubs_with_preview_error_flag_and_command() -> None:
    session = SessionBuilder()
    session.user("go")
    session.assistant(tool_call("b", "bash", {"command": "make test"}))
    result_id = session.tool_result(
        "b", "bash", big_text("out", 100), error=True, details={"diff": big_text("d", 100)}
    )
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    message = by_id(compressed, result_id)["message"]
    assert message["isError"] is True
    [stub] = message["content"]
    assert stub["type"] == "text"
    assert stub["text"].startswith(f"{STUB_PREFIX} Output of bash 'make test' (the tool failed)")
    assert "100 lines" in stub["text"] and "out line 0:" in stub["text"]
    assert "out line 99:" in stub["text"] and "lines omitted" in stub["text"]
    assert f"gitclaw-compress show {REF} {result_id}" in stub["text"]
    assert message["details"]["type"] == "text"
    assert "details elided" in message["details"]["text"]


def test_old_images_become_stubs_pasted_ones_are_kept_only_when_asked() -> None:
    png = b"\x89PNG" + bytes(range(256)) * 20
    session = SessionBuilder()
    user_id = session.user("look", images=[("image/png", png)])
    session.assistant(tool_call("r", "read", {"path": "shot.png"}))
    result_id = session.tool_result(
        "r", "read", "Read image file [image/png]", images=[("image/png", png)]
    )
    session.user("next")
    compressed, payloads = run(session.data(), keep_turns=1)
    [stub] = by_id(compressed, result_id)["message"]["content"]
    assert f"image image/png {len(png):,} bytes" in stub["text"]
    blocks = by_id(compressed, user_id)["message"]["content"]
    assert blocks[0] == {"type": "text", "text": "look"}
    assert blocks[1]["type"] == "text" and "User image elided: image/png" in blocks[1]["text"]
    assert restore(compressed, payloads) == session.data()
    kept, _ = run(session.data(), keep_turns=1, keep_user_images=True)
    assert by_id(kept, user_id) == by_id(session.data(), user_id)


@pytest.mark.parametrize(
    "api", ["anthropic-messages", "openai-completions", "google-generative-ai"]
)
def test_thinking_is_emptied_never_stubbed(api: str) -> None:
    session = SessionBuilder(api=api)
    session.user("go")
    entry_id = session.assistant(thinking("deep thoughts " * 50), text("answer"), stop="stop")
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    block = by_id(compressed, entry_id)["message"]["content"][0]
    assert block == {"type": "thinking", "thinking": "", "thinkingSignature": ""}


@pytest.mark.parametrize(
    "api", ["openai-responses", "openai-codex-responses", "azure-openai-responses"]
)
def test_openai_responses_reasoning_is_left_alone(api: str) -> None:
    session = SessionBuilder(api=api)
    session.user("go")
    entry_id = session.assistant(thinking("deep thoughts " * 50), text("answer"), stop="stop")
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    assert by_id(compressed, entry_id) == by_id(session.data(), entry_id)


def test_thinking_is_kept_when_the_message_would_be_left_empty() -> None:
    session = SessionBuilder()
    session.user("go")
    entry_id = session.assistant(thinking("only thoughts " * 50), stop="stop")
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    assert by_id(compressed, entry_id) == by_id(session.data(), entry_id)


def test_redacted_thinking_is_left_alone() -> None:
    session = SessionBuilder()
    session.user("go")
    block = {**thinking("x" * 400), "redacted": True}
    entry_id = session.assistant(block, text("answer"), stop="stop")
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    assert by_id(compressed, entry_id)["message"]["content"][0] == block


def test_user_and_assistant_text_never_change() -> None:
    session = SessionBuilder()
    huge = big_text("user words", 500)
    user_id = session.user(huge)
    reply_id = session.assistant(text(big_text("assistant words", 500)), stop="stop")
    session.user("next")
    compressed, _ = run(session.data(), keep_turns=1)
    assert by_id(compressed, user_id) == by_id(session.data(), user_id)
    assert by_id(compressed, reply_id) == by_id(session.data(), reply_id)


def test_repeated_output_is_stubbed_against_the_later_copy() -> None:
    session = SessionBuilder()
    same = big_text("same file", 15)  # under toolResultMaxBytes, over redundancyMinBytes
    session.user("read it")
    session.assistant(tool_call("r1", "read", {"path": "a.md"}))
    first = session.tool_result("r1", "read", same)
    session.assistant(text("hm"), stop="stop")
    session.user("read it again")
    session.assistant(tool_call("r2", "read", {"path": "a.md"}))
    second = session.tool_result("r2", "read", same)
    compressed, _ = run(session.data(), keep_turns=1, tool_result_max_bytes=10_000)
    stub = by_id(compressed, first)["message"]["content"][0]["text"]
    assert f"Identical to the later output in entry {second}" in stub
    assert by_id(compressed, second) == by_id(session.data(), second)
    untouched, _ = run(
        session.data(), keep_turns=1, tool_result_max_bytes=10_000, eliminate_redundancy=False
    )
    assert untouched == session.data()


def test_output_quoted_by_the_next_reply_keeps_only_the_reply() -> None:
    session = SessionBuilder()
    output = big_text("quoted", 12)
    session.user("show me")
    session.assistant(tool_call("c", "bash", {"command": "cat notes.txt"}))
    result_id = session.tool_result("c", "bash", output)
    reply_id = session.assistant(text(f"Here it is:\n{output}\nDone."), stop="stop")
    session.user("thanks")
    compressed, payloads = run(session.data(), keep_turns=1, tool_result_max_bytes=10_000)
    stub = by_id(compressed, result_id)["message"]["content"][0]["text"]
    assert f"next assistant reply (entry {reply_id}) quotes it word for word" in stub
    assert restore(compressed, payloads) == session.data()


def test_odd_lines_pass_through_untouched() -> None:
    session = typical_session(turns=3)
    lines = session.data().split(b"\n")
    lines.insert(3, b"")  # blank
    lines.insert(5, b"{not json")  # malformed
    lines.insert(7, b'{"type":"custom","data":"\xff\xfe"}')  # not UTF-8
    lines[9] = lines[9] + b"\r"  # CRLF on a line that will be compressed
    data = b"\n".join(lines).rstrip(b"\n")  # and no final newline
    compressed, payloads = run(data, keep_turns=1)
    out = compressed.split(b"\n")
    assert out[3] == b"" and out[5] == b"{not json" and out[7] == lines[7]
    assert not compressed.endswith(b"\n")
    assert restore(compressed, payloads) == data


def test_numbers_javascript_wrote_survive_in_compressed_lines() -> None:
    session = typical_session(turns=2)
    compressed, _ = run(session.data(), keep_turns=1)
    assert b'"input":0.000005' in compressed.split(b"\n")[3]


def test_a_tampered_line_fails_its_hash_check() -> None:
    from gitclaw_compress.errors import GitClawError

    compressed, payloads = run(typical_session().data(), keep_turns=1)
    tampered = compressed.replace(b'"stopReason":"toolUse"', b'"stopReason":"toolUsX"', 1)
    assert tampered != compressed
    with pytest.raises(GitClawError, match="sha256"):
        restore(tampered, payloads)
    missing = dict(list(payloads.items())[1:])
    with pytest.raises(GitClawError, match="not in this clone"):
        restore(compressed, missing)


def test_base64_test_helper_is_valid() -> None:
    session = SessionBuilder()
    session.user("x", images=[("image/png", b"abc")])
    block = entries(session.data())[-1]["message"]["content"][1]
    assert base64.b64decode(block["data"]) == b"abc"


def _one_old_result(content: str, tail: bytes = b"", head: bytes = b"") -> bytes:
    """A session whose first turn has one large tool output (serialized by hand), with
    `head` and `tail` members spliced in first and last."""
    session = SessionBuilder()
    session.user("first")
    session.assistant(tool_call("c1", "read", {"path": "a.txt"}))
    session.tool_result("c1", "read", content)
    session.user("second")
    lines = session.data().split(b"\n")
    index = next(i for i, line in enumerate(lines) if b'"toolResult"' in line)
    lines[index] = b"{" + head + lines[index][1:-1] + tail + b"}"
    return b"\n".join(lines)


@pytest.mark.parametrize(
    "tail",
    [
        # The same bytes under the same key stand twice: the search cannot tell them apart.
        b',"copy":{"content":' + orjson.dumps([{"type": "text", "text": "x" * 3000}]) + b"}",
        # A number written as JavaScript writes it, which orjson writes differently.
        b',"cost":0.000005',
    ],
    ids=["same-bytes-twice", "javascript-number"],
)
def test_values_found_by_search_or_by_walking_restore_exactly(tail: bytes) -> None:
    original = _one_old_result("x" * 3000, tail)
    compressed, payloads = run(original, keep_turns=1)
    assert len(compressed) < len(original) - 2000
    assert restore(compressed, payloads) == original


def test_a_copy_of_the_value_before_it_is_not_the_one_replaced() -> None:
    # The search finds the copy first; the parse check sees the wrong member replaced.
    copy = b'"copy":{"content":' + orjson.dumps([{"type": "text", "text": "x" * 3000}]) + b"},"
    original = _one_old_result("x" * 3000, head=copy)
    compressed, payloads = run(original, keep_turns=1)
    line = next(line for line in compressed.split(b"\n") if b"gitclawCompress" in line)
    entry = orjson.loads(line)
    assert entry["copy"]["content"][0]["text"] == "x" * 3000  # untouched
    assert entry["message"]["content"][0]["text"] != "x" * 3000  # stubbed
    assert restore(compressed, payloads) == original


def test_a_line_written_with_spaces_is_walked_and_restores_exactly() -> None:
    session = SessionBuilder()
    session.user("first")
    session.assistant(tool_call("c1", "read", {"path": "a.txt"}))
    session.tool_result("c1", "read", "y" * 3000)
    session.user("second")
    spaced = b"\n".join(
        orjson.dumps(orjson.loads(line), option=orjson.OPT_INDENT_2).replace(b"\n", b" ")
        if b'"toolResult"' in line
        else line
        for line in session.data().split(b"\n")
    )
    compressed, payloads = run(spaced, keep_turns=1)
    assert len(compressed) < len(spaced) - 2000
    assert restore(compressed, payloads) == spaced


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_line_batch_writes_every_byte_in_order(chunk: int) -> None:
    """Lines batched into chunks come out as the same bytes, whatever the chunk size; lines
    read by iter_lines keep a "\\r", a blank line and a missing final newline."""
    data = b'{"a":1}\n\n{"b":"x"}\r\n' + b"y" * 100 + b'\n{"c":2}'
    chunks: list[bytes] = []
    batch = LineBatch(chunks.append, chunk)
    for line in iter_lines(iter(data.splitlines(keepends=True))):
        batch.add(line)
    batch.flush()
    assert b"".join(chunks) == data
    assert batch.size == len(data)
    assert all(chunks)
    if chunk == 1 << 20:
        assert len(chunks) == 1
