"""`ObjectStore`: the git object store a place's sessions are archived in.

Running git there, looking objects up, and listing what the archive ref holds (the file
records, the redaction notes, which session first added each payload), each listing read
once per archive tip. `Repository` (store/repository.py) is the place; this is its store of
objects, the same for a repository and an agent's store.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Self

from gitclaw_compress.store.archive_layout import REDACTIONS, FileRecord, record_folder
from gitclaw_compress.store.git import git, git_failure, run_git
from gitclaw_compress.store.objects import ObjectReader


@dataclass(frozen=True, slots=True)
class TreeEntry:
    mode: str
    kind: str  # blob | tree | commit
    oid: str
    name: str


class ObjectStore:
    """A place's git object store: `root` is the work tree git runs in, `common_dir` the
    git dir that holds the objects and the archive ref."""

    root: Path
    common_dir: Path

    def _open_objects(self, root: Path, common_dir: Path) -> None:
        self.root = root
        self.common_dir = common_dir
        self._reader: ObjectReader | None = None
        self._records: dict[tuple[str, str], list[FileRecord]] = {}  # (archive tip, key)
        self._first_records: dict[str, dict[str, frozenset[str]]] = {}  # archive tip -> ...
        self._redactions: dict[str, dict[str, list[tuple[str, str]]]] = {}  # archive tip -> ...

    def git(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        return git(self.root, *args, input=input, check=check)

    @property
    def git_dir(self) -> Path:
        return self.common_dir

    @property
    def objects_dir(self) -> Path:
        """The object folder, where loose objects are read without git (BlobLineReader)."""
        return self.common_dir / "objects"

    def rev_parse(self, name: str) -> str | None:
        done = run_git(self.root, "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}")
        if done.returncode != 0 and done.stderr.strip():  # a failing git, not a missing ref
            raise git_failure("rev-parse", done.stderr, done.returncode)
        return done.stdout.decode().strip() or None

    def has_remote(self, name: str) -> bool:
        return bool(name) and self.git("remote", "get-url", name, check=False).strip() != b""

    def object_info(self, name: str) -> tuple[str, int] | None:
        """The id and size of an object such as `HEAD:path`, or None if there is none."""
        out = self.git("cat-file", "--batch-check", input=name.encode() + b"\n").split()
        if len(out) != 3 or not out[2].isdigit():  # "<name> missing"
            return None
        return out[0].decode(), int(out[2])

    def object_format(self) -> str:
        known: str | None = self.__dict__.get("_object_format")
        if known is None:  # asked once per file planned: it never changes
            out = self.git("rev-parse", "--show-object-format", check=False).decode().strip()
            known = self.__dict__["_object_format"] = out or "sha1"
        return known

    @property
    def reader(self) -> ObjectReader:
        if self._reader is None:
            self._reader = ObjectReader(self.root)
        return self._reader

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the long-lived reader (it also stops when the process ends)."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def ls_tree(self, tree: str, *paths: str, recursive: bool = False) -> list[TreeEntry]:
        """The entries of a tree (`<rev>:<folder>`, or a commit with `paths`): the one
        `ls-tree` parser; a folder that does not exist gives no entries."""
        args = ["ls-tree", "-z", *(["-r"] if recursive else []), tree]
        done = run_git(self.root, *args, *(["--", *paths] if paths else []))
        if done.returncode != 0:
            if b"Not a valid object name" in done.stderr:
                return []
            raise git_failure("ls-tree", done.stderr, done.returncode)
        entries = []
        for record in done.stdout.split(b"\0"):
            if record:
                meta, name = record.split(b"\t", 1)
                mode, kind, oid = meta.decode().split(" ")
                entries.append(TreeEntry(mode, kind, oid, name.decode("utf-8", "replace")))
        return entries

    def file_records(self, ref: str, key: str) -> list[FileRecord]:
        """What compress wrote for the session whose header hashes to `key` (see FileRecord).

        Remembered per archive commit: copies of one session share a header, and listing
        its records once per copy made a check of N copies cost N x N."""
        tip = self.rev_parse(ref)
        if tip is None:
            return []
        known = self._records.get((tip, key))
        if known is None:
            entries = self.ls_tree(f"{tip}:{record_folder(key)}")  # none: no record yet
            known = [r for e in entries if (r := FileRecord.parse(e.name)) is not None]
            self._records[(tip, key)] = known
        return list(known)

    def redaction_entries(self, ref: str) -> dict[str, list[tuple[str, str]]]:
        """The notes `redact` left on the archive ref (store/redactions.py), as header key ->
        [(file name, blob id)]: one listing per archive tip, however many files are checked."""
        tip = self.rev_parse(ref)
        if tip is None:
            return {}
        known = self._redactions.get(tip)
        if known is None:
            known = {}
            for entry in self.ls_tree(f"{tip}:{REDACTIONS}", recursive=True):
                folder, _, name = entry.name.rpartition("/")
                high, _, low = folder.partition("/")
                if entry.kind == "blob" and len(high) == 2 and low and "/" not in low:
                    known.setdefault(high + low, []).append((name, entry.oid))
            self._redactions[tip] = known
        return known

    def payload_sessions(self, ref: str) -> dict[str, frozenset[str]]:
        """For each payload on the archive ref, the sessions (header keys) whose records the
        archive commit that first added it wrote: compress archives a session's new
        payloads and records the session in one commit. Empty for a payload first added by a
        commit that recorded no session (a release before records). One walk of the
        archive's history, remembered per archive tip."""
        tip = self.rev_parse(ref)
        if tip is None:
            return {}
        known = self._first_records.get(tip)
        if known is not None:
            return known
        out = self.git(
            "log", "--reverse", "--root", "--raw", "--no-abbrev", "--no-renames",
            "--diff-filter=A", "--format=%x00", tip,
        )  # fmt: skip
        known = _first_adders(out)
        self._first_records[tip] = known
        return known

    def leftovers(self) -> list[Path]:
        """Temp packs and crash reports that killed `git fast-import` runs leave behind."""
        found = sorted((self.common_dir / "objects" / "pack").glob("tmp_pack_*"))
        return found + sorted(self.common_dir.glob("fast_import_crash_*"))

    def archive_oids(self, ref: str) -> set[str]:
        """Every payload and intact blob id reachable from the archive ref (empty if there is
        no ref yet)."""
        if self.rev_parse(ref) is None:
            return set()
        return {entry.oid for entry in self.ls_tree(ref, "blobs", "intact", recursive=True)}


def _first_adders(log: bytes) -> dict[str, frozenset[str]]:
    """Payload id -> the header keys whose records the commit that first added it wrote,
    from `git log --reverse --raw --diff-filter=A --format=%x00` of the archive ref."""
    known: dict[str, frozenset[str]] = {}
    for commit in log.decode("utf-8", "replace").split("\0")[1:]:
        payloads, keys = [], set()
        for row in commit.splitlines():
            _, _, path = row.partition("\t")
            parts = path.split("/")
            if parts[0] == "blobs" and len(parts) == 3:
                payloads.append(parts[1] + parts[2])
            elif parts[0] == "files" and len(parts) == 4:
                keys.add(parts[1] + parts[2])
        for oid in payloads:
            known.setdefault(oid, frozenset(keys))
    return known
