"""Small synthetic transcripts of Claude Code, OpenAI Codex and GitHub Copilot CLI.

Each holds every field kind the compressor meets in real files (see
``../shared/docs/agent-formats.md`` and the corpus), in the exact line shapes those CLIs
write: compact JSON, one record a line. Each has two turns after any compaction, so that
``--keep-turns 1`` has a whole turn of bulk to compress, and carries marker texts a test can
look for in what the CLI sends or shows.
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

CWD = "/home/runner/work/demo/demo"
CLAUDE_MODEL = "claude-opus-4-5-20251101"
CODEX_MODEL = "gpt-5.1-codex-mini"
COPILOT_MODEL = "claude-sonnet-4.6"


def line(record: dict[str, Any]) -> bytes:
    """One record as these CLIs write it (compact JSON, non-ASCII kept)."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()


def png(width: int = 48, height: int = 48) -> bytes:
    """A real PNG (RGB noise, so that it does not compress to nothing), a few KB."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(
        b"\x00" + bytes((x * 37 + y * 101 + (x * y) % 251) % 256 for x in range(width * 3))
        for y in range(height)
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


PNG_BASE64 = base64.b64encode(png()).decode()
PNG_DATA_URL = f"data:image/png;base64,{PNG_BASE64}"


def source_file(label: str, lines: int = 300) -> str:
    """A source file of a few KB, distinct per label."""
    return "".join(
        f"def {label}_{i}(value):\n    return value * {i}  # {label}\n" for i in range(lines)
    )


def numbered(text: str) -> str:
    """``Read`` output as Claude Code shows it to the model: tab-separated line numbers."""
    return "".join(f"{n:6}\t{row}\n" for n, row in enumerate(text.splitlines(), 1))


def signature(label: str) -> str:
    """A base64 string shaped like an Anthropic thinking signature."""
    return base64.b64encode((f"sig-{label}-" * 24).encode()).decode()


def encrypted(label: str) -> str:
    """A string shaped like OpenAI's ``encrypted_content`` (Fernet tokens start gAAAAA)."""
    return "gAAAAAB" + base64.urlsafe_b64encode((f"enc-{label}-" * 40).encode()).decode()


@dataclass
class Transcript:
    """A synthetic transcript: its bytes, its session id and the texts a test looks for."""

    data: bytes
    session_id: str
    markers: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------
# Claude Code (~/.claude/projects/<project>/<session-uuid>.jsonl)
# --------------------------------------------------------------------------------------


class _ClaudeWriter:
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.lines: list[bytes] = []
        self.last: str | None = None
        self.n = 0

    def stamp(self) -> str:
        self.n += 1
        return f"2026-03-30T10:{self.n // 60:02d}:{self.n % 60:02d}.{self.n:03d}Z"

    def uuid(self) -> str:
        return f"7c1e0b52-{self.n:04x}-4a2b-9c3d-{self.n:012x}"

    def chain(self, kind: str, parent: str | None = "last", **fields: Any) -> str:
        """A chain line (user, assistant, system): a uuid, and by default the previous
        chain line as its parent."""
        stamp = self.stamp()
        uuid = self.uuid()
        record: dict[str, Any] = {
            "parentUuid": self.last if parent == "last" else parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": "2.1.197",
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": uuid,
            "timestamp": stamp,
        }
        self.lines.append(line(record))
        self.last = uuid
        return uuid

    def user(self, content: Any, **fields: Any) -> str:
        return self.chain("user", message={"role": "user", "content": content}, **fields)

    def assistant(self, message_id: str, block: dict[str, Any], stop: str | None = None) -> str:
        """One content block per line; the lines of one API message share its id."""
        message = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": CLAUDE_MODEL,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 1200,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 9000,
                "output_tokens": 80,
                "service_tier": "standard",
            },
        }
        return self.chain("assistant", message=message, requestId=f"req_{message_id}")

    def tool_result(self, call_uuid: str, tool_use_id: str, content: Any, result: Any) -> str:
        block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
        return self.user([block], toolUseResult=result, sourceToolAssistantUUID=call_uuid)

    def plain(self, record: dict[str, Any]) -> None:
        self.lines.append(line(record))


def claude_transcript() -> Transcript:
    """A Claude Code session: an early turn before a compact_boundary and its summary, then
    a turn with signed thinking, Read/Edit/Bash/Task/image tool calls (string and block
    tool_result content; toolUseResult with file.content, originalFile, stdout/stderr and
    an image's file.base64), a user image, agent_progress lines of the subagent, a glued
    two-record line, and a last short turn that ends without a final newline."""
    session_id = "5f0c2a4e-1b7d-4c3a-9e21-6a7b8c9d0e1f"
    w = _ClaudeWriter(session_id)
    markers = {
        "summary": "SUMMARY-MARKER-c41a: the user asked about app.py earlier.",
        "turn1": "TURN1-MARKER-3e9b: read app.py, fix the bug, run the tests, check the UI",
        "turn1_answer": "TURN1-ANSWER-MARKER-77d2: app.py is fixed and the tests pass.",
        "turn2": "TURN2-MARKER-a05c: thanks, what did you change?",
        "final": "FINAL-MARKER-19f4: I changed how app.py multiplies values.",
        "thinking": "THINKING-MARKER-5b21: I should read app.py before I change it.",
    }
    w.plain({"type": "permission-mode", "permissionMode": "default", "sessionId": session_id})
    early = w.user("an early question, before the conversation was compacted", promptId="p0")
    w.plain(
        {
            "type": "file-history-snapshot",
            "messageId": early,
            "snapshot": {"messageId": early, "trackedFileBackups": {}, "timestamp": w.stamp()},
            "isSnapshotUpdate": False,
        }
    )
    w.assistant("msg_01Early", {"type": "text", "text": "an early answer"}, "end_turn")
    boundary = w.chain(
        "system",
        parent=None,
        logicalParentUuid=w.last,
        subtype="compact_boundary",
        content="Conversation compacted",
        isMeta=False,
        level="info",
        compactMetadata={"trigger": "manual", "preTokens": 48213},
    )
    w.user(
        "This session is being continued from a previous conversation. " + markers["summary"],
        parent=boundary,
        isCompactSummary=True,
        isVisibleInTranscriptOnly=True,
    )

    # Turn 1: the bulk that compression may cut.
    image = {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}
    w.user([{"type": "text", "text": markers["turn1"]}, {"type": "image", "source": image}])
    w.assistant(
        "msg_01Read",
        {"type": "thinking", "thinking": markers["thinking"], "signature": signature("read")},
    )
    w.assistant("msg_01Read", {"type": "text", "text": "I will read app.py first."})
    app = source_file("app")
    read = w.assistant(
        "msg_01Read",
        {
            "type": "tool_use",
            "id": "toolu_01Read",
            "name": "Read",
            "input": {"file_path": "app.py"},
        },
        "tool_use",
    )
    w.tool_result(
        read,
        "toolu_01Read",
        numbered(app),
        {
            "type": "text",
            "file": {
                "filePath": f"{CWD}/app.py",
                "content": app,
                "numLines": app.count("\n"),
                "startLine": 1,
                "totalLines": app.count("\n"),
            },
        },
    )
    edit_input = {"file_path": f"{CWD}/app.py", "old_string": "* 7", "new_string": "* 8"}
    edit = w.assistant(
        "msg_01Edit",
        {"type": "tool_use", "id": "toolu_01Edit", "name": "Edit", "input": edit_input},
        "tool_use",
    )
    w.tool_result(
        edit,
        "toolu_01Edit",
        f"The file {CWD}/app.py has been updated.",
        {
            "filePath": f"{CWD}/app.py",
            "oldString": "* 7",
            "newString": "* 8",
            "originalFile": app,
            "structuredPatch": [
                {
                    "oldStart": 15,
                    "oldLines": 1,
                    "newStart": 15,
                    "newLines": 1,
                    "lines": ["-    return value * 7  # app", "+    return value * 8  # app"],
                }
            ],
            "userModified": False,
            "replaceAll": False,
        },
    )
    log = "".join(f"tests/test_app.py::test_case_{i} PASSED\n" for i in range(200))
    bash = w.assistant(
        "msg_01Bash",
        {
            "type": "tool_use",
            "id": "toolu_01Bash",
            "name": "Bash",
            "input": {"command": "pytest -v", "description": "Run the tests"},
        },
        "tool_use",
    )
    w.tool_result(
        bash,
        "toolu_01Bash",
        log + "200 passed",
        {
            "stdout": log + "200 passed",
            "stderr": "warning: slow test",
            "interrupted": False,
            "isImage": False,
        },
    )
    task_input = {"description": "Review the change", "prompt": "Review app.py for bugs."}
    task = w.assistant(
        "msg_01Task",
        {"type": "tool_use", "id": "toolu_01Task", "name": "Task", "input": task_input},
        "tool_use",
    )
    for step in range(3):  # the subagent's messages, repeated in the parent file
        w.plain(
            {
                "parentUuid": task,
                "isSidechain": False,
                "userType": "external",
                "cwd": CWD,
                "sessionId": session_id,
                "version": "2.1.197",
                "gitBranch": "main",
                "type": "progress",
                "data": {
                    "type": "agent_progress",
                    "message": {
                        "type": "assistant",
                        "message": {
                            "role": "assistant",
                            "content": [{"type": "text", "text": f"reviewing, step {step}"}],
                        },
                    },
                    "normalizedMessages": [],
                    "prompt": task_input["prompt"],
                    "agentId": "a7f3c2d",
                },
                "toolUseID": "toolu_01Task",
                "parentToolUseID": "toolu_01Task",
                "uuid": f"3d2e1f00-0000-4000-8000-00000000000{step}",
                "timestamp": w.stamp(),
            }
        )
    review = "The review found no further bugs in app.py. " * 40
    w.tool_result(
        task,
        "toolu_01Task",
        [{"type": "text", "text": review}],
        {
            "status": "completed",
            "prompt": task_input["prompt"],
            "agentId": "a7f3c2d",
            "content": [{"type": "text", "text": review}],
            "totalDurationMs": 5230,
            "totalTokens": 4100,
            "totalToolUseCount": 2,
        },
    )
    shot = w.assistant(
        "msg_01Shot",
        {
            "type": "tool_use",
            "id": "toolu_01Shot",
            "name": "Read",
            "input": {"file_path": f"{CWD}/screenshot.png"},
        },
        "tool_use",
    )
    w.tool_result(
        shot,
        "toolu_01Shot",
        [{"type": "image", "source": image}],
        {
            "type": "image",
            "file": {
                "base64": PNG_BASE64,
                "type": "image/png",
                "originalSize": len(png()),
                "dimensions": {"originalWidth": 48, "originalHeight": 48},
            },
        },
    )
    w.assistant("msg_01Done", {"type": "text", "text": markers["turn1_answer"]}, "end_turn")
    w.chain("system", subtype="turn_duration", durationMs=41000, messageCount=18, isMeta=False)
    # Two records on one line with no newline between them, as real files hold.
    glued = line({"type": "ai-title", "aiTitle": "Fix app.py", "sessionId": session_id})
    w.lines.append(glued + line({"type": "summary", "summary": "Fix app.py", "leafUuid": w.last}))
    w.plain({"type": "last-prompt", "lastPrompt": markers["turn2"], "sessionId": session_id})

    # Turn 2: kept byte for byte.
    w.user(markers["turn2"], promptId="p2")
    w.assistant(
        "msg_01Last",
        {"type": "thinking", "thinking": "The user wants a recap.", "signature": signature("last")},
    )
    w.assistant("msg_01Last", {"type": "text", "text": markers["final"]}, "end_turn")
    return Transcript(b"\n".join(w.lines), session_id, markers)  # no final newline


# --------------------------------------------------------------------------------------
# OpenAI Codex (~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl)
# --------------------------------------------------------------------------------------


class _CodexWriter:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.n = 0

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.n += 1
        stamp = f"2026-03-30T19:{self.n // 60:02d}:{self.n % 60:02d}.{self.n:03d}Z"
        self.lines.append(line({"timestamp": stamp, "type": kind, "payload": payload}))

    def item(self, payload: dict[str, Any]) -> None:
        self.add("response_item", payload)

    def event(self, payload: dict[str, Any]) -> None:
        self.add("event_msg", payload)

    def message(self, role: str, parts: list[dict[str, Any]]) -> None:
        self.item({"type": "message", "role": role, "content": parts})

    def turn(self, turn_id: str, instructions: str, prompt: str, images: list[str]) -> None:
        """The lines that open a turn: task_started, the developer and user context,
        turn_context (repeating the instructions) and the user's message."""
        self.event(
            {
                "type": "task_started",
                "turn_id": turn_id,
                "model_context_window": 258400,
                "collaboration_mode_kind": "default",
            }
        )
        self.message("developer", [{"type": "input_text", "text": "<permissions instructions>"}])
        self.add(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": CWD,
                "current_date": "2026-03-30",
                "timezone": "UTC",
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write", "network_access": False},
                "model": CODEX_MODEL,
                "personality": "pragmatic",
                "collaboration_mode": {
                    "mode": "default",
                    "settings": {
                        "model": CODEX_MODEL,
                        "reasoning_effort": "medium",
                        "developer_instructions": instructions,
                    },
                },
                "effort": "medium",
                "summary": "auto",
                "user_instructions": instructions,
                "truncation_policy": {"mode": "tokens", "limit": 10000},
            },
        )
        parts = [{"type": "input_text", "text": prompt}]
        parts += [{"type": "input_image", "image_url": url} for url in images]
        self.message("user", parts)
        self.event(
            {
                "type": "user_message",
                "message": prompt,
                "images": images,
                "local_images": [],
                "text_elements": [],
            }
        )

    def token_count(self, total: int) -> None:
        usage = {
            "input_tokens": total,
            "cached_input_tokens": total // 2,
            "output_tokens": 300,
            "reasoning_output_tokens": 120,
            "total_tokens": total + 300,
        }
        self.event(
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": usage,
                    "last_token_usage": usage,
                    "model_context_window": 258400,
                },
                "rate_limits": {"primary": {"used_percent": 1.0, "window_minutes": 300}},
            }
        )

    def done(self, turn_id: str, answer: str) -> None:
        self.message("assistant", [{"type": "output_text", "text": answer}])
        self.event({"type": "agent_message", "message": answer, "phase": None})
        self.event({"type": "task_complete", "turn_id": turn_id, "last_agent_message": answer})


def codex_rollout() -> Transcript:
    """A Codex rollout: session_meta, two turns each with turn_context (repeated
    instructions), user_message events with images, reasoning with encrypted_content, a
    shell function_call with exec_command_end and a string output, a view_image call whose
    output is an array with an input_image, an apply_patch custom_tool_call with its output,
    agent messages, token_count and task_complete."""
    session_id = "019d417c-54dd-7ee3-b9e7-53a8c0ffee01"
    markers = {
        "turn1": "TURN1-MARKER-6a0d: list the files and fix notes.md",
        "turn2": "TURN2-MARKER-e3b7: summarize what you did",
        "final": "FINAL-MARKER-0c55: I listed the files and fixed notes.md.",
    }
    instructions = "Help with this repository. Keep answers short.\n" * 150
    w = _CodexWriter()
    w.add(
        "session_meta",
        {
            "id": session_id,
            "timestamp": "2026-03-30T19:00:00.000Z",
            "cwd": CWD,
            "originator": "codex_cli_rs",
            "cli_version": "0.117.0",
            "source": "cli",
            "model_provider": "openai",
            "base_instructions": {"text": "You are Codex, a coding agent. " * 50},
            "git": {"commit_hash": "948947e6831949fcb9bd5b916561f2c157c91eab", "branch": "main"},
        },
    )
    turn1 = "019d418c-1b9d-7f31-ad27-741b65eaace5"
    w.turn(turn1, instructions, markers["turn1"], [PNG_DATA_URL])
    w.token_count(12000)
    w.item(
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "**Listing files**"}],
            "content": None,
            "encrypted_content": encrypted("list"),
        }
    )
    w.item(
        {
            "type": "function_call",
            "name": "shell_command",
            "arguments": json.dumps({"command": "ls -la"}),
            "call_id": "call_01Shell",
        }
    )
    listing = "".join(f"-rw-r--r-- 1 runner runner {i * 97:6} file_{i:04}.md\n" for i in range(400))
    w.event(
        {
            "type": "exec_command_end",
            "call_id": "call_01Shell",
            "turn_id": turn1,
            "command": ["bash", "-lc", "ls -la"],
            "cwd": CWD,
            "parsed_cmd": [{"type": "list_files", "cmd": "ls -la", "path": None}],
            "source": "agent",
            "stdout": listing,
            "stderr": "",
            "aggregated_output": listing,
            "exit_code": 0,
            "duration": {"secs": 0, "nanos": 5000000},
            "formatted_output": listing,
            "status": "completed",
        }
    )
    w.item(
        {
            "type": "function_call_output",
            "call_id": "call_01Shell",
            "output": f"Exit code: 0\nWall time: 0.1 seconds\nOutput:\n{listing}",
        }
    )
    w.item(
        {
            "type": "function_call",
            "name": "view_image",
            "arguments": json.dumps({"path": f"{CWD}/screenshot.png"}),
            "call_id": "call_01Image",
        }
    )
    w.event({"type": "view_image_tool_call", "call_id": "call_01Image", "path": "screenshot.png"})
    w.item(
        {
            "type": "function_call_output",
            "call_id": "call_01Image",
            "output": [{"type": "input_image", "image_url": PNG_DATA_URL}],
        }
    )
    w.item(
        {
            "type": "reasoning",
            "summary": [],
            "content": None,
            "encrypted_content": encrypted("patch"),
        }
    )
    patch = "*** Begin Patch\n*** Update File: notes.md\n@@\n" + "".join(
        f"-old line {i}\n+new line {i}\n" for i in range(150)
    )
    w.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": "call_01Patch",
            "name": "apply_patch",
            "input": patch + "*** End Patch",
        }
    )
    w.item(
        {
            "type": "custom_tool_call_output",
            "call_id": "call_01Patch",
            "output": json.dumps(
                {
                    "output": "Success. Updated the following files:\nM notes.md\n",
                    "metadata": {"exit_code": 0, "duration_seconds": 0.0},
                }
            ),
        }
    )
    w.token_count(30000)
    w.done(turn1, "I listed the files, looked at the screenshot and patched notes.md.")

    turn2 = "019d4191-4940-7801-a623-f0d8fabe38f0"
    w.turn(turn2, instructions, markers["turn2"], [])
    w.item(
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "**Summarizing**"}],
            "content": None,
            "encrypted_content": encrypted("summary"),
        }
    )
    w.token_count(31000)
    w.done(turn2, markers["final"])
    return Transcript(b"\n".join(w.lines) + b"\n", session_id, markers)


# --------------------------------------------------------------------------------------
# GitHub Copilot CLI (~/.copilot/session-state/<id>/events.jsonl)
# --------------------------------------------------------------------------------------


class _CopilotWriter:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.last: str | None = None
        self.n = 0

    def add(self, kind: str, data: dict[str, Any]) -> str:
        self.n += 1
        event_id = f"5a6b9748-698b-44d0-b4d7-{self.n:012x}"
        stamp = f"2026-03-04T14:{self.n // 60:02d}:{self.n % 60:02d}.{self.n:03d}Z"
        record = {
            "type": kind,
            "data": data,
            "id": event_id,
            "timestamp": stamp,
            "parentId": self.last,
        }
        self.lines.append(line(record))
        self.last = event_id
        return event_id

    def tool(self, call_id: str, name: str, arguments: dict[str, Any], output: str) -> None:
        self.add(
            "tool.execution_start",
            {"toolCallId": call_id, "toolName": name, "arguments": arguments},
        )
        self.add(
            "tool.execution_complete",
            {
                "toolCallId": call_id,
                "model": COPILOT_MODEL,
                "interactionId": "a25368a6-236f-4205-99ba-989f8fbfddd8",
                "success": True,
                "result": {
                    "content": output,
                    "detailedContent": output + "\n(detailed view)",
                    "contents": [
                        {"type": "text", "text": output},
                        {"type": "terminal", "text": output, "exitCode": 0, "cwd": CWD},
                    ],
                },
                "toolTelemetry": {},
            },
        )


def copilot_events() -> Transcript:
    """A Copilot CLI events.jsonl (format of 0.0.421): session.start, a model change, two
    turns with user.message (the first with a pasted image), assistant.turn_start,
    assistant.message with toolRequests and reasoningOpaque + reasoningText,
    tool.execution_start and tool.execution_complete with result.content, detailedContent
    and contents, assistant.turn_end, and a session.resume
    whose eventCount is the number of lines before it plus one."""
    session_id = "53c12c90-d353-425f-998b-80fb3ee3c0de"
    interaction = "a25368a6-236f-4205-99ba-989f8fbfddd8"
    markers = {
        "turn1": "TURN1-MARKER-b8e1: read the docs and the changelog",
        "turn2": "TURN2-MARKER-47fa: which version is the newest?",
        "final": "FINAL-MARKER-d310: the newest version is 2.4.0.",
    }
    context = {"cwd": CWD, "gitRoot": CWD, "branch": "main", "repository": "demo/demo"}
    w = _CopilotWriter()
    w.add(
        "session.start",
        {
            "sessionId": session_id,
            "version": 1,
            "producer": "copilot-agent",
            "copilotVersion": "0.0.421",
            "startTime": "2026-03-04T14:10:01.939Z",
            "context": context,
        },
    )
    w.add("session.model_change", {"newModel": COPILOT_MODEL})
    w.add(
        "user.message",
        {
            "content": markers["turn1"],
            "transformedContent": f"<current_datetime>2026-03-04</current_datetime>\n\n"
            f"{markers['turn1']}",
            # A pasted screenshot: the CLI sends it as an image part after the text.
            "attachments": [
                {
                    "type": "blob",
                    "data": PNG_BASE64,
                    "mimeType": "image/png",
                    "displayName": "screenshot.png",
                }
            ],
            "interactionId": interaction,
        },
    )
    w.add("assistant.turn_start", {"turnId": "0", "interactionId": interaction})
    docs_args = {"path": f"{CWD}/docs/guide.md"}
    log_args = {"command": "cat CHANGELOG.md", "description": "Read the changelog"}
    w.add(
        "assistant.message",
        {
            "messageId": "9ca839f2-57e5-41d0-b765-816a3f8bad6a",
            "content": "",
            "toolRequests": [
                {"toolCallId": "tooluse_01Docs", "name": "view", "arguments": docs_args},
                {"toolCallId": "tooluse_01Log", "name": "bash", "arguments": log_args},
            ],
            "interactionId": interaction,
            "reasoningOpaque": base64.b64encode(b"opaque-reasoning-" * 60).decode(),
            "reasoningText": "I need the guide and the changelog.",
        },
    )
    w.tool(
        "tooluse_01Docs", "view", docs_args, "\n".join(f"{i}. guide line {i}" for i in range(400))
    )
    changelog = "\n".join(f"## 2.{i // 10}.{i % 10}\n- change {i}" for i in range(40, 0, -1))
    w.tool("tooluse_01Log", "bash", log_args, changelog)
    w.add(
        "assistant.message",
        {
            "messageId": "0b7d9c1e-2f3a-4b5c-8d9e-0f1a2b3c4d5e",
            "content": "I read the guide and the changelog.",
            "toolRequests": [],
            "interactionId": interaction,
        },
    )
    w.add("assistant.turn_end", {"turnId": "0"})
    w.add(
        "session.resume",
        {
            "resumeTime": "2026-03-04T14:15:52.031Z",
            "eventCount": len(w.lines) + 1,
            "context": context,
        },
    )
    second = "b1c2d3e4-f5a6-4b7c-8d9e-0a1b2c3d4e5f"
    w.add(
        "user.message",
        {
            "content": markers["turn2"],
            "transformedContent": markers["turn2"],
            "attachments": [],
            "interactionId": second,
        },
    )
    w.add("assistant.turn_start", {"turnId": "1", "interactionId": second})
    w.add(
        "assistant.message",
        {
            "messageId": "c0ffee00-1111-4222-8333-444455556666",
            "content": markers["final"],
            "toolRequests": [],
            "interactionId": second,
            "reasoningOpaque": base64.b64encode(b"second-opaque-" * 40).decode(),
            "reasoningText": "The changelog starts with 2.4.0.",
        },
    )
    w.add("assistant.turn_end", {"turnId": "1"})
    return Transcript(b"\n".join(w.lines) + b"\n", session_id, markers)


TRANSCRIPTS = {"claude": claude_transcript, "codex": codex_rollout, "copilot": copilot_events}
