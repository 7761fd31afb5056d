"""Synthetic agents' stores built from the shared corpus, for the disk benchmarks.

Each copy of a corpus session is a distinct session, as a real store holds: every uuid is
mapped to another (consistently, so links hold), every long string has its letters
permuted (the same text statistics, so each file compresses as well as the original, but no
copy shares a long run of bytes with another), and every base64 text of 1 KB or more (images,
signatures) decodes to other bytes of the same length (its bytes XORed with a key). Files are
laid out where each agent keeps them by default under a home folder:

- Claude Code: `.claude/projects/<project>/<session id>.jsonl`
- Codex: `.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`
- Copilot CLI: `.copilot/session-state/<id>/events.jsonl`
- pi: `.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl`
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import random
import re
import string
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from shared_corpus import CORPUS

FORMATS = ("claude", "codex", "copilot", "pi")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
BASE64 = re.compile(r"(data:[a-z]+/[a-z0-9.+-]+;base64,)?([A-Za-z0-9+/]{1024,}={0,2})")
CLAUDE_SESSION = re.compile(rb'"sessionId":"([0-9a-f-]{36})"')
LONG = 200  # strings this long have their letters permuted


def corpus_sessions(fmt: str) -> list[Path]:
    folder = CORPUS / fmt
    if fmt == "copilot":
        return sorted(folder.glob("*events.jsonl"))
    return sorted(folder.glob("*.jsonl"))


class Variant:
    """The changes that make copy `number` a session of its own."""

    def __init__(self, number: int) -> None:
        rng = random.Random(number)
        lower, upper = list(string.ascii_lowercase), list(string.ascii_uppercase)
        rng.shuffle(lower)
        rng.shuffle(upper)
        self.letters = str.maketrans(
            string.ascii_lowercase + string.ascii_uppercase, "".join(lower + upper)
        )
        self.key = rng.randbytes(4096)
        self.salt = b"%d" % number
        self._ids: dict[str, str] = {}

    def uuid(self, old: str) -> str:
        new = self._ids.get(old)
        if new is None:
            digest = hashlib.sha256(self.salt + old.encode()).digest()
            new = self._ids[old] = str(uuid.UUID(bytes=digest[:16], version=4))
        return new

    def _ids_in(self, text: str) -> str:
        return UUID.sub(lambda match: self.uuid(match.group()), text)

    def _base64(self, prefix: str, text: str) -> str | None:
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            return None
        if base64.b64encode(data).decode() != text:
            return None
        key = self.key * (len(data) // len(self.key) + 1)
        mixed = bytes(a ^ b for a, b in zip(data, key, strict=False))
        return prefix + base64.b64encode(mixed).decode()

    def string(self, text: str) -> str:
        if len(text) >= 1024:
            match = BASE64.fullmatch(text)
            if match is not None:
                mixed = self._base64(match.group(1) or "", match.group(2))
                if mixed is not None:
                    return mixed
        if len(text) >= LONG:
            return text.translate(self.letters)
        return self._ids_in(text)

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.string(value)
        if isinstance(value, dict):
            return {key: self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def line(self, data: bytes) -> bytes:
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:  # a glued or torn line: its ids change, nothing else
            return self._ids_in(data.decode("utf-8", "replace")).encode()
        return orjson.dumps(self.value(parsed))

    def session(self, data: bytes) -> bytes:
        return b"\n".join(self.line(line) if line else line for line in data.split(b"\n"))


def placement(fmt: str, number: int, source: Path, data: bytes, variant: Variant) -> Path:
    """Where copy `number` of `source` goes under the home folder, as the agent names it."""
    first = orjson.loads(data.split(b"\n", 1)[0]) if data else {}
    project = f"proj{number % 25}"
    day = 1 + number % 28
    if fmt == "claude":
        found = CLAUDE_SESSION.search(data)
        session = variant.uuid(found.group(1).decode() if found else source.stem)
        return Path(".claude/projects") / f"-home-user-{project}" / f"{session}.jsonl"
    if fmt == "codex":
        session = variant.uuid(first.get("payload", {}).get("id", source.stem))
        name = f"rollout-2026-03-{day:02d}T10-00-{number % 60:02d}-{session}.jsonl"
        return Path(".codex/sessions/2026/03") / f"{day:02d}" / name
    if fmt == "copilot":
        session = variant.uuid(first.get("data", {}).get("sessionId", source.stem))
        return Path(".copilot/session-state") / session / "events.jsonl"
    session = variant.uuid(first.get("id", source.stem))
    name = f"2026-03-{day:02d}T10-00-00-000Z_{session}.jsonl"
    return Path(".pi/agent/sessions") / f"--home-user-{project}--" / name


def build_store(
    home: Path,
    target_bytes: int,
    formats: tuple[str, ...] = FORMATS,
    progress: Callable[[int], None] | None = None,
) -> dict[str, list[Path]]:
    """Copies of every corpus session of `formats`, round after round, until the store
    holds `target_bytes`; returns the files written, by format."""
    sources = {fmt: [(p, p.read_bytes()) for p in corpus_sessions(fmt)] for fmt in formats}
    written: dict[str, list[Path]] = {fmt: [] for fmt in formats}
    total = 0
    number = 0
    while total < target_bytes:
        variant = Variant(number)
        for fmt in formats:
            for source, data in sources[fmt]:
                copy = variant.session(data)
                path = home / placement(fmt, number, source, data, variant)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(copy)
                written[fmt].append(path)
                total += len(copy)
        number += 1
        if progress is not None:
            progress(total)
    return written
