"""The lines of a session scanned with no finding, remembered per session file, so that a run
scans only the lines that are new since (an appended turn, a line compress rewrote).

A line's findings depend on its bytes and the file's format only (no rule crosses a value),
so a line whose digest was recorded clean under the same scan key and format needs no second
scan. Lines holding a finding are never recorded: they are scanned again on every run, and
the baseline decides each time. The record holds digests of clean lines, never a secret.

`.git/gitclaw-compress/secrets-clean-lines/<sha256 of the path>`:

    <work tree root>\t<path in it>
    <scan key>
    <format> <n> <whole> <digest of the first n lines>
    <digest of a clean line>
    …

The first line names the session file (each part `unicode_escape`d, so one line whatever
the path holds), so that `prune` can drop the records of files that are gone. The third
pins the format: `detect` reads the first n lines (`whole`: all the lines the file had), so
the same first n lines (and, when `whole`, no more) mean the same format.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gitclaw_compress.core.lines import RawLine, iter_lines
from gitclaw_compress.secrets.engine import scan_key

if TYPE_CHECKING:
    from gitclaw_compress.formats.base import Format

CLEAN_LINES = "secrets-clean-lines"
# Session contents scanned clean, by hash: what an earlier version kept instead of these.
OLD_CLEAN_FILES = "secrets-clean-files"
DIGEST_BYTES = 16
TEMP_SUFFIX = ".tmp"


def line_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).hexdigest()


def cache_file(git_dir: Path, name: str) -> Path:
    key = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return git_dir / "gitclaw-compress" / CLEAN_LINES / key


def _escaped(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


def _owner_line(root: Path, name: str) -> str:
    return f"{_escaped(str(root))}\t{_escaped(name)}"


@dataclass
class Sniff:
    """The lines `detect` read to name the format: how many, and their digest."""

    format: str
    lines: int
    whole: bool  # detect read every line the file had
    digest: str

    def text(self) -> str:
        return f"{self.format} {self.lines} {int(self.whole)} {self.digest}"


@dataclass
class CleanLines:
    """What was recorded for one session file under the current scan key (empty if none)."""

    sniff: Sniff | None = None
    digests: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, git_dir: Path, name: str) -> CleanLines:
        try:
            rows = cache_file(git_dir, name).read_text().split("\n")
        except OSError:
            return cls()
        # Another path (a record of the older layout), another engine, confidence or set of
        # skip rules: scan it all. Any work tree's record of this path will do.
        if len(rows) < 3 or not rows[0].endswith(f"\t{_escaped(name)}") or rows[1] != scan_key():
            return cls()
        parts = rows[2].split(" ")
        if len(parts) != 4 or not parts[1].isdigit():
            return cls()
        sniff = Sniff(parts[0], int(parts[1]), parts[2] == "1", parts[3])
        return cls(sniff, {row for row in rows[3:] if row})

    def fits(self, format_name: str) -> bool:
        return self.sniff is not None and self.sniff.format == format_name

    def save(
        self, git_dir: Path, root: Path, name: str, sniff: Sniff, clean: Iterable[str]
    ) -> None:
        path = cache_file(git_dir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f"{path.name}.{os.getpid()}{TEMP_SUFFIX}")
        owner = _owner_line(root, name)
        body = "\n".join([owner, scan_key(), sniff.text(), *sorted(set(clean))])
        temp.write_text(body + "\n")
        os.replace(temp, path)


def _gone(record: Path, root: Path) -> bool:
    """Whether the session file a record names exists neither in the work tree that wrote
    the record nor in this one (records are shared by the work trees of a repository)."""
    try:
        with open(record, "rb") as handle:
            owner = handle.readline(64 * 1024).rstrip(b"\n").decode("ascii")
        wrote_in, name = (
            part.encode("ascii").decode("unicode_escape") for part in owner.split("\t")
        )
    except (OSError, ValueError):  # unreadable, or the older layout without the first line
        return True
    try:
        return not (Path(wrote_in) / name).exists() and not (root / name).exists()
    except OSError:  # a path this system cannot even look up (too long): keep the record
        return False


def _stale_temp(path: Path) -> bool:
    """A temp file whose writer (the pid in its name) is no longer running."""
    pid = path.name.removesuffix(TEMP_SUFFIX).rpartition(".")[2]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # it runs, as another user
    return False


def prune(git_dir: Path, root: Path) -> list[Path]:
    """Remove the records of session files that are gone, temp files their writer left
    behind, and what an older version recorded; the paths removed. Run after a scan that
    saved a record (it loaded the engine anyway), never on a run with nothing new."""
    folder = git_dir / "gitclaw-compress"
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder / CLEAN_LINES))
    except OSError:
        entries = []
    for entry in entries:
        path = Path(entry.path)
        stale = _stale_temp(path) if entry.name.endswith(TEMP_SUFFIX) else _gone(path, root)
        if stale:
            path.unlink(missing_ok=True)
            removed.append(path)
    old = folder / OLD_CLEAN_FILES
    if old.exists():
        old.unlink(missing_ok=True)
        removed.append(old)
    return removed


def _sniff_digest(lines: Iterable[RawLine]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode())
    return digest.hexdigest()


def known_clean_file(git_dir: Path, name: str, path: Path) -> bool:
    """Whether every line of the file was recorded clean, with the same first lines (so the
    same format): then there is nothing to scan and the engine need not load."""
    record = CleanLines.load(git_dir, name)
    sniff = record.sniff
    if sniff is None or not record.digests:
        return False
    head: list[RawLine] = []
    count = 0
    with open(path, "rb") as handle:
        for line in iter_lines(handle):
            count += 1
            if count <= sniff.lines:
                head.append(line)
            if line_digest(line.data) not in record.digests:
                return False
    if count < sniff.lines or (sniff.whole and count != sniff.lines):
        return False
    return _sniff_digest(head) == sniff.digest


class SessionLines:
    """A session file read once for the scan, streamed: its format, then `new()` yields the
    lines not yet known clean, one at a time (a file is never held in memory); once that is
    read through, `digests` holds every line's digest and `sniff` what `detect` read."""

    def __init__(
        self, fmt: Format, head: list[RawLine], rest: Iterator[RawLine], known: set[str]
    ) -> None:
        self.format = fmt
        self.digests: dict[int, str] = {}  # line number -> digest, of every line
        self.new_lines = 0
        self._head = head
        self._rest = rest
        self._known = known

    def new(self) -> Iterator[RawLine]:
        for line in itertools.chain(self._head, self._rest):
            digest = line_digest(line.data)
            self.digests[line.number] = digest
            if digest not in self._known:
                self.new_lines += 1
                yield line

    @property
    def sniff(self) -> Sniff:
        whole = len(self.digests) == len(self._head)
        return Sniff(self.format.name, len(self._head), whole, _sniff_digest(self._head))


@contextmanager
def read_session(path: Path, name: str, record: CleanLines) -> Iterator[SessionLines]:
    """The file's format (detected as `detect_file` does) and its lines not in `record`; all
    lines are new when the record is for another format. The file stays open inside."""
    from gitclaw_compress.formats import detect

    consumed: list[RawLine] = []

    def counted(lines: Iterator[RawLine]) -> Iterator[RawLine]:
        for line in lines:
            consumed.append(line)
            yield line

    with open(path, "rb") as handle:
        lines = iter_lines(handle)
        fmt = detect(counted(lines), name)
        known = record.digests if record.fits(fmt.name) else set()
        yield SessionLines(fmt, consumed, lines, known)
