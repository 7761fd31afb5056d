"""The Anthropic API's preserved-thinking prefix check, modelled for the fake LLM server.

Models with preserved thinking (Claude Fable 5.1 on) sign each thinking block they produce
and bind it to the request that produced it: the top-level ``system``, ``tools`` and every
message before the block (``cache_control`` left out). When a thinking or
``redacted_thinking`` block comes back and that prefix changed, that block and every later
one are invalid: the API answers 400 ("... The block is bound to a different
conversation ..."), or with ``thinking.block_binding.prefix_mismatch_behavior: "drop_block"``
and the ``thinking-binding-controls-2026-08-01`` beta drops them. Thinking blocks may be
left out from the start of the history; one left out between others invalidates the later
ones. A block this model did not sign (another model's) is not checked.

:class:`PreservedThinking` answers each Anthropic Messages request for
:class:`fake_llm_sse.FakeLLMServer` (its ``anthropic`` argument): it checks what came back,
then replies with a signed thinking block and, when the last message is a prompt and the
request offers the read tool (Claude Code's ``Read``, pi's ``read``), a call of it on
:attr:`read_path` (a tool loop), else a short text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

BINDING_BETA = "thinking-binding-controls-2026-08-01"
SIGNATURE_PREFIX = "fakept1."
THINKING_TYPES = ("thinking", "redacted_thinking")


def bound_to_a_different_conversation(where: str) -> str:
    """The 400 message of the documented error, for the block at ``where``."""
    return (
        f"{where}: Invalid `signature` in `thinking` block. The block is bound to a "
        "different conversation. Remove the block, or set "
        '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block". That setting '
        f"requires the `{BINDING_BETA}` value in the `anthropic-beta` header."
    )


def _without_cache_control(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def _content(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _without_thinking(message: dict[str, Any], upto: int | None = None) -> dict[str, Any]:
    """A message without its thinking blocks (they are bound by their own chain), cut
    before block ``upto``; a string content counts as one text block."""
    blocks = _content(message)[:upto]
    kept = [b for b in blocks if not (isinstance(b, dict) and b.get("type") in THINKING_TYPES)]
    return {"role": message.get("role"), "content": kept}


def prefix_digest(body: dict[str, Any], message: int, block: int) -> str:
    """The digest of what lies before block ``block`` of message ``message``: system, tools,
    the earlier messages and the earlier blocks of that message, without cache_control and
    without thinking blocks."""
    messages = body.get("messages") or []
    before = [_without_thinking(m) for m in messages[:message]]
    # The message the block is in, up to the block: at production time, the reply so far.
    current = messages[message] if message < len(messages) else {"role": "assistant"}
    before.append(_without_thinking(current, block))
    prefix = {"system": body.get("system"), "tools": body.get("tools"), "messages": before}
    canonical = json.dumps(_without_cache_control(prefix), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _identity(block: dict[str, Any]) -> str:
    keys = ("type", "thinking", "signature", "data")
    canonical = json.dumps({k: block.get(k) for k in keys}, sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def sign(prefix: str, previous: str) -> str:
    payload = json.dumps({"prefix": prefix, "previous": previous}).encode()
    return SIGNATURE_PREFIX + base64.b64encode(payload).decode()


def _binding(block: dict[str, Any]) -> dict[str, str] | None:
    """What our signature of a block says, or None when this model did not sign it."""
    signed = block.get("signature") if block.get("type") == "thinking" else block.get("data")
    if not isinstance(signed, str) or not signed.startswith(SIGNATURE_PREFIX):
        return None
    try:
        payload = json.loads(base64.b64decode(signed[len(SIGNATURE_PREFIX) :]))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


@dataclass(frozen=True)
class Verdict:
    checked: int  # thinking blocks of this model that came back
    invalid: list[str]  # where each invalid one is (messages.I.content.J), in order
    last_identity: str  # of the last thinking block sent (valid or not), "" if none


def check_prefixes(body: dict[str, Any]) -> Verdict:
    """Which of the thinking blocks in ``body`` fail the prefix check."""
    checked, invalid = 0, []
    previous_sent: str | None = None  # identity of the thinking block before, if any
    broken = False
    for i, message in enumerate(body.get("messages") or []):
        for j, block in enumerate(_content(message)):
            if not (isinstance(block, dict) and block.get("type") in THINKING_TYPES):
                continue
            binding = _binding(block)
            if binding is not None:
                checked += 1
                # The first block sent may follow blocks left out from the start.
                chained = previous_sent is None or binding.get("previous") == previous_sent
                if broken or not chained or binding.get("prefix") != prefix_digest(body, i, j):
                    broken = True
                    invalid.append(f"messages.{i}.content.{j}")
            previous_sent = _identity(block)
    return Verdict(checked, invalid, previous_sent or "")


def _drop_behaviour(body: dict[str, Any], headers: dict[str, str]) -> str | None:
    thinking = body.get("thinking")
    binding = thinking.get("block_binding") if isinstance(thinking, dict) else None
    behaviour = binding.get("prefix_mismatch_behavior") if isinstance(binding, dict) else None
    if behaviour is None:
        return None
    if BINDING_BETA not in headers.get("anthropic-beta", ""):
        return "no beta"
    return str(behaviour)


@dataclass
class PreservedThinking:
    """The responder: check the prefix of every returned thinking block, then reply."""

    read_path: str | None = None  # a file the model reads with the agent's read tool
    read_tool: tuple[str, str] = (
        "Read",
        "file_path",
    )  # its name and path argument (pi: read, path)
    enforce: bool = True  # False: sign, but never check (an account without enforcement)
    verdicts: list[Verdict] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _calls: int = 0

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
        """``(200, [content blocks], stop_reason)`` or ``(400, error body)``."""
        verdict = check_prefixes(body)
        with self._lock:
            self.verdicts.append(verdict)
        behaviour = _drop_behaviour(body, headers)
        if behaviour == "no beta":
            return 400, _error(
                "thinking.adaptive.block_binding: Extra inputs are not permitted"
                f" (needs the `{BINDING_BETA}` beta)"
            )
        if self.enforce and verdict.invalid:
            if behaviour != "drop_block":
                return 400, _error(bound_to_a_different_conversation(verdict.invalid[0]))
            with self._lock:
                self.dropped.extend(verdict.invalid)
        messages = body.get("messages") or []
        thinking = {
            "type": "thinking",
            "thinking": "Thinking about the request.",
            "signature": sign(prefix_digest(body, len(messages), 0), verdict.last_identity),
        }
        if self._wants_a_tool_call(body):
            with self._lock:
                self._calls += 1
                call_id = f"toolu_fake{self._calls:04d}"
            call = {
                "type": "tool_use",
                "id": call_id,
                "name": self.read_tool[0],
                "input": {self.read_tool[1]: self.read_path},
            }
            return 200, ([thinking, call], "tool_use")
        return 200, ([thinking, {"type": "text", "text": "Done."}], "end_turn")

    def _wants_a_tool_call(self, body: dict[str, Any]) -> bool:
        if self.read_path is None:
            return False
        tools = body.get("tools") or []
        if not any(isinstance(t, dict) and t.get("name") == self.read_tool[0] for t in tools):
            return False
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        return not any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in _content(last)
        )


def _error(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
