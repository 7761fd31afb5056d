"""The fake server's model of the preserved-thinking prefix check
(tests/fake_preserved_thinking.py) does what Anthropic documents: a block is valid while
nothing before it changed (cache_control aside), blocks may be left out from the start but
not between others, and a mismatch is a 400 or, with drop_block and its beta, a drop."""

from __future__ import annotations

import copy
from typing import Any

from fake_preserved_thinking import BINDING_BETA, PreservedThinking, check_prefixes

PROMPT = {"role": "user", "content": "read the notes"}


def _conversation(turns: int) -> dict[str, Any]:
    """A body built the way a client builds one: each reply appended as the model gave it."""
    model = PreservedThinking(read_path="/work/notes.txt")
    body: dict[str, Any] = {
        "system": [{"type": "text", "text": "You are a coding agent."}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": [],
    }
    for turn in range(turns):
        body["messages"].append({"role": "user", "content": f"turn {turn}: read the notes"})
        status, (blocks, stop) = model(body, {})
        assert (status, stop) == (200, "tool_use")
        body["messages"].append({"role": "assistant", "content": blocks})
        result = {"type": "tool_result", "tool_use_id": blocks[1]["id"], "content": "x" * 900}
        body["messages"].append({"role": "user", "content": [result]})
        status, (blocks, stop) = model(body, {})
        assert (status, stop) == (200, "end_turn")
        body["messages"].append({"role": "assistant", "content": blocks})
    return body


def test_an_appended_conversation_passes() -> None:
    body = _conversation(3)
    assert check_prefixes(body).checked == 6
    assert check_prefixes(body).invalid == []


def test_cache_control_is_left_out_of_the_comparison() -> None:
    body = _conversation(2)
    body["messages"][2]["content"][0]["cache_control"] = {"type": "ephemeral"}
    body["system"][0]["cache_control"] = {"type": "ephemeral"}
    assert check_prefixes(body).invalid == []


def test_a_changed_tool_result_invalidates_every_later_block() -> None:
    body = _conversation(3)
    body["messages"][6]["content"][0]["content"] = "[stub]"  # turn 1's tool result
    assert check_prefixes(body).invalid == [
        "messages.7.content.0",
        "messages.9.content.0",
        "messages.11.content.0",
    ]


def test_a_changed_system_or_tools_invalidates_all() -> None:
    for key in ("system", "tools"):
        body = _conversation(1)
        body[key] = [*body[key], {"type": "text", "text": "more"}]
        assert len(check_prefixes(body).invalid) == 2, key


def test_thinking_may_be_left_out_from_the_start_only() -> None:
    body = _conversation(2)
    start = copy.deepcopy(body)
    del start["messages"][1]["content"][0]
    assert check_prefixes(start).invalid == []
    middle = copy.deepcopy(body)
    del middle["messages"][3]["content"][0]
    assert check_prefixes(middle).invalid == ["messages.5.content.0", "messages.7.content.0"]


def test_the_answer_is_the_documented_400_or_a_drop_with_the_beta() -> None:
    body = _conversation(2)
    body["messages"][2]["content"][0]["content"] = "[stub]"
    body["messages"].append(PROMPT)
    model = PreservedThinking()
    status, error = model(body, {})
    assert status == 400
    message = error["error"]["message"]
    assert message.startswith("messages.3.content.0: Invalid `signature` in `thinking` block.")
    assert "bound to a different conversation" in message
    body["thinking"] = {
        "type": "adaptive",
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    }
    assert model(body, {})[0] == 400  # the setting needs its beta
    status, _ = model(body, {"anthropic-beta": f"other,{BINDING_BETA}"})
    assert status == 200
    assert model.dropped == [f"messages.{i}.content.0" for i in (3, 5, 7)]


def test_blocks_another_model_signed_are_not_checked() -> None:
    body = _conversation(1)
    body["messages"][0]["content"] = "changed"
    for message in body["messages"][1::2]:
        message["content"][0]["signature"] = "EqQBCkYIBxgCKkB..."
    assert check_prefixes(body).checked == 0
