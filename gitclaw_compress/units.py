"""One way to print sizes, counts and changes, for every command and the Action.

Humans read sizes as "804.1 KB" (1 KB = 1024 bytes); JSON always carries plain bytes. A
leaf: formatting only (the size of a file before compression is core/marker.py's).
"""

from __future__ import annotations


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def plural(count: int, noun: str) -> str:
    """ "1 line", "2 lines", "1,024 lines"."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def size_change(before: int, after: int) -> str:
    """The change in size as a signed percentage, never "-0.0%": "-54.3%", "0%", "+0.1%"."""
    if not before or before == after:
        return "0%"
    text = f"{(after - before) / before:+.1%}"
    if text in ("+0.0%", "-0.0%"):
        return "-<0.1%" if after < before else "+<0.1%"
    return text
