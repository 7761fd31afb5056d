"""Small synthetic GitHub Copilot CLI event files, shaped like what the CLI writes.

Every line is `{"type","data","id","timestamp","parentId"}` in compact JSON. `typical_events`
holds every field kind the copilot format compresses or keeps (see formats/copilot/rules.py).
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson

SESSION_ID = "53c12c90-0000-4000-8000-00000000c0de"
# Where GitClaw variants commit Copilot CLI's state, and the session's folder in it.
EVENTS_PATH = f"state/copilot/.copilot/session-state/{SESSION_ID}/events.jsonl"
REASONING_OPAQUE = base64.b64encode(b"opaque reasoning state " * 40).decode()
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def big_text(label: str, lines: int = 80) -> str:
    return "\n".join(
        f"{label} line {number}: lorem ipsum dolor sit amet" for number in range(lines)
    )


@dataclass
class EventsBuilder:
    lines: list[bytes] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(0))
    _last: str | None = None
    _calls: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def event(self, kind: str, **data: Any) -> str:
        event_id = f"00000000-0000-4000-8000-{next(self._ids):012x}"
        tick = next(self._clock)
        record = {
            "type": kind,
            "data": data,
            "id": event_id,
            "timestamp": f"2026-03-04T14:{tick // 60 % 60:02d}:{tick % 60:02d}.000Z",
            "parentId": self._last,
        }
        self.lines.append(orjson.dumps(record))
        self._last = event_id
        return event_id

    def start(self) -> None:
        self.event(
            "session.start",
            sessionId=SESSION_ID,
            version=1,
            producer="copilot-agent",
            copilotVersion="0.0.421",
            startTime="2026-03-04T14:00:00.000Z",
            context={"cwd": "/home/runner/work/demo/demo", "branch": "main"},
        )
        self.event("session.model_change", newModel="claude-sonnet-4.6")

    def resume(self) -> None:
        """session.resume records how many events came before it, plus one."""
        self.event(
            "session.resume",
            resumeTime="2026-03-04T15:00:00.000Z",
            eventCount=len(self.lines) + 1,
            context={"cwd": "/home/runner/work/demo/demo"},
        )

    def user(self, text: str, **extra: Any) -> None:
        self.event(
            "user.message",
            content=text,
            transformedContent=f"<current_datetime>now</current_datetime>\n\n{text}",
            **{"attachments": [], "interactionId": "i-1", **extra},
        )

    def turn(self, calls: list[tuple[str, dict[str, Any], dict[str, Any]]], reply: str) -> None:
        """One assistant turn: tool requests (name, arguments, result), then a reply."""
        self.event("assistant.turn_start", turnId="0", interactionId="i-1")
        ids = [f"tooluse_{next(self._calls):04d}" for _ in calls]
        self.event(
            "assistant.message",
            messageId=f"m-{ids[0] if ids else 'reply'}",
            content="",
            toolRequests=[
                {"toolCallId": call_id, "name": name, "arguments": arguments, "type": "function"}
                for call_id, (name, arguments, _) in zip(ids, calls, strict=True)
            ],
            interactionId="i-1",
            reasoningOpaque=REASONING_OPAQUE,
            reasoningText="Let me look at the files first.\nThen decide.",
        )
        for call_id, (name, arguments, _) in zip(ids, calls, strict=True):
            self.event(
                "tool.execution_start", toolCallId=call_id, toolName=name, arguments=arguments
            )
        for call_id, (_, _, result) in zip(ids, calls, strict=True):
            self.event(
                "tool.execution_complete",
                toolCallId=call_id,
                model="claude-sonnet-4.6",
                interactionId="i-1",
                success=result.pop("success", True),
                result=result,
                toolTelemetry={"properties": {"command": "view"}, "metrics": {"resultLength": 9}},
            )
        self.event(
            "assistant.message",
            messageId=f"m-reply-{ids[0] if ids else 'none'}",
            content=reply,
            toolRequests=[],
            interactionId="i-1",
        )
        self.event("assistant.turn_end", turnId="0")

    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)


def typical_events() -> EventsBuilder:
    """Three turns; the first two hold every kind of bulk, the last one repeats them."""
    events = EventsBuilder()
    events.start()
    events.user("Read the app and fix the build")
    listing = big_text("src/app.ts")
    events.turn(
        [
            # content == detailedContent, both large: the model-facing text and its UI copy
            (
                "view",
                {"path": "/work/src/app.ts"},
                {"content": listing, "detailedContent": listing},
            ),
            # a diff-shaped detailedContent that differs from a short content
            (
                "view",
                {"path": "/work/src"},
                {"content": "app.ts\nlib.ts", "detailedContent": "\ndiff --git\n" + big_text("d")},
            ),
            # structured contents: every item kind keeps its type
            (
                "github-mcp-server-get_file",
                {"owner": "octo", "repo": "demo", "path": "README.md"},
                {
                    "content": big_text("readme", 30),
                    "detailedContent": big_text("readme", 30),
                    "contents": [
                        {"type": "text", "text": big_text("readme", 30)},
                        {"type": "terminal", "text": big_text("term", 20), "exitCode": 0},
                        {"type": "image", "data": PNG, "mimeType": "image/png"},
                        {"type": "audio", "data": PNG, "mimeType": "audio/wav"},
                        {
                            "type": "resource",
                            "resource": {"uri": "file:///r.txt", "text": big_text("res", 20)},
                        },
                        {
                            "type": "resource",
                            "resource": {"uri": "file:///r.bin", "blob": PNG},
                        },
                        {
                            "type": "shell_exit",
                            "shellId": "1",
                            "exitCode": 0,
                            "outputPreview": big_text("preview", 20),
                        },
                        {"type": "resource_link", "name": "r", "uri": "file:///r.txt"},
                    ],
                },
            ),
            # a failed tool with a large message, and a line separator in its output
            (
                "bash",
                {"command": "npm run build " + "--flag " * 150, "description": "Build"},
                {
                    "content": "error\u2028" + big_text("npm ERR!", 40),
                    "detailedContent": "error\u2028" + big_text("npm ERR!", 40),
                    "success": False,
                },
            ),
        ],
        "The build fails in app.ts; I will fix it.",
    )
    events.resume()
    events.user("Use the skill", source="skill-pdf")  # injected: not a turn of its own
    events.event(
        "skill.invoked", name="pdf", path="/skills/pdf/SKILL.md", content=big_text("skill", 20)
    )
    events.user("Go ahead and write the fix")
    events.turn(
        [
            (
                "create",
                {"path": "/work/src/fix.ts", "file_text": big_text("fix.ts", 40)},
                {"content": "Created file /work/src/fix.ts", "detailedContent": big_text("+", 40)},
            ),
            (
                "edit",
                {
                    "path": "/work/src/app.ts",
                    "old_str": big_text("old", 20),
                    "new_str": big_text("new", 20),
                },
                {"content": "File edited", "detailedContent": big_text("diff", 30)},
            ),
            # nested arguments: objects and arrays keep their shape, numbers stay
            (
                "github-mcp-server-create_issue",
                {
                    "title": "Build fix",
                    "body": {"markdown": big_text("body", 20), "lines": 20},
                    "labels": [big_text("label", 20), "bug"],
                    "draft": False,
                },
                {"content": "Issue #1 created", "detailedContent": "Issue #1 created"},
            ),
        ],
        "Fixed.",
    )
    events.user("Check once more")
    events.turn(
        [
            (
                "view",
                {"path": "/work/src/app.ts"},
                {"content": listing, "detailedContent": listing},
            ),
            ("create", {"path": "/x", "file_text": big_text("x", 40)}, {"content": "Created"}),
        ],
        "All good.",
    )
    return events


def broken_events() -> bytes:
    """Typical events with a junk line and two records glued on one line, as crashes leave."""
    events = typical_events()
    glued = events.lines[3] + events.lines[4]
    events.lines[3:5] = [glued, b"not json at all"]
    return events.data()
