"""`verify`: the whole file, every marker, and the archive objects they name."""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gitclaw_compress.core.marker import NOT_IN, read_marker
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import detect_file
from gitclaw_compress.ops.check import FileCheck, check_file
from gitclaw_compress.store.access import ArchiveAccess, commit_line_source
from gitclaw_compress.store.git import GitFailureError, run_git
from gitclaw_compress.store.objects import ObjectReadError, damaged_objects
from gitclaw_compress.store.repository import Repository
from gitclaw_compress.store.session_lines import open_lines

OFF_REF = "is not reachable from"  # an object in a marker that the archive ref does not hold
_OFF_REF_OBJECT = re.compile(rf"^(?P<where>.+?): object (?P<oid>[0-9a-f]+) {OFF_REF} ")
_NOT_HERE = re.compile(rf"^(?P<where>.+?): archived object [0-9a-f]+ {NOT_IN} ")


@dataclass
class VerifyReport:
    path: str
    compressed_lines: int = 0
    objects: int = 0
    problems: list[str] = field(default_factory=list)
    whole_file: str = "unrecorded"  # matched | unrecorded | repaired | damaged (FileCheck)
    leftovers: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def verify_file(
    repo: Repository,
    path: Path,
    ref: str,
    archived: set[str] | None = None,
    access: ArchiveAccess | None = None,
) -> VerifyReport:
    """Check the whole file, that every stub resolves, every hash matches, and every object
    is in the object store and on the ref.

    With an `access` that may fetch, a payload missing from the local archive ref makes it
    fetch the archive from the remote once, then check again.
    """
    rel = repo.relative(path)
    report = VerifyReport(rel)
    access = access if access is not None else ArchiveAccess(repo, ref)
    check = check_file(repo, path, ref, access)
    report.whole_file = check.status
    report.problems.extend(check.problems)
    report.leftovers = [str(leftover) for leftover in repo.leftovers()]

    def on_ref(oid: str) -> bool:
        known = archived if archived is not None else access.archived()
        if oid in known:
            return True
        if archived is None and access.fetch_once():
            return oid in access.archived()
        return False

    try:
        detect_file(path, rel)
    except GitClawError as error:
        report.problems.append(str(error))
    used = _check_lines(repo, path, ref, check, access, on_ref, report)
    # Distinct objects: lines committed intact together all read back from one version.
    report.objects = len(used)
    report.problems.extend(_corrupt(repo, ref, rel, used))
    report.problems = _without_repeats(repo, report.problems)
    return report


def _check_lines(
    repo: Repository,
    path: Path,
    ref: str,
    check: FileCheck,
    access: ArchiveAccess,
    on_ref: Callable[[str], bool],
    report: VerifyReport,
) -> set[str]:
    """Each compressed line's marker, the objects it names on the ref, and its restore: the
    problems go in `report`; the objects lines are read back from (each re-hashed once)."""
    rel, used = report.path, set[str]()
    from_commit = commit_line_source(repo, rel)
    # A line the whole-file check named as not what compress wrote is damaged, whatever its
    # marker names: an object that marker names is not looked for (nor fetched).
    differing = set(check.differing)
    with open_lines(path) as lines:
        for line in lines:
            if line.number in differing:
                continue
            where = f"{rel}:{line.number}"
            data = check.replacements.get(line.number, line.data)
            try:
                marker = read_marker(data, where)
                if marker is None:
                    continue
                report.compressed_lines += 1
                used.update(marker.oids)
                off_ref = [oid for oid in marker.oids if not on_ref(oid)]
                report.problems.extend(_off_ref(where, off_ref, ref, access.hint()))
                del access.notes[:]
                access.restore(data, where, from_commit(line.number), line.number)
                report.problems.extend(access.notes)
                report.problems.extend(_missing(where, marker.oids, access.missing))
            except ObjectReadError as error:  # a corrupt object, named below too
                if not _reads_objects(repo, ref):
                    raise  # git itself cannot read: verify could not do its job (exit 3)
                report.problems.append(str(error))
                repo.close()  # the reader died on it: the next line starts a new one
            except GitFailureError:
                raise  # git itself failed: verify could not do its job (exit 3)
            except GitClawError as error:
                report.problems.append(str(error))
    return used


def _off_ref(where: str, oids: list[str], ref: str, hint: str) -> list[str]:
    return [
        f"{where}: object {oid} {OFF_REF} {ref} (git gc would lose it and git push would not "
        f"send it); {hint}"
        for oid in oids
    ]


def _missing(where: str, oids: Iterable[str], missing: Container[str]) -> list[str]:
    return [
        f"{where}: archived object {oid} is missing from the object store (the line still "
        "restores from the commit where it is intact); run `git fsck`, then "
        "`gitclaw-compress fetch`"
        for oid in oids
        if oid in missing
    ]


def _corrupt(repo: Repository, ref: str, rel: str, used: set[str]) -> list[str]:
    """The objects lines read back from that are corrupt; a git that cannot read objects at
    all is an error (verify could not do its job)."""
    damaged = damaged_objects(repo.root, sorted(used))
    if damaged and not _reads_objects(repo, ref):
        raise GitFailureError(f"git cat-file failed: {next(iter(damaged.values()))}")
    return [
        f"{rel}: archived object {oid} is corrupt in the object store ({why}); "
        "`git fsck` names it; take a whole copy from another clone"
        for oid, why in damaged.items()
    ]


def _without_repeats(repo: Repository, problems: list[str]) -> list[str]:
    """Each problem once (a damaged line is named once). A line that does not restore
    because an object is not in this clone is named for that alone: its objects that are
    not here are not also "not reachable from the archive ref (git gc would lose it)",
    which is about an object that is here. (A line that restores from the commit where it
    is intact keeps that finding: the archive ref should hold its objects.)"""
    not_here = {m["where"] for problem in problems if (m := _NOT_HERE.search(problem))}
    off_ref = {
        m["oid"]
        for problem in problems
        if (m := _OFF_REF_OBJECT.search(problem)) and m["where"] in not_here
    }
    absent = _absent(repo, sorted(off_ref)) if off_ref else set()

    def said_already(problem: str) -> bool:
        m = _OFF_REF_OBJECT.search(problem)
        return m is not None and m["where"] in not_here and m["oid"] in absent

    return [problem for problem in dict.fromkeys(problems) if not said_already(problem)]


def _absent(repo: Repository, oids: list[str]) -> set[str]:
    """The objects among `oids` that this clone's object store does not hold."""
    done = run_git(repo.root, "cat-file", "--batch-check", input="\n".join(oids).encode() + b"\n")
    return {
        line.split()[0].decode()
        for line in done.stdout.splitlines()
        if line.endswith(b" missing") and line.split()
    }


def _reads_objects(repo: Repository, ref: str) -> bool:
    """Whether git reads a sound object here (the archive commit, else HEAD): if not, a
    failed read is git failing, not one corrupt object."""
    for name in (ref, "HEAD"):
        if repo.rev_parse(name) is not None:
            return repo.git("cat-file", "-t", name, check=False).strip() == b"commit"
    return True
