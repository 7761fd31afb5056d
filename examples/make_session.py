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
    for turn in range(1, 7):
        add(
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": f"Issue comment {turn}: please extend the report generator.",
                    }
                ],
                "timestamp": 1772359200000 + turn,
            }
        )
        for step in range(4):
            path = f"src/report_{turn}_{step}.py"
            body = "\n".join(
                f"def section_{i}():\n    return 'section {i} of {path}'" for i in range(120)
            )
            add(
                {
                    "role": "assistant",
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": usage,
                    "stopReason": "toolUse",
                    "content": [
                        {
                            "type": "thinking",
                            "thinking": f"I should read {path} first. " * 12,
                            "thinkingSignature": "RXF" * 300,
                        },
                        {
                            "type": "toolCall",
                            "id": f"toolu_{turn}_{step}",
                            "name": "read",
                            "arguments": {"path": path},
                        },
                    ],
                }
            )
            add(
                {
                    "role": "toolResult",
                    "toolCallId": f"toolu_{turn}_{step}",
                    "toolName": "read",
                    "content": [{"type": "text", "text": body}],
                    "isError": False,
                }
            )
            add(
                {
                    "role": "assistant",
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": usage,
                    "stopReason": "toolUse",
                    "content": [
                        {
                            "type": "toolCall",
                            "id": f"toolu_w{turn}_{step}",
                            "name": "write",
                            "arguments": {"path": path, "content": body + "\n# extended\n"},
                        }
                    ],
                }
            )
            add(
                {
                    "role": "toolResult",
                    "toolCallId": f"toolu_w{turn}_{step}",
                    "toolName": "write",
                    "content": [{"type": "text", "text": f"Wrote {path}"}],
                    "isError": False,
                }
            )
        add(
            {
                "role": "assistant",
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage,
                "stopReason": "stop",
                "content": [{"type": "text", "text": f"Turn {turn} done: extended 4 files."}],
            }
        )
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
