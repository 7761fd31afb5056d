"""What keeping preserved thinking valid costs on the corpus: bytes after `compress` (keep 4
turns, the default) and `compress --deep`, for each Claude Code and pi corpus session as it
is, and as if its Claude model had preserved thinking (every `"model":"claude-…"` read as
`claude-opus-5-5`; the corpus was written by earlier models, whose thinking binds nothing).

    .venv/bin/python bench/preserved_thinking.py [CORPUS]

In memory (the compressor's passes, no git): the figures are the file's bytes after
compression, markers included, against its bytes before.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from shared_corpus import CORPUS

from gitclaw_compress.core.compressor import CompressSettings, compress_entry_lines
from gitclaw_compress.core.lines import lines_from_bytes
from gitclaw_compress.formats import detect

CLAUDE_MODEL = re.compile(rb'"model":"claude-[^"]*"')
BINDING_MODEL = b'"model":"claude-opus-5-5"'


def compressed_size(data: bytes, *, deep: bool) -> int:
    lines, _ = compress_entry_lines(
        lines_from_bytes(data),
        CompressSettings(keep_turns=4, deep=deep),
        "bench.jsonl",
        fmt=detect(lines_from_bytes(data), "bench.jsonl"),
    )
    return sum(len(line.data) + (1 if line.newline else 0) for line in lines)


def main() -> None:
    corpus = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    files = sorted((corpus / "claude").glob("*.jsonl")) + sorted((corpus / "pi").glob("*.jsonl"))
    if not files:
        raise SystemExit(f"no corpus at {corpus}")
    print("| session | bytes | mode | as written | with preserved thinking | cost |")
    print("|---|---:|---|---:|---:|---:|")
    totals = {False: [0, 0, 0], True: [0, 0, 0]}
    for path in files:
        data = path.read_bytes()
        relabeled = CLAUDE_MODEL.sub(BINDING_MODEL, data)
        for deep in (False, True):
            plain = compressed_size(data, deep=deep)
            bound = compressed_size(relabeled, deep=deep) if relabeled != data else plain
            total = totals[deep]
            total[0] += len(data)
            total[1] += plain
            total[2] += bound
            mode = "--deep" if deep else "default"
            name = f"{path.parent.name}/{path.name}"
            print(
                f"| {name} | {len(data):,} | {mode} | {plain:,} ({plain / len(data):.0%}) "
                f"| {bound:,} ({bound / len(data):.0%}) | {bound - plain:+,} |"
            )
    for deep, (before, plain, bound) in totals.items():
        mode = "--deep" if deep else "default"
        print(
            f"| all | {before:,} | {mode} | {plain:,} ({plain / before:.0%}) "
            f"| {bound:,} ({bound / before:.0%}) | {bound - plain:+,} |"
        )


if __name__ == "__main__":
    main()
