"""Write a synthetic pi session (v3) like a GitClaw agent commits, to stdout."""

from __future__ import annotations

import json
import sys


def line(entry: dict[str, object]) -> str:
    return json.dumps(entry, separators=(",", ":"), ensure_ascii=False)


def main() -> None:
    out = [
        line(
            {
                "type": "session",
                "version": 3,
                "id": "5e551011-0000-4000-8000-000000000001",
                "timestamp": "2026-03-01T10:00:00.000Z",
                "cwd": "/home/runner/work/demo/demo",
            }
        )
    ]
    parent = None
    counter = 0

    def add(message: dict[str, object]) -> None:
        nonlocal parent, counter
        counter += 1
        entry_id = f"{counter:08x}"
        out.append(
            line(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": f"2026-03-01T10:{counter // 60:02d}:{counter % 60:02d}.000Z",
                    "message": message,
                }
            )
        )
        parent = entry_id

    usage = {"input": 1200, "output": 300, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1500}

    def reply(stop: str, *content: dict[str, object]) -> None:
        add(
            {
                "role": "assistant",
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": stop,
                "content": list(content),
            }
        )

    def result(call_id: str, tool: str, text: str) -> None:
        add(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": tool,
                "content": [{"type": "text", "text": text}],
                "isError": False,
            }
        )

    for turn in range(1, 7):
        request = f"Issue comment {turn}: please extend the report generator."
        add(
            {
                "role": "user",
                "content": [{"type": "text", "text": request}],
                "timestamp": 1772359200000 + turn,
            }
        )
        for step in range(4):
            path = f"src/report_{turn}_{step}.py"
            body = "\n".join(
                f"def section_{i}():\n    return 'section {i} of {path}'" for i in range(120)
            )
            thought = f"I should read {path} first. " * 12
            reply(
                "toolUse",
                {"type": "thinking", "thinking": thought, "thinkingSignature": "RXF" * 300},
                {
                    "type": "toolCall",
                    "id": f"r{turn}_{step}",
                    "name": "read",
                    "arguments": {"path": path},
                },
            )
            result(f"r{turn}_{step}", "read", body)
            written = {"path": path, "content": body + "\n# extended\n"}
            reply(
                "toolUse",
                {
                    "type": "toolCall",
                    "id": f"w{turn}_{step}",
                    "name": "write",
                    "arguments": written,
                },
            )
            result(f"w{turn}_{step}", "write", f"Wrote {path}")
        reply("stop", {"type": "text", "text": f"Turn {turn} done: extended 4 files."})
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
