"""Synthetic Claude Code transcripts for the resume walk: parallel tool calls split over lines,
a rewound branch named by `last-prompt`, progress lines inside the chain, attachments between
tool results. Each is shaped like the lines Claude Code 2.1.197 writes."""

from __future__ import annotations

from typing import Any

from synthetic import big_text
from synthetic_claude import SESSION_ID, ClaudeSession, signed_thinking, text


def _message(session: ClaudeSession, block: dict[str, Any], message_id: str) -> str:
    return session.chain(
        "assistant",
        message={
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-6",
            "content": [block],
            "stop_reason": None,
            "usage": {
                "input_tokens": 3,
                "cache_creation_input_tokens": 200,
                "cache_read_input_tokens": 1000,
                "output_tokens": 40,
            },
        },
    )


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Read", "input": {"file_path": call_id}}


def _result(session: ClaudeSession, call_id: str) -> str:
    content = big_text(f"contents of {call_id}", 40)
    block = {"tool_use_id": call_id, "type": "tool_result", "content": content}
    return session.user([block], toolUseResult={"type": "text"})


def parallel_session(turns: int = 1) -> ClaudeSession:
    """Two tool calls in one message: the second call's line and its result hang off the
    walked path (the next line links to the first call's result), as Claude Code writes them."""
    session = ClaudeSession()
    for turn in range(turns):
        suffix = "" if turn == 0 else str(turn)
        session.user(f"Read both files, round {turn}.")
        first = _message(session, signed_thinking(f"Two reads at once {turn}."), f"msg_p1{suffix}")
        first = _message(session, _use(f"toolu_par_a{suffix}"), f"msg_p1{suffix}")
        _message(session, _use(f"toolu_par_b{suffix}"), f"msg_p1{suffix}")
        _result(session, f"toolu_par_b{suffix}")
        session.last = first
        _result(session, f"toolu_par_a{suffix}")
        _message(session, text(f"Both read, round {turn}."), f"msg_p2{suffix}")
        session.user(f"Thanks for round {turn}.")
        _message(session, text("You're welcome."), f"msg_p3{suffix}")
    return session


def branched_session(*, explicit: bool = False) -> ClaudeSession:
    """A rewind: a second answer branches from the first turn; `last-prompt` names the older
    branch's leaf, which is no ancestor of the newest line, so the resume follows it."""
    session = ClaudeSession()
    session.user("First question.")
    fork = _message(session, text("First answer."), "msg_br1")
    session.user("Old branch question.")
    old_leaf = _message(session, text("Old branch answer."), "msg_br2")
    session.last = fork
    session.user("New branch question.")
    _message(session, text("New branch answer."), "msg_br3")
    record: dict[str, Any] = {
        "type": "last-prompt",
        "lastPrompt": "Old branch question.",
        "leafUuid": old_leaf,
        "sessionId": SESSION_ID,
    }
    if explicit:
        record["explicit"] = True
    session.raw(record)
    return session


def progress_session() -> ClaudeSession:
    """A subagent's progress line between a call and its result: the result links to the
    progress line, which leaves the chain (the result takes the progress line's parent)."""
    session = ClaudeSession()
    session.user("Search for it.")
    _message(session, _use("toolu_task"), "msg_pg1")
    session.progress("toolu_task", {"type": "agent_progress", "agentId": "a1", "prompt": "x"})
    _result(session, "toolu_task")
    _message(session, text("Found it."), "msg_pg2")
    return session


def attachments_session(model: str) -> ClaudeSession:
    """Attachments Claude Code writes: a skill listing after the first prompt, a task reminder
    after a tool result, a hook's success that the model never sees, then a new prompt."""
    session = ClaudeSession()

    def attachment(fields: dict[str, Any]) -> None:
        session.chain("attachment", attachment=fields)

    session.user("Start.")
    attachment({"type": "skill_listing", "content": "- plan: write a plan", "skillCount": 1})
    attachment(
        {
            "type": "hook_success",
            "hookName": "PostToolUse:Read",
            "hookEvent": "PostToolUse",
            "content": "",
            "stdout": "{}",
            "exitCode": 0,
        }
    )
    _message(session, _use("toolu_att"), "msg_at1")
    _result(session, "toolu_att")
    attachment({"type": "task_reminder", "content": [], "itemCount": 0})
    _message(session, text("Done reading."), "msg_at2")
    session.user("Next step.")
    attachment({"type": "task_reminder", "content": [], "itemCount": 0})
    _message(session, text("Next step done."), "msg_at3")
    for line_index, line in enumerate(session.lines):
        session.lines[line_index] = line.replace(b'"claude-opus-4-6"', f'"{model}"'.encode())
    return session


def file_attachments_session(model: str) -> ClaudeSession:
    """A prompt that @-mentions a file: Claude Code records it as a `file` attachment after the
    prompt and sends it before the prompt, as a Read call and its result; a todo reminder; an
    edited file noticed after a tool result."""
    session = ClaudeSession()
    session.user("Look at @src/a.py please.")
    file = {"filePath": "/home/dev/project/src/a.py", "content": "A_MARKER = 1\n", "startLine": 1}
    session.chain(
        "attachment",
        attachment={
            "type": "file",
            "filename": "/home/dev/project/src/a.py",
            "content": {"type": "text", "file": file},
        },
    )
    session.chain("attachment", attachment={"type": "todo_reminder", "content": [], "itemCount": 0})
    edited = {"type": "edited_text_file", "filename": "/home/dev/project/src/b.py"}
    session.chain("attachment", attachment={**edited, "snippet": "1\tB_MARKER = 1"})
    _message(session, _use("toolu_file"), "msg_fa1")
    _result(session, "toolu_file")
    session.chain("attachment", attachment={**edited, "snippet": "1\tB_MARKER = 2"})
    _message(session, text("Seen."), "msg_fa2")
    for line_index, line in enumerate(session.lines):
        session.lines[line_index] = line.replace(b'"claude-opus-4-6"', f'"{model}"'.encode())
    return session


def unfinished_session(ending: str) -> ClaudeSession:
    """A session stopped mid-way: a tool call without its result (then a new prompt, or the
    end of the file), or a file that ends with a tool result or an unanswered prompt."""
    session = ClaudeSession()
    session.user("Read it.")
    _message(session, text("Reading."), "msg_u0")
    _message(session, _use("toolu_unanswered"), "msg_u0")
    if ending == "call-then-prompt":
        session.user("Actually stop.")
        _message(session, text("Stopped."), "msg_u1")
    elif ending == "result":
        session.user("Read the other one.")
        _message(session, _use("toolu_answered"), "msg_u2")
        _result(session, "toolu_answered")
    elif ending == "prompt":
        session.user("Unanswered prompt.")
    return session


def local_command_session() -> ClaudeSession:
    """A slash command's output (a `local_command` system line, sent as user text) and one of
    Claude Code's own API error replies (never sent)."""
    session = ClaudeSession()
    session.user("First.")
    _message(session, text("One."), "msg_l1")
    session.user("<command-name>/model</command-name>\n<command-args></command-args>")
    stdout = "<local-command-stdout>Set model to opus</local-command-stdout>"
    session.chain("system", subtype="local_command", content=stdout, level="info", isMeta=False)
    session.user("Second.")
    error = {
        "id": "msg_err",
        "type": "message",
        "role": "assistant",
        "model": "<synthetic>",
        "content": [text("API Error: 500 overloaded")],
        "stop_reason": "stop_sequence",
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }
    session.chain("assistant", isApiErrorMessage=True, message=error)
    session.user("Third.")
    _message(session, text("Three."), "msg_l2")
    return session
