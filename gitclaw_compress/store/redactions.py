"""What `redact` recorded on the archive ref: one note per redaction of one session file.

A note is `redactions/<key[:2]>/<key[2:]>/<sha256>.json`, where the key is the session's
header key (as its FileRecords') and the sha256 is the whole file redact wrote (the
`FileRecord` redact added). Copies and forks of one session share its header, so they share
the folder: a note applies to a file only when the file is (or extends) what redact wrote,
or sits at the path redact rewrote (see `applying`).

`replaces` names the FileRecords that matched the file before redact and do not match what
it wrote: for that file they are versions holding the secrets, never a version to repair
from. They stay on the archive for every other file that is still such a version (a byte
copy, or a fork that shares those lines).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from gitclaw_compress.store.archive_layout import FileRecord
from gitclaw_compress.store.repository import Repository


@dataclass(frozen=True, slots=True)
class RedactionNote:
    result: str  # sha256 of the whole file redact wrote
    file: str  # the session's path in its repository, as redact named it
    rules: frozenset[str]
    hashes: frozenset[str]  # sha256 of each secret redacted
    replaces: frozenset[str]  # FileRecord names this file no longer matches (see module)

    def data(self) -> bytes:
        return orjson.dumps(
            {
                "file": self.file,
                "secrets": len(self.hashes),
                "rules": sorted(self.rules),
                "hashes": sorted(self.hashes),
                "replaces": sorted(self.replaces),
            }
        )

    @classmethod
    def parse(cls, result: str, data: bytes) -> RedactionNote:
        try:
            note = orjson.loads(data)
        except orjson.JSONDecodeError:
            note = {}
        note = note if isinstance(note, dict) else {}

        def strings(name: str) -> frozenset[str]:
            value = note.get(name)
            return (
                frozenset(v for v in value if isinstance(v, str))
                if isinstance(value, list)
                else frozenset()
            )

        file = note.get("file")
        return cls(
            result,
            file if isinstance(file, str) else "",
            strings("rules"),
            strings("hashes"),
            strings("replaces"),  # none in notes of releases that dropped every record
        )


def redaction_notes(repo: Repository, ref: str, key: str) -> list[RedactionNote]:
    """Every note under this header key (copies and forks share it; see `applying`)."""
    notes = []
    for name, oid in repo.redaction_entries(ref).get(key, []):
        result = name.removesuffix(".json")
        notes.append(RedactionNote.parse(result, repo.reader.get(oid) or b""))
    return notes


def applying(
    notes: Iterable[RedactionNote], matched: Iterable[FileRecord], rel: str
) -> list[RedactionNote]:
    """The notes of redactions of this file: those whose result the file is or extends (it
    matches the record redact added), or, should the file no longer match it (damaged
    since), those of its path. A fork or copy that shares the header gets none."""
    results = {record.sha256 for record in matched}
    return [note for note in notes if note.result in results or note.file == rel]


def superseded(notes: Iterable[RedactionNote]) -> frozenset[str]:
    """The FileRecord names that the notes' file must not be checked or repaired against."""
    return frozenset(name for note in notes for name in note.replaces)
