"""Small synthetic pi sessions (format v3), faithful to what pi writes: compact JSON lines."""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson


def dumps(value: object) -> bytes:
    return orjson.dumps(value)


@dataclass
class SessionBuilder:
    api: str = "anthropic-messages"
    provider: str = "anthropic"
    model: str = "claude-opus-4-6"
    cwd: str = "/home/runner/work/demo/demo"
    lines: list[bytes] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _last: str | None = None
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(0))

    def __post_init__(self) -> None:
        self.lines.append(
            dumps(
                {
                    "type": "session",
                    "version": 3,
                    "id": "0b1f6c29-4cc6-402c-bcb0-3e76f2777ce8",
                    "timestamp": "2026-02-20T11:44:20.711Z",
                    "cwd": self.cwd,
                }
            )
        )
        self.entry("model_change", provider=self.provider, modelId=self.model)

    def _stamp(self) -> str:
        tick = next(self._clock)
        return f"2026-02-20T{11 + tick // 3600 % 12:02d}:{tick // 60 % 60:02d}:{tick % 60:02d}.000Z"

    def entry(self, kind: str, **fields: Any) -> str:
        entry_id = f"{next(self._ids):08x}"
        record = {"type": kind, "id": entry_id, "parentId": self._last, "timestamp": self._stamp()}
        record.update(fields)
        self.lines.append(dumps(record))
        self._last = entry_id
        return entry_id

    def message(self, message: dict[str, Any]) -> str:
        entry_id = self.entry("message", message=message)
        # pi (JavaScript) writes 0.000005 where Python writes 5e-06: keep the JS bytes.
        self.lines[-1] = self.lines[-1].replace(b'"input":0.25', b'"input":0.000005')
        return entry_id

    def user(self, text: str, images: list[tuple[str, bytes]] = ()) -> str:  # type: ignore[assignment]
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for mime, data in images:
            content.append(
                {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}
            )
        return self.message({"role": "user", "content": content, "timestamp": 1771587860000})

    def assistant(
        self, *blocks: dict[str, Any], stop: str = "toolUse", total_tokens: int = 18237
    ) -> str:
        """An assistant reply; its usage records `total_tokens` (0: no usage recorded)."""
        usage = {
            "input": 3,
            "output": 14,
            "cacheRead": 0,
            "cacheWrite": total_tokens - 17 if total_tokens else 0,
            "totalTokens": total_tokens,
            # JavaScript writes these numbers differently from Python.
            "cost": {"input": 0.25, "output": 1.5000000000000002e-05, "total": 0.1},
        }
        if not total_tokens:
            usage.update(input=0, output=0)
        return self.message(
            {
                "role": "assistant",
                "content": list(blocks),
                "api": self.api,
                "provider": self.provider,
                "model": self.model,
                "usage": usage,
                "stopReason": stop,
                "timestamp": 1771587860001,
            }
        )

    def tool_result(
        self,
        call_id: str,
        tool: str,
        text: str,
        *,
        error: bool = False,
        details: object = None,
        images: list[tuple[str, bytes]] = (),  # type: ignore[assignment]
    ) -> str:
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        for mime, data in images:
            content.append(
                {"type": "image", "data": base64.b64encode(data).decode(), "mimeType": mime}
            )
        message: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": tool,
            "content": content,
        }
        if details is not None:
            message["details"] = details
        message.update({"isError": error, "timestamp": 1771587860002})
        return self.message(message)

    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)


def thinking(text: str, signature: str | None = "c2lnbmF0dXJl" * 40) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "thinking", "thinking": text}
    if signature is not None:
        block["thinkingSignature"] = signature
    return block


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_call(
    call_id: str, name: str, arguments: dict[str, Any], partial: bool = True
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "toolCall",
        "id": call_id,
        "name": name,
        "arguments": arguments,
    }
    if partial:
        block["partialJson"] = orjson.dumps(arguments).decode()
    return block


def big_text(label: str, lines: int = 200) -> str:
    return "\n".join(
        f"{label} line {number}: lorem ipsum dolor sit amet" for number in range(lines)
    )


def compaction_session() -> SessionBuilder:
    """A session with everything that decides pi's context: a pi compaction entry (and an
    older one it supersedes), a branch summary, an abandoned branch, custom messages,
    bash executions (one excluded from the context), and a reply that ended in an error."""
    session = SessionBuilder()
    session.user("Turn 1: read the big files")
    for index in range(3):
        session.assistant(tool_call(f"r1{index}", "read", {"path": f"a{index}.py"}))
        session.tool_result(f"r1{index}", "read", big_text(f"a{index}", 120))
    session.assistant(text("Read them."), stop="stop")
    early = session.entry(
        "compaction",
        summary="An early summary that a later compaction replaces.",
        firstKeptEntryId="00000002",
        tokensBefore=9000,
        details={"readFiles": [], "modifiedFiles": []},
        fromHook=False,
    )
    first_kept = session.user("Turn 2: now the tests")
    session.assistant(thinking("Run them. " * 30), tool_call("b2", "bash", {"command": "pytest"}))
    session.tool_result("b2", "bash", big_text("pytest", 150), error=True)
    session.message(
        {
            "role": "bashExecution",
            "command": "ls -la",
            "output": big_text("ls", 60),
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": 1771587860003,
        }
    )
    session.message(
        {
            "role": "bashExecution",
            "command": "cat secrets.txt",
            "output": "hidden",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
            "timestamp": 1771587860004,
        }
    )
    session.assistant(text("Partial answ"), stop="error")
    session.entry(
        "compaction",
        summary="## Goal\nRead the files and run the tests.\n## Progress\n" + big_text("s", 20),
        firstKeptEntryId=first_kept,
        tokensBefore=15000,
        details={"readFiles": ["a0.py"], "modifiedFiles": []},
        fromHook=False,
    )
    branch_point = session.user("Turn 3: fix the failure")
    session.assistant(tool_call("e3", "edit", {"path": "a0.py", "oldText": "x", "newText": "y"}))
    session.tool_result("e3", "edit", "Edited 1 place")
    session.assistant(text("That approach failed; let me go back."), stop="stop")
    session._last = branch_point  # an abandoned branch: these entries are not on the path
    session.entry(
        "branch_summary",
        fromId=branch_point,
        summary="Tried editing a0.py directly; it did not help.",
        details={},
    )
    session.entry(
        "custom_message",
        customType="note",
        content="Remember: run the tests with -q.",
        display=True,
    )
    session.entry("custom", customType="state", data={"k": 1})
    session.entry("label", targetId=branch_point, label="fix")
    session.assistant(tool_call("r4", "read", {"path": "b.py"}))
    session.tool_result("r4", "read", big_text("b", 100))
    session.user("Turn 4: and now?")
    session.assistant(text("All green."), stop="stop")
    assert early
    return session


def typical_session(
    turns: int = 6, api: str = "anthropic-messages", pasted_image: bytes | None = None
) -> SessionBuilder:
    """Turns with reads, writes, edits, bash and thinking, the way GitClaw runs look; with
    `pasted_image`, the first prompt also holds that PNG, as a person pastes a screenshot."""
    session = SessionBuilder(api=api)
    for turn in range(turns):
        images = [("image/png", pasted_image)] if pasted_image and turn == 0 else []
        session.user(f"Please work on task {turn} — ünïcödé ✓ 日本語", images=images)
        session.assistant(
            thinking(f"Thinking about task {turn}. " * 20),
            tool_call(f"call_r{turn}", "read", {"path": f"src/file{turn}.py"}),
        )
        session.tool_result(f"call_r{turn}", "read", big_text(f"file{turn}"))
        session.assistant(
            tool_call(
                f"call_w{turn}",
                "write",
                {"path": f"src/new{turn}.py", "content": big_text(f"new{turn}", 80)},
            )
        )
        session.tool_result(f"call_w{turn}", "write", f"Wrote src/new{turn}.py")
        session.assistant(
            tool_call(
                f"call_e{turn}",
                "edit",
                {
                    "path": f"src/new{turn}.py",
                    "edits": [{"oldText": big_text("old", 10), "newText": big_text("new", 12)}],
                },
            )
        )
        session.tool_result(
            f"call_e{turn}",
            "edit",
            "Edited 1 place",
            details={"diff": big_text("diff", 60), "firstChangedLine": 3},
        )
        session.assistant(tool_call(f"call_b{turn}", "bash", {"command": "pytest -q"}))
        session.tool_result(
            f"call_b{turn}", "bash", big_text("pytest", 50) + "\nFAILED", error=True
        )
        session.assistant(text(f"Done with task {turn}."), stop="stop")
    return session
