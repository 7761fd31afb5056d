"""The detection library behind `scan`: Kingfisher's rules (MongoDB's Rust engine, with the
Betterleaks/gitleaks rule sets: provider-specific patterns with entropy and confidence).

Decoded string values are fed in batches (one native call per ~1 MB, not one per value), and a
value longer than a window is cut into overlapping windows, so a multi-megabyte tool output
costs what its bytes cost. The engine is built on first use only: a file without a string
value never loads it.
"""

from __future__ import annotations

import bisect
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


_scanner: Any = None
_loading = threading.Lock()  # the scan thread loads the rules while the run compresses


def _engine() -> Any:
    global _scanner
    with _loading:
        if _scanner is not None:
            return _scanner
        try:
            from kingfisher_sdk import Rules, Scanner
        except ImportError:  # pragma: no cover - a dependency of the package
            raise GitClawError(
                "the secret scanner (kingfisher-secret-scanner) is not installed; "
                "reinstall gitclaw-compress"
            ) from None
        cache = os.environ.get(CACHE_ENV) or None
        rules = Rules([_own_rules(cache)], confidence=CONFIDENCE, cache_dir=cache)
        _scanner = Scanner(rules, base64=False)
        return _scanner


def _own_rules(cache: str | None) -> Path:
    """Our rule file (`assignments.RULES_YAML`), written once where the compiled rules are
    cached, named by its digest."""
    import hashlib

    from gitclaw_compress.secrets.assignments import RULES_YAML

    text = RULES_YAML.encode()
    if cache:
        folder = Path(cache)
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        folder = Path(base) / "gitclaw-compress"
    path = folder / f"rules-{hashlib.sha256(text).hexdigest()[:12]}.yml"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        temp.write_bytes(text)
        os.replace(temp, path)
    return path


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


def _own(chunk: bytes, start: int, finding: Any) -> bool:
    """A candidate of one of our rules, decided by `assignments.confirmed` on the text
    before it in its value."""
    from gitclaw_compress.secrets.assignments import CONTEXT, confirmed

    at = finding.location["start_offset"] - start
    before = chunk[max(at - 4 * CONTEXT, 0) : at].decode("utf-8", "replace")
    return confirmed(finding.rule_id, before, finding.secret)


def scan_values(values: Iterable[tuple[Key, str]]) -> list[Hit[Key]]:
    """Every secret in the values, each (key, rule, secret) once, in input order."""
    hits: list[Hit[Key]] = []
    seen: set[tuple[Key, str, str]] = set()
    batch: list[tuple[Key, bytes]] = []
    size = 0

    def flush() -> None:
        nonlocal size
        if not batch:
            return
        starts: list[int] = []
        chunks: list[bytes] = []
        offset = 0
        for _, data in batch:
            starts.append(offset)
            chunks.append(data)
            offset += len(data) + len(SEPARATOR)
        found = _engine().scan(SEPARATOR.join(chunks))
        placed = []
        for f in found:
            if not f.secret or REDACTED in f.secret:  # our own marker is not a secret
                continue
            index = max(bisect.bisect_right(starts, f.location["start_offset"]) - 1, 0)
            if f.rule_id.startswith("custom.") and not _own(chunks[index], starts[index], f):
                continue
            placed.append((batch[index][0], f))
        # A helper rule (an AWS secret key) counts next to a visible finding in its value.
        shown = {key for key, finding in placed if finding.visible}
        # a secret a provider rule names is not reported again by our generic rules
        named = {(key, f.secret) for key, f in placed if not f.rule_id.startswith("custom.")}
        for key, finding in placed:
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
        if len(value) < MIN_VALUE:
            continue
        for piece in _pieces(key, value):
            batch.append(piece)
            size += len(piece[1])
            if size >= BATCH_BYTES:
                flush()
    flush()
    return hits
