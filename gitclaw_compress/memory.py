"""Memory for sessions with a huge line: blocks of a MB or more go back to the system when
they are freed.

glibc's malloc serves a block below its mmap threshold from the heap, and raises that
threshold (up to 32 MiB) each time a larger mapped block is freed. A huge line's copies (its
bytes read in 1 MiB chunks, payloads, a value's JSON) then land in the heap, and what they
leave free there stays resident: the next huge copy adds to it instead of reusing it. Once a
run meets a file that may hold such a line, the threshold is fixed at 1 MiB (each such block
is then a mapping of its own, returned when freed) and what the heap holds free is handed
back. Ordinary sessions never get here; without glibc nothing changes.
"""

from __future__ import annotations

from typing import Any

M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)
MAPPED_FROM = 1 << 20  # bytes: blocks this large get a mapping of their own

_libc: Any = None  # glibc, once looked for; False when it is not there
_huge_line_read = False


def huge_line_read() -> bool:
    """Whether this run has read a line of HUGE_LINE bytes or more: until it does, nothing
    looks for values of many MB (a walk that ordinary sessions need not pay for)."""
    return _huge_line_read


def _glibc() -> Any:
    global _libc
    if _libc is None:
        _libc = False
        try:
            import ctypes

            libc = ctypes.CDLL("libc.so.6")
            if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim"):
                _libc = libc
        except OSError:
            pass
    return _libc


def for_huge_lines() -> None:
    """Map large blocks on their own from now on, and give back the heap's free memory."""
    global _huge_line_read
    _huge_line_read = True
    libc = _glibc()
    if libc:
        libc.mallopt(M_MMAP_THRESHOLD, MAPPED_FROM)
        libc.malloc_trim(0)
