"""`redact`: replace secrets by `[REDACTED:rule]` in a session file, in every archive object
that holds them, and in the staged version; rewrite the archive ref; record the redaction.

A compressed line keeps restoring: its marker gets the sha256 and size of the redacted
original and the ids of the redacted payloads or intact version, so `restore` gives the
original with the secrets redacted, and `verify` passes. Secrets are replaced where their
JSON-encoded form stands, so no other byte of a line changes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from gitclaw_compress.config import Config
from gitclaw_compress.core.jsonspan import locate, splice
from gitclaw_compress.core.lines import MARKER_KEY, RawLine, iter_lines, parse_entry
from gitclaw_compress.core.marker import as_v3, read_marker, restore_data
from gitclaw_compress.core.payload_form import text_to_scan
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.secrets.check import archive_objects
from gitclaw_compress.secrets.findings import Finding
from gitclaw_compress.secrets.rewrite import rewrite_archive
from gitclaw_compress.secrets.scan import scan_blob, scan_file
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.archive_layout import (
    FileRecord,
    header_key,
    line_digest,
    record_folder,
    redaction_folder,
)
from gitclaw_compress.store.fileio import AtomicFile
from gitclaw_compress.store.redactions import RedactionNote, applying, redaction_notes


@dataclass
class RedactReport:
    file: str
    redacted: list[Finding] = field(default_factory=list)
    sealed: list[Finding] = field(default_factory=list)  # left in place
    lines: int = 0  # lines of the session changed
    objects: int = 0  # archive objects replaced
    archive_tip: str | None = None
    history: str | None = None  # the oldest branch commit that holds a redacted secret
    index: str = ""  # why the staged version was changed too; "" when it was not


class Redactor:
    """Replaces each chosen secret's JSON-encoded form (and its twice-encoded form, for JSON
    inside a string) by its marker."""

    def __init__(self, findings: Iterable[Finding]) -> None:
        pairs: dict[bytes, bytes] = {}
        for finding in findings:
            encoded = orjson.dumps(finding.secret)[1:-1]
            marker = b"[REDACTED:%s]" % finding.rule.encode()
            pairs[encoded] = marker
            # inside JSON held by a string (`scan`'s `(json)` paths) it is encoded twice
            pairs[orjson.dumps(encoded.decode())[1:-1]] = marker
        self.pairs = sorted(pairs.items(), key=lambda pair: -len(pair[0]))

    def holds(self, data: bytes) -> bool:
        return any(needle in data for needle, _ in self.pairs)

    def __call__(self, data: bytes) -> bytes:
        for needle, marker in self.pairs:
            if needle in data:
                data = data.replace(needle, marker)
        return data


def _object_id(repo: Repository, data: bytes) -> str:
    algorithm = hashlib.sha256 if repo.object_format() == "sha256" else hashlib.sha1
    return algorithm(b"blob %d\0" % len(data) + data).hexdigest()


def _choose(findings: list[Finding], ids: set[str] | None, rel: str) -> list[Finding]:
    if ids is None:
        return findings
    unknown = ids - {f.id for f in findings}
    if unknown:
        raise GitClawError(
            f"{rel}: no finding has id {sorted(unknown)[0]} (neither in the session nor in "
            "its archive objects); nothing was changed"
        )
    return [f for f in findings if f.id in ids]


def _new_line(
    repo: Repository,
    line: RawLine,
    where: str,
    redact: Redactor,
    renamed: dict[str, str],
    blobs: dict[str, bytes],
) -> bytes:
    """The redacted line; a compressed line gets a marker for its redacted original."""
    data = redact(line.data)
    marker = read_marker(line.data, where)
    if marker is None:
        return data
    original = restore_data(line.data, where, repo.reader.get)
    redacted = redact(original)
    # A line without a secret still moves to the redacted copy of a version it names: the
    # archive keeps only the copy (line N of it is the same line).
    if redacted == original and data == line.data and not renamed.keys() & set(marker.oids):
        return line.data
    entry = parse_entry(data)
    assert entry is not None
    digest = hashlib.sha256(redacted)
    raw: Any = entry[MARKER_KEY]
    if isinstance(raw, str):  # v3: the same fields, in the same string form
        assert marker.intact is not None
        blob, number = marker.intact
        raw = as_v3(
            marker._replace(
                sha256=digest.hexdigest(),
                size=len(redacted),
                intact=(renamed.get(blob, blob), number),
            )
        )
    else:
        raw = _redacted_dict(dict(raw), digest.hexdigest(), len(redacted), renamed)
    span = locate(data, [(MARKER_KEY,)])[(MARKER_KEY,)]
    new = splice(data, [(span.start, span.end, orjson.dumps(raw))])

    def fetch(oid: str) -> bytes | None:
        return blobs[oid] if oid in blobs else repo.reader.get(oid)

    if restore_data(new, where, fetch) != redacted:  # never write a line that cannot restore
        raise GitClawError(f"{where}: the redacted line would not restore; nothing was changed")
    return new


def _redacted_dict(
    raw: dict[str, Any], sha256: str, size: int, renamed: dict[str, str]
) -> dict[str, Any]:
    """A v1 or v2 marker for the redacted original."""
    raw["sha256"] = sha256
    raw["size"] = size
    raw.pop("commit", None)  # that commit holds the secret; the archive has the line now
    if "intact" in raw:
        raw["intact"] = {
            **raw["intact"],
            "blob": renamed.get(raw["intact"]["blob"], raw["intact"]["blob"]),
        }
    if "parts" in raw:
        raw["parts"] = [
            {**part, "oid": renamed.get(part["oid"], part["oid"])} for part in raw["parts"]
        ]
    return raw


def redact_session(
    repo: Repository, path: Path, config: Config, ids: set[str] | None
) -> RedactReport:
    from gitclaw_compress.formats import detect_file

    rel = repo.relative(path)
    report = RedactReport(rel)
    ref = config["archive.ref"]
    findings = scan_file(path, rel, detect_file(path, rel))
    objects = archive_objects(repo, ref)
    # A payload kept with its base64 decoded is redacted, and stored again, as its text.
    contents = {oid: text_to_scan(repo.reader.get(oid) or b"") for oid, _ in objects}
    for oid, session in objects:
        findings.extend(scan_blob(contents[oid], oid, session))
    chosen = _choose(findings, ids, rel)
    report.sealed = [f for f in chosen if f.sealed]
    report.redacted = [f for f in chosen if not f.sealed]
    if not report.redacted:
        return report
    redact = Redactor(report.redacted)
    renamed: dict[str, str] = {}
    blobs: dict[str, bytes] = {}
    for oid, data in contents.items():
        if redact.holds(data):
            new = redact(data)
            renamed[oid] = _object_id(repo, new)
            blobs[renamed[oid]] = new
    report.objects = len(renamed)
    with repo.lock(rel, rel):
        out: list[bytes] = []
        with open(path, "rb") as handle:
            for line in iter_lines(handle):
                new = _new_line(repo, line, f"{rel}:{line.number}", redact, renamed, blobs)
                report.lines += new != line.data
                out.append(new + (b"\n" if line.newline else b""))
        body = b"".join(out)
        if repo.rev_parse(ref) is not None:
            with repo.lock(f"archive-ref:{ref}", ref):  # no push or fetch meanwhile
                report.archive_tip = _rewrite(repo, ref, rel, path, body, renamed, blobs, report)
        atomic = AtomicFile(path, git_dir=repo.git_dir)
        atomic.write(body)
        atomic.seal()
        if repo.keeps_times:  # an agent lists its sessions by mtime: an old one stays old
            before = path.stat()
            os.utime(atomic.temp, ns=(before.st_atime_ns, before.st_mtime_ns))
        atomic.replace(rel)
        report.index = _redact_index(repo, rel, redact)
    report.history = _in_history(repo, rel, redact)
    return report


def _rewrite(
    repo: Repository,
    ref: str,
    rel: str,
    before: Path,
    body: bytes,
    renamed: dict[str, str],
    blobs: dict[str, bytes],
    report: RedactReport,
) -> str:
    """Rewrite the archive without the secrets, and record the file redact writes.

    Every FileRecord stays: copies and forks share the header, so they share its records,
    and one that another file still matches is what that file is checked and repaired
    against (byte copies share even the record's name). The records this file matched
    before and does not match now are named in the note instead (`replaces`), so that the
    check sets them aside for this file alone: its committed version, which holds the
    secrets, is then no version to repair it from."""
    from gitclaw_compress.store.archive_layout import matching_records
    from gitclaw_compress.store.session_lines import file_chunks

    key = header_key(body.split(b"\n", 1)[0])
    lines = body.count(b"\n") + (0 if body.endswith(b"\n") or not body else 1)
    record = FileRecord(hashlib.sha256(body).hexdigest(), len(body), lines)
    records = repo.file_records(ref, key)
    now = {found.name() for found in matching_records(iter([body]), records)}
    was = matching_records(file_chunks(before), records)
    # What an earlier redaction of this file set aside stays aside.
    earlier = applying(redaction_notes(repo, ref, key), was, rel)
    replaces = ({found.name() for found in was} - now).union(*(n.replaces for n in earlier))
    note = RedactionNote(
        record.sha256,
        rel,
        frozenset(f.rule for f in report.redacted),
        frozenset(f.hash for f in report.redacted),
        frozenset(replaces),
    )
    extra = {
        f"{record_folder(key)}/{record.name()}": b"".join(
            line_digest(line.data, line.newline) for line in iter_lines([body])
        ),
        f"{redaction_folder(key)}/{record.sha256}.json": note.data(),
    }

    def rename(path: str, oid: str) -> tuple[str, str] | None:
        new = renamed.get(oid)
        if new is None:
            return path, oid
        parts = path.split("/")
        parts[1], parts[2] = new[:2], new[2:]
        return "/".join(parts), new

    return rewrite_archive(repo, ref, blobs, rename, extra, f"gitclaw-compress redact {rel}")


def _redact_index(repo: Repository, rel: str, redact: Redactor) -> str:
    """Redact the staged version when the user staged one that holds a secret (the next
    commit would keep it); why it changed, or "" when the index was left as it was. The
    index that only mirrors HEAD (nothing staged) is left alone: changing it would stage a
    change the user did not make, and HEAD's commit is named by `history`."""
    staged = repo.git("ls-files", "-s", "--", rel).decode().split()
    if not staged:
        return ""
    data = repo.reader.get(staged[1])
    if data is None or not redact.holds(data):
        return ""
    head = repo.object_info(f"HEAD:{rel}") if repo.rev_parse("HEAD") else None
    if head is not None and head[0] == staged[1]:
        return ""
    oid = repo.git("hash-object", "-w", "--stdin", input=redact(data)).decode().strip()
    repo.git("update-index", "--cacheinfo", f"{staged[0]},{oid},{rel}")
    return "the staged version held the secrets too: redacted there, so the next commit lacks them"


def _in_history(repo: Repository, rel: str, redact: Redactor) -> str | None:
    if repo.rev_parse("HEAD") is None:
        return None
    commits = repo.git("log", "--reverse", "--format=%H", "HEAD", "--", rel).decode().split()
    for commit in commits:
        data = repo.reader.get(f"{commit}:{rel}")
        if data is not None and redact.holds(data):
            return commit
    return None


def redaction_note(repo: Repository, ref: str, path: Path) -> str | None:
    """One line for `restore` when `redact` removed secrets from this session's original
    (not from a fork or copy that shares its header: see store/redactions.py)."""
    from gitclaw_compress.store.archive_layout import matching_records
    from gitclaw_compress.store.session_lines import file_chunks

    with open(path, "rb") as handle:
        header = handle.readline().rstrip(b"\n")
    key = header_key(header)
    notes = redaction_notes(repo, ref, key)
    if not notes:
        return None
    matched = matching_records(file_chunks(path), repo.file_records(ref, key))
    notes = applying(notes, matched, repo.relative(path))
    if not notes:
        return None
    hashes = {digest for note in notes for digest in note.hashes}
    rules = {rule for note in notes for rule in note.rules}
    markers = ", ".join(f"[REDACTED:{rule}]" for rule in sorted(rules))
    return (
        f"{path}: {len(hashes)} secret(s) were redacted by `gitclaw-compress redact`: "
        f"this original holds {markers} in their place"
    )
