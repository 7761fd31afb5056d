"""The Codex format's neutral view and resume rebuild: unit tests on synthetic rollouts, and
the real Codex CLI (offline) resuming the corpus and synthetic rollouts, its first request
compared item by item with `FORMAT.resume`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from agent_harness import corpus_transcripts
from codex_requests import compare, resume_in_cli, resumed
from synthetic_codex import (
    ENCRYPTED,
    RolloutBuilder,
    compacted_rollout,
    context_rollback_rollout,
    context_turns,
    rolled_back_rollout,
    typical_rollout,
    unpaired_rollout,
)

from gitclaw_compress.core.lines import lines_from_bytes, parse_entry
from gitclaw_compress.formats.codex.rules import FORMAT
from gitclaw_compress.model import (
    ASSISTANT,
    COMPACTION,
    EDIT,
    IMAGE,
    MESSAGE,
    META,
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    WRITE,
    Message,
)

SUMMARY_ITEM = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "S"}]}


def texts(message: Message) -> list[str]:
    return [part.text for part in message.parts if part.kind == TEXT]


def user_texts(data: bytes) -> list[str]:
    return [texts(m)[0] for m in resumed(data).messages if m.role == USER and texts(m)]


def test_every_line_has_a_view_and_turn_starts_agree_with_is_turn_start() -> None:
    lines = lines_from_bytes(typical_rollout(turns=2).data())
    views = list(FORMAT.views(lines))
    assert [v.number for v in views] == [line.number for line in lines]
    for line, view in zip(lines, views, strict=True):
        entry = parse_entry(line.data)
        assert entry is not None
        assert view.turn_start == FORMAT.is_turn_start(entry)
        assert view.id is None and view.parent is None  # rollout lines have neither
        if entry["type"] == "response_item":
            assert view.kind == MESSAGE and len(view.messages) == 1
        elif entry["type"] == "event_msg":
            assert view.kind == META and not view.messages
    assert sum(v.turn_start for v in views) == 2


def test_response_items_become_one_message_each_with_the_parts_the_model_sees() -> None:
    builder = RolloutBuilder()
    turn_id = builder.start_turn("look", image="data:image/png;base64,AAAA")
    builder.reasoning()
    arguments = '{"command": "ls", "workdir": "/repo"}'
    builder.item("function_call", name="shell_command", arguments=arguments, call_id="call_ls")
    builder.item("function_call_output", call_id="call_ls", output="Exit code: 1\nOutput:\nnone")
    builder.view_image("/repo/a.png", "data:image/jpeg;base64,QUJD")
    builder.apply_patch(turn_id, "notes.md")
    builder.reply(turn_id, "done")
    views = list(FORMAT.views(lines_from_bytes(builder.data())))
    by_kind = [m for v in views for m in v.messages]
    assert [m.role for m in by_kind] == [
        *(SYSTEM, USER, ASSISTANT),  # base instructions, the prompt, reasoning
        *(ASSISTANT, TOOL, ASSISTANT, TOOL, ASSISTANT, TOOL, ASSISTANT),
    ]
    base, prompt, reasoning, call, result, _, image_result, patch, patch_result, reply = by_kind
    assert texts(base)[0].startswith("You are Codex.")
    assert [p.kind for p in prompt.parts] == [TEXT, IMAGE]
    assert prompt.parts[1].media_type == "image/png" and prompt.parts[1].size == 3
    assert reasoning.parts[0].kind == THINKING and reasoning.parts[0].sealed
    assert call.parts[0].kind == TOOL_CALL and call.parts[0].name == "shell_command"
    assert orjson.loads(call.parts[0].text) == {"command": "ls", "workdir": "/repo"}
    assert b" " not in call.parts[0].text.encode()  # compact JSON
    tool_result = result.parts[0]
    assert tool_result.kind == TOOL_RESULT and tool_result.call_id == call.parts[0].call_id
    assert tool_result.name == "shell_command" and tool_result.error
    assert [p.kind for p in image_result.parts] == [TOOL_RESULT, IMAGE]
    assert image_result.parts[1].media_type == "image/jpeg" and image_result.parts[1].size == 3
    assert patch.parts[0].text.startswith("*** Begin Patch")  # freeform input stays as it is
    assert patch_result.parts[0].name == "apply_patch" and not patch_result.parts[0].error
    assert texts(reply) == ["done"] and reply.model == "gpt-5.1-codex-mini"


def test_recorded_usage_is_last_total_tokens_on_the_reply_before_it() -> None:
    builder = RolloutBuilder()
    turn_id = builder.start_turn("go")
    builder.reasoning()
    builder.item("function_call", name="shell_command", arguments="{}", call_id="call_a")
    usage = {"input_tokens": 900, "cached_input_tokens": 100, "output_tokens": 50}
    last = {**usage, "total_tokens": 950}
    builder.event("token_count", info={"total_token_usage": last, "last_token_usage": last})
    builder.item("function_call_output", call_id="call_a", output="ok")
    builder.event("token_count", info=None, rate_limits=None)  # no usage: nothing recorded
    builder.reply(turn_id, "done")
    messages = resumed(builder.data()).messages
    assert [(m.role, m.usage) for m in messages if m.usage] == [(ASSISTANT, 950)]
    assert messages[3].parts[0].call_id == "call_a" and messages[3].usage == 950


def test_turn_context_sets_the_model_and_resume_reports_the_newest() -> None:
    builder = typical_rollout(turns=1)
    data = builder.data().replace(b'"model":"gpt-5.1-codex-mini"', b'"model":"gpt-5.2-codex"')
    views = list(FORMAT.views(lines_from_bytes(data)))
    assert {v.model for v in views if v.model} == {"gpt-5.2-codex"}
    assert FORMAT.resume(views).model == "gpt-5.2-codex"


def test_context_messages_are_messages_but_not_turn_starts() -> None:
    views = list(FORMAT.views(lines_from_bytes(context_turns(1).data())))
    injected = [v for v in views if v.messages and "AGENTS.md" in "".join(texts(v.messages[0]))]
    assert len(injected) == 1 and injected[0].messages[0].role == USER  # the turn's context
    assert not injected[0].turn_start
    permissions = [
        v for v in views if v.messages and "<permissions" in "".join(texts(v.messages[0]))
    ]
    assert permissions[0].messages[0].role == SYSTEM


def test_resume_pairs_calls_and_drops_what_codex_never_sends() -> None:
    messages = resumed(unpaired_rollout().data()).messages
    unpaired = next(i for i, m in enumerate(messages) if m.parts[0].call_id == "call_unpaired")
    aborted = messages[unpaired + 1]
    assert aborted.role == TOOL and aborted.parts[0].text == "aborted"
    assert aborted.parts[0].call_id == "call_unpaired"
    everything = [p.text for m in messages for p in m.parts]
    assert "orphan output" not in everything and "a system message" not in everything
    assert "a developer message" in everything
    assert any(p.name == "web_search" for m in messages for p in m.parts)


def test_rollback_drops_the_newest_turns_and_the_context_just_above_them() -> None:
    assert user_texts(rolled_back_rollout().data()) == [
        "Prompt 1: look at this",
        "Prompt 2: look at this",
    ]
    messages = resumed(context_rollback_rollout().data()).messages
    all_texts = [t for m in messages for t in texts(m)]
    assert "prompt 3" not in all_texts
    # The context above prompt 3 goes back to the plain developer message, not past it.
    assert all_texts[-1] == "plain developer 3"
    assert not any("<cwd>/repo/3" in t for t in all_texts)  # trimmed with the prompt
    assert "P3" in all_texts[-3] and "A3" in all_texts[-2]  # above the plain one: kept


def test_a_compaction_replaces_everything_before_it() -> None:
    data = compacted_rollout().data()
    conversation = resumed(data)
    compaction = conversation.compaction
    assert compaction is not None
    views = list(FORMAT.views(lines_from_bytes(data)))
    assert [v.number for v in views if v.kind == COMPACTION] == [compaction]
    from_record = [m for m in conversation.messages if m.line == compaction]
    assert [m.role for m in from_record] == [USER, SUMMARY]  # "hi" and the sealed compaction
    assert from_record[1].parts[0].sealed
    assert user_texts(compacted_rollout().data())[1:] == [
        "Prompt 3: look at this",
        "Prompt 4: look at this",
    ]
    assert min(m.line for m in conversation.messages[1:]) == compaction


def test_a_compaction_without_history_keeps_the_user_messages_and_the_summary() -> None:
    builder = context_turns(2)
    builder.line("compacted", {"message": "SUMMARY ONLY"})
    context_turns(1, builder, first=3)
    messages = resumed(builder.data()).messages
    summary = next(i for i, m in enumerate(messages) if m.role == SUMMARY)
    assert [texts(m)[0] for m in messages[1 : summary + 1]] == [
        "prompt 1",
        "prompt 2",
        "SUMMARY ONLY",
    ]


def test_the_newest_compaction_wins() -> None:
    builder = context_turns(1)
    builder.line("compacted", {"message": "one", "replacement_history": [SUMMARY_ITEM]})
    context_turns(1, builder, first=2)
    second = {**SUMMARY_ITEM, "content": [{"type": "input_text", "text": "second"}]}
    builder.line("compacted", {"message": "two", "replacement_history": [second]})
    conversation = resumed(builder.data())
    assert [texts(m) for m in conversation.messages[1:]] == [["second"]]
    assert conversation.compaction == len(builder.lines)


# --------------------------------------------------------------------------------------
# The real CLI
# --------------------------------------------------------------------------------------


def _sealed_compaction_rollout() -> RolloutBuilder:
    builder = compacted_rollout()
    assert ENCRYPTED in builder.data().decode()
    return builder


SYNTHETIC: dict[str, Callable[[], RolloutBuilder]] = {
    "typical": typical_rollout,
    "rolled-back": rolled_back_rollout,
    "context-rollback": context_rollback_rollout,
    "unpaired": unpaired_rollout,
    "compacted": _sealed_compaction_rollout,
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_resume_matches_the_first_request_of_the_real_cli(name: str, tmp_path: Path) -> None:
    data = SYNTHETIC[name]().data()
    run = resume_in_cli(data, tmp_path)
    assert compare(resumed(data), run.body) == []


def test_resume_matches_the_real_cli_after_a_compaction_without_history(
    tmp_path: Path,
) -> None:
    builder = context_turns(2)
    builder.line("compacted", {"message": "SUMMARY ONLY"})
    context_turns(1, builder, first=3)
    data = builder.data()
    assert compare(resumed(data), resume_in_cli(data, tmp_path).body) == []


CORPUS = corpus_transcripts("codex")


@pytest.mark.skipif(not CORPUS, reason="no ../shared/corpus/codex")
@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
def test_resume_matches_the_real_cli_on_the_corpus(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    conversation = resumed(data)
    run = resume_in_cli(data, tmp_path, path.name)
    assert compare(conversation, run.body) == []
    assert len(conversation.messages) > 100


def test_long_outputs_are_cut_as_the_real_cli_cuts_them(tmp_path: Path) -> None:
    """A model in the CLI's own catalog (gpt-5.5: 10,000 tokens, as the rollout records) cuts
    a 176 KB output to 48 KB in its middle; resume cuts it the same way. The view keeps it."""
    builder = RolloutBuilder()
    turn_id = builder.start_turn("cat it")
    big = "\n".join(f"line {index} " + "word " * 12 for index in range(2500))
    builder.shell(turn_id, "cat big", big)
    builder.reply(turn_id, "ok")
    data = builder.data().replace(b'"gpt-5.1-codex-mini"', b'"gpt-5.5"')
    conversation = resumed(data)
    body = resume_in_cli(data, tmp_path).body
    assert compare(conversation, body) == []
    sent = next(i["output"] for i in body["input"] if i.get("type") == "function_call_output")
    mine = next(m.parts[0].text for m in conversation.messages if m.role == TOOL)
    assert "…32103 tokens truncated…" in sent and "…32103 tokens truncated…" in mine
    assert abs(len(sent.encode()) - len(mine.encode())) < 100
    views = list(FORMAT.views(lines_from_bytes(data)))
    assert any(big in p.text for v in views for m in v.messages for p in m.parts)


def test_a_patch_of_several_files_names_every_file_in_the_summary_facts() -> None:
    """An apply_patch that adds, updates, moves and deletes files: the call's part lists every
    file in the patch's order, and the facts of a summary count each one."""
    from gitclaw_compress.summary.facts import extract_facts

    builder = typical_rollout(turns=1)
    turn_id = builder.start_turn("Split the module")
    patch = (
        "*** Begin Patch\n*** Update File: src/app.py\n@@\n-old\n+new\n"
        "*** Add File: src/cli.py\n+print('hi')\n"
        "*** Update File: src/util.py\n*** Move to: src/helpers.py\n@@\n-a\n+b\n"
        "*** Delete File: src/legacy.py\n*** End Patch\n"
    )
    builder.item(
        "custom_tool_call",
        status="completed",
        call_id="call_patch",
        name="apply_patch",
        input=patch,
    )
    builder.item("custom_tool_call_output", call_id="call_patch", output='{"output":"ok"}')
    builder.reply(turn_id, "Split.")
    messages = FORMAT.resume(list(FORMAT.views(lines_from_bytes(builder.data())))).messages
    call = next(
        part
        for message in messages
        for part in message.parts
        if part.kind == TOOL_CALL and part.call_id == "call_patch"
    )
    expected = (
        ("src/app.py", EDIT),
        ("src/cli.py", WRITE),
        ("src/util.py", EDIT),
        ("src/helpers.py", WRITE),
        ("src/legacy.py", EDIT),
    )
    assert call.touched() == expected and (call.path, call.effect) == expected[0]
    facts = extract_facts(messages)
    for path, effect in expected:
        change = facts.files[path]
        assert (change.writes, change.edits) == ((1, 0) if effect == WRITE else (0, 1)), path
