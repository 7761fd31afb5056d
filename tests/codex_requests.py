"""Comparing what `FORMAT.resume` says Codex sends with the request the real CLI sent.

Codex (0.169.0 and 0.171.0) sends the Responses API `input`: the rollout's own items (what `resume`
rebuilds: base instructions, then the history), then its own new turn (contextual developer
and user messages it builds for this machine, and the prompt). The comparison reads the first
`len(resume)` items against `resume` and checks that the rest is only that new turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_harness import AgentRun, require_agent, run_resume
from fake_llm_sse import conversation

from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats.codex.rules import FORMAT
from gitclaw_compress.model import SUMMARY, SYSTEM, TEXT, THINKING, TOOL, Conversation, Message

PROMPT = "next"
# What Codex sends instead of an image it cannot decode (the synthetic rollouts' images are
# not real pictures): a text item where the image item was.
UNDECODABLE_IMAGE = "image content omitted because it could not be processed"
ROLES = {"user": "user", "developer": SYSTEM, "assistant": "assistant"}


def resumed(data: bytes) -> Conversation:
    return FORMAT.resume(list(FORMAT.views(lines_from_bytes(data))))


def item_role(item: dict[str, Any]) -> str | None:
    """The neutral role of one input item."""
    kind = item.get("type")
    if kind == "message":
        return ROLES.get(str(item.get("role")))
    if isinstance(kind, str) and kind.endswith("_output"):
        return TOOL
    if kind in ("compaction", "context_compaction"):
        return SUMMARY
    return "assistant"


def item_texts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    found = [str(c["text"]) for c in content or [] if isinstance(c, dict) and "text" in c]
    return [text for text in found if text != UNDECODABLE_IMAGE]


def mismatches(message: Message, item: dict[str, Any]) -> list[str]:
    """How one message of `resume` differs from the input item at its place."""
    found: list[str] = []
    role = item_role(item)
    if role != message.role and not (message.role == SUMMARY and role == "user"):
        found.append(f"role {message.role} != {role} ({item.get('type')})")
    call_ids = [part.call_id for part in message.parts if part.call_id]
    if call_ids and call_ids[0] != item.get("call_id"):
        found.append(f"call id {call_ids[0]} != {item.get('call_id')}")
    texts = [part.text for part in message.parts if part.kind == TEXT]
    if item.get("type") == "message" and texts != item_texts(item):
        found.append(f"texts differ: {[t[:60] for t in texts]} != {item_texts(item)}")
    sealed = any(part.kind == THINKING and part.sealed for part in message.parts)
    if sealed and "encrypted_content" not in item:
        found.append(f"sealed reasoning sent as {item.get('type')}")
    aborted = item.get("output") == "aborted"
    if message.role == TOOL and aborted and message.parts[0].text != "aborted":
        found.append("an aborted output where resume has a real one")
    return found


def compare(conversation_: Conversation, body: dict[str, Any]) -> list[str]:
    """Every difference between `resume` and the request's input (empty: they match)."""
    items = conversation(body)
    messages = conversation_.messages
    problems = [
        f"item {index}: {problem}"
        for index, (message, item) in enumerate(zip(messages, items, strict=False))
        for problem in mismatches(message, item)
    ]
    if len(items) <= len(messages):
        return [*problems, f"{len(items)} items sent, resume has {len(messages)}"]
    new_turn = items[len(messages) :]
    if PROMPT not in [text for item in new_turn for text in item_texts(item)]:
        problems.append("the prompt is not in the CLI's new turn")
    for item in new_turn:
        if item.get("type") != "message" or item.get("role") not in ("user", "developer"):
            problems.append(f"the new turn holds {item.get('type')} {item.get('role')}")
    return problems


def resume_in_cli(data: bytes, tmp_path: Path, name: str = "rollout.jsonl") -> AgentRun:
    """Resume `data` in the real Codex CLI (offline, the fake server) and return the run: the
    run of the same bytes an earlier test made, if any (the callers compare by structure)."""
    require_agent("codex")
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / name
    source.write_bytes(data)
    return run_resume("codex", source, tmp_path=tmp_path, prompt=PROMPT, shared=True).check()
