"""Small synthetic Codex CLI rollouts, shaped like the lines codex-cli 0.1xx writes.

Every bulk field kind the Codex format compresses appears before the last turn, and again in
the last turn (where it must stay byte for byte); so do the values it must never touch.
"""

from __future__ import annotations

import base64
import itertools
from dataclasses import dataclass, field
from typing import Any

import orjson

SESSION_ID = "019d417c-54dd-7ee3-b9e7-538a07d03f7a"
INSTRUCTIONS = "# AGENTS.md\n\n" + "Follow the repository conventions. " * 120
MODE_INSTRUCTIONS = "# Collaboration Mode: Default\r\n\r\n" + "Ask before big changes. " * 60
ENCRYPTED = "gAAAAABpyyXv86ks2DU73IGR2gX-SuPvD-sNLbln0thVxRue9vrAuQRu1rIRsnjnXFZmBk2bGU" * 12


def data_url(label: str, size: int = 3000, mime: str = "image/png") -> str:
    raw = (label.encode() * (size // max(len(label), 1) + 1))[:size]
    return f"data:{mime};base64,{base64.b64encode(raw).decode()}"


def listing(label: str, lines: int = 120) -> str:
    return "\n".join(f"{label} row {index}: -a---- 3/30/2026 1:53 PM 136" for index in range(lines))


def patch(path: str, lines: int = 60) -> str:
    body = "\n".join(f"+{path} line {index}: lorem ipsum dolor sit amet" for index in range(lines))
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n{body}\n*** End Patch\n"


@dataclass
class RolloutBuilder:
    lines: list[bytes] = field(default_factory=list)
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(0))
    _calls: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _turns: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.line(
            "session_meta",
            {
                "id": SESSION_ID,
                "timestamp": "2026-03-31T01:22:40.494Z",
                "cwd": "/home/runner/work/demo/demo",
                "originator": "codex_cli_rs",
                "cli_version": "0.117.0",
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": "You are Codex. " * 200},
            },
        )

    def line(self, kind: str, payload: dict[str, Any]) -> int:
        second = next(self._clock)
        stamp = f"2026-03-31T01:{second // 60 % 60:02d}:{second % 60:02d}.000Z"
        self.lines.append(orjson.dumps({"timestamp": stamp, "type": kind, "payload": payload}))
        return len(self.lines)

    def event(self, kind: str, **fields: Any) -> int:
        return self.line("event_msg", {"type": kind, **fields})

    def item(self, kind: str, **fields: Any) -> int:
        return self.line("response_item", {"type": kind, **fields})

    def start_turn(self, text: str, image: str | None = None) -> str:
        """What Codex writes for a prompt: task_started, context, turn_context, the prompt."""
        turn_id = f"019d418c-1b9d-7f31-ad27-{next(self._turns):012d}"
        self.event("task_started", turn_id=turn_id, model_context_window=258400)
        self.turn_context(turn_id)
        content: list[dict[str, Any]] = [{"type": "input_text", "text": text}]
        if image is not None:
            content.append({"type": "input_image", "image_url": image})
        self.item("message", role="user", content=content)
        self.event(
            "user_message",
            message=text,
            images=[image] if image is not None else [],
            local_images=[],
            text_elements=[],
        )
        return turn_id

    def turn_context(self, turn_id: str) -> int:
        return self.line(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": "/home/runner/work/demo/demo",
                "approval_policy": "on-request",
                "sandbox_policy": {"type": "workspace-write", "network_access": False},
                "model": "gpt-5.1-codex-mini",
                "collaboration_mode": {
                    "mode": "default",
                    "settings": {
                        "model": "gpt-5.1-codex-mini",
                        "reasoning_effort": "medium",
                        "developer_instructions": MODE_INSTRUCTIONS,
                    },
                },
                "effort": "medium",
                "summary": "auto",
                "user_instructions": INSTRUCTIONS,
                "truncation_policy": {"mode": "tokens", "limit": 10000},
            },
        )

    def reasoning(self) -> int:
        return self.item("reasoning", summary=[], content=None, encrypted_content=ENCRYPTED)

    def call_id(self) -> str:
        return f"call_{next(self._calls):024d}"

    def shell(self, turn_id: str, command: str, output: str) -> str:
        call_id = self.call_id()
        self.item(
            "function_call",
            name="shell_command",
            arguments=orjson.dumps({"command": command, "workdir": "/repo"}).decode(),
            call_id=call_id,
        )
        self.event(
            "exec_command_end",
            call_id=call_id,
            turn_id=turn_id,
            command=["bash", "-lc", command[:40]],
            stdout=output,
            stderr="",
            aggregated_output=output,
            exit_code=0,
            formatted_output=output,
            status="completed",
        )
        self.item(
            "function_call_output", call_id=call_id, output=f"Exit code: 0\nOutput:\n{output}"
        )
        return call_id

    def view_image(self, path: str, image: str) -> str:
        call_id = self.call_id()
        self.item(
            "function_call",
            name="view_image",
            arguments=orjson.dumps({"path": path}).decode(),
            call_id=call_id,
        )
        self.event("view_image_tool_call", call_id=call_id, path=path)
        self.item(
            "function_call_output",
            call_id=call_id,
            output=[{"type": "input_image", "image_url": image}],
        )
        return call_id

    def apply_patch(self, turn_id: str, path: str) -> str:
        call_id = self.call_id()
        text = patch(path)
        self.item(
            "custom_tool_call",
            status="completed",
            call_id=call_id,
            name="apply_patch",
            input=text,
        )
        self.event(
            "patch_apply_end",
            call_id=call_id,
            turn_id=turn_id,
            stdout=f"Success. Updated the following files:\nM {path}\n",
            stderr="",
            success=True,
            changes={f"/repo/{path}": {"type": "update", "unified_diff": text, "move_path": None}},
            status="completed",
        )
        self.item(
            "custom_tool_call_output",
            call_id=call_id,
            output=orjson.dumps(
                {"output": listing(path, 40), "metadata": {"exit_code": 0}}
            ).decode(),
        )
        return call_id

    def reply(self, turn_id: str, text: str) -> None:
        self.event("agent_message", message=text, phase=None)
        self.item("message", role="assistant", content=[{"type": "output_text", "text": text}])
        self.event("token_count", info=None, rate_limits=None)
        self.event("task_complete", turn_id=turn_id, last_agent_message=text)

    def full_turn(self, index: int) -> str:
        """A turn with every bulk field kind."""
        turn_id = self.start_turn(f"Prompt {index}: look at this", data_url(f"prompt{index}"))
        self.reasoning()
        self.shell(turn_id, f"ls -la /repo/part{index} && " + "echo step && " * 60, listing("ls"))
        self.view_image(f"/repo/shot{index}.png", data_url(f"shot{index}", 6000))
        self.apply_patch(turn_id, f"notes{index}.md")
        self.reply(turn_id, f"Done with prompt {index}.")
        return turn_id

    def data(self) -> bytes:
        return b"".join(line + b"\n" for line in self.lines)


def typical_rollout(turns: int = 3) -> RolloutBuilder:
    builder = RolloutBuilder()
    for index in range(1, turns + 1):
        builder.full_turn(index)
    return builder


def rolled_back_rollout() -> RolloutBuilder:
    """Four turns, then a rollback of the newest two: resume reads turn 2's turn_context."""
    builder = typical_rollout(turns=4)
    builder.event("thread_rolled_back", num_turns=2)
    return builder


def compacted_rollout() -> RolloutBuilder:
    """A compaction whose replacement history holds encrypted content, then two turns."""
    builder = typical_rollout(turns=2)
    builder.line(
        "compacted",
        {
            "message": "summary of the first two turns",
            "replacement_history": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "hi"}],
                },
                {"type": "compaction", "encrypted_content": ENCRYPTED},
            ],
        },
    )
    builder.full_turn(3)
    builder.full_turn(4)
    return builder


def context_turns(
    turns: int, builder: RolloutBuilder | None = None, first: int = 1
) -> RolloutBuilder:
    """Turns that open, as Codex writes them, with injected context before the prompt: a
    permissions developer message, AGENTS.md and environment context (user role), and one
    plain developer message in between (a rollback trims context only up to it)."""
    builder = builder or RolloutBuilder()
    for index in range(first, first + turns):
        builder.item(
            "message", role="developer", content=[_text(f"<permissions instructions>\nP{index}")]
        )
        agents = f"# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nA{index}\n</INSTRUCTIONS>"
        builder.item("message", role="user", content=[_text(agents)])
        builder.item("message", role="developer", content=[_text(f"plain developer {index}")])
        context = f"<environment_context>\n  <cwd>/repo/{index}</cwd>\n</environment_context>"
        builder.item("message", role="user", content=[_text(context)])
        turn_id = builder.start_turn(f"prompt {index}")
        builder.reasoning()
        builder.shell(turn_id, f"ls {index}", listing(f"ls{index}", 40))
        builder.reply(turn_id, f"reply {index}")
    return builder


def _text(text: str) -> dict[str, Any]:
    return {"type": "input_text", "text": text}


def context_rollback_rollout() -> RolloutBuilder:
    """Three turns with context, then a rollback of the newest one."""
    builder = context_turns(3)
    builder.event("thread_rolled_back", num_turns=1)
    return builder


def unpaired_rollout() -> RolloutBuilder:
    """A call without output, an output without call, a `system` message, a web search and
    an item type Codex does not know: what resume pairs, drops and sends."""
    builder = context_turns(1)
    turn_id = builder.start_turn("second prompt")
    builder.item(
        "function_call",
        name="shell_command",
        arguments='{"command": "pwd"}',
        call_id="call_unpaired",
    )
    builder.item("function_call_output", call_id="call_orphan", output="orphan output")
    builder.item("message", role="system", content=[_text("a system message")])
    builder.item("message", role="developer", content=[_text("a developer message")])
    builder.item("web_search_call", status="completed", action={"type": "search", "query": "q"})
    builder.item("unknown_future_item", value=1)
    builder.reply(turn_id, "done")
    return builder
