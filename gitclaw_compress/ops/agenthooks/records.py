"""What `install` changed in each file, to undo it byte for byte: the span it replaced,
what was there, what it wrote (never a copy of the whole file), one record per file in the
hooks' folder."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from gitclaw_compress.ops.agenthooks.files import hooks_folder, made_hooks_folder, write_file


@dataclass(frozen=True, slots=True)
class Record:
    """`install`'s change to one file: at byte `at`, `removed` became `inserted`."""

    file: Path
    created: bool  # there was no file
    folders: list[Path]  # the folders install made for it, deepest first
    at: int
    removed: bytes
    inserted: bytes
    written: str  # sha256 of the file as install left it

    def as_json(self) -> dict[str, Any]:
        return {
            "file": str(self.file),
            "created": self.created,
            "folders": [str(folder) for folder in self.folders],
            "at": self.at,
            "removed": base64.b64encode(self.removed).decode(),
            "inserted": base64.b64encode(self.inserted).decode(),
            "written": self.written,
        }

    def undo(self, current: bytes) -> bytes | None:
        """The file as it was before install, if nothing but ours changed since; else None."""
        if hashlib.sha256(current).hexdigest() == self.written:
            return current[: self.at] + self.removed + current[self.at + len(self.inserted) :]
        if self.inserted and current.count(self.inserted) == 1:
            return current.replace(self.inserted, self.removed, 1)
        return None


def record_path(env: Mapping[str, str], agent: str, file: Path) -> Path:
    """One record per file: an agent may have several folders (CLAUDE_CONFIG_DIR per account)."""
    key = hashlib.sha256(str(file).encode()).hexdigest()[:12]
    return hooks_folder(env) / f"{agent}-{key}.json"


def _load(path: Path) -> Record | None:
    try:
        data = orjson.loads(path.read_bytes())
        return Record(
            file=Path(data["file"]),
            created=bool(data["created"]),
            folders=[Path(folder) for folder in data["folders"]],
            at=int(data["at"]),
            removed=base64.b64decode(data["removed"]),
            inserted=base64.b64decode(data["inserted"]),
            written=str(data["written"]),
        )
    except (OSError, orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        return None


def load_record(env: Mapping[str, str], agent: str, file: Path) -> Record | None:
    """What install changed in `file`, if it recorded that."""
    record = _load(record_path(env, agent, file))
    return record if record is not None and record.file == file else None


def records(env: Mapping[str, str], agent: str) -> list[Record]:
    """Every file install changed for `agent`, wherever the agent's folder was then."""
    found = (_load(path) for path in sorted(hooks_folder(env).glob(f"{agent}-*.json")))
    return [record for record in found if record is not None]


def save_record(env: Mapping[str, str], agent: str, record: Record) -> None:
    made_hooks_folder(env)
    path = record_path(env, agent, record.file)
    write_file(
        path, orjson.dumps(record.as_json(), option=orjson.OPT_INDENT_2) + b"\n", private=True
    )


def change(file: Path, old: bytes, new: bytes, created: bool, folders: list[Path]) -> Record:
    """The one span where `old` and `new` differ."""
    at = 0
    limit = min(len(old), len(new))
    while at < limit and old[at] == new[at]:
        at += 1
    tail = 0
    while tail < limit - at and old[len(old) - 1 - tail] == new[len(new) - 1 - tail]:
        tail += 1
    written = hashlib.sha256(new).hexdigest()
    return Record(
        file, created, folders, at, old[at : len(old) - tail], new[at : len(new) - tail], written
    )
