"""The logic of the GitHub Action (action.yml): `python -m gitclaw_compress.action`.

Inputs arrive only as environment variables (action.yml maps each input to one with
`env:`), never interpolated into a script. It compresses the sessions the agent touched,
pushes the archive ref, writes a markdown table to $GITHUB_STEP_SUMMARY and step outputs
to $GITHUB_OUTPUT, and prints one line of stats. Exit codes are the CLI's: 3 on an error.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import orjson

from gitclaw_compress.config import load_config
from gitclaw_compress.core.marker import original_size
from gitclaw_compress.errors import EXIT_ERROR, EXIT_PROBLEMS, GitClawError
from gitclaw_compress.formats import format_title
from gitclaw_compress.ops.flow import FlowResult, run_flow, summary_line
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.remote import push_archive
from gitclaw_compress.units import human_bytes, size_change

PREFIX = "GITCLAW_COMPRESS_"


@dataclass(frozen=True, slots=True)
class Inputs:
    paths: tuple[Path, ...]
    take_all: bool
    issue: int | None
    keep_turns: int | None
    deep: bool
    config: Path | None
    push: bool
    remote: str | None
    summary: bool
    directory: Path


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(PREFIX + name, "").strip().lower()
    if not raw:
        return default
    if raw in ("true", "1", "yes", "on"):
        return True
    if raw in ("false", "0", "no", "off"):
        return False
    input_name = name.lower().replace("_", "-")
    raise GitClawError(f"input {input_name} must be true or false, got {raw!r}")


def _number(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(PREFIX + name, "").strip()
    if not raw:
        return None
    if not raw.isdigit():
        input_name = name.lower().replace("_", "-")
        raise GitClawError(f"input {input_name} must be a whole number, got {raw!r}")
    return int(raw)


def read_inputs(env: Mapping[str, str]) -> Inputs:
    paths_text = env.get(PREFIX + "PATHS", "")
    config = env.get(PREFIX + "CONFIG", "").strip()
    remote = env.get(PREFIX + "REMOTE", "").strip()
    directory = env.get(PREFIX + "WORKING_DIRECTORY", "").strip() or "."
    return Inputs(
        paths=tuple(Path(item) for item in shlex.split(paths_text)),
        take_all=_flag(env, "ALL", False),
        issue=_number(env, "ISSUE"),
        keep_turns=_number(env, "KEEP_TURNS"),
        deep=_flag(env, "DEEP", False),
        config=Path(config) if config else None,
        push=_flag(env, "PUSH", True),
        remote=remote or None,
        summary=_flag(env, "SUMMARY", True),
        directory=Path(directory),
    )


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")


def _turns(report: FileReport) -> str:
    return f"{report.kept_turns} of {report.turns}" if report.turns else "-"


def summary_markdown(
    result: FlowResult, push_note: str, originals: Mapping[str, int] | None = None
) -> str:
    """The job summary: one row per session, then a total.

    "Original" is the session as the agent wrote it, before any compression (read from its
    markers), so a file compressed by an earlier run does not pass its compressed size off
    as the starting point; "Before" is the file as this run found it.
    """
    sizes = originals or {}
    lines = ["### gitclaw-compress", ""]
    if result.discovery is not None:
        lines.append(f"Sessions: {_cell(result.discovery.detail)}. {push_note}")
    else:
        lines.append(f"Sessions: as given. {push_note}")
    lines.append("")
    if not result.reports:
        lines.append("No session to compress.")
        return "\n".join(lines) + "\n"
    lines.append(
        "| Session | Original | Before this run | After | Change vs original | Turns kept "
        "| New archive objects | Result | Format |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---|---|")
    total_original = 0
    for report in result.reports:
        original = sizes.get(report.path, report.bytes_before)
        total_original += original
        lines.append(
            f"| `{_cell(report.path)}` | {human_bytes(original)} "
            f"| {human_bytes(report.bytes_before)} | {human_bytes(report.bytes_after)} "
            f"| {size_change(original, report.bytes_after)} | {_turns(report)} "
            f"| {report.objects:,} | {report.status} | {format_title(report.format)} |"
        )
    before = sum(report.bytes_before for report in result.reports)
    after = sum(report.bytes_after for report in result.reports)
    objects = sum(report.objects for report in result.reports)
    lines.append(
        f"| **Total** | {human_bytes(total_original)} | {human_bytes(before)} "
        f"| {human_bytes(after)} | {size_change(total_original, after)} | | {objects:,} "
        f"| {len(result.compressed)} compressed ({result.format_counts('compressed') or 'none'}) "
        f"| {result.format_counts('sessions')} |"
    )
    return "\n".join(lines) + "\n"


def original_sizes(repo: Repository, result: FlowResult) -> dict[str, int]:
    """Each session's size before any compression; a file that cannot be read is left out."""
    sizes: dict[str, int] = {}
    for report in result.reports:
        try:
            sizes[report.path] = original_size(repo.root / report.path)
        except OSError:
            continue
    return sizes


def _append(path: str | None, text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)


def _annotation(kind: str, message: str) -> str:
    escaped = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::{kind} title=gitclaw-compress::{escaped}"


def run(env: Mapping[str, str]) -> int:
    try:
        inputs = read_inputs(env)
        os.chdir(inputs.directory)
        repo = Repository(Path.cwd())
        result = run_flow(
            repo,
            inputs.paths,
            config_path=inputs.config,
            take_all=inputs.take_all,
            issue=inputs.issue,
            keep_turns=inputs.keep_turns,
            remote=inputs.remote,
            deep=inputs.deep,
            caller_pushes=inputs.push,
        )
    except GitClawError as error:
        _report_failure(error)
        return error.exit_code
    for warning in result.warnings:
        print(_annotation("warning", warning))
    failure: GitClawError | None = None
    if inputs.push:
        from gitclaw_compress.secrets.check import guard_push

        try:
            # Never send an archive object that holds a secret, as `push` and the hook do.
            for warning in guard_push(repo, load_config(None, repo.config_root, inputs.config)):
                print(_annotation("warning", warning))
            result.push = push_archive(repo, result.ref, result.remote)
        except GitClawError as error:
            failure = error
    push_note = _push_note(result, pushing=inputs.push, failed=failure is not None)
    print(summary_line(result))
    originals = original_sizes(repo, result)
    if inputs.summary:
        _append(env.get("GITHUB_STEP_SUMMARY"), summary_markdown(result, push_note, originals))
    outputs = _outputs(result, originals)
    _append(env.get("GITHUB_OUTPUT"), "".join(f"{k}={v}\n" for k, v in outputs.items()))
    if failure is not None:
        _report_failure(failure)
        return failure.exit_code
    if result.held:  # the other sessions were compressed; these are left as they were
        from gitclaw_compress.secrets.held import held_lines

        for entry in result.held:
            for line in entry["found"]:
                print(line, file=sys.stderr)
        for line in held_lines(result.held):
            print(_annotation("error", line))
            print(f"gitclaw-compress: error: {line}", file=sys.stderr)
        return EXIT_PROBLEMS
    return 0


def _push_note(result: FlowResult, *, pushing: bool, failed: bool) -> str:
    """What became of the archive, for the step summary."""
    if failed:
        return f"Pushing `{result.ref}` to `{result.remote}` failed."
    if result.push is not None and result.push.pushed:
        return f"Archive `{result.ref}` pushed to `{result.remote}`."
    if result.push is not None and result.push.reason == "up-to-date":
        return f"`{result.remote}` has `{result.ref}` already, nothing to push."
    if pushing:
        return f"No `{result.ref}` in this clone, nothing to push."
    return f"Archive `{result.ref}` left ready to push (input push is false)."


def _outputs(result: FlowResult, originals: dict[str, int]) -> dict[str, str]:
    """The step's outputs: the counts and sizes of the run, and its JSON document."""
    return {
        "sessions": str(len(result.reports)),
        "compressed": str(len(result.compressed)),
        "bytes-original": str(sum(originals.get(r.path, r.bytes_before) for r in result.reports)),
        "bytes-before": str(sum(report.bytes_before for report in result.reports)),
        "bytes-after": str(sum(report.bytes_after for report in result.reports)),
        "objects": str(sum(report.objects for report in result.reports)),
        "pushed": "true" if result.push is not None and result.push.pushed else "false",
        "json": orjson.dumps(result.as_json()).decode(),
    }


def _report_failure(error: GitClawError) -> None:
    """The error as an annotation and one line, after its details (each secret finding,
    masked), as the CLI prints them."""
    for detail in getattr(error, "details", ()):
        print(detail, file=sys.stderr)
    print(_annotation("error", str(error)))
    print(f"gitclaw-compress: error: {error}", file=sys.stderr)


def main() -> None:
    try:
        code = run(os.environ)
    except KeyboardInterrupt:
        code = 130
    except Exception as error:  # an unexpected error still reads as one annotated line
        print(_annotation("error", f"unexpected error: {error!r}"))
        code = EXIT_ERROR
    sys.exit(code)


if __name__ == "__main__":
    main()
