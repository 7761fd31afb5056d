"""Accepted findings, in the spirit of detect-secrets' baseline: a JSON file in the
repository that records each accepted secret by its sha256 (never the secret), its rule, and
where it was first seen, so that `scan`, `step` and the hooks pass it."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.secrets.findings import Finding, render_path

VERSION = 1


class Baseline:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: dict[str, dict[str, str]] = {}
        if path.exists():
            self._load()

    def _load(self) -> None:
        try:
            data = orjson.loads(self.path.read_bytes())
            accepted = data["accepted"]
            for item in accepted:
                if not isinstance(item.get("hash"), str) or len(item["hash"]) != 64:
                    raise ValueError
                self.entries[item["hash"]] = item
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            raise GitClawError(
                f"{self.path}: not a gitclaw-compress secrets baseline (a JSON object with "
                '"accepted": [{"hash": <sha256>, …}]); nothing was changed'
            ) from None

    def accepts(self, finding: Finding) -> bool:
        return finding.hash in self.entries

    def accept(self, findings: Iterable[Finding]) -> int:
        added = 0
        for finding in findings:
            if finding.hash not in self.entries:
                self.entries[finding.hash] = {
                    "hash": finding.hash,
                    "rule": finding.rule,
                    "where": f"{finding.file}:{finding.line} {render_path(finding.path)}",
                }
                added += 1
        return added

    def save(self) -> None:
        body = {
            "version": VERSION,
            "note": "Secrets accepted by `gitclaw-compress scan --accept`, by sha256 only.",
            "accepted": sorted(self.entries.values(), key=lambda item: item["hash"]),
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)  # a store's config folder may not exist
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_bytes(orjson.dumps(body, option=orjson.OPT_INDENT_2) + b"\n")
        os.replace(temp, self.path)
