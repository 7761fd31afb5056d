"""Small synthetic Claude Code transcripts, shaped like the lines Claude Code writes: compact
JSON, one content block per assistant line, `uuid`/`parentUuid` links, `toolUseResult` next to
each tool result. Every field kind the Claude format compresses or keeps appears here."""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson
from synthetic import big_text

SESSION_ID = "5f0c2a61-7d1e-4c55-9a3b-2b9f0d6e8c11"
SIGNATURE = "RXJyb3JTaWduYXR1cmU" * 30  # what a signed thinking block carries
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 12).decode()


def image(data: str = PNG) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


@dataclass
class ClaudeSession:
    """Appends lines the way Claude Code does; `data()` is the file."""

    cwd: str = "/home/dev/project"
    sidechain: bool = False
    lines: list[bytes] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(0))
    last: str | None = None  # the uuid the next chain line links to
    _message: int = 0

    def _uuid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._ids):012x}"

    def _stamp(self) -> str:
        tick = next(self._clock)
        return f"2026-03-01T10:{tick // 60 % 60:02d}:{tick % 60:02d}.000Z"

    def raw(self, record: dict[str, Any]) -> None:
        self.lines.append(orjson.dumps(record))

    def chain(self, kind: str, **fields: Any) -> str:
        """A line on the chain: linked to the line before it."""
        uuid = self._uuid()
        record: dict[str, Any] = {
            "parentUuid": self.last,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": SESSION_ID,
            "version": "2.1.197",
            "gitBranch": "main",
            "type": kind,
        }
        record.update(fields)
        record["uuid"] = uuid
        record["timestamp"] = self._stamp()
        self.raw(record)
        self.last = uuid
        return uuid

    def user(self, content: str | list[dict[str, Any]], **fields: Any) -> str:
        return self.chain("user", message={"role": "user", "content": content}, **fields)

    def assistant(self, *blocks: dict[str, Any]) -> list[str]:
        """One API message: one line per content block, all with the same message.id."""
        self._message += 1
        message_id = f"msg_01{self._message:022d}"
        return [
            self.chain(
                "assistant",
                message={
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4-6",
                    "content": [block],
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                },
                requestId=f"req_{self._message:08d}",
            )
            for block in blocks
        ]

    def tool_use(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        self.assistant({"type": "tool_use", "id": call_id, "name": name, "input": arguments})

    def tool_result(
        self,
        call_id: str,
        content: str | list[dict[str, Any]],
        result: object,
        *,
        is_error: bool = False,
    ) -> str:
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": content}
        if is_error:
            block["is_error"] = True
        return self.user([block], toolUseResult=result)

    def progress(self, call_id: str, data: dict[str, Any]) -> str:
        return self.chain(
            "progress", data=data, toolUseID=f"agent_{call_id}", parentToolUseID=call_id
        )

    def data(self, *, final_newline: bool = True) -> bytes:
        body = b"\n".join(self.lines)
        return body + b"\n" if final_newline else body


def signed_thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": SIGNATURE}


def unsigned_thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": ""}


def one_turn(session: ClaudeSession, turn: int) -> None:
    """A turn that exercises every kind of bulk Claude Code writes."""
    path = f"/home/dev/project/src/module{turn}.py"
    body = big_text(f"module{turn}", 120)
    session.user(f"Please fix module {turn}.")
    session.assistant(
        signed_thinking(big_text(f"signed reasoning {turn}", 20)),
        unsigned_thinking(big_text(f"unsigned reasoning {turn}", 20)),
        text(f"Reading module {turn}."),
    )
    # Read: the numbered text goes to the model, `file.content` to the renderer.
    session.tool_use(f"toolu_read{turn}", "Read", {"file_path": path})
    numbered = "\n".join(f"{n + 1}\t{line}" for n, line in enumerate(body.split("\n")))
    session.tool_result(
        f"toolu_read{turn}",
        numbered,
        {
            "type": "text",
            "file": {
                "filePath": path,
                "content": body,
                "numLines": 120,
                "startLine": 1,
                "totalLines": 120,
            },
        },
    )
    # Edit: the old file in `originalFile`, the diff in `structuredPatch`.
    old, new = big_text("old", 12), big_text("new", 12)
    session.tool_use(
        f"toolu_edit{turn}",
        "Edit",
        {"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
    )
    session.tool_result(
        f"toolu_edit{turn}",
        f"The file {path} has been updated successfully.",
        {
            "filePath": path,
            "oldString": old,
            "newString": new,
            "originalFile": body,
            "structuredPatch": [
                {
                    "oldStart": 1,
                    "oldLines": 12,
                    "newStart": 1,
                    "newLines": 12,
                    "lines": [f"-{line}" for line in old.split("\n")]
                    + [f"+{line}" for line in new.split("\n")],
                }
            ],
            "userModified": False,
            "replaceAll": False,
        },
    )
    # Bash: a long command, a long output in `stdout`.
    output = big_text(f"pytest {turn}", 60)
    session.tool_use(
        f"toolu_bash{turn}",
        "Bash",
        {"command": "python -m pytest -q " + " ".join(f"tests/test_{n}.py" for n in range(40))},
    )
    session.tool_result(
        f"toolu_bash{turn}",
        output,
        {"stdout": output, "stderr": "", "interrupted": False, "isImage": False},
        is_error=True,
    )
    # A screenshot tool: its result is blocks with a base64 image, repeated in toolUseResult.
    session.tool_use(f"toolu_shot{turn}", "mcp__browser__screenshot", {"url": "http://localhost"})
    blocks = [text("Screenshot taken"), image()]
    session.tool_result(f"toolu_shot{turn}", blocks, blocks)
    # A subagent: its messages come back as progress lines in the parent file.
    prompt = big_text(f"subagent task {turn}", 10)
    session.tool_use(f"toolu_task{turn}", "Task", {"description": "Search", "prompt": prompt})
    inner = {"role": "assistant", "content": [text(big_text(f"subagent says {turn}", 15))]}
    session.progress(
        f"toolu_task{turn}",
        {
            "type": "agent_progress",
            "agentId": f"a{turn:06d}",
            "prompt": prompt,
            "normalizedMessages": [
                {"type": "user", "message": {"role": "user", "content": prompt}},
                {"type": "assistant", "message": inner},
            ],
            "message": {"type": "assistant", "message": inner, "uuid": f"inner-{turn}"},
        },
    )
    session.tool_result(
        f"toolu_task{turn}",
        [text(big_text(f"subagent report {turn}", 20))],
        {"status": "completed", "content": [text(big_text(f"subagent report {turn}", 20))]},
    )
    session.assistant(text(f"Module {turn} is fixed."))


def typical_session(turns: int = 3) -> ClaudeSession:
    """A Claude Code session: summaries and a snapshot first, then turns of every kind."""
    session = ClaudeSession()
    session.raw({"type": "summary", "summary": "Fixing modules", "leafUuid": "leaf-0001"})
    session.raw(
        {
            "type": "file-history-snapshot",
            "messageId": "snap-0001",
            "snapshot": {"messageId": "snap-0001", "trackedFileBackups": {}, "timestamp": "x"},
            "isSnapshotUpdate": False,
        }
    )
    for turn in range(turns):
        one_turn(session, turn)
    return session


def images_session() -> ClaudeSession:
    """A person pastes a screenshot; a meta line carries an image a tool read."""
    session = ClaudeSession()
    session.user([text("What is wrong on this page?"), image()])
    session.tool_use("toolu_img", "Read", {"file_path": "/home/dev/project/shot.png"})
    session.tool_result(
        "toolu_img",
        [image()],
        {"type": "image", "file": {"base64": PNG, "type": "image/png", "originalSize": 3080}},
    )
    session.user([image()], isMeta=True)
    session.assistant(text("The header overlaps."))
    session.user("Thanks, now fix it.")
    session.assistant(text("Fixed."))
    return session


def compacted_session() -> ClaudeSession:
    """After /compact: a compact_boundary system line and the summary Claude Code resumes."""
    session = typical_session(2)
    # The boundary starts a new chain: parentUuid null, logicalParentUuid the old leaf.
    leaf, session.last = session.last, None
    session.chain(
        "system",
        subtype="compact_boundary",
        content="Conversation compacted",
        isMeta=False,
        level="info",
        compactMetadata={"trigger": "manual", "preTokens": 123456},
        logicalParentUuid=leaf,
    )
    session.user(big_text("This session is being continued. Summary", 30), isCompactSummary=True)
    session.user("<command-name>/compact</command-name>", isMeta=True)
    one_turn(session, 9)
    return session


def subagent_session() -> ClaudeSession:
    """A subagent file (`<session>/subagents/agent-*.jsonl`): every line is a sidechain."""
    session = ClaudeSession(sidechain=True)
    for turn in range(2):
        one_turn(session, turn)
    return session


def broken_session() -> bytes:
    """Real files have a line that holds two records glued together, and no final newline."""
    session = typical_session(2)
    glued = session.lines[3] + b'{"type":"summary","summary":"glued","leafUuid":"leaf-0002"}'
    session.lines[3] = glued
    session.lines.insert(5, b"not json at all")
    return session.data(final_newline=False)
