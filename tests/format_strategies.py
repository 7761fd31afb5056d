"""Hypothesis strategies that generate transcripts of each format from its synthetic builder:
a random number of turns and tool calls, tool outputs of random sizes and unicode, images, and
sealed reasoning (signed thinking, encrypted or opaque reasoning). Each `FormatCase` in
format_cases.py names its strategy; test_property_contract.py runs them."""

from __future__ import annotations

import base64

from hypothesis import strategies as st
from synthetic import SessionBuilder, thinking, tool_call
from synthetic import text as pi_text
from synthetic_claude import ClaudeSession, image, signed_thinking, unsigned_thinking
from synthetic_claude import text as claude_text
from synthetic_codex import RolloutBuilder, data_url
from synthetic_copilot import EventsBuilder

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
