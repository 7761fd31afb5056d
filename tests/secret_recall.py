"""The recall matrix: every kind of `secret_fixtures.recall_kinds` planted in every format and
every slot, one turn each, built at run time. Used by tests/test_secret_recall.py and by
bench/secrets_cost.py, which prints the table docs/secrets.md carries."""

from __future__ import annotations

from collections.abc import Callable

import orjson
from secret_fixtures import recall_kinds
from synthetic import SessionBuilder, text, tool_call
from synthetic_claude import ClaudeSession
from synthetic_codex import RolloutBuilder
from synthetic_copilot import EventsBuilder

# user text; a tool's arguments; an argument that holds JSON as a string (the secret after an
# escaped newline inside it); a tool's output; the kept (last) turn's user text
SLOTS = ("user", "arguments", "json-in-string", "output", "kept")
Plant = tuple[str, str]  # (kind, slot)


def _texts(kind: str, slot: str, line: str) -> tuple[str, dict[str, str], str]:
    """(user text, tool arguments, tool output) with `line` in the slot."""
    user = f"task {kind} {slot}" + (f":\n{line}" if slot == "user" else "")
    arguments = {"command": f"cat .env.{kind}"}
    if slot == "arguments":
        arguments["command"] += f" && cat <<'EOF'\n{line}\nEOF"
    if slot == "json-in-string":
        arguments["request"] = orjson.dumps(
            {"note": "from the config", "body": f"x\n{line}"}
        ).decode()
    output = "total 0\n" + (f"{line}\n" if slot == "output" else "done\n")
    return user, arguments, output


def _plants() -> list[Plant]:
    return [(kind, slot) for kind in recall_kinds() for slot in SLOTS if slot != "kept"]


def _kept() -> str:
    return "last:\n" + "\n\n".join(line for line, _ in recall_kinds().values())


def _pi() -> bytes:
    session = SessionBuilder()
    for number, (kind, slot) in enumerate(_plants()):
        user, arguments, output = _texts(kind, slot, recall_kinds()[kind][0])
        session.user(user)
        session.assistant(tool_call(f"c{number}", "bash", arguments))
        session.tool_result(f"c{number}", "bash", output)
        session.assistant(text("done"))
    session.user(_kept())
    session.assistant(text("ok"))
    return session.data()


def _claude() -> bytes:
    session = ClaudeSession()
    for number, (kind, slot) in enumerate(_plants()):
        user, arguments, output = _texts(kind, slot, recall_kinds()[kind][0])
        session.user(user)
        call = f"toolu_{number:020d}"
        session.tool_use(call, "Bash", arguments)
        session.tool_result(call, output, {"stdout": output, "stderr": "", "interrupted": False})
        session.assistant({"type": "text", "text": "done"})
    session.user(_kept())
    session.assistant({"type": "text", "text": "ok"})
    return session.data()


def _codex() -> bytes:
    rollout = RolloutBuilder()
    for kind, slot in _plants():
        user, arguments, output = _texts(kind, slot, recall_kinds()[kind][0])
        turn = rollout.start_turn(user)
        call = rollout.call_id()
        rollout.item(
            "function_call",
            name="shell_command",
            arguments=orjson.dumps({**arguments, "workdir": "/repo"}).decode(),
            call_id=call,
        )
        rollout.item("function_call_output", call_id=call, output=f"Exit code: 0\n{output}")
        rollout.reply(turn, "done")
    last = rollout.start_turn(_kept())
    rollout.reply(last, "ok")
    return rollout.data()


def _copilot() -> bytes:
    events = EventsBuilder()
    events.start()
    for kind, slot in _plants():
        user, arguments, output = _texts(kind, slot, recall_kinds()[kind][0])
        events.user(user)
        events.turn([("bash", arguments, {"content": output, "detailedContent": output})], "done")
    events.user(_kept())
    events.turn([], "ok")
    return events.data()


BUILDERS: dict[str, Callable[[], bytes]] = {
    "pi": _pi,
    "claude": _claude,
    "codex": _codex,
    "copilot": _copilot,
}


def recall(fmt: str) -> dict[Plant, bool]:
    """(kind, slot) -> whether every secret planted there was found, on the line holding it."""
    from gitclaw_compress.core.lines import lines_from_bytes
    from gitclaw_compress.formats import detect
    from gitclaw_compress.secrets.scan import scan_lines

    data = BUILDERS[fmt]()
    lines = lines_from_bytes(data)
    found = scan_lines(lines, detect(lines, fmt), fmt)
    by_line: dict[int, set[str]] = {}
    for finding in found:
        by_line.setdefault(finding.line, set()).add(finding.secret)
    raw = data.split(b"\n")
    out: dict[Plant, bool] = {}
    for kind, (line, secrets) in recall_kinds().items():
        for slot in SLOTS:
            marker = f"task {kind} {slot}".encode()
            if slot == "kept":
                numbers = [
                    len(raw) - 1 - i for i, row in enumerate(reversed(raw)) if b"last:" in row
                ]
                turn = numbers[:1]
            else:
                start = next(i for i, row in enumerate(raw) if marker in row)
                end = next(
                    (
                        i
                        for i, row in enumerate(raw[start:], start)
                        if b"task " in row and marker not in row
                    ),
                    len(raw),
                )
                turn = list(range(start, end))
            held = set().union(*(by_line.get(n + 1, set()) for n in turn)) if turn else set()
            out[(kind, slot)] = all(secret in held for secret in secrets) and bool(line)
    return out
