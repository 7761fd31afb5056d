"""Copilot CLI events: each field kind compressed or kept, and what the commands show of
them. The CLI flow, the default globs and the corpus after gc (with its done-when ratio) are
in test_cli_contract.py, for every format."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import commit_session
from synthetic_copilot import EVENTS_PATH, PNG, EventsBuilder, big_text, typical_events

from gitclaw_compress.cli import cli as gitclaw
from gitclaw_compress.core import stubs
from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines, plan_lines
from gitclaw_compress.core.lines import MARKER_KEY, Entry, lines_from_bytes, parse_entry
from gitclaw_compress.core.marker import restore_data
from gitclaw_compress.core.payload_form import original_form
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.copilot.rules import (
    FORMAT,
    REPEATED_ARGUMENT_STUB,
    SAME_AS_CONTENT_STUB,
)

SETTINGS = CompressSettings(keep_turns=1)
SEPARATORS = ("\u2028".encode(), "\u2029".encode())


def compress(data: bytes) -> tuple[list[Entry], list[Entry], dict[str, bytes]]:
    """The file's events before and after compression in memory, and the payloads."""
    lines = lines_from_bytes(data)
    out, payloads = compress_entry_lines(
        lines, SETTINGS, EVENTS_PATH, fmt=detect(lines, EVENTS_PATH)
    )
    before = [parse_entry(line.data) or {} for line in lines]
    after = [parse_entry(line.data) or {} for line in out]
    return before, after, payloads


def at(value: Any, path: list[str | int]) -> Any:
    for part in path:
        value = value[part]
    return value


def json_type(value: object) -> str:
    return type(value).__name__


def by_call(events: list[Entry], kind: str, number: int) -> Entry:
    """The `kind` event of tool call number `number` (1-based, in file order)."""
    call_id = f"tooluse_{number:04d}"
    for event in events:
        if event.get("type") == kind and event["data"].get("toolCallId") == call_id:
            return event
    raise AssertionError(f"no {kind} for {call_id}")


def request(events: list[Entry], number: int) -> dict[str, Any]:
    call_id = f"tooluse_{number:04d}"
    for event in events:
        for item in event.get("data", {}).get("toolRequests") or ():
            if item["toolCallId"] == call_id:
                return item  # type: ignore[no-any-return]
    raise AssertionError(f"no tool request {call_id}")


@pytest.fixture(scope="module")
def typical() -> tuple[list[Entry], list[Entry], dict[str, bytes]]:
    return compress(typical_events().data())


def test_tool_results_and_their_ui_copies_become_stubs(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    _, after, _ = typical
    same = by_call(after, "tool.execution_complete", 1)["data"]["result"]
    assert stubs.is_stub(same["content"]) and "Output of view '/work/src/app.ts'" in same["content"]
    assert same["detailedContent"] == SAME_AS_CONTENT_STUB
    diff_event = by_call(after, "tool.execution_complete", 2)
    diff = diff_event["data"]["result"]
    assert diff["content"] == "app.ts\nlib.ts"  # small and model-facing: kept
    assert stubs.is_stub(diff["detailedContent"]) and "UI only" in diff["detailedContent"]
    # Event ids are uuids: `show` finds them without the session's path.
    assert diff["detailedContent"].endswith(f"Full entry: gitclaw-compress show {diff_event['id']}")
    failed = by_call(after, "tool.execution_complete", 4)
    assert "(the tool failed)" in failed["data"]["result"]["content"]
    assert failed["data"]["success"] is False


def test_a_ui_copy_stub_is_only_its_name_and_the_show_command(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    """The model never reads a UI-only copy: its stub carries no shape and no preview (each
    byte of it is kept in every compressed file), only what a person needs to get it back."""
    _, after, _ = typical
    event = by_call(after, "tool.execution_complete", 2)
    show = stubs.show_command(EVENTS_PATH, event["id"], ids_alone=True)
    expected = f"{stubs.STUB_PREFIX} detailedContent, UI only. Full entry: {show}"
    assert event["data"]["result"]["detailedContent"] == expected
    contents = by_call(after, "tool.execution_complete", 3)["data"]["result"]["contents"]
    # The content stub on the same line names the show command.
    assert (
        contents[0]["text"]
        == f"{stubs.STUB_PREFIX} contents[0].text, UI only. Full entry: see content."
    )
    assert len(SAME_AS_CONTENT_STUB) < 40 and len(REPEATED_ARGUMENT_STUB) < 40


def test_contents_items_keep_their_type_and_lose_their_bulk(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    before, after, _ = typical
    old = by_call(before, "tool.execution_complete", 3)["data"]["result"]["contents"]
    new = by_call(after, "tool.execution_complete", 3)["data"]["result"]["contents"]
    assert isinstance(new, list)
    assert [item["type"] for item in new] == [item["type"] for item in old]
    assert [list(item) for item in new] == [list(item) for item in old]
    text, terminal, image, audio, resource, blob, shell, link = new
    for stubbed in (text["text"], terminal["text"], resource["resource"]["text"]):
        assert stubs.is_stub(stubbed)
    assert stubs.is_stub(shell["outputPreview"]) and shell["exitCode"] == 0
    assert image["data"] == audio["data"] == blob["resource"]["blob"] == ""  # valid base64
    assert image["mimeType"] == "image/png" and terminal["exitCode"] == 0
    assert link == old[7]


def test_tool_request_arguments_keep_their_keys_and_shape(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    before, after, _ = typical
    create = request(after, 5)["arguments"]
    assert create["path"] == "/work/src/fix.ts" and stubs.is_stub(create["file_text"])
    edit = request(after, 6)["arguments"]
    assert edit["path"] == "/work/src/app.ts"
    assert stubs.is_stub(edit["old_str"]) and stubs.is_stub(edit["new_str"])
    issue = request(after, 7)["arguments"]
    assert issue["title"] == "Build fix" and issue["draft"] is False
    assert stubs.is_stub(issue["body"]["markdown"]) and issue["body"]["lines"] == 20
    assert stubs.is_stub(issue["labels"][0]) and issue["labels"][1] == "bug"
    command = request(after, 4)["arguments"]["command"]
    assert command.startswith("npm run build --flag") and stubs.STUB_PREFIX in command
    assert request(after, 1) == request(before, 1)  # a small call stays as it is


def test_start_arguments_repeat_the_request_so_they_shrink_most(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    _, after, _ = typical
    create = by_call(after, "tool.execution_start", 5)["data"]["arguments"]
    assert create == {"path": "/work/src/fix.ts", "file_text": REPEATED_ARGUMENT_STUB}
    issue = by_call(after, "tool.execution_start", 7)["data"]["arguments"]
    assert issue["body"] == {"markdown": REPEATED_ARGUMENT_STUB, "lines": 20}
    assert issue["labels"] == [REPEATED_ARGUMENT_STUB, "bug"] and issue["draft"] is False


def test_what_is_never_touched(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    before, after, _ = typical
    assert len(before) == len(after)
    for old, new in zip(before, after, strict=True):
        for key in ("type", "id", "parentId", "timestamp"):
            assert old[key] == new[key]
        kind = old["type"]
        if kind == "assistant.message":
            for key in ("content", "reasoningOpaque", "reasoningText", "messageId"):
                assert old["data"].get(key) == new["data"].get(key)
        elif kind == "tool.execution_complete":
            assert old["data"]["toolTelemetry"] == new["data"]["toolTelemetry"]
        elif kind not in ("tool.execution_start",):
            assert old == new, kind  # user text, skill content, session.resume's eventCount


def test_every_stub_keeps_the_json_type_it_replaces(
    typical: tuple[list[Entry], list[Entry], dict[str, bytes]],
) -> None:
    _, after, payloads = typical
    kinds = set()
    for new in after:
        marker = new.get(MARKER_KEY)
        if marker is None:
            continue
        for part in marker["parts"]:
            original = orjson.loads(original_form(payloads[part["oid"]]))
            assert json_type(at(new, part["path"])) == json_type(original), part["path"]
            kinds.add((new["type"], json_type(original)))
    assert kinds >= {
        ("tool.execution_complete", "str"),
        ("assistant.message", "str"),
        ("tool.execution_start", "dict"),
    }


def test_the_kept_turn_is_byte_identical_and_a_second_run_changes_nothing() -> None:
    data = typical_events().data()
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, SETTINGS, session_ref=EVENTS_PATH, fmt=detect(lines, EVENTS_PATH))
    assert (plan.turns, plan.window_start) == (3, len(lines) - 8)
    out, _ = compress_entry_lines(lines, SETTINGS, EVENTS_PATH, fmt=detect(lines, EVENTS_PATH))
    assert [line.data for line in out[plan.window_start - 1 :]] == [
        line.data for line in lines[plan.window_start - 1 :]
    ]
    again, payloads = compress_entry_lines(out, SETTINGS, EVENTS_PATH, fmt=detect(out, EVENTS_PATH))
    assert again == out and not payloads


def test_an_injected_user_message_does_not_start_a_turn() -> None:
    events = EventsBuilder()
    events.start()
    events.user("Go")
    events.user("pdf skill prompt", source="skill-pdf")
    events.user("from another agent", source="agent-x1")
    events.user("Next")
    plan = plan_lines(
        lines_from_bytes(events.data()),
        SETTINGS,
        session_ref=EVENTS_PATH,
        fmt=detect(lines_from_bytes(events.data()), EVENTS_PATH),
    )
    assert plan.turns == 2


def test_no_raw_line_separator_enters_a_changed_line() -> None:
    """A separator inside a stubbed text is escaped; a key holding one is never a path."""
    events = EventsBuilder()
    events.start()
    events.user("Go")
    odd = {"path": "/a", "notes\u2028": big_text("n", 10), "text": "x\u2029" + big_text("t")}
    events.turn([("mcp-write", odd, {"content": "\u2028" + big_text("out", 40)})], "Done")
    events.user("Next")
    lines = lines_from_bytes(events.data())
    out, _ = compress_entry_lines(lines, SETTINGS, EVENTS_PATH, fmt=detect(lines, EVENTS_PATH))
    changed = [(old, new) for old, new in zip(lines, out, strict=True) if old != new]
    assert len(changed) == 3  # the request, the start and the result
    for old, new in changed:
        marker = orjson.dumps(parse_entry(new.data)[MARKER_KEY])  # type: ignore[index]
        assert not any(separator in marker for separator in SEPARATORS)
        for separator in SEPARATORS:
            assert new.data.count(separator) <= old.data.count(separator)
    arguments = parse_entry(changed[0][1].data)["data"]["toolRequests"][0]["arguments"]  # type: ignore[index]
    assert arguments["notes\u2028"] == odd["notes\u2028"]  # kept: its key would reach the marker
    assert stubs.is_stub(arguments["text"])
    assert "\u2028".encode() not in changed[2][1].data  # the output's separator went with it


def test_recognized_by_content_and_a_broken_first_line_is_refused() -> None:
    data = typical_events().data()
    assert detect(lines_from_bytes(data), "e.jsonl") is FORMAT
    broken = b'{"type":"session.start","data":{\n' + data.split(b"\n", 1)[1]
    with pytest.raises(GitClawError, match=r"^e\.jsonl:1: not a Copilot CLI event"):
        detect(lines_from_bytes(broken), "e.jsonl")


def _runner_in(repo: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.chdir(repo)
    return CliRunner()


def test_show_by_event_id_and_stats_work_on_copilot_events(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = typical_events().data()
    path = commit_session(repo, EVENTS_PATH, original)
    runner = _runner_in(repo, monkeypatch)
    done = runner.invoke(gitclaw, ["compress", "--keep-turns", "1", "--force", EVENTS_PATH])
    assert done.exit_code == 0, done.output
    assert len(path.read_bytes()) < len(original)
    result = by_call(
        [parse_entry(line) or {} for line in original.splitlines()], "tool.execution_complete", 1
    )
    shown = runner.invoke(gitclaw, ["show", EVENTS_PATH, result["id"]])
    assert shown.exit_code == 0, shown.output
    assert big_text("src/app.ts").splitlines()[-1] in shown.stdout
    stats = runner.invoke(gitclaw, ["stats", EVENTS_PATH])
    assert stats.exit_code == 0, stats.output
    for kind in ("tool result content", "tool result detailedContent", "tool start arguments"):
        assert kind in stats.stdout
    # (verify, show by line and restore, also after gc: test_cli_contract.py)


def test_summarize_keeping_turns_says_in_one_line_why_copilot_cannot(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = typical_events().data()
    path = commit_session(repo, EVENTS_PATH, original)
    done = _runner_in(repo, monkeypatch).invoke(
        gitclaw, ["summarize", "--offline", "--keep-turns", "1", EVENTS_PATH]
    )
    assert done.exit_code == 3
    message = done.stderr.strip()
    assert message.count("\n") == 0, message
    opening = (
        f"{EVENTS_PATH}: Copilot CLI transcripts: a summary that keeps turns is not supported ("
    )
    assert opening in message
    assert path.read_bytes() == original


def is_user(event: Entry) -> bool:
    return event.get("type") == "user.message" and event["data"]["content"] == "What is wrong here?"


def test_a_pasted_image_in_an_old_turn_becomes_a_text_blob_unless_kept() -> None:
    """A blob attachment keeps its type and keys; its data becomes the stub in base64 and its
    mimeType text/plain, which Copilot CLI sends as an <attachment> text part (an image/png
    blob with other data would reach the model as a broken image)."""
    events = EventsBuilder()
    events.start()
    pasted = {"type": "blob", "data": PNG, "mimeType": "image/png", "displayName": "shot.png"}
    notes = {"type": "blob", "data": PNG, "mimeType": "application/pdf"}
    events.user("What is wrong here?", attachments=[pasted, notes])
    events.turn([], "The button is hidden.")
    events.user("Thanks")
    events.turn([], "You are welcome.")
    lines = lines_from_bytes(events.data())
    for keep, expected in ((False, "text/plain"), (True, "image/png")):
        settings = CompressSettings(keep_turns=1, keep_user_images=keep)
        out, payloads = compress_entry_lines(
            lines, settings, EVENTS_PATH, fmt=detect(lines, EVENTS_PATH)
        )
        [message] = [e for e in map(parse_entry, (x.data for x in out)) if e and is_user(e)]
        image, other = message["data"]["attachments"]
        assert other == notes  # not an image: what the person attached as such
        assert image["mimeType"] == expected and image["displayName"] == "shot.png"
        if not keep:
            text = base64.b64decode(image["data"]).decode()
            assert text.startswith(f"{stubs.STUB_PREFIX} User image elided: image/png")
            assert text.endswith(f"Full entry: gitclaw-compress show {message['id']}")
            assert restore_data(out[2].data, "line", payloads.get) == lines[2].data
        else:
            assert image == pasted


def test_pass_two_reads_again_only_the_lines_an_edit_could_shrink() -> None:
    """A tool start or result whose edited value is no larger than a marker part is not
    flagged for pass 2; every line compressed was."""
    lines = lines_from_bytes(typical_events().data())
    fmt = detect(lines, EVENTS_PATH)
    plan = plan_lines(lines, SETTINGS, session_ref=EVENTS_PATH, fmt=fmt)
    assert plan.bulk is not None
    flagged = {number for number, flag in enumerate(plan.bulk, start=1) if flag}
    out, _ = compress_entry_lines(lines, SETTINGS, EVENTS_PATH, fmt=fmt)
    changed = {line.number for line, new in zip(lines, out, strict=True) if line != new}
    assert changed and changed <= flagged
    small = set()
    for line in lines:
        event = parse_entry(line.data) or {}
        value = {"tool.execution_start": "arguments", "tool.execution_complete": "result"}
        key = value.get(str(event.get("type")))
        if key is not None and len(orjson.dumps(event["data"].get(key))) <= 112:
            small.add(line.number)
    assert small and not small & flagged
