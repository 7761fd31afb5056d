"""A line of many MB is worked on in pieces where the whole would cost a copy of it: the
pieces give exactly what the whole gave. Each piece size is made tiny here, so that KB of
input take the paths that only huge lines take in use (bench/huge_line.py measures memory)."""

from __future__ import annotations

import base64
import hashlib
import io
import random
from pathlib import Path

import orjson
import pytest
from flow_helpers import SESSIONS, init, write
from secret_fixtures import planted
from synthetic import SessionBuilder, big_text, tool_call
from synthetic import text as text_block

from gitclaw_compress import memory
from gitclaw_compress.config import load_config
from gitclaw_compress.core import jsonpieces, payload_form, spans, stubs
from gitclaw_compress.core import lines as lines_module
from gitclaw_compress.core.lines import iter_lines
from gitclaw_compress.core.payload_form import original_form, stored_form
from gitclaw_compress.formats.base import Edit
from gitclaw_compress.formats.shared.rules import json_size
from gitclaw_compress.ops.flow import run_flow
from gitclaw_compress.secrets import engine, parallel
from gitclaw_compress.secrets.parallel import ParallelGuard
from gitclaw_compress.settings import PreviewSettings
from gitclaw_compress.store.archive import Repository

# Newlines, escapes, quotes and characters of 1 to 4 bytes (and a lone surrogate).
ALPHABET = ["a", "b", " ", "\n", "\n", '"', "\\", "\x01", "é", "€", "😀", "\ud800"]


def texts(seed: int, count: int = 400) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, 40))) for _ in range(count)
    ]


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def whole_preview(text: str, keep: int, line_chars: int) -> str:
    """The preview as it was written before, splitting the whole text."""
    if keep <= 0:
        return ""
    body = text.rstrip("\n")
    total = body.count("\n") + 1
    if total <= 2 * keep:
        lines = body.split("\n")
        head, tail = lines[:keep], lines[keep:]
    else:
        head, tail = body.split("\n", keep)[:keep], body.rsplit("\n", keep)[1:]
    omitted = total - len(head) - len(tail)
    out = [cut(line, line_chars) for line in head]
    if omitted:
        out.append(f"… {omitted:,} lines omitted …")
    out.extend(cut(line, line_chars) for line in tail)
    return "\n".join(out)


def whole_first_last(text: str, limit: int) -> str:
    lines = text.rstrip("\n").split("\n")
    if len(lines) == 1:
        return f"first line: {cut(lines[0], limit)!r}"
    return f"first line: {cut(lines[0], limit)!r}; last line: {cut(lines[-1], limit)!r}"


def pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Values' JSON in pieces of 3 characters, as after a huge line was read."""
    monkeypatch.setattr(jsonpieces, "PIECE", 3)
    monkeypatch.setattr(jsonpieces, "huge_line_read", lambda: True)


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stubs, "PIECE", 3)
    pieces(monkeypatch)
    monkeypatch.setattr(payload_form, "WINDOW", 70)


@pytest.mark.usefixtures("tiny_pieces")
def test_stub_texts_found_by_position_are_what_splitting_the_whole_gave() -> None:
    for number, text in enumerate(texts(1)):
        keep, line_chars = number % 5 - 1, number % 7
        settings = PreviewSettings(lines=keep, line_chars=line_chars)
        assert stubs.preview(text, settings) == whole_preview(text, keep, line_chars), text
        assert stubs.first_last(text, line_chars) == whole_first_last(text, line_chars), text
        size = len(text.encode("utf-8", "surrogatepass"))
        assert stubs.text_shape(text) == f"{stubs.count_lines(text):,} lines, {size:,} bytes"


@pytest.mark.usefixtures("tiny_pieces")
def test_a_long_string_is_measured_in_pieces_as_its_whole_json() -> None:
    for text in texts(2):
        if "\ud800" in text:  # not valid JSON text: orjson refuses it whole and in pieces
            with pytest.raises(TypeError):
                json_size(text)
            continue
        assert json_size(text) == len(orjson.dumps(text))


def stored_in_one_search(payload: bytes) -> bytes:
    window = payload_form.WINDOW
    payload_form.WINDOW = 1 << 20
    try:
        return stored_form(payload)
    finally:
        payload_form.WINDOW = window


@pytest.mark.usefixtures("tiny_pieces")
def test_base64_found_in_windows_is_stored_as_in_one_search() -> None:
    rng = random.Random(3)
    for _ in range(20):
        images = [base64.b64encode(rng.randbytes(rng.randrange(800, 1600))) for _ in range(3)]
        words = "".join(rng.choice("ab \n") for _ in range(rng.randrange(0, 300)))
        payload = orjson.dumps(f" {words} ".join(image.decode() for image in images))
        stored = stored_form(payload)
        assert stored.startswith(payload_form.MAGIC)  # the run was found across windows
        assert stored == stored_in_one_search(payload)
        assert original_form(stored) == payload
        assert payload_form._gives_back(stored, payload)
        assert not payload_form._gives_back(stored, payload[:-1] + b"x")
        assert not payload_form._gives_back(stored, payload + b" ")
        assert not payload_form._gives_back(stored, payload[:-1])


def test_a_value_is_found_with_its_key_without_joining_them() -> None:
    value = "x" * 200 + "😀"
    data = orjson.dumps({"a": value, "b": {"content": value}, "c": value})
    entry = orjson.loads(data)
    found = spans.found_spans(data, entry, [Edit(("b", "content"), ""), Edit(("a",), "")])
    assert found is not None
    start, end = found[("b", "content")]
    assert data[start:end] == orjson.dumps(value)
    assert data[start - len(b'"content":') : start] == b'"content":'
    assert data[slice(*found[("a",)])] == orjson.dumps(value)


def test_lines_keep_every_byte_and_their_numbers() -> None:
    chunks = [b'{"a":1}\n', b"\n", b'{"b":"' + b"y" * 5000 + b'"}\r\n', b'{"c":3}']
    lines = list(iter_lines(iter(chunks)))
    assert [line.number for line in lines] == [1, 2, 3, 4]
    assert [line.encode() for line in lines] == chunks
    assert [line.newline for line in lines] == [True, True, True, False]


@pytest.mark.parametrize("window, overlap, part", [(10, 3, 4), (16, 5, 2), (7, 2, 9), (8, 0, 1)])
def test_a_long_value_is_scanned_in_the_windows_its_whole_encoding_gave(
    monkeypatch: pytest.MonkeyPatch, window: int, overlap: int, part: int
) -> None:
    monkeypatch.setattr(engine, "WINDOW", window)
    monkeypatch.setattr(engine, "OVERLAP", overlap)
    monkeypatch.setattr(engine, "PART", part)
    for text in texts(4):
        data = text.encode("utf-8", "surrogatepass")
        windows = [data]  # as the whole encoding was cut before
        if len(data) > window:
            windows, start = [], 0
            while start < len(data):
                windows.append(data[start : start + window])
                if start + window >= len(data):
                    break
                start += window - overlap
        assert [piece for _, piece in engine._pieces(0, text)] == windows, text


def test_a_line_of_a_size_is_found_across_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lines_module, "READ_BUFFER", 7)
    for data, longest in [
        (b"", 0),
        (b"ab\ncd\n", 2),
        (b"a\n" + b"x" * 20 + b"\nb", 20),
        (b"x" * 30, 30),
        (b"\n\n" + b"y" * 13 + b"\n", 13),
    ]:
        assert lines_module.has_line_of(io.BytesIO(data), longest) == (longest > 0)
        assert not lines_module.has_line_of(io.BytesIO(data), longest + 1)


def session_with_a_long_line(secret: str = "") -> SessionBuilder:
    session = SessionBuilder()
    for turn in range(3):
        session.user(f"task {turn}")
        session.assistant(tool_call(f"c{turn}", "bash", {"command": "cat log"}))
        output = big_text(f"out{turn}", 200) + (f"\n{secret}" if turn == 0 else "")
        session.tool_result(f"c{turn}", "bash", output)
        session.assistant(text_block(f"done {turn}"))
    return session


def test_a_session_with_a_huge_line_is_scanned_after_the_compression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "HUGE_LINE", 2000)  # the tool outputs' lines are longer
    repo = Repository(init(tmp_path / "clean"))
    path = write(repo.root / SESSIONS / "a.jsonl", session_with_a_long_line().data())
    config = load_config(None, repo.root, None)
    guard = ParallelGuard(repo, config, enabled=True)
    guard.start([path])
    assert guard.started and not guard.parallel
    guard.wait([])
    guard.cancel()
    again = ParallelGuard(repo, config, enabled=True)
    again.start([path])
    assert not again.started  # the scan in `wait` recorded every line clean

    line, _ = planted(24)["github"]
    repo = Repository(init(tmp_path / "secret"))
    path = write(repo.root / SESSIONS / "a.jsonl", session_with_a_long_line(line).data())
    before = path.read_bytes()
    result = run_flow(repo, [path], force=True)
    assert [entry["path"] for entry in result.held] == [f"{SESSIONS}/a.jsonl"]
    assert path.read_bytes() == before  # held: nothing was written


def test_reading_a_huge_line_gives_back_what_the_heap_holds_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[None] = []
    monkeypatch.setattr(lines_module, "HUGE_LINE", 10)
    monkeypatch.setattr(lines_module, "for_huge_lines", lambda: calls.append(None))
    chunks = [b'{"a":1}\n', b'{"b":"' + b"y" * 10 + b'"}\n', b'{"c":"long enough"}']
    assert [line.encode() for line in iter_lines(iter(chunks))] == chunks
    assert len(calls) == 2  # the two lines of 10 bytes or more, each once
    monkeypatch.setattr(memory, "_huge_line_read", False)  # put back after the test
    assert not jsonpieces.holds_long_text("x" * (jsonpieces.PIECE + 1))
    memory.for_huge_lines()  # the real one runs wherever the tests do
    assert memory.huge_line_read()
    assert jsonpieces.holds_long_text("x" * (jsonpieces.PIECE + 1))


def json_values(seed: int, count: int = 300) -> list[object]:
    """Nested values with strings long and short (PIECE is made 3 characters)."""
    rng = random.Random(seed)

    def value(depth: int) -> object:
        kind = rng.randrange(7 if depth < 5 else 4)
        if kind == 0:
            return rng.choice([None, True, False, 0, -1.5, 10**18, 0.1])
        if kind in (1, 2, 3):
            return "".join(rng.choice(ALPHABET[:-1]) for _ in range(rng.randrange(0, 12)))
        if kind in (4, 5):
            return {f"k{n}\n😀"[: rng.randrange(1, 5)] + str(n): value(depth + 1) for n in range(3)}
        return [value(depth + 1) for _ in range(rng.randrange(0, 4))]

    return [value(0) for _ in range(count)]


def test_json_in_pieces_is_what_orjson_writes_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    pieces(monkeypatch)
    for value in json_values(6):
        whole = orjson.dumps(value)
        assert b"".join(jsonpieces.json_pieces(value)) == whole
        assert jsonpieces.json_size(value) == len(whole)
        digest = hashlib.sha256()
        assert jsonpieces.hash_json(value, digest) == len(whole)
        assert digest.digest() == hashlib.sha256(whole).digest()
        line = b'{"x":' + whole + b',"y":' + whole + b"}"
        assert jsonpieces.json_at(line, 5, value) == 5 + len(whole)
        assert jsonpieces.json_at(line, 4, value) == -1


def test_a_long_value_is_found_in_its_line_piece_by_piece(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pieces(monkeypatch)
    output = 'a long output 😀 with\n"quotes"'
    result = {"type": "text", "file": {"content": output}}
    entry = {"a": 1, "content": output, "toolUseResult": result, "z": 2}
    data = orjson.dumps(entry)
    edits = [Edit(("content",), ""), Edit(("toolUseResult",), {})]
    assert jsonpieces.holds_long_text(result) and jsonpieces.holds_long_text(output)
    found = spans.found_spans(data, entry, edits)
    assert found is not None
    assert data[slice(*found[("content",)])] == orjson.dumps(output)
    assert data[slice(*found[("toolUseResult",)])] == orjson.dumps(result)
