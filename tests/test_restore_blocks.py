"""Restore reads a file in chunks: runs of lines without a marker are copied whole, and each
line that names the marker key comes out on its own, with its line number, wherever the
chunks are cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from gitclaw_compress.core.lines import MARKER_BYTES, lines_from_bytes
from gitclaw_compress.ops.restore import _marked_blocks

MARKED = b'{"a":1,' + MARKER_BYTES + b':{"v":2}}'
FILES = {
    "marked in the middle": b'{"a":1}\n' + MARKED + b'\n{"b":2}\n\n' + MARKED + b"\n",
    "marked first and last without newline": MARKED + b'\n{"a":1}\n{"b":2}\n' + MARKED,
    "no marker, no final newline": b'{"a":1}\n{"b":2}',
    "only marked lines": MARKED + b"\n" + MARKED + b"\r\n" + MARKED + b"\n",
    "blank lines only": b"\n\n\n",
    "empty": b"",
}


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("chunk_size", [1, 2, 7, 30, 1 << 20])
def test_blocks_give_back_every_byte_and_each_marked_line(
    tmp_path: Path, name: str, chunk_size: int
) -> None:
    data = FILES[name]
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    blocks = list(_marked_blocks(path, chunk_size))
    rebuilt = b"".join(block + (b"\n" if ends else b"") for block, _, ends in blocks)
    assert rebuilt == data
    marked = [(number, block, ends) for block, number, ends in blocks if ends is not None]
    expected = [
        (line.number, line.data, line.newline)
        for line in lines_from_bytes(data)
        if MARKER_BYTES in line.data
    ]
    assert marked == expected
    # A run of unmarked lines starts where the line count says it does.
    for block, number, ends in blocks:
        if ends is None and block:
            first = data.split(b"\n")[number - 1]
            assert block.startswith(first)
