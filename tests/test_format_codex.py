"""The Codex CLI format: what is compressed before the kept turn, what is never touched, and
the commands on a Codex rollout, on synthetic rollouts and on the real corpus file. The CLI
flow, the default globs and the corpus after gc are in test_cli_contract.py, for every
format."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import CORPUS, commit_session
from synthetic_codex import (
    ENCRYPTED,
    INSTRUCTIONS,
    MODE_INSTRUCTIONS,
    RolloutBuilder,
    compacted_rollout,
    listing,
    rolled_back_rollout,
    typical_rollout,
)

from gitclaw_compress.cli import cli as cli_group
from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines
from gitclaw_compress.core.lines import MARKER_KEY, join_lines, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_data
from gitclaw_compress.core.stubs import STUB_PREFIX, is_stub
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.codex import rules as codex_rules
from gitclaw_compress.formats.codex.rules import call_descriptor

ROLLOUT = ".codex/sessions/2026/03/31/rollout-2026-03-31T01-22-40-019d417c.jsonl"
Entry = dict[str, Any]


def compress(data: bytes, keep_turns: int = 1) -> tuple[list[Entry], list[Entry], list[bytes]]:
    """Entries before and after an in-memory run, and the lines after it."""
    lines = lines_from_bytes(data)
    out, payloads = compress_entry_lines(
        lines, CompressSettings(keep_turns=keep_turns), "s.jsonl", fmt=detect(lines, "s.jsonl")
    )
    for before, after in zip(lines, out, strict=True):
        assert restore_data(after.data, "line", payloads.get) == before.data
    before_entries = [parse_entry(line.data) or {} for line in lines]
    after_entries = [parse_entry(line.data) or {} for line in out]
    return before_entries, after_entries, [line.data for line in out]


def where(entries: list[Entry], line_type: str, kind: str | None = None) -> list[int]:
    """Indexes of the lines of a type (and payload type)."""
    return [
        index
        for index, entry in enumerate(entries)
        if entry.get("type") == line_type
        and (kind is None or entry.get("payload", {}).get("type") == kind)
    ]


def last_turn_start(entries: list[Entry]) -> int:
    """The first line Codex wrote for the last turn: its task_started."""
    prompt = where(entries, "event_msg", "user_message")[-1]
    return max(i for i in where(entries, "event_msg", "task_started") if i < prompt)


def test_every_bulk_field_before_the_last_turn_becomes_a_stub_of_the_same_type() -> None:
    before, after, _ = compress(typical_rollout(turns=3).data())
    cut = last_turn_start(before)

    def old(line_type: str, kind: str | None = None) -> list[int]:
        found = [i for i in where(before, line_type, kind) if i < cut]
        assert found, (line_type, kind)
        return found

    for index in old("response_item", "function_call_output"):
        output, original = after[index]["payload"]["output"], before[index]["payload"]["output"]
        assert type(output) is type(original)
        if isinstance(output, str):
            assert is_stub(output) and "shell_command 'ls -la /repo/part" in output
        else:  # the image output: one text item that says what the image was
            assert output == [{"type": "input_text", "text": output[0]["text"]}]
            assert is_stub(output[0]["text"]) and "image/png 6,000 bytes" in output[0]["text"]
    for index in old("response_item", "custom_tool_call_output"):
        assert is_stub(after[index]["payload"]["output"])
    for index in old("response_item", "custom_tool_call"):
        text = after[index]["payload"]["input"]
        assert is_stub(text) and "Update notes" in text and "64 lines" in text
    for index in old("response_item", "function_call"):
        arguments = before[index]["payload"]["arguments"]
        if len(arguments) <= 500:
            assert after[index]["payload"]["arguments"] == arguments
            continue
        # Still a string that holds a JSON object: small values kept, the command cut.
        shortened = orjson.loads(after[index]["payload"]["arguments"])
        assert shortened["workdir"] == "/repo"
        assert shortened["command"].startswith("ls -la /repo/part")
        assert STUB_PREFIX in shortened["command"]
    user_prompts = [
        i for i in old("response_item", "message") if before[i]["payload"]["role"] == "user"
    ]
    for index in user_prompts:
        content = after[index]["payload"]["content"]
        assert content[0] == before[index]["payload"]["content"][0]
        assert content[1]["type"] == "input_text" and is_stub(content[1]["text"])
    for index in old("event_msg", "user_message"):
        images = after[index]["payload"]["images"]
        assert len(images) == 1 and is_stub(images[0]) and "User image" in images[0]
    for index in old("event_msg", "exec_command_end"):
        payload = after[index]["payload"]
        for key in ("stdout", "aggregated_output", "formatted_output"):
            assert is_stub(payload[key]) and "UI" in payload[key]
        assert payload["stderr"] == "" and payload["exit_code"] == 0
    for index in old("event_msg", "patch_apply_end"):
        (change,) = after[index]["payload"]["changes"].values()
        assert is_stub(change["unified_diff"]) and change["type"] == "update"
    for index in old("turn_context"):
        payload = after[index]["payload"]
        assert is_stub(payload["user_instructions"])
        assert is_stub(payload["collaboration_mode"]["settings"]["developer_instructions"])
        assert payload["model"] == before[index]["payload"]["model"]


def test_what_codex_needs_to_resume_is_never_touched() -> None:
    data = typical_rollout(turns=3).data()
    before, after, out = compress(data)
    assert len(out) == len(lines_from_bytes(data))
    cut = last_turn_start(before)
    # The whole last turn from its task_started, its turn_context included, byte for byte.
    assert out[cut:] == [line.data for line in lines_from_bytes(data)[cut:]]
    newest_context = where(before, "turn_context")[-1]
    assert newest_context > cut and after[newest_context] == before[newest_context]
    assert after[newest_context]["payload"]["user_instructions"] == INSTRUCTIONS
    mode = after[newest_context]["payload"]["collaboration_mode"]
    assert mode["settings"]["developer_instructions"] == MODE_INSTRUCTIONS
    assert after[0] == before[0]  # session_meta
    for index in where(before, "response_item", "reasoning"):
        assert after[index] == before[index]
        assert after[index]["payload"]["encrypted_content"] == ENCRYPTED
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        assert old["type"] == new["type"] and old["timestamp"] == new["timestamp"]
        for key in ("type", "call_id", "turn_id", "role", "name", "message"):
            assert old["payload"].get(key) == new["payload"].get(key), (index, key)
        if old["type"] == "event_msg" and old["payload"]["type"] in (
            "agent_message",
            "task_complete",
        ):
            assert old == new


def test_a_rollback_keeps_every_turn_context_resume_could_read() -> None:
    """After a rollback of two turns, resume reads the turn_context of the turn before them."""
    before, after, _ = compress(rolled_back_rollout().data())
    contexts = where(before, "turn_context")
    assert len(contexts) == 4
    assert is_stub(after[contexts[0]]["payload"]["user_instructions"])
    for index in contexts[1:]:
        assert after[index] == before[index]


def test_a_compaction_and_its_encrypted_history_stay_as_they_are() -> None:
    before, after, _ = compress(compacted_rollout().data())
    (compacted,) = where(before, "compacted")
    assert after[compacted] == before[compacted]
    assert MARKER_KEY not in after[compacted]
    assert any(MARKER_KEY in entry for entry in after[:compacted])


def test_keep_turns_0_compresses_every_turn_but_not_the_newest_turn_context() -> None:
    before, after, _ = compress(typical_rollout(turns=2).data(), keep_turns=0)
    newest = where(before, "turn_context")[-1]
    assert after[newest] == before[newest]
    last_output = where(before, "response_item", "function_call_output")[-1]
    assert after[last_output] != before[last_output]


def test_arguments_that_are_not_json_become_a_json_object_string() -> None:
    builder = RolloutBuilder()
    builder.start_turn("first")
    builder.item("function_call", name="shell", arguments="not json " * 100, call_id="call_x")
    builder.item("function_call_output", call_id="call_x", output="ok")
    builder.start_turn("second")
    _, after, _ = compress(builder.data())
    (index,) = where(after, "response_item", "function_call")
    stub = orjson.loads(after[index]["payload"]["arguments"])
    assert list(stub) == ["gitclaw-compress"] and is_stub(stub["gitclaw-compress"])


def test_detection_tells_codex_from_pi_and_names_a_broken_header() -> None:
    data = typical_rollout(turns=1).data()
    assert detect(lines_from_bytes(data), "r.jsonl").name == "codex"
    without_meta = b"\n".join(data.split(b"\n")[1:])
    with pytest.raises(
        GitClawError, match=r'^r.jsonl:1: not a Codex rollout header .*"session_meta"'
    ):
        detect(lines_from_bytes(without_meta), "r.jsonl")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli_group, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_show_stats_verify_status_and_context_on_a_compressed_rollout(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = typical_rollout(turns=3).data()
    path = commit_session(repo, ROLLOUT, data)
    monkeypatch.chdir(repo)
    code, out, err = run("compress", "--force", "--keep-turns", "1", ROLLOUT)
    assert code == 0 and "compressed" in out, err
    compressed = path.read_bytes().split(b"\n")
    image_output = where(
        [parse_entry(line) or {} for line in data.split(b"\n")],
        "response_item",
        "function_call_output",
    )[1]
    assert b"gitclaw-compress show" in compressed[image_output]
    code, out, _ = run("show", ROLLOUT, f"L{image_output + 1}", "--raw")
    assert code == 0 and out.encode() == data.split(b"\n")[image_output] + b"\n"
    code, out, _ = run("stats", ROLLOUT)
    for kind in ("tool outputs", "tool output images", "turn_context instructions", "stubs"):
        assert kind in out
    code, out, _ = run("verify", ROLLOUT)
    assert code == 0 and out.startswith("ok: ")
    for command in ("status", "context"):
        code, out, err = run(command, ROLLOUT)
        assert code == 0 and ROLLOUT in out, err
    code, out, err = run("prune", "--dry-run", ROLLOUT)
    assert code == 0, err
    assert path.read_bytes().split(b"\n") == compressed


def _stub_commands(data: bytes) -> dict[str, int]:
    """Each `show` command the stubs name, with the number of the line it names."""
    found: dict[str, int] = {}
    for number, line in enumerate(data.split(b"\n"), 1):
        for match in re.finditer(rb"gitclaw-compress show ([^ \"\\]+) L([0-9]+)", line):
            found[match[0].decode()] = int(match[2])
            assert int(match[2]) == number
    return found


def test_stubs_name_the_session_id_and_old_stubs_with_the_path_still_show(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout compressed by the rule that named its path in every stub (built here by
    that rule) stays as it is on a second run; lines newly old name the session id; `show`
    prints the original line for both kinds, and restore gives the file back."""
    data = typical_rollout(turns=4).data()
    path = commit_session(repo, ROLLOUT, data)
    monkeypatch.chdir(repo)
    session_id = str((parse_entry(data.split(b"\n")[0]) or {})["payload"]["id"])
    with monkeypatch.context() as old_code:
        old_code.setattr(codex_rules, "session_id", lambda _first: None)
        assert run("compress", "--force", "--keep-turns", "3", ROLLOUT)[0] == 0
    old = path.read_bytes()
    old_commands = _stub_commands(old)
    assert old_commands and all(f"show {ROLLOUT} L" in command for command in old_commands)
    assert run("compress", "--force", "--keep-turns", "3", ROLLOUT)[0] == 0
    assert path.read_bytes() == old  # a second run changes nothing
    assert run("compress", "--force", "--keep-turns", "1", ROLLOUT)[0] == 0
    new = path.read_bytes()
    new_commands = set(_stub_commands(new)) - set(old_commands)
    assert new_commands and all(f"show {session_id} L" in command for command in new_commands)
    for was, now in zip(old.split(b"\n"), new.split(b"\n"), strict=True):
        assert now == was or b"gitclawCompress" not in was  # old stubs untouched
    assert run("compress", "--force", "--keep-turns", "1", ROLLOUT)[0] == 0
    assert path.read_bytes() == new
    original = data.split(b"\n")
    for command, number in _stub_commands(new).items():
        code, out, err = run(*command.split()[1:], "--raw")
        assert code == 0 and out.encode() == original[number - 1] + b"\n", (command, err)
    code, out, err = run("show", session_id, "L9999")
    assert code != 0 and f"L9999 of session {session_id}" in err


def test_show_by_session_id_reads_only_rollouts_whose_first_line_names_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another rollout that mentions the id in a later line is not the session."""
    data = typical_rollout(turns=3).data()
    commit_session(repo, ROLLOUT, data)
    session_id = str((parse_entry(data.split(b"\n")[0]) or {})["payload"]["id"])
    other_lines = data.split(b"\n")
    meta = orjson.loads(other_lines[0])
    meta["payload"]["id"] = "019d417c-0000-7000-8000-000000000000"
    other_lines[0] = orjson.dumps(meta)
    other_lines[2] = orjson.dumps(
        {"timestamp": "t", "type": "event_msg", "payload": {"type": "x", "text": session_id}}
    )
    other = ROLLOUT.replace("019d417c", "019d417d")
    commit_session(repo, other, b"\n".join(other_lines))
    monkeypatch.chdir(repo)
    code, out, err = run("show", session_id, "L3", "--json")
    assert code == 0, err
    shown = orjson.loads(out)
    assert shown["copies"] == [ROLLOUT] and shown["entry"] == orjson.loads(data.split(b"\n")[2])


CORPUS_ROLLOUTS = sorted((CORPUS / "codex").glob("*.jsonl")) if (CORPUS / "codex").is_dir() else []


@pytest.mark.skipif(not CORPUS_ROLLOUTS, reason=f"no Codex rollouts in the corpus at {CORPUS}")
@pytest.mark.parametrize("source", CORPUS_ROLLOUTS, ids=lambda path: path.stem)
def test_corpus_rollout_keeps_its_header_and_what_resume_reads(source: Path) -> None:
    """The Codex invariants on the corpus: session_meta, the last turn, and each line's type,
    call id, turn id and encrypted content. (The size, the rerun and the restore after gc
    of every format's corpus: test_cli_contract.py.)"""
    original = source.read_bytes()
    lines, _ = compress_entry_lines(
        lines_from_bytes(original),
        CompressSettings(keep_turns=1),
        "r.jsonl",
        fmt=detect(lines_from_bytes(original), "r.jsonl"),
    )
    before = original.split(b"\n")
    after = join_lines(lines).split(b"\n")
    assert len(before) == len(after) and before[0] == after[0]
    entries = [parse_entry(line) or {} for line in before]
    cut = last_turn_start(entries)
    assert before[cut:] == after[cut:]
    for old, new in zip(before, after, strict=True):
        old_entry, new_entry = parse_entry(old) or {}, parse_entry(new) or {}
        assert old_entry.get("type") == new_entry.get("type")
        for key in ("type", "call_id", "turn_id", "encrypted_content"):
            assert old_entry.get("payload", {}).get(key) == new_entry.get("payload", {}).get(key)


def test_pasted_images_are_kept_only_when_asked() -> None:
    lines = lines_from_bytes(typical_rollout().data())
    out, _ = compress_entry_lines(
        lines, CompressSettings(keep_turns=1, keep_user_images=True), "s", fmt=detect(lines, "s")
    )
    before = [parse_entry(line.data) or {} for line in lines]
    after = [parse_entry(line.data) or {} for line in out]
    last = last_turn_start(before)
    prompts = [i for i in where(before, "event_msg", "user_message") if i < last]
    messages = [
        i
        for i in where(before, "response_item", "message")
        if i < last and before[i]["payload"]["role"] == "user"
    ]
    assert prompts and messages
    for index in prompts:
        assert after[index]["payload"]["images"] == before[index]["payload"]["images"]
    for index in messages:
        assert after[index]["payload"]["content"] == before[index]["payload"]["content"]


def multi_file_patch(paths: list[str]) -> str:
    hunks = "".join(f"*** Update File: {path}\n@@\n-old\n+new\n" for path in paths)
    return f"*** Begin Patch\n{hunks}*** Add File: docs/new.md\n+text\n*** End Patch\n"


@pytest.mark.parametrize(
    ("paths", "named"),
    [
        (["src/a.py"], "apply_patch 'src/a.py', 'docs/new.md' elided"),
        (
            ["src/a.py", "src/b.py", "src/c.py", "src/d.py", "src/a.py"],
            "apply_patch 'src/a.py', 'src/b.py', 'src/c.py' and 2 more elided",
        ),
        (  # long paths: fewer names, within the stub's size
            [f"src/{letter * 90}.py" for letter in "abc"],
            f"apply_patch 'src/{'a' * 75}…' and 3 more elided",
        ),
    ],
    ids=["two", "six", "long"],
)
def test_the_stub_of_a_patch_output_names_every_file_it_touched(
    paths: list[str], named: str
) -> None:
    builder = RolloutBuilder()
    for turn in range(2):
        turn_id = builder.start_turn(f"Prompt {turn}")
        call_id = builder.call_id()
        builder.item(
            "custom_tool_call",
            status="completed",
            call_id=call_id,
            name="apply_patch",
            input=multi_file_patch(paths),
        )
        builder.item("custom_tool_call_output", call_id=call_id, output=listing("applied", 60))
        builder.reply(turn_id, "Done.")
    before, after, _ = compress(builder.data())
    (index, _) = [i for i in where(before, "response_item", "custom_tool_call_output")]
    stub = after[index]["payload"]["output"]
    assert is_stub(stub) and f"Output of {named}" in stub, stub


def test_apply_patch_as_a_function_tool_is_described_by_its_files_too() -> None:
    arguments = orjson.dumps({"input": multi_file_patch(["src/a.py", "src/b.py"])}).decode()
    described = call_descriptor("apply_patch", arguments)
    assert described == "apply_patch 'src/a.py', 'src/b.py', 'docs/new.md'"
    assert call_descriptor("shell", orjson.dumps({"command": ["ls"]}).decode()) == "shell 'ls'"


def reply_copies_rollout(turns: int = 3) -> RolloutBuilder:
    """Turns whose reply, plan and reasoning summary Codex also wrote for its UI: a long
    `task_complete.last_agent_message`, an `item_completed` plan, an `agent_reasoning`."""
    builder = RolloutBuilder()
    for index in range(1, turns + 1):
        turn_id = builder.start_turn(f"Prompt {index}: plan it")
        summary = f"**Planning step {index}**\n\n" + "I weigh the options. " * 40
        builder.event("agent_reasoning", text=summary)
        builder.item(
            "reasoning",
            summary=[{"type": "summary_text", "text": summary}],
            content=None,
            encrypted_content=ENCRYPTED,
        )
        plan = f"# Plan {index}\n\n" + "- change one file\n" * 60
        builder.event(
            "item_completed",
            thread_id="019d417c",
            turn_id=turn_id,
            item={"type": "Plan", "id": f"{turn_id}-plan", "text": plan},
        )
        builder.event(
            "item_completed",
            thread_id="019d417c",
            turn_id=turn_id,
            item={"type": "UserMessage", "id": f"{turn_id}-user", "text": "Typed. " * 100},
        )
        builder.reply(turn_id, f"<proposed_plan>\n{plan}</proposed_plan>\n" + "Done. " * 100)
    return builder


def test_ui_copies_of_replies_plans_and_reasoning_become_stubs_but_the_newest_answer() -> None:
    """Codex sends the model its response items alone: the UI's copies of a reply
    (`task_complete`), a plan (`item_completed`) and a reasoning summary (`agent_reasoning`)
    become stubs before the kept turns; the reasoning item, the reply and a person's message
    stay, and so does the newest `task_complete`, in every turn with `stubUiCopies` too."""
    data = reply_copies_rollout().data()
    before, after, _ = compress(data)
    cut = last_turn_start(before)
    answers = where(before, "event_msg", "task_complete")
    for index in answers[:-1]:
        stub = after[index]["payload"]["last_agent_message"]
        assert is_stub(stub) and "UI only" in stub
    for index in where(before, "event_msg", "agent_reasoning"):
        text = after[index]["payload"]["text"]
        assert is_stub(text) == (index < cut)
    for index in where(before, "event_msg", "item_completed"):
        item, original = after[index]["payload"]["item"], before[index]["payload"]["item"]
        assert item["id"] == original["id"] and item["type"] == original["type"]
        assert is_stub(item["text"]) == (index < cut and original["type"] == "Plan")
    for kind in ("reasoning", "message"):
        for index in where(before, "response_item", kind):
            assert after[index] == before[index]
    lines = lines_from_bytes(data)
    settings = CompressSettings(keep_turns=1, stub_ui_copies=True)
    out, _ = compress_entry_lines(lines, settings, "s.jsonl", fmt=detect(lines, "s.jsonl"))
    assert out[answers[-1]].data == lines[answers[-1]].data
    kept_reasoning = where(before, "event_msg", "agent_reasoning")[-1]
    assert is_stub((parse_entry(out[kept_reasoning].data) or {})["payload"]["text"])


def test_any_other_long_string_of_an_older_event_becomes_a_stub() -> None:
    """Codex sends its model no event: before the kept turns a long string of an event this
    code names nowhere (a review's findings) becomes a stub too; the keys that name or link
    the event stay, and so do a person's message and the reply's `agent_message`."""
    builder = RolloutBuilder()
    for index in range(1, 3):
        turn_id = builder.start_turn(f"Prompt {index}: review it")
        body = "This branch never checks the exit code. " * 30
        builder.event(
            "exited_review_mode",
            turn_id=turn_id,
            review_output={"findings": [{"title": "Exit code", "body": body}], "id": "x" * 600},
        )
        builder.event("agent_message", message="Reviewed. " * 80, phase=None)
        builder.reply(turn_id, "Done.")
    before, after, _ = compress(builder.data())
    cut = last_turn_start(before)
    reviews = where(before, "event_msg", "exited_review_mode")
    old, kept = reviews[0], reviews[1]
    assert old < cut < kept and after[kept] == before[kept]
    output = after[old]["payload"]["review_output"]
    assert is_stub(output["findings"][0]["body"]) and "UI only" in output["findings"][0]["body"]
    assert output["findings"][0]["title"] == "Exit code" and output["id"] == "x" * 600
    assert after[old]["payload"]["turn_id"] == before[old]["payload"]["turn_id"]
    for index in where(before, "event_msg", "agent_message"):
        assert after[index] == before[index]
