"""The detection library behind `scan`: Kingfisher's rules (MongoDB's Rust engine, with the
Betterleaks/gitleaks rule sets: provider-specific patterns with entropy and confidence).

Decoded string values are fed in batches (one native call per ~1 MB, not one per value), and a
value longer than a window is cut into overlapping windows, so a multi-megabyte tool output
costs what its bytes cost. The engine is built on first use only: a file without a string
value never loads it.
"""

from __future__ import annotations

import bisect
import functools
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic, TypeVar

from gitclaw_compress.errors import GitClawError

Key = TypeVar("Key")

BATCH_BYTES = 1 << 20  # one native call per this many bytes of values
WINDOW = 1 << 20  # a longer value is scanned in windows of this size …
OVERLAP = 8192  # … that overlap by this much (a private key block fits)
PART = 1 << 18  # characters of a long value encoded at a time
SMALL = WINDOW // 4  # a value of at most this many characters fits a window (4 bytes each)
SEPARATOR = b"\n\n\x00\n\n"  # between values in a batch: no rule crosses a NUL line
MIN_VALUE = 8  # a shorter string holds no secret that any rule reports
CONFIDENCE: Final = "medium"  # Kingfisher's default: provider rules and strong generic ones
REDACTED = "[REDACTED:"  # what `redact` leaves in place of a secret
CACHE_ENV = "GITCLAW_COMPRESS_RULE_CACHE"  # where the compiled rules are cached
ENGINE_PACKAGE = "kingfisher-secret-scanner"
# What `scan` skips or seals per format (`secret_free_keys`, `secret_sealed_keys`, the
# `data:image/` rule): tests/test_secrets_cache.py checks it against the formats, so that a
# change there changes `scan_key` and no line scanned under the old rules counts as clean.
SKIP_RULES = "616d535552a7"
SCAN_VERSION = 2  # of how values are read and fed to the engine (2: JSON in strings, own rules)


@dataclass(frozen=True, slots=True)
class Hit(Generic[Key]):
    """One secret the engine found in the value filed under `key`."""

    key: Key
    rule: str
    secret: str


_scanner: Any = None  # the engine's own rules and ours: what decides
_light_scanner: Any = None  # candidates (the same patterns, no filters) and ours: what is fast
_loading = threading.Lock()  # the scan thread loads the rules while the run compresses
CANDIDATE = "custom.candidate-"  # the id of a candidate rule, then its number
CANDIDATES_FORMAT = 2  # of the candidate file `_candidate_rules` writes (2: `CHEAPER`)
# Two engine patterns take 1.7 s of the candidates' 2.8 s compile (a span of up to 1,000 and
# 2,048 characters). Their candidates are a part that every match of the pattern holds, so
# whatever the engine's rule matches, the candidate still matches (more values may go to the
# engine's rules, never fewer); each stands only for the pattern whose digest is written here.
CHEAPER: Final = {
    # (?i)(?:\bkind:…secret…(?s:.){0,1000}?\bdata:…|\bdata:…(?s:.){0,1000}?\bkind:…secret…):
    # either order holds `kind:` then `secret`
    "36d52f469b20973f": r"""(?i)\bkind:[ \t]*["']?\b(secret)\b""",
    # …TOKEN\b["']?\s*(?:=|:)\s*["']?([A-Za-z0-9/+=._-]{16,2048})(?:["'\s,;}]|$): the first 16
    "2f5dbcc4162dfa44": r"""(?x)\b(?i:AWS[_-]?(?:SESSION|SECURITY)[_-]?TOKEN)\b["']?\s*"""
    r"""(?:=|:)\s*["']?([A-Za-z0-9/+=._-]{16})""",
}


def _sdk() -> Any:
    try:
        import kingfisher_sdk
    except ImportError:  # pragma: no cover - a dependency of the package
        raise GitClawError(
            "the secret scanner (kingfisher-secret-scanner) is not installed; "
            "reinstall gitclaw-compress"
        ) from None
    return kingfisher_sdk


def _engine() -> Any:
    """The engine's rules (provider patterns with their filters, 0.25 to 0.45 s of CPU to
    load) and ours: loaded only for the values a candidate rule matched."""
    global _scanner
    with _loading:
        if _scanner is None:
            sdk = _sdk()
            cache = os.environ.get(CACHE_ENV) or None
            rules = sdk.Rules([_own_rules(cache)], confidence=CONFIDENCE, cache_dir=cache)
            _scanner = sdk.Scanner(rules, base64=False)
        return _scanner


def light_loaded() -> bool:
    """Whether `_light` has its scanner (a thread may be loading it now)."""
    return _light_scanner is not None


def _light() -> Any:
    """Every engine rule's pattern as a custom rule without its filters or entropy floor (a
    candidate: whatever the engine's rule finds, its candidate matches too), and ours. Custom
    rules load in a few hundredths of a second where the engine's take 0.25 to 0.45 s.

    The first run on a machine (no candidate file yet) compiles the engine's rules to read
    their patterns: that run reads every value with them (what the two stages give by
    design) and writes the candidate file, and does not compile the candidates as well (1.2
    s more); the next run does, once."""
    global _light_scanner, _scanner
    with _loading:
        if _light_scanner is None:
            sdk = _sdk()
            cache = os.environ.get(CACHE_ENV) or None
            own = _own_rules(cache)
            if not _candidate_path(cache).exists():
                rules = sdk.Rules([own], confidence=CONFIDENCE, cache_dir=cache)
                _candidate_rules(rules, cache)
                _scanner = _light_scanner = sdk.Scanner(rules, base64=False)
                return _light_scanner
            candidates = _candidate_path(cache)
            files = [own, candidates]
            rules = sdk.Rules(files, builtins=False, confidence=CONFIDENCE, cache_dir=cache)
            _light_scanner = sdk.Scanner(rules, base64=False)
            _write_once(_compiled_mark(candidates), b"")
        return _light_scanner


def _compiled_mark(candidates: Path) -> Path:
    """Left beside the candidate file once a run compiled it (what the wait line goes by)."""
    return candidates.with_name(candidates.name + ".compiled")


ENGINE_COMPILE = 3.5  # s of CPU to compile the engine's rules (bench/speed_scan.py)
CANDIDATES_COMPILE = 1.5  # s of CPU to compile the candidates, the next run


def compile_ahead() -> float:
    """The CPU seconds loading the rules will take to compile them: the engine's on the
    first run on a machine (or in a new cache folder), the candidates on the next, else 0."""
    if _light_scanner is not None:
        return 0.0
    candidates = _candidate_path(os.environ.get(CACHE_ENV) or None)
    if not candidates.exists():
        return ENGINE_COMPILE
    return 0.0 if _compiled_mark(candidates).exists() else CANDIDATES_COMPILE


def first_load() -> bool:
    """Whether this run compiles the engine's rules (the first run on a machine)."""
    return compile_ahead() == ENGINE_COMPILE


def _rule_folder(cache: str | None) -> Path:
    """Where our rule files go: beside the engine's compiled rules (which the Action caches)."""
    if cache:
        return Path(cache)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kingfisher" / "gitclaw-compress"


def _write_once(path: Path, data: bytes) -> Path:
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temp.write_bytes(data)
        os.replace(temp, path)
    return path


def _own_rules(cache: str | None) -> Path:
    """Our rule file (`assignments.RULES_YAML`), named by its digest."""
    import hashlib

    from gitclaw_compress.secrets.assignments import RULES_YAML

    text = RULES_YAML.encode()
    name = f"rules-{hashlib.sha256(text).hexdigest()[:12]}.yml"
    return _write_once(_rule_folder(cache) / name, text)


def _candidate_path(cache: str | None) -> Path:
    name = f"candidates-{engine_version()}-{CONFIDENCE}-{CANDIDATES_FORMAT}.yml"
    return _rule_folder(cache) / name


def candidate_pattern(pattern: str) -> str:
    """The candidate for an engine rule's pattern: the pattern, or its `CHEAPER` part."""
    import hashlib

    return CHEAPER.get(hashlib.sha256(pattern.encode()).hexdigest()[:16], pattern)


def _candidate_rules(catalog: Any, cache: str | None) -> Path:
    """The candidate file for the installed engine and confidence, from `catalog` (the
    engine's rules, loaded by the first run). JSON, which is YAML."""
    import orjson

    rules = []
    number = 0
    for meta in catalog.metadata():
        if meta["id"].startswith("custom."):
            continue  # ours: in their own file
        detail = catalog.detail(meta["id"])
        rules.append(
            {
                "name": f"candidate for {meta['id']}",
                "id": f"{CANDIDATE}{number}",
                "pattern": candidate_pattern(detail["pattern"]),
                "min_entropy": 0.0,
                "confidence": "high",
            }
        )
        number += 1
    return _write_once(_candidate_path(cache), orjson.dumps({"rules": rules}))


@functools.cache  # asked once per session record by a no-op pass: the install does not change
def engine_version() -> str:
    """The installed engine's version, read from its metadata without loading it."""
    from importlib.util import find_spec

    spec = find_spec("kingfisher_sdk")
    if spec is not None and spec.origin is not None:
        site = Path(spec.origin).parent.parent
        prefix = ENGINE_PACKAGE.replace("-", "_") + "-"
        for entry in site.glob(prefix + "*.dist-info"):
            return entry.name[len(prefix) : -len(".dist-info")]
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(ENGINE_PACKAGE)
    except PackageNotFoundError:
        return "none"


def scan_key() -> str:
    """What a line's findings depend on besides its bytes: the engine and its rules, the
    confidence, and what is skipped. A record of clean lines holds only under the same key."""
    from gitclaw_compress import __version__

    return (
        f"gitclaw-compress {__version__} scan {SCAN_VERSION} {ENGINE_PACKAGE} "
        f"{engine_version()} confidence {CONFIDENCE} min {MIN_VALUE} skip {SKIP_RULES}"
    )


def rule_name(rule_id: str) -> str:
    """`betterleaks.github-pat` -> `github-pat`: the short name findings and markers show."""
    return rule_id.rsplit(".", 1)[-1].rsplit("/", 1)[-1]


def _pieces(key: Key, value: str) -> Iterator[tuple[Key, bytes]]:
    """The value's UTF-8 bytes, in windows of WINDOW bytes that overlap by OVERLAP. A value
    of more than WINDOW characters is encoded a part at a time, never whole (a tool output of
    many MB would be a second copy of it): the same windows."""
    if len(value) <= WINDOW:
        data = value.encode("utf-8", "surrogatepass")
        if len(data) <= WINDOW:
            yield key, data
            return
        start = 0
        while start < len(data):
            yield key, data[start : start + WINDOW]
            if start + WINDOW >= len(data):
                return
            start += WINDOW - OVERLAP
        return
    buffer = b""  # the bytes from the next window's start on
    at = 0  # characters encoded so far
    while True:
        while len(buffer) < WINDOW and at < len(value):
            buffer += value[at : at + PART].encode("utf-8", "surrogatepass")
            at += PART
        if at >= len(value) and len(buffer) <= WINDOW:
            yield key, buffer
            return
        yield key, buffer[:WINDOW]
        buffer = buffer[WINDOW - OVERLAP :]


def _own(chunk: bytes, start: int, finding: Any) -> bool:
    """A candidate of one of our rules, decided by `assignments.confirmed` on the text
    before it in its value."""
    from gitclaw_compress.secrets.assignments import CONTEXT, confirmed

    at = finding.location["start_offset"] - start
    before = chunk[max(at - 4 * CONTEXT, 0) : at].decode("utf-8", "replace")
    return confirmed(finding.rule_id, before, finding.secret)


def scan_values(values: Iterable[tuple[Key, str]]) -> list[Hit[Key]]:
    """Every secret in the values, each (key, rule, secret) once. Two stages: the candidate
    rules and ours read every value (`_light`); only the values where a candidate matched
    are read again by the engine's own rules (`_engine`, loaded then), which decide. A value
    no candidate matches holds nothing the engine's rules would report, so the findings are
    the engine's, and the cost of its load is paid only where one may be."""
    again: list[tuple[Key, str]] = []
    hits = _scan(values, _light, again)
    if not again:
        return hits
    # (a value longer than a batch may have had hits of ours reported before its candidate)
    decided = {key for key, _ in again}
    return [hit for hit in hits if hit.key not in decided] + _scan(again, _engine, None)


def _scan(
    values: Iterable[tuple[Key, str]], scanner: Any, again: list[tuple[Key, str]] | None
) -> list[Hit[Key]]:
    """One stage of `scan_values`. With `again` (the candidate stage), a value where a
    candidate matched goes there whole, and this stage reports nothing of it. Kept whole: it
    is the scan's hot loop (every string of every line passes here), and `flush` shares its
    batch and counters by closure, which a split would turn into calls and arguments."""
    hits: list[Hit[Key]] = []
    seen: set[tuple[Key, str, str]] = set()
    batch: list[tuple[Key, bytes, str]] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if not batch:
            return
        chunks = [data for _, data, _value in batch]
        found = scanner().scan(SEPARATOR.join(chunks))
        if not found:  # the usual case: no offsets to place anything by
            batch.clear()
            size = 0
            return
        starts: list[int] = []
        offset = 0
        for data in chunks:
            starts.append(offset)
            offset += len(data) + len(SEPARATOR)
        placed = []
        later: set[int] = set()  # batch entries whose value goes to the engine's rules
        for f in found:
            if not f.secret or REDACTED in f.secret:  # our own marker is not a secret
                continue
            index = max(bisect.bisect_right(starts, f.location["start_offset"]) - 1, 0)
            if f.rule_id.startswith(CANDIDATE):
                later.add(index)
                continue
            if f.rule_id.startswith("custom.") and not _own(chunks[index], starts[index], f):
                continue
            placed.append((index, f))
        if again is not None and later:
            moved = {id(batch[index][2]) for index in later}
            for key, _data, value in batch:
                if id(value) in moved and not (again and again[-1][1] is value):
                    again.append((key, value))
            placed = [(i, f) for i, f in placed if id(batch[i][2]) not in moved]
        keyed = [(batch[index][0], f) for index, f in placed]
        # A helper rule (an AWS secret key) counts next to a visible finding in its value.
        shown = {key for key, finding in keyed if finding.visible}
        # a secret a provider rule names is not reported again by our generic rules
        named = {(key, f.secret) for key, f in keyed if not f.rule_id.startswith("custom.")}
        for key, finding in keyed:
            if key not in shown:
                continue
            if finding.rule_id.startswith("custom.") and (key, finding.secret) in named:
                continue
            marker = (key, finding.rule_id, finding.secret)
            if marker in seen:
                continue
            seen.add(marker)
            hits.append(Hit(key, rule_name(finding.rule_id), finding.secret))
        batch.clear()
        size = 0

    for key, value in values:
        length = len(value)
        if length < MIN_VALUE:
            continue
        if length <= SMALL:  # most values: one piece, without `_pieces`
            data = value.encode("utf-8", "surrogatepass")
            batch.append((key, data, value))
            size += len(data)
            if size >= BATCH_BYTES:
                flush()
            continue
        for piece_key, data in _pieces(key, value):
            batch.append((piece_key, data, value))
            size += len(data)
            if size >= BATCH_BYTES:
                flush()
    flush()
    return hits
