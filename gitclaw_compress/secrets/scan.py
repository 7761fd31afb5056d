"""Scan session lines and archive objects: every JSON string value, decoded, one by one.

Keys are not scanned, nor the values a format says cannot hold a secret a person typed or a
tool printed (ids, signatures, encrypted reasoning, base64 images). A line that does not
parse is scanned as one text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from gitclaw_compress.core.jsonspan import JsonPath
from gitclaw_compress.core.lines import MARKER_KEY, RawLine, iter_lines, lines_from_bytes
from gitclaw_compress.formats.base import Format
from gitclaw_compress.secrets.assignments import RULE, as_member, cached_secret_name
from gitclaw_compress.secrets.cleanlines import unmarked
from gitclaw_compress.secrets.engine import MIN_VALUE, Hit, scan_values
from gitclaw_compress.secrets.findings import Finding, mask, secret_hash

# (line number, path, sealed): where a value was found
Where = tuple[int, JsonPath, bool]


def skip_rules_digest() -> str:
    """A digest of what each format skips or seals: `engine.SKIP_RULES` must equal it."""
    import hashlib

    from gitclaw_compress.formats import registry

    text = "".join(
        f"{name}:{sorted(getattr(fmt, 'secret_free_keys', ()))}:"
        f"{sorted(getattr(fmt, 'secret_sealed_keys', ()))};"
        for name, fmt in sorted(registry().items())
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def string_values(
    value: Any, path: JsonPath = (), shortest: int = 0
) -> Iterator[tuple[JsonPath, str]]:
    """Every string value under `value` of at least `shortest` characters, with its JSON path
    (object keys are not values), in document order. A stack of member iterators, not
    recursion: a value may be nested as deep as JSON allows. A path is built only for a
    container or a string it yields (most members are short strings, numbers or flags)."""
    if not isinstance(value, dict | list):
        if isinstance(value, str) and len(value) >= shortest:
            yield path, value
        return
    stack: list[tuple[JsonPath, Iterator[tuple[Any, Any]]]] = [(path, _members(value))]
    while stack:
        here, members = stack[-1]
        for key, child in members:
            if isinstance(child, str):
                if len(child) >= shortest and not (key == MARKER_KEY and here == ()):
                    yield (*here, key), child
            elif key == MARKER_KEY and here == ():
                continue  # the marker: ids and hashes
            elif isinstance(child, dict):
                stack.append(((*here, key), iter(child.items())))
                break
            elif isinstance(child, list):
                stack.append(((*here, key), enumerate(child)))
                break
        else:
            stack.pop()


def _members(value: dict[str, Any] | list[Any]) -> Iterator[tuple[Any, Any]]:
    return iter(value.items()) if isinstance(value, dict) else enumerate(value)


JSON_STEP = "(json)"  # a path step: the string before it holds JSON, decoded here
JSON_DEPTH = 4  # JSON inside a string inside … decoded this many times at most


def _inner_json(text: str) -> Any:
    """The object or array a string value holds (a Codex `function_call`'s arguments, a
    tool input stored serialized), or None."""
    # The first and last characters that are not blank, without a stripped copy of the text
    # (a tool output of many MB ends in a newline): looked for at its ends first.
    head = text[:64].lstrip()[:1] or text.lstrip()[:1]
    if head not in ("{", "["):
        return None
    tail = text[-64:].rstrip()[-1:] or text.rstrip()[-1:]
    if tail not in ("}", "]"):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict | list) else None


def value_strings(value: Any) -> Iterator[tuple[JsonPath, str]]:
    """`string_values`, and where a string holds JSON, the strings of that JSON instead,
    their paths continued by a `(json)` step; a string the scan would read."""
    pending: list[tuple[JsonPath, Any, int]] = [((), value, 0)]
    while pending:
        base, node, depth = pending.pop()
        for path, text in string_values(node, base, shortest=MIN_VALUE):
            inner = _inner_json(text) if depth < JSON_DEPTH else None
            if inner is None:
                yield path, text
            else:
                pending.append(((*path, JSON_STEP), inner, depth + 1))


def _line_values(
    lines: Iterable[RawLine], fmt: Format | None, ids: dict[int, str], members: list[Hit[Where]]
) -> Iterator[tuple[Place, str]]:
    """Every string the scan reads in the lines (`value_strings` of each parsed line, in its
    order, less what the format skips), keyed by its `Place`. One loop over a stack rather
    than generators per level and a path per string: the path is built only for a finding."""
    # What every format's `secret_scope` decides from (formats/base.py), read once here.
    free: frozenset[str] = getattr(fmt, "secret_free_keys", frozenset())
    sealed_keys: frozenset[str] = getattr(fmt, "secret_sealed_keys", frozenset())
    secret_key = cached_secret_name
    for line in lines:
        number = line.number
        try:
            entry = orjson.loads(line.data)
        except orjson.JSONDecodeError:  # read as text, less a marker (as a parsed line)
            yield (number, (), None, False), unmarked(line.data).decode("utf-8", "replace")
            continue
        if isinstance(entry, str):
            if len(entry) >= MIN_VALUE:
                inner = _inner_json(entry)
                if inner is None:
                    if fmt is None or not _skipped(free, "", entry):
                        yield (number, (), None, False), entry
                    continue
                # the line is a string holding JSON: its strings, in the string's scope
                pending: list[Frame] = [(number, (JSON_STEP,), inner, 1, "", False)]
            else:
                continue
        else:
            if fmt is not None and isinstance(entry, dict):
                entry_id = fmt.entry_id(entry)
                if entry_id:
                    ids[number] = entry_id
            if not isinstance(entry, dict | list):
                continue
            pending = [(number, (), entry, 0, None, False)]
        while pending:
            yield from _frame_values(
                pending, fmt is not None, free, sealed_keys, secret_key, members
            )


# (line number, path of the container, key in it (None: the line is the string), sealed)
Place = tuple[int, JsonPath, Any, bool]
# (line number, path, node, depth of JSON in strings, the holder's key or None, sealed)
Frame = tuple[int, JsonPath, Any, int, str | None, bool]


def place_where(place: Place) -> Where:
    number, here, key, sealed = place
    return (number, here if key is None else (*here, key), sealed)


def _skipped(free: frozenset[str], key: str, text: str) -> bool:
    return key in free or text.startswith("data:image/")


def _frame_values(
    pending: list[Frame],
    scoped: bool,
    free: frozenset[str],
    sealed_keys: frozenset[str],
    secret_key: Callable[[str], bool],
    members: list[Hit[Where]],
) -> Iterator[tuple[Place, str]]:
    """The strings of the last frame of `pending` (a parsed line, or JSON a string held), in
    document order; JSON found in them is pushed as new frames, read after this one (as
    `value_strings` does). What `Format.secret_scope` decides, kept per container as the
    walk goes down: the last key on the path, and whether a sealed key is on it. Inside JSON
    held by a string, the holder's scope holds for every string. Kept whole: it is the
    walk every string of a scanned line passes through, and a helper per string or
    container would add a call for each string of the file."""
    number, base, node, depth, holder, holder_sealed = pending.pop()
    shortest = MIN_VALUE
    inner_depth = depth < JSON_DEPTH
    # (path, members, last key on the path, sealed): the containers being read
    stack: list[tuple[JsonPath, Iterator[tuple[Any, Any]], str, bool]] = [
        (base, _members(node), holder or "", holder_sealed)
    ]
    top = base if depth == 0 else None  # where the marker is skipped: the line's own top
    while stack:
        here, items, last, sealed = stack[-1]
        for key, child in items:
            if isinstance(child, str):
                if len(child) < shortest or (key == MARKER_KEY and here == top):
                    continue
                named = isinstance(key, str)
                first = child[0]
                # JSON only where the first character is a bracket or a blank
                if inner_depth and (first in "{[" or first.isspace()):
                    inner = _inner_json(child)
                    if inner is not None:
                        path = (*here, key, JSON_STEP)
                        if holder is None:
                            scope_key = key if named else last
                            scope_sealed = sealed or (named and key in sealed_keys)
                        else:
                            scope_key, scope_sealed = holder, holder_sealed
                        pending.append((number, path, inner, depth + 1, scope_key, scope_sealed))
                        continue
                if holder is None:
                    scope_key = key if named else last
                    child_sealed = sealed or (named and key in sealed_keys)
                else:
                    scope_key, child_sealed = holder, holder_sealed
                if scoped and (
                    scope_key in free or (first == "d" and child.startswith("data:image/"))
                ):
                    continue  # with no format (an archive payload) every string is read
                place = (number, here, key, child_sealed)
                if named and secret_key(key):
                    secret = as_member(key, child)
                    if secret is not None:
                        members.append(Hit(place_where(place), RULE, secret))
                yield place, child
            elif key == MARKER_KEY and here == top:
                continue  # the marker: ids and hashes
            elif isinstance(child, dict | list):
                named = isinstance(key, str)
                stack.append(
                    (
                        (*here, key),
                        _members(child),
                        key if named else last,
                        sealed or (named and key in sealed_keys),
                    )
                )
                break
        else:
            stack.pop()


def scan_lines(
    lines: Iterable[RawLine],
    fmt: Format | None,
    file: str,
    obj: str = "",
    repeats: Mapping[int, int] | None = None,
) -> list[Finding]:
    """The findings in the lines of one session file (or one archived version of it).
    `repeats`: line number -> an earlier line of `lines` with the same bytes, filled as
    `lines` is read; such a line was left out of `lines` and gets that line's findings."""
    ids: dict[int, str] = {}
    members: list[Hit[Where]] = []
    hits = [
        Hit(place_where(hit.key), hit.rule, hit.secret)
        for hit in scan_values(_line_values(lines, fmt, ids, members))
    ]
    found = {(hit.key, hit.secret) for hit in hits}
    hits += [hit for hit in members if (hit.key, hit.secret) not in found]
    if repeats:
        hits += _repeated(hits, repeats, ids)
    hits.sort(key=lambda hit: hit.key[0])
    return [
        Finding(
            file=file,
            line=hit.key[0],
            entry=ids.get(hit.key[0], f"L{hit.key[0]}"),
            path=hit.key[1],
            rule=hit.rule,
            hash=secret_hash(hit.secret),
            masked=mask(hit.secret),
            sealed=hit.key[2],
            object=obj,
            secret=hit.secret,
        )
        for hit in hits
    ]


def _repeated(
    hits: list[Hit[Where]], repeats: Mapping[int, int], ids: dict[int, str]
) -> list[Hit[Where]]:
    """The hits of each repeated line: those of the line it repeats, on its own number (and
    that line's entry id: the same bytes hold the same id)."""
    by_line: dict[int, list[Hit[Where]]] = {}
    for hit in hits:
        by_line.setdefault(hit.key[0], []).append(hit)
    copies = []
    for number, earlier in repeats.items():
        if earlier in ids:
            ids[number] = ids[earlier]
        for hit in by_line.get(earlier, ()):
            copies.append(Hit((number, hit.key[1], hit.key[2]), hit.rule, hit.secret))
    return copies


def scan_file(path: Path, file: str, fmt: Format | None) -> list[Finding]:
    with open(path, "rb") as handle:
        return scan_lines(iter_lines(handle), fmt, file)


def scan_blob(data: bytes, oid: str, session: bool) -> list[Finding]:
    """An archived object: a whole session version (`session`), or one payload (a JSON value
    cut from a line, scanned with no format: a payload has no line of its own)."""
    name = f"archive:{oid[:12]}"
    if session:
        from gitclaw_compress.errors import GitClawError
        from gitclaw_compress.formats import detect

        lines = lines_from_bytes(data)
        try:
            fmt: Format | None = detect(lines, name)
        except GitClawError:
            fmt = None
        return scan_lines(lines, fmt, name, oid)
    return scan_lines([RawLine(1, data, False)], None, name, oid)
