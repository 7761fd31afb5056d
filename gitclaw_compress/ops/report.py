"""What a compress run says about one file (light: a no-op run needs it without the core)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from gitclaw_compress.core.lines import LineCounts


@dataclass
class FileReport:
    path: str
    # compressed | unchanged | would-compress | below-threshold | disabled | in-use | held
    # | would-hold (a secret: see secrets/held.py)
    status: str
    bytes_before: int
    bytes_after: int
    lines: int = 0
    turns: int = 0
    kept_turns: int = 0
    format: str = ""  # the format's name, once the file was recognized
    lines_compressed: int = 0
    objects: int = 0
    object_bytes: int = 0
    # Archived objects this run wrote or named that no commit of the branch holds (new
    # payloads, staged versions): what only the archive keeps (see ops/sending.py).
    archive_only: int = 0
    counts: LineCounts = field(default_factory=LineCounts)
    archive_commit: str | None = None
    warnings: list[str] = field(default_factory=list)
    budget: dict[str, Any] | None = None  # what a budget policy decided (prune.strategy, target)
    reason: str = ""  # why an unchanged file was left alone, when its status does not say
    # A dry run without deep: the file's size after `compress --deep` would run (None: not
    # measured, or deep is the run itself).
    deep_bytes_after: int | None = None
    # [first, last]: lines before the kept window where what the model sees stays, because
    # line `last` (or a later one) holds thinking bound to it (preserved thinking).
    preserved_thinking: list[int] | None = None

    def as_json(self) -> dict[str, Any]:
        fields = asdict(self)
        del fields["counts"]
        return {**fields, **self.counts.as_json()}

    @classmethod
    def from_dict(cls, fields: dict[str, Any]) -> FileReport:
        """The report that `asdict` gave."""
        return cls(**{**fields, "counts": LineCounts(**fields["counts"])})
