"""Where the bytes of a session are, by kind: the format names the kinds, the rest is shared."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from gitclaw_compress.core.format import CoreFormat
from gitclaw_compress.core.lines import MARKER_KEY, RawLine, parse_entry

SHARED_KINDS = ("stubs", "markers", "metadata and other")


def kinds_of(fmt: CoreFormat) -> tuple[str, ...]:
    return (*fmt.kinds, *SHARED_KINDS)


def bytes_by_kind(lines: Iterable[RawLine], fmt: CoreFormat) -> dict[str, int]:
    kinds = dict.fromkeys(kinds_of(fmt), 0)
    total = 0
    for line in lines:
        size = len(line.encode())
        total += size
        entry = parse_entry(line.data)
        if entry is None:
            continue
        if MARKER_KEY in entry:
            kinds["markers"] += len(orjson.dumps(entry[MARKER_KEY])) + len(MARKER_KEY) + 4
        for kind, count in fmt.measure(entry):
            kinds[kind] += count
    kinds["metadata and other"] = max(total - sum(kinds.values()), 0)
    return kinds
