"""restore(compress(x)) == x for generated transcripts of every format.

Each format of `format_cases.FORMAT_CASES` has one hypothesis strategy here, built from its
synthetic builder: a random number of turns and tool calls, tool outputs of random sizes and
unicode, images, and sealed reasoning (signed thinking, encrypted or opaque reasoning). On
each generated file, compressed in memory at a random --keep-turns with random size limits:
- the format is recognized, and the line count and every newline stay;
- restoring every changed line from its payloads gives the input byte for byte;
- every value the format calls sealed is unchanged, on every line;
- the last N turns are byte-identical;
- a second run changes nothing.
The example counts stay modest: the pi-only `test_property.py` goes deeper for pi.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

import pytest
from format_cases import FORMAT_CASES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from synthetic import SessionBuilder, thinking, tool_call
from synthetic import text as pi_text
from synthetic_claude import ClaudeSession, image, signed_thinking, unsigned_thinking
from synthetic_claude import text as claude_text
from synthetic_codex import RolloutBuilder, data_url
from synthetic_copilot import EventsBuilder

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines, plan_lines
from gitclaw_compress.core.lines import join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_line
from gitclaw_compress.formats import FORMATS, detect

EXAMPLES = 50

unicode_text = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=40)
# Tool output from nothing to some tens of KB, with any character (also U+2028, NUL, emoji).
output = st.builds(lambda s, n: (s + "\n") * n, unicode_text, st.integers(0, 300))
words = st.text(alphabet=st.characters(exclude_categories=["Cs", "Cc"]), min_size=1, max_size=20)
png = st.binary(min_size=8, max_size=3000).map(lambda raw: b"\x89PNG\r\n\x1a\n" + raw)
turn_counts = st.integers(1, 4)
step_counts = st.integers(0, 3)


@st.composite
def pi_sessions(draw: st.DrawFn) -> bytes:
    session = SessionBuilder()
    for turn in range(draw(turn_counts)):
        images = [("image/png", draw(png))] if draw(st.booleans()) else []
        session.user(draw(words), images=images)
        for step in range(draw(step_counts)):
            call_id = f"c{turn}_{step}"
            blocks = [tool_call(call_id, "read", {"path": draw(words), "content": draw(output)})]
            if draw(st.booleans()):
                blocks.insert(0, thinking(draw(output)))  # signed
            session.assistant(*blocks)
            shot = [("image/png", draw(png))] if draw(st.booleans()) else []
            session.tool_result(call_id, "read", draw(output), images=shot)
        session.assistant(pi_text(draw(words)), stop="stop")
    return session.data()


@st.composite
def claude_sessions(draw: st.DrawFn) -> bytes:
    session = ClaudeSession()
    for turn in range(draw(turn_counts)):
        session.user(draw(words))
        for step in range(draw(step_counts)):
            call_id = f"toolu_{turn}_{step}"
            if draw(st.booleans()):
                session.assistant(signed_thinking(draw(output)), unsigned_thinking(draw(output)))
            session.tool_use(call_id, "Bash", {"command": draw(words), "description": draw(output)})
            out = draw(output)
            content: str | list[dict[str, object]] = out
            if draw(st.booleans()):
                shot = base64.b64encode(draw(png)).decode()
                content = [claude_text(out), image(shot)]
            result = {"stdout": out, "stderr": draw(output), "interrupted": False}
            session.tool_result(call_id, content, result, is_error=draw(st.booleans()))
        session.assistant(claude_text(draw(words)))
    return session.data()


@st.composite
def codex_rollouts(draw: st.DrawFn) -> bytes:
    rollout = RolloutBuilder()
    for turn in range(draw(turn_counts)):
        prompt_image = (
            data_url(draw(words), draw(st.integers(1, 4000))) if draw(st.booleans()) else None
        )
        turn_id = rollout.start_turn(draw(words), prompt_image)
        for step in range(draw(step_counts)):
            if draw(st.booleans()):
                rollout.reasoning()  # encrypted
            if draw(st.booleans()):
                rollout.view_image(f"/repo/{turn}-{step}.png", data_url(draw(words), 3000))
            else:
                rollout.shell(turn_id, draw(words) + draw(output), draw(output))
        rollout.reply(turn_id, draw(words))
    return rollout.data()


@st.composite
def copilot_events(draw: st.DrawFn) -> bytes:
    events = EventsBuilder()
    events.start()
    for _ in range(draw(turn_counts)):
        events.user(draw(words))
        calls = []
        for _ in range(draw(step_counts)):
            out = draw(output)
            result: dict[str, object] = {"content": out, "detailedContent": draw(output) or out}
            if draw(st.booleans()):
                shot = base64.b64encode(draw(png)).decode()
                result["contents"] = [
                    {"type": "text", "text": out},
                    {"type": "image", "data": shot, "mimeType": "image/png"},
                ]
            calls.append(("view", {"path": draw(words), "text": draw(output)}, result))
        events.turn(calls, draw(words))  # every assistant message carries opaque reasoning
    return events.data()


STRATEGIES: dict[str, st.SearchStrategy[bytes]] = {
    "pi": pi_sessions(),
    "claude": claude_sessions(),
    "codex": codex_rollouts(),
    "copilot": copilot_events(),
}
LIMITS = [(500, 1000), (0, 0), (50, 64)]


def test_every_format_has_a_strategy() -> None:
    assert sorted(STRATEGIES) == sorted(case.name for case in FORMAT_CASES) == sorted(FORMATS)


def check_round_trip(name: str, data: bytes, keep: int, limits: tuple[int, int]) -> None:
    config = CompressSettings(
        keep_turns=keep,
        tool_call_max_bytes=limits[0],
        tool_result_max_bytes=limits[1],
        redundancy_min_bytes=64,
    )
    original = lines_from_bytes(data)
    fmt = detect(original, "s.jsonl")
    assert fmt.name == name
    window = plan_lines(original, config, session_ref="s.jsonl", fmt=fmt).window_start
    lines, payloads = compress_entry_lines(original, config, "s.jsonl")
    assert len(lines) == len(original)
    assert join_lines(restore_line(line, "s", payloads.get) for line in lines) == data
    for before, after in zip(original, lines, strict=True):
        assert after.newline == before.newline
        if before.number >= window:
            assert after.data == before.data, f"line {before.number} is in the kept turns"
        entry_before, entry_after = parse_entry(before.data), parse_entry(after.data)
        if entry_before is not None:
            assert entry_after is not None, f"line {before.number} no longer parses"
            assert list(fmt.sealed(entry_before)) == list(fmt.sealed(entry_after))
    again, more = compress_entry_lines(lines, config, "s.jsonl")
    assert join_lines(again) == join_lines(lines) and not more


def _property(name: str) -> Callable[..., None]:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=STRATEGIES[name], keep=st.integers(0, 2), limits=st.sampled_from(LIMITS))
    def run(data: bytes, keep: int, limits: tuple[int, int]) -> None:
        check_round_trip(name, data, keep, limits)

    return run


@pytest.mark.parametrize("name", [case.name for case in FORMAT_CASES])
def test_restore_of_compress_is_identity_for_every_format(name: str) -> None:
    _property(name)()
