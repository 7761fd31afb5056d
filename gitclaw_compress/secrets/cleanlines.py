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
    stat <size> <mtime_ns> <ctime_ns> <inode> <device> <when the stat was taken, ns>
    <digest of a clean line>
    …

The first line names the session file (each part `unicode_escape`d, so one line whatever
the path holds), so that `prune` can drop the records of files that are gone. The third
pins the format: `detect` reads the first n lines (`whole`: all the lines the file had), so
the same first n lines (and, when `whole`, no more) mean the same format. The stat line
(only when every line of the file was clean) lets a later run trust an unchanged file
without reading it, as git's index does; see `FileStat`.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from gitclaw_compress.core.lines import MARKER_KEY, READ_BUFFER, RawLine, iter_lines
from gitclaw_compress.secrets.engine import scan_key

if TYPE_CHECKING:
    from gitclaw_compress.formats.base import Format
    from gitclaw_compress.store.repository import Repository

CLEAN_LINES = "secrets-clean-lines"
# Session contents scanned clean, by hash: what an earlier version kept instead of these.
OLD_CLEAN_FILES = "secrets-clean-files"
DIGEST_BYTES = 16
TEMP_SUFFIX = ".tmp"
STAT = "stat"
SETTLED = "s "  # a settled line's row: `s <digest> <sha256>,<sha256>…`
TAIL_BYTES = 256  # the end of a record, where its last row is
HEX = b"0123456789abcdef"
RACY_NS = 1_000_000_000  # a file changed less than this before its stat was taken
clock = time.time_ns  # when a stat is taken (tests move it on, instead of sleeping)


def line_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).hexdigest()


# The marker member compress ends a line it rewrote with (ids, hashes, numbers): the scan
# does not read it, so two lines that differ only in it hold the same findings.
_MARKER_TAIL = re.compile(rb',"' + MARKER_KEY.encode() + rb'":"[0-9A-Za-z:_-]*"\}')
MARKER_TAIL_MAX = 512  # bytes at a line's end looked at for it


def unmarked(data: bytes) -> bytes:
    """The line less the marker member it ends with, if any (then with its closing brace):
    what the scan reads of it. A line that parses, and one that does not, stays so: they
    differ only inside a string of plain characters."""
    if not data.endswith(b'"}'):
        return data
    at = data.rfind(b',"' + MARKER_KEY.encode(), max(0, len(data) - MARKER_TAIL_MAX))
    if at < 0 or _MARKER_TAIL.fullmatch(data, at) is None:
        return data
    return data[:at] + b"}"


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


@dataclass(frozen=True)
class FileStat:
    """What git's index keeps of a file to trust it unchanged without reading it: size,
    mtime, ctime, inode and device, and when the stat was taken (`taken_ns`, read before the
    stat and before the file is read).

    The racy rule, as git's: a timestamp has a granularity (a filesystem's, the kernel's
    coarse clock), so a file changed again within it after the stat can keep the same stat.
    A stat is trusted only when the file's mtime and ctime are a second or more older than
    `taken_ns`; a later change then gets a newer timestamp and no longer matches."""

    size: int
    mtime_ns: int
    ctime_ns: int
    inode: int
    device: int
    taken_ns: int

    @classmethod
    def of(cls, handle: IO[bytes]) -> FileStat:
        """The stat of an open file, before it is read: what was read is that file or newer
        (a change during the read makes the stat differ at the next look)."""
        taken = clock()
        stat = os.fstat(handle.fileno())
        return cls(
            stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino, stat.st_dev, taken
        )

    @classmethod
    def parse(cls, row: str) -> FileStat | None:
        parts = row.split(" ")
        if len(parts) != 7 or parts[0] != STAT or not all(p.isdigit() for p in parts[1:]):
            return None
        return cls(*(int(part) for part in parts[1:]))

    def text(self) -> str:
        fields = (self.size, self.mtime_ns, self.ctime_ns, self.inode, self.device)
        return " ".join([STAT, *(str(value) for value in fields), str(self.taken_ns)])

    @property
    def trusted(self) -> bool:
        return max(self.mtime_ns, self.ctime_ns) + RACY_NS <= self.taken_ns

    def matches(self, stat: os.stat_result) -> bool:
        return (
            stat.st_size == self.size
            and stat.st_mtime_ns == self.mtime_ns
            and stat.st_ctime_ns == self.ctime_ns
            and stat.st_ino == self.inode
            and stat.st_dev == self.device
        )

    def appended(self, stat: os.stat_result) -> bool:
        """The same file, grown: an agent appended to it (lines to scan, as a rule)."""
        return stat.st_ino == self.inode and stat.st_dev == self.device and stat.st_size > self.size

    def same_file(self, other: FileStat | None) -> bool:
        """The same stat, whenever it was taken."""
        return other is not None and replace(other, taken_ns=self.taken_ns) == self


@dataclass
class CleanLines:
    """What was recorded for one session file under the current scan key (empty if none).
    `stat`: the file had this stat, trusted, when every one of its lines was scanned clean."""

    sniff: Sniff | None = None
    digests: set[str] = field(default_factory=set)  # clean lines, and settled ones that hold
    stat: FileStat | None = None
    # Settled lines: every finding in them accepted. digest -> the findings' sha256s; such a
    # line counts as scanned only while the baseline accepts every one of them.
    settled: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, git_dir: Path, name: str, accepted: frozenset[str] = frozenset()) -> CleanLines:
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
        stat = FileStat.parse(rows[3]) if len(rows) > 3 else None
        digests: set[str] = set()
        settled: dict[str, frozenset[str]] = {}
        for row in rows[4:] if stat is not None else rows[3:]:
            if row.startswith(SETTLED):
                _, digest, listed = row.split(" ", 2)
                settled[digest] = frozenset(listed.split(","))
            elif row:
                digests.add(row)
        for digest, hashes in settled.items():
            if hashes <= accepted:
                digests.add(digest)
            else:  # an entry left the baseline: that line is scanned again, the stat says nothing
                stat = None
        return cls(sniff, digests, stat, settled)

    @staticmethod
    def stat_alone(git_dir: Path, name: str) -> FileStat | None:
        """The trusted stat of a record with clean lines and no settled one, read from its
        first four rows and its last (a no-op run over many sessions reads no digests);
        None when the record has none, or has settled lines (the baseline decides those)."""
        try:
            with open(cache_file(git_dir, name), "rb") as handle:
                rows = [handle.readline(4096) for _ in range(4)]
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - TAIL_BYTES))
                _, newline, last = handle.read().rstrip(b"\n").rpartition(b"\n")
        except OSError:
            return None
        try:
            owner, key, sniff, stat_row = (row.decode().rstrip("\n") for row in rows)
        except (UnicodeDecodeError, ValueError):
            return None
        if not owner.endswith(f"\t{_escaped(name)}") or key != scan_key() or not sniff:
            return None
        # Settled rows are written last: the last row must be a clean line's digest.
        if not newline or len(last) != 2 * DIGEST_BYTES or last.strip(HEX):
            return None
        stat = FileStat.parse(stat_row)
        return stat if stat is not None and stat.trusted else None

    def fits(self, format_name: str) -> bool:
        return self.sniff is not None and self.sniff.format == format_name

    def by_stat(self, path: Path) -> bool | None:
        """Whether the file is still all clean, answered by its stat alone: True when it has
        the trusted stat it had when every line was clean, False when it only grew since
        (an append: the new lines need the scan, no need to read the rest twice); None when
        the stat cannot tell (the file must be read)."""
        if self.stat is None or not self.stat.trusted:
            return None
        try:
            stat = os.stat(path)
        except OSError:
            return None
        if self.stat.matches(stat):
            return True
        return False if self.stat.appended(stat) else None

    def save(
        self,
        git_dir: Path,
        root: Path,
        name: str,
        sniff: Sniff,
        clean: Iterable[str],
        stat: FileStat | None = None,
        settled: dict[str, frozenset[str]] | None = None,
    ) -> None:
        """Record the clean lines and the settled ones; `stat` only when every line of the
        file was clean or settled."""
        path = cache_file(git_dir, name)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f"{path.name}.{os.getpid()}{TEMP_SUFFIX}")
        rows = [
            _owner_line(root, name),
            scan_key(),
            sniff.text(),
            *([stat.text()] if stat is not None else []),
        ]
        settled_rows = [
            f"{SETTLED}{digest} {','.join(sorted(hashes))}"
            for digest, hashes in sorted((settled or {}).items())
        ]
        # Row by row: one string of a large file's digests would be held beside their list.
        with open(temp, "w") as out:
            for row in itertools.chain(rows, _distinct(sorted(clean)), settled_rows):
                out.write(row + "\n")
        os.replace(temp, path)


def _distinct(rows: list[str]) -> Iterator[str]:
    """Sorted `rows` once each (a set of them would be as large as the file's lines)."""
    previous = None
    for row in rows:
        if row != previous:
            yield row
        previous = row


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
    if os.name == "nt":  # os.kill there ends the process: ask whether it exists
        import psutil

        return not psutil.pid_exists(int(pid))
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


def known_clean_file(
    git_dir: Path,
    root: Path,
    name: str,
    path: Path,
    accepted: frozenset[str] = frozenset(),
    *,
    save: bool = True,
) -> bool:
    """Whether every line of the file was recorded clean, with the same first lines (so the
    same format): then there is nothing to scan and the engine need not load. A file with the
    trusted stat it had when it was scanned clean is not read, nor one that only grew since;
    one that was read and found clean gets its stat recorded, for the next run (`save`: not
    in a dry run, which writes nothing)."""
    quick = CleanLines.stat_alone(git_dir, name)
    if quick is not None:  # unchanged since it was all clean: its stat alone says so
        with contextlib.suppress(OSError):
            if quick.matches(os.stat(path)):
                return True
    record = CleanLines.load(git_dir, name, accepted)
    sniff = record.sniff
    if sniff is None or not record.digests:
        return False
    answer = record.by_stat(path)
    if answer is not None:
        return answer
    head: list[RawLine] = []
    count = 0
    with open(path, "rb", buffering=READ_BUFFER) as handle:
        stat = FileStat.of(handle)
        for line in iter_lines(handle):
            count += 1
            if count <= sniff.lines:
                head.append(line)
            if line_digest(line.data) not in record.digests:
                return False
    if count < sniff.lines or (sniff.whole and count != sniff.lines):
        return False
    if _sniff_digest(head) != sniff.digest:
        return False
    # The record's stat (if any) did not match: keep this one, or none if it is racy.
    fresh = stat if stat.trusted else None
    if save and (fresh is not None or record.stat is not None):
        plain = record.digests - set(record.settled)
        record.save(git_dir, root, name, sniff, plain, fresh, record.settled)
    return True


def accepted_hashes(root: Path, baseline: str) -> frozenset[str]:
    """The sha256s the baseline accepts, read without the scan's modules (a no-op run reads
    only this); none when there is no baseline. A broken baseline counts as none here: the
    scan then runs, and its own reading of the baseline names the problem."""
    import orjson

    try:
        data = orjson.loads((root / baseline).read_bytes())
        return frozenset(item["hash"] for item in data["accepted"])
    except (OSError, ValueError, KeyError, TypeError):
        return frozenset()


def known_clean(
    repo: Repository,
    paths: Sequence[Path],
    accepted: frozenset[str] = frozenset(),
    *,
    save: bool = True,
) -> bool:
    """Whether every line of every file was scanned before with no finding, or with only
    findings the baseline still accepts (imports no more of the scan than this module: a
    no-op run asks only this)."""
    return all(
        known_clean_file(repo.git_dir, repo.root, repo.relative(path), path, accepted, save=save)
        for path in paths
    )


class SessionLines:
    """A session file read once for the scan, streamed: its format, then `new()` yields the
    lines not yet known clean, one at a time (a file is never held in memory); once that is
    read through, `digests` holds every line's digest and `sniff` what `detect` read."""

    def __init__(
        self,
        fmt: Format,
        head: list[RawLine],
        rest: Iterator[RawLine],
        known: set[str],
        stat: FileStat,
    ) -> None:
        self.format = fmt
        self.stat = stat  # taken before the first line was read
        self.digests: list[str] = []  # of every line, line N's at N - 1
        # A line the same as one `new()` yielded before: line number -> that line's number.
        # Its findings are that line's (they depend on its bytes alone); it is not scanned.
        self.repeats: dict[int, int] = {}
        self.new_lines = 0
        self._head = head
        self._rest = rest
        self._known = known

    def new(self) -> Iterator[RawLine]:
        """The lines to scan: not known clean, and not the same bytes as one yielded before,
        but for the marker (`repeats`)."""
        first: dict[str, int] = {}  # digest of `unmarked` -> the line yielded with it
        for line in itertools.chain(self._head, self._rest):
            data = line.data
            digest = line_digest(data)
            self.digests.append(digest)  # iter_lines numbers the lines from 1, each once
            if digest in self._known:
                continue
            read = unmarked(data)
            earlier = first.setdefault(digest if read is data else line_digest(read), line.number)
            if earlier != line.number:
                self.repeats[line.number] = earlier
                continue
            self.new_lines += 1
            yield line

    @property
    def sniff(self) -> Sniff:
        whole = len(self.digests) == len(self._head)
        return Sniff(self.format.name, len(self._head), whole, _sniff_digest(self._head))


@contextmanager
def read_session(
    path: Path, name: str, record: CleanLines, rescan: Iterable[str] = ()
) -> Iterator[SessionLines]:
    """The file's format (detected as `detect_file` does) and its lines not in `record`
    (nor in `rescan`, digests scanned again); all lines are new when the record is for
    another format. The file stays open inside."""
    from gitclaw_compress.formats import detect

    consumed: list[RawLine] = []

    def counted(lines: Iterator[RawLine]) -> Iterator[RawLine]:
        for line in lines:
            consumed.append(line)
            yield line

    with open(path, "rb", buffering=READ_BUFFER) as handle:
        stat = FileStat.of(handle)
        lines = iter_lines(handle)
        fmt = detect(counted(lines), name)
        rescanned = set(rescan)  # a copy of the record's digests only when some go
        known = (
            (record.digests - rescanned if rescanned else record.digests)
            if record.fits(fmt.name)
            else set()
        )
        yield SessionLines(fmt, consumed, lines, known, stat)
