"""Bytes cut on the corpus against an ideal. A script, not a test: it prints numbers.

    python bench/ideal.py [--keep-turns 1] [--stub-ui-copies | --deep] [--breakdown | --json]

For each file of ../shared/corpus/{pi,claude,codex,copilot} (or of the folder that
`GITCLAW_TEST_CORPUS` names), at `--keep-turns` (default 1)
and the default settings, it compresses the file in memory as `compress` does in a repository
where the file is committed (the GitClaw flow: each compressed line's marker names the
committed blob that holds it intact, a v3 marker; a stub whose id is unique only inside its
file names the path the agent's files have in a repository, a uuid goes alone), and compares
the cut with an ideal:
every bulk value before the kept turns replaced by a stub of `IDEAL_STUB_BYTES` and nothing
else (no marker). A bulk value is a string longer than the stub that no promise protects:
not an id, link or type, not signed thinking or encrypted reasoning, not what the user or the
assistant wrote (the format's `sealed` values), images pasted by a person included. The ratio
is cut / ideal cut; the goal is at least 90% per format.

With `--deep` the run is deep (`session.deep`) and so is the ideal, by the same rules: besides
the bulk before the kept turns, every string value that the deep rules change in the kept turns
(UI-only copies, outputs and arguments over `session.deepKeptMaxBytes`) becomes a stub of
`IDEAL_STUB_BYTES` there too, and so does every value the default ideal keeps before them that
the deep rules change (readable thinking dropped whole counts as gone; text before the agent's
last compaction record), with no marker.

`--breakdown` also prints, per file, where the bytes that are left are, by JSON path (indexes
folded), largest first, and the gap to the ideal: the markers, the stubs longer than the
ideal's, and the bulk values left whole (each value looked up at its own path).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from shared_corpus import CORPUS

from gitclaw_compress.config import defaults
from gitclaw_compress.core.compressor import compress_lines, git_blob_id, plan_lines
from gitclaw_compress.core.jsonspan import value_at
from gitclaw_compress.core.lines import (
    MARKER_KEY,
    Entry,
    join_lines,
    lines_from_bytes,
    parse_entry,
)
from gitclaw_compress.core.plan import SessionPlan
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.codex.rules import CodexRules

CORPUS_FORMATS = ("pi", "claude", "codex", "copilot")
IDEAL_STUB_BYTES = 120
GOAL = 0.90


def _strings(value: object, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    """Every string of a value with its path, indexes folded to `[]`."""
    for exact, text in _exact_strings(value, ()):
        yield (*path, *("[]" if isinstance(step, int) else step for step in exact)), text


def _exact_strings(
    value: object, path: tuple[str | int, ...]
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _exact_strings(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _exact_strings(item, (*path, index))


def _folded(kind: str, path: tuple[str | int, ...]) -> str:
    return f"{kind}: {'.'.join('[]' if isinstance(step, int) else step for step in path)}"


def _sealed_strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _sealed_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _sealed_strings(item)


def _bulk(data: bytes, keep_turns: int) -> Iterator[tuple[int, str, str, int]]:
    """(line number, folded path, value, serialized size) of every bulk string before the
    kept turns: longer than the ideal stub and not sealed."""
    for number, kind, path, text, size in _bulk_at(data, keep_turns):
        yield number, _folded(kind, path), text, size


def _bulk_at(
    data: bytes, keep_turns: int
) -> Iterator[tuple[int, str, tuple[str | int, ...], str, int]]:
    """(line number, line type, exact path, value, serialized size) of every bulk string."""
    settings = dataclasses.replace(defaults().compress_settings(), keep_turns=keep_turns)
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, settings, session_ref="s.jsonl", fmt=detect(lines, "s.jsonl"))
    for line in lines:
        if line.number >= kept_from(plan):
            break
        entry = parse_entry(line.data)
        if entry is None:
            continue
        sealed = {text for _, value in plan.format.sealed(entry) for text in _sealed_strings(value)}
        kind = str(entry.get("type"))
        for path, text in _exact_strings(entry, ()):
            size = len(orjson.dumps(text))
            if size > IDEAL_STUB_BYTES and text not in sealed:
                yield line.number, kind, path, text, size


def kept_from(plan: SessionPlan) -> int:
    """The first line of the kept turns: the core's window starts at a turn's first
    message, and Codex keeps with that turn the lines it writes for it just before (its
    turn_context among them, which resume reads: a promise, not bulk)."""
    if isinstance(plan.rules, CodexRules):
        return plan.rules.kept_from(plan.window_start)
    return plan.window_start


def ideal_cut(data: bytes, keep_turns: int) -> int:
    """Bytes an ideal compressor cuts: bulk strings before the kept turns, each to a stub."""
    return sum(size - IDEAL_STUB_BYTES for _, _, _, size in _bulk(data, keep_turns))


def deep_extra_cut(data: bytes, compressed: bytes, keep_turns: int) -> int:
    """Deep: bytes an ideal cuts beyond `ideal_cut`, by the deep rules: each string the deep
    run changed in the kept turns, and each string before them that the default ideal keeps
    (a sealed value, such as readable thinking the run drops or text before a compaction
    record) and the run changed, becomes a stub of `IDEAL_STUB_BYTES`, or nothing where the
    run removed it (looked up at its own path)."""
    settings = dataclasses.replace(defaults().compress_settings(), keep_turns=keep_turns)
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, settings, session_ref="s.jsonl", fmt=detect(lines, "s.jsonl"))
    after = lines_from_bytes(compressed)
    cut = 0
    for line in lines:
        if after[line.number - 1].data == line.data:
            continue
        entry, now = parse_entry(line.data), parse_entry(after[line.number - 1].data)
        if entry is None or now is None:
            continue
        kept = line.number >= kept_from(plan)
        sealed = (
            set()
            if kept
            else {text for _, value in plan.format.sealed(entry) for text in _sealed_strings(value)}
        )
        for path, text in _exact_strings(entry, ()):
            size = len(orjson.dumps(text))
            if size <= IDEAL_STUB_BYTES or not (kept or text in sealed):
                continue
            found, value = value_at(now, path)
            if not found:
                cut += size
            elif value != text:
                cut += size - IDEAL_STUB_BYTES
    return cut


def missed(data: bytes, compressed: bytes, keep_turns: int) -> Counter[str]:
    """Bytes of the bulk strings the ideal stubs and the compressor left whole, by path."""
    after = lines_from_bytes(compressed)
    left: Counter[str] = Counter()
    for number, path, text, size in _bulk(data, keep_turns):
        if orjson.dumps(text) in after[number - 1].data:
            left[path] += size - IDEAL_STUB_BYTES
    return left


def gap(data: bytes, compressed: bytes, keep_turns: int) -> Counter[str]:
    """What the run keeps that the ideal does not, before the kept turns: each marker, each
    stub past the ideal's size, each bulk value left whole (looked up at its own path, so a
    copy stubbed beside its kept original counts as a stub). Bytes the run cuts and the ideal
    keeps (short strings) count against the gap."""
    after = lines_from_bytes(compressed)
    entries: dict[int, Entry] = {}
    left: Counter[str] = Counter()
    for number, kind, path, text, size in _bulk_at(data, keep_turns):
        if number not in entries:
            entries[number] = parse_entry(after[number - 1].data) or {}
            marker = entries[number].get(MARKER_KEY)
            if marker is not None:
                left["markers"] += len(orjson.dumps({MARKER_KEY: marker})) - 1
        now = value_at(entries[number], path)[1]
        if now == text:
            left[f"left whole: {_folded(kind, path)}"] += size - IDEAL_STUB_BYTES
        elif isinstance(now, str):
            left[f"stub: {_folded(kind, path)}"] += len(orjson.dumps(now)) - IDEAL_STUB_BYTES
    return left


def breakdown(data: bytes) -> Counter[str]:
    """Bytes of string values by folded JSON path (with the line's type), whole file."""
    sizes: Counter[str] = Counter()
    for line in lines_from_bytes(data):
        entry = parse_entry(line.data)
        if entry is None:
            continue
        kind = str(entry.get("type"))
        for path, text in _strings(entry, ()):
            sizes[f"{kind}: {'.'.join(path)}"] += len(orjson.dumps(text))
        sizes[f"{kind}: (envelope and keys)"] += len(line.data) - sum(
            len(orjson.dumps(text)) for _, text in _strings(entry, ())
        )
    return sizes


def compressed(data: bytes, name: str, keep_turns: int, overrides: dict[str, Any]) -> bytes:
    """The file after a run in memory, as in a repository where it is committed: each
    compressed line names the committed blob that holds it (a v3 marker, 40-hex ids)."""
    settings = dataclasses.replace(
        defaults().compress_settings(), keep_turns=keep_turns, **overrides
    )
    lines = lines_from_bytes(data)
    plan = plan_lines(lines, settings, session_ref=name, fmt=detect(lines, name))
    committed = git_blob_id(data)
    output = compress_lines(
        lines, plan, settings, session_ref=name, intact_blob=lambda line: committed
    )
    return join_lines(result.line for result in output)


def measure_file(source: Path, keep_turns: int, overrides: dict[str, Any]) -> tuple[int, int, int]:
    """(bytes before, bytes cut, ideal bytes cut)."""
    data = source.read_bytes()
    after = compressed(data, session_ref(source), keep_turns, overrides)
    ideal = ideal_cut(data, keep_turns)
    if overrides.get("deep"):
        ideal += deep_extra_cut(data, after, keep_turns)
    return len(data), len(data) - len(after), ideal


def session_ref(source: Path) -> str:
    """Where the file lives in a repository (stubs name it, so its length counts): the path
    its agent gives it, with the real file name, read from the file (the corpus renames its
    files): a Codex rollout's `rollout-<time>-<id>.jsonl`, a Claude Code session's
    `<sessionId>.jsonl` (Entire's `<xx>/<id>/0/full.jsonl`), a Copilot session's folder named
    by its 36-character id as the CLI names it."""
    kind = source.parent.name
    if kind == "copilot":
        return f"state/copilot/.copilot/session-state/{'0' * 36}/events.jsonl"
    real = _real_name(source)
    if real is not None:
        return real
    return {
        "pi": ".GITCLAW/state/sessions/{}",
        "claude": ".claude/projects/-home-runner-work-demo-demo/{}",
        "codex": ".codex/sessions/2026/03/30/{}",
    }[kind].format(source.name)


def _real_name(source: Path) -> str | None:
    """The path a Codex or Claude Code corpus file had where it was written, from its first
    records (its id and start time); None for the other formats."""
    kind = source.parent.name
    with open(source, "rb") as handle:
        head = [orjson.loads(line) for _, line in zip(range(20), handle, strict=False)]
    if kind == "codex":
        meta = next((r["payload"] for r in head if r.get("type") == "session_meta"), None)
        if meta is None:
            return None
        when = str(meta["timestamp"])[:19].replace(":", "-")  # the length the CLI writes
        day = when[:10].replace("-", "/")
        return f".codex/sessions/{day}/rollout-{when}-{meta['id']}.jsonl"
    if kind == "claude":
        session = next((r["sessionId"] for r in head if "sessionId" in r), None)
        if session is None:
            return None
        if source.name.startswith("entire-cli__"):  # Entire's checkpoints branch
            shard, checkpoint = source.stem.removeprefix("entire-cli__").split("-", 1)
            return f"{shard}/{checkpoint}/0/full.jsonl"
        return f".claude/projects/E--CC-test/{session}.jsonl"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep-turns", type=int, default=1)
    parser.add_argument("--stub-ui-copies", action="store_true")
    parser.add_argument("--deep", action="store_true", help="a deep run against a deep ideal")
    parser.add_argument("--breakdown", action="store_true")
    parser.add_argument("--json", action="store_true", help="per file: bytes, after, ideal")
    options = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"no corpus at {CORPUS}")
    overrides: dict[str, Any] = {}
    if options.stub_ui_copies:
        overrides["stub_ui_copies"] = True
    if options.deep:
        overrides["deep"] = True
    if options.json:
        files: dict[str, dict[str, int]] = {}
        for kind in CORPUS_FORMATS:
            for source in sorted((CORPUS / kind).glob("*.jsonl")):
                size, file_cut, file_ideal = measure_file(source, options.keep_turns, overrides)
                files[f"{kind}/{source.name}"] = {
                    "bytes": size,
                    "after": size - file_cut,
                    "ideal_cut": file_ideal,
                }
        print(orjson.dumps({"keep_turns": options.keep_turns, "files": files}).decode())
        return
    print(
        f"keep-turns {options.keep_turns}; ideal: every bulk string before the kept turns "
        f"becomes {IDEAL_STUB_BYTES} bytes"
    )
    print(f"{'file':<52} {'bytes':>10} {'after':>10} {'cut':>7} {'ideal':>7} {'ratio':>6}")
    for kind in CORPUS_FORMATS:
        total = cut = ideal = 0
        for source in sorted((CORPUS / kind).glob("*.jsonl")):
            size, file_cut, file_ideal = measure_file(source, options.keep_turns, overrides)
            total, cut, ideal = total + size, cut + file_cut, ideal + file_ideal
            print(
                f"{kind + '/' + source.name:<52} {size:>10,} {size - file_cut:>10,} "
                f"{file_cut / size:>6.1%} {file_ideal / size:>6.1%} "
                f"{file_cut / max(file_ideal, 1):>6.1%}"
            )
            if options.breakdown:
                data = source.read_bytes()
                after = compressed(data, session_ref(source), options.keep_turns, overrides)
                print("  what is left, by path:")
                for path, size_left in breakdown(after).most_common(10):
                    print(f"    {size_left:>10,}  {path}")
                print("  bulk the ideal stubs and this run keeps, by path:")
                for path, size_left in missed(data, after, options.keep_turns).most_common(8):
                    print(f"    {size_left:>10,}  {path}")
                left = gap(data, after, options.keep_turns)
                print(f"  gap to the ideal cut, {sum(left.values()):,} bytes:")
                for path, size_left in left.most_common(10):
                    print(f"    {size_left:>10,}  {path}")
        if not total:  # a corpus folder without this format's files
            continue
        status = "ok" if cut >= GOAL * ideal else "BELOW GOAL"
        print(
            f"{kind + ' (all files)':<52} {total:>10,} {total - cut:>10,} {cut / total:>6.1%} "
            f"{ideal / total:>6.1%} {cut / max(ideal, 1):>6.1%} {status}"
        )


if __name__ == "__main__":
    main()
