"""How a dropped payload is kept in the archive: as it was, or with its base64 runs decoded.

A payload is the JSON bytes of one value that a stub replaced. A base64 image in it (a Claude
Code or Copilot CLI image block, a pi image, a Codex data URL) is kept as its decoded bytes,
which git packs a few per cent smaller than the text, and written back as exactly the same
base64 text. A run is decoded only when encoding the decoded bytes again gives the same
bytes (padding, line breaks and all); anything else stays as it was. Every other payload is
stored exactly as it was, as before this form existed, so old archives read unchanged.

The stored form (version 1), a self-describing object that no JSON value can start with:

    MAGIC b"1\n"
    then segments, each a header line and its bytes:
      b"t <n>\n"  + n bytes kept as they were
      b"b <n> <p|u> <width> <-|n|rn>\n" + n decoded bytes: base64 text, padded (`p`) or
          not (`u`), cut into lines of `width` characters (0: one line) joined by a JSON
          escaped line break (`n` for the two bytes `\\n`, `rn` for `\\r\\n`, `-` none)
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator

MAGIC = b"\x00gitclaw-compress payload\x00"
FORM_VERSION = b"1"
# Shorter runs are mostly ids and hashes; the decoded form pays only on images and the like.
MIN_RUN = 1024
_SEPARATORS = {b"-": b"", b"n": b"\\n", b"rn": b"\\r\\n"}
_SEPARATOR_CODE = {value: code for code, value in _SEPARATORS.items()}
# A run of base64 characters, maybe cut into lines (64 or 76 characters in PEM and MIME) by
# JSON-escaped line breaks; the first line is that long at least, so that the words of a
# text are not each a match.
_RUN = re.compile(rb"[A-Za-z0-9+/]{64,}(?:(?:\\r\\n|\\n)[A-Za-z0-9+/]+)*={0,2}")


# Base64's characters as "a", every other byte as " ": a run of 64 "a" is found by
# `bytes.find` ten times faster than the regex finds it in the payload itself.
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_MARKS = bytes(ord("a") if byte in _ALPHABET else ord(" ") for byte in range(256))
_FIRST_LINE = b"a" * 64


class PayloadFormError(ValueError):
    """A stored payload that does not read as its form says (damaged, or a newer form)."""


def stored_form(payload: bytes) -> bytes:
    """What the archive keeps for `payload`: its base64 runs decoded where that gives the
    same bytes back, else the payload itself."""
    if payload.startswith(MAGIC):  # no JSON value does; still, it must read back as itself
        return b"".join([MAGIC, FORM_VERSION, b"\n", b"t %d\n" % len(payload), payload])
    if len(payload) < MIN_RUN:
        return payload
    view = memoryview(payload)  # the kept text is joined from views: no copy of it first
    segments: list[bytes | memoryview] = []
    kept_from = 0
    decoded_any = False
    for match in _runs(payload):
        first = match.start()
        if payload[first - 1 : first] == b"\\":  # the letter of an escape (`\\n`) is no base64
            first += 1
        for start, end, header, data in _decoded_runs(payload, first, match.end()):
            if start > kept_from:
                segments.append(b"t %d\n" % (start - kept_from))
                segments.append(view[kept_from:start])
            segments.append(header)
            segments.append(data)
            kept_from = end
            decoded_any = True
    if not decoded_any:
        return payload
    if kept_from < len(payload):
        segments.append(b"t %d\n" % (len(payload) - kept_from))
        segments.append(view[kept_from:])
    stored = b"".join([MAGIC, FORM_VERSION, b"\n", *segments])
    segments.clear()
    try:  # never keep a form that does not give the payload back
        if _gives_back(stored, payload):
            return stored
    except PayloadFormError:
        pass
    return payload


# A payload of many MB is searched for base64 and compared in windows of this size, so that
# storing it never holds a second copy of it besides its stored form.
WINDOW = 1 << 20


def _runs(payload: bytes) -> Iterator[re.Match[bytes]]:
    """`_RUN`'s matches in `payload`, tried only where 64 base64 characters start."""
    if len(payload) <= WINDOW:
        marks = payload.translate(_MARKS)
        at = marks.find(_FIRST_LINE)
        while at >= 0:
            match = _RUN.match(payload, at)
            assert match is not None  # 64 base64 characters start here
            yield match
            at = marks.find(_FIRST_LINE, match.end())
        return
    # Windows of WINDOW start positions, each translated once with the first line less one
    # byte after it, so that a run across the edge is found in the window it starts in.
    reach = WINDOW + len(_FIRST_LINE) - 1
    start, marks = 0, payload[:reach].translate(_MARKS)
    at = 0
    while at < len(payload):
        if at >= start + WINDOW:
            start, marks = at, payload[at : at + reach].translate(_MARKS)
        found = marks.find(_FIRST_LINE, at - start)
        if found < 0:
            at = start + WINDOW
            continue
        match = _RUN.match(payload, start + found)
        assert match is not None  # 64 base64 characters start here
        yield match
        at = match.end()


def _gives_back(stored: bytes, payload: bytes) -> bool:
    """Whether `original_form(stored) == payload`, compared piece by piece in windows."""
    at = 0
    for piece in _pieces(stored):
        size = len(piece)
        if at + size > len(payload):
            return False
        for offset in range(0, size, WINDOW):
            part = bytes(piece[offset : offset + WINDOW])
            if payload[at + offset : at + offset + len(part)] != part:
                return False
        at += size
    return at == len(payload)


def original_form(stored: bytes) -> bytes:
    """The payload that `stored` keeps (a payload stored as it was comes back as it is)."""
    if not stored.startswith(MAGIC):
        return stored
    return b"".join(_pieces(stored))


def _pieces(stored: bytes) -> Iterator[bytes | memoryview]:
    """The payload's pieces, in order, that a stored form (it starts with MAGIC) keeps: text
    kept as it was (a view of `stored`) and base64 encoded again."""
    view = memoryview(stored)
    at = len(MAGIC)
    version, at = _header(stored, at)
    if version != FORM_VERSION:
        raise PayloadFormError(
            f"an archived payload is in form {version.decode('ascii', 'replace')!r}, newer "
            "than this gitclaw-compress reads; upgrade it"
        )
    while at < len(stored):
        line, at = _header(stored, at)
        fields = line.split(b" ")
        if len(fields) < 2 or not fields[1].isdigit():
            raise PayloadFormError(f"a damaged archived payload: segment header {line[:40]!r}")
        size = int(fields[1])
        if at + size > len(stored):
            raise PayloadFormError("a damaged archived payload: a segment runs past its end")
        data = view[at : at + size]
        at += size
        if fields[0] == b"t" and len(fields) == 2:
            yield data
        elif fields[0] == b"b" and len(fields) == 5:
            yield _encoded(data, fields[2], fields[3], fields[4])
        else:
            raise PayloadFormError(f"a damaged archived payload: segment header {line[:40]!r}")


def _header(stored: bytes, at: int) -> tuple[bytes, int]:
    end = stored.find(b"\n", at)
    if end < 0:
        raise PayloadFormError("a damaged archived payload: a header line has no end")
    return stored[at:end], end + 1


def _encoded(data: bytes | memoryview, padding: bytes, width: bytes, separator: bytes) -> bytes:
    if padding not in (b"p", b"u") or not width.isdigit() or separator not in _SEPARATORS:
        raise PayloadFormError("a damaged archived payload: a base64 segment header")
    text = base64.b64encode(data)
    if padding == b"u":
        text = text.rstrip(b"=")
    columns = int(width)
    if not columns:
        return text
    return _SEPARATORS[separator].join(
        text[at : at + columns] for at in range(0, len(text), columns)
    )


def _decoded_runs(payload: bytes, start: int, end: int) -> list[tuple[int, int, bytes, bytes]]:
    """(start, end, segment header, decoded bytes) of the base64 in payload[start:end]: the
    whole run if it reads as one base64 text, cut into lines or not, else each of its lines
    that does on its own."""
    run = payload[start:end]
    if len(run) < MIN_RUN:
        return []
    separator = b"\\r\\n" if b"\\r\\n" in run else b"\\n" if b"\\n" in run else b""
    whole = _decoded(run, separator)
    if whole is not None:
        return [(start, end, *whole)]
    if separator:  # text may follow the base64 on the next line
        cut = run.rfind(separator)
        head = _decoded(run[:cut], separator)
        if head is not None:
            return [(start, start + cut, *head)]
    found = []
    at = 0
    for line in (separator and run.split(separator)) or [run]:
        decoded = _decoded(line, b"")
        if decoded is not None:
            found.append((start + at, start + at + len(line), *decoded))
        at += len(line) + len(separator)
    return found


def _decoded(run: bytes, separator: bytes) -> tuple[bytes, bytes] | None:
    """The segment header and decoded bytes of one base64 text, if encoding them again gives
    exactly `run` (cut into equal lines by `separator`); None otherwise."""
    if len(run) < MIN_RUN:
        return None
    lines = run.split(separator) if separator else [run]
    width = len(lines[0]) if len(lines) > 1 else 0
    if width and (
        width % 4
        or any(len(line) != width for line in lines[:-1])
        or not 0 < len(lines[-1]) <= width
    ):
        return None
    text = b"".join(lines)
    padded = text.endswith(b"=") or len(text) % 4 == 0
    if len(text) % 4 == 1 or (padded and len(text) % 4):
        return None
    try:
        data = base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    padding = b"p" if padded else b"u"
    code = _SEPARATOR_CODE[separator]
    if _encoded(data, padding, b"%d" % width, code) != run:
        return None  # not canonical (stray bits in the last character): keep it as it was
    return b"b %d %s %d %s\n" % (len(data), padding, width, code), data


def text_to_scan(stored: bytes) -> bytes:
    """The payload, for a secrets scan; the stored bytes themselves if they do not read (a
    damaged object is `verify`'s finding, not the scan's)."""
    try:
        return original_form(stored)
    except PayloadFormError:
        return stored
