"""Remember the sessions that a run left unchanged, so that the next run skips the core.

A no-op `step` (the pre-commit hook on a commit that touched no session) would otherwise
read and plan the newest session every time. Like git's index, an entry trusts a file's
stat: the same size, mtime, ctime, inode and device as when a run found nothing to do, with
the same settings and release, and the same versions of the file in HEAD and in the index,
give the same answer. The versions count because a line intact in one of them takes a
cheaper marker, so a commit can make lines worth compressing that were not before. An
agent's append changes the size and the times, and a miss only costs the full run. The
cache lives in the git dir (`gitclaw-compress/unchanged.json`); it is best effort:
unreadable means empty, and a failed write is ignored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from gitclaw_compress import __version__
from gitclaw_compress.config import Config
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.ops.report import FileReport
from gitclaw_compress.store.repository import Repository

CACHE_VERSION = 2  # 2: the key holds the file's versions in HEAD and the index
# Outcomes that depend only on the file's bytes and the settings.
NO_OP_STATUSES = frozenset({"unchanged", "below-threshold", "disabled"})


def stat_key(path: Path) -> list[int] | None:
    """What must not have changed, or None when the file cannot be read."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return [stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev]


def settings_key(config: Config, keep_turns: int | None) -> str:
    """The release and every setting that can change what compress does with a file (kept
    whole, not hashed: hashlib costs a no-op run more than the bytes do)."""
    document = orjson.dumps(
        [__version__, keep_turns, dict(config.values)],
        option=orjson.OPT_SORT_KEYS,
        default=str,
    )
    return document.decode()


def versions_key(repo: Repository, rels: list[str]) -> dict[str, str]:
    """For each repo-relative path, the ids of its blobs in HEAD and in the index ("missing"
    where there is none): what compress reads to make a marker cheaper (store/intact.py).
    One `git cat-file --batch-check` for them all."""
    if not rels:
        return {}
    names = b"".join(f"HEAD:{rel}\0:{rel}\0".encode() for rel in rels)
    out = repo.git("cat-file", "--batch-check=%(objectname)", "-z", input=names, check=False)
    answers = out.decode(errors="replace").split("\n")
    if len(answers) < 2 * len(rels):  # an odd name or a failing git: no key, no cache
        return {}
    ids = [answer if " " not in answer else "missing" for answer in answers]  # "<name> missing"
    return {rel: f"{ids[2 * n]}:{ids[2 * n + 1]}" for n, rel in enumerate(rels)}


@dataclass
class Answers:
    """What `UnchangedCache.answered` found: reports of files unchanged since a no-op run,
    and for the others their keys and their stats before the run."""

    reports: dict[Path, FileReport] = field(default_factory=dict)
    keys: dict[Path, str] = field(default_factory=dict)
    stats: dict[Path, list[int] | None] = field(default_factory=dict)


def relative_or_none(repo: Repository, path: Path) -> str | None:
    try:
        return repo.relative(path)
    except GitClawError:  # outside the repository: the run says so in its own words
        return None


class UnchangedCache:
    """Reports of no-op runs, keyed by the file's real path."""

    def __init__(self, git_dir: Path) -> None:
        self.file = git_dir / "gitclaw-compress" / "unchanged.json"
        self.entries: dict[str, dict[str, Any]] = {}
        self.changed = False
        try:
            document = orjson.loads(self.file.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return
        if isinstance(document, dict) and document.get("v") == CACHE_VERSION:
            entries = document.get("entries")
            if isinstance(entries, dict):
                self.entries = entries

    def answered(
        self,
        repo: Repository,
        paths: list[Path],
        configs: Mapping[Path, Config],
        keep_turns: int | None,
    ) -> Answers:
        """What the cache answers for `paths` (each with its config): the reports of the
        files a run found nothing to do in, unchanged since, and for the others the keys
        and stats `keep` remembers them by. The settings, and the file's versions in HEAD
        and the index: a commit can make a line worth compressing (a cheaper marker)."""
        answers = Answers()
        rels = {path: relative_or_none(repo, path) for path in paths}
        versions = versions_key(repo, [rel for rel in rels.values() if rel is not None])
        for path in paths:
            rel = rels[path]
            if rel is not None and rel in versions:
                key = f"{settings_key(configs[path], keep_turns)}|{versions[rel]}"
                answers.keys[path] = key
                cached = self.lookup(path, key)
                if cached is not None:
                    answers.reports[path] = cached
                    continue
            answers.stats[path] = stat_key(path)  # before the run reads it
        return answers

    def keep(self, answers: Answers, reports: Mapping[Path, FileReport]) -> None:
        """Remember the files of `reports` that the run found nothing to do in (by the keys
        and stats `answered` gave), and save."""
        for path, report in reports.items():
            stat, key = answers.stats.get(path), answers.keys.get(path)
            if stat is not None and key is not None:
                self.remember(path, key, stat, report)
        self.save()

    def lookup(self, path: Path, settings: str) -> FileReport | None:
        """The report of the last no-op run on `path`, if neither it nor the settings changed."""
        entry = self.entries.get(str(path.resolve()))
        if not isinstance(entry, dict) or entry.get("settings") != settings:
            return None
        if entry.get("stat") != stat_key(path):
            return None
        try:
            return FileReport.from_dict(entry["report"])
        except (KeyError, TypeError):
            return None

    def is_session(self, path: Path) -> bool:
        """Whether a run recognized `path` as a session of some format, unchanged since."""
        entry = self.entries.get(str(path.resolve()))
        if not isinstance(entry, dict) or entry.get("stat") != stat_key(path):
            return False
        report = entry.get("report")
        return isinstance(report, dict) and bool(report.get("format"))

    def remember(self, path: Path, settings: str, stat: list[int], report: FileReport) -> None:
        """Keep `report` for `path`, whose stat was `stat` before the run read it."""
        if report.status not in NO_OP_STATUSES or report.warnings or stat_key(path) != stat:
            return
        self.entries[str(path.resolve())] = {
            "settings": settings,
            "stat": stat,
            "report": asdict(report),
        }
        self.changed = True

    def save(self) -> None:
        """Write the cache (dropping files that are gone); never fails the run."""
        if not self.changed:
            return
        entries = {key: value for key, value in self.entries.items() if os.path.exists(key)}
        temp = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            temp.write_bytes(orjson.dumps({"v": CACHE_VERSION, "entries": entries}))
            os.replace(temp, self.file)
        except OSError:
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
