"""A finding: where a secret is, which rule found it, and the secret only as a hash and a
mask. The secret itself stays in memory (for `redact`) and is never printed or stored."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from gitclaw_compress.core.jsonspan import JsonPath

ID_LENGTH = 12  # hex digits of the secret's sha256 that name a finding


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def mask(secret: str) -> str:
    """At most the first and last two characters: `gh…9Z`; a short secret shows none."""
    if len(secret) < 12:
        return "…" * 3
    return f"{secret[:2]}…{secret[-2:]}"


def render_path(path: JsonPath) -> str:
    """`message.content[2].text`, the way people write a JSON path."""
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out or "(line)"


@dataclass(frozen=True, slots=True)
class Finding:
    file: str  # repo-relative session path, or `archive:<oid>` for an archive object
    line: int  # 1-based line of the file (or of the archived object)
    entry: str  # the entry id, `L<line>` when the line has none
    path: JsonPath  # of the string value inside the line
    rule: str
    hash: str  # sha256 of the secret
    masked: str
    sealed: bool = False  # inside signed thinking or encrypted reasoning
    object: str = ""  # the archive object's id, for findings in the archive
    secret: str = field(default="", repr=False, compare=False)  # never printed

    @property
    def id(self) -> str:
        return self.hash[:ID_LENGTH]

    def text(self, accepted: bool = False) -> str:
        sealed = " (sealed)" if self.sealed else ""
        note = " [accepted]" if accepted else ""
        return (
            f"{self.file}:{self.line} {self.entry} {render_path(self.path)} {self.rule} "
            f"{self.masked} id {self.id}{sealed}{note}"
        )

    def as_json(self, accepted: bool = False) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "entry": self.entry,
            "path": list(self.path),
            "rule": self.rule,
            "masked": self.masked,
            "id": self.id,
            "hash": self.hash,
            "sealed": self.sealed,
            "object": self.object or None,
            "accepted": accepted,
        }
