"""What shrinks and what grows: replay each shared session history commit by commit.

    python bench/repo_growth.py [--history ../shared/corpus/pi-history] [--keep 1 4]

Each folder of the history holds every committed version of one session (`vNN.jsonl`, each a
byte prefix of the next). For each history it replays the agent's runs three ways into a
fresh repository with a bare remote: plain (no tool), and compressed with `--keep-turns 1`
and `--keep-turns 4` (the tool runs after each agent run, before the commit, with the default
config otherwise; in the compressed replays the agent appends its new bytes to the
compressed file, as pi does). Every run commits and pushes the branch and the archive ref.

It prints, per history and mode:
- full clone: the packed size of the remote with every ref (`git gc --aggressive`), and
  the same without `refs/gitclaw/archive` (the archive's own share of it);
- depth 1: the packed size of a `git clone --depth 1` (what a CI checkout downloads);
- working file: the session file after the last run;
- read per run: the mean size of the file each resumed run starts from (what pi reads);
- last push: the bytes of the pack the last push sends (branch and archive).

A script, not a test: it prints numbers. Sizes in KB (1 KB = 1024 bytes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from measured import HERMETIC_GIT
from shared_corpus import CORPUS

from gitclaw_compress.ops.flow import run_flow
from gitclaw_compress.store.archive import Repository

HISTORY = CORPUS / "pi-history"
ARCHIVE = "refs/gitclaw/archive"


def git(cwd: Path, *args: str, input: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, input=input, capture_output=True, check=True
    ).stdout


def pack_size(git_dir: Path) -> int:
    """Bytes of the object store after packing (size-pack + loose objects)."""
    out = git(git_dir, "count-objects", "-v").decode()
    fields = dict(line.split(": ") for line in out.splitlines())
    return (int(fields["size-pack"]) + int(fields["size"])) * 1024


def refs(cwd: Path) -> dict[str, str]:
    out = git(cwd, "for-each-ref", "--format=%(objectname) %(refname)").decode()
    return {name: oid for oid, name in (line.split(" ", 1) for line in out.splitlines())}


def push_pack_bytes(work: Path, remote_refs: dict[str, str], new_refs: list[str]) -> int:
    """The size of the pack a push of `new_refs` sends (what the remote lacks, thin deltas)."""
    spec = "".join(f"{ref}\n" for ref in new_refs)
    spec += "".join(f"^{oid}\n" for oid in remote_refs.values())
    done = subprocess.run(
        ["git", "pack-objects", "--revs", "--stdout", "--thin", "--delta-base-offset", "-q"],
        cwd=work,
        input=spec.encode(),
        capture_output=True,
        check=True,
    )
    return len(done.stdout)


@dataclass
class Replay:
    full: int = 0
    full_without_archive: int = 0
    depth1: int = 0
    working_file: int = 0
    read_per_run: float = 0.0
    last_push: int = 0


def replay(versions: list[Path], relpath: str, keep: int | None, scratch: Path) -> Replay:
    bare = scratch / "origin.git"
    work = scratch / "work"
    git(scratch, "init", "-q", "--bare", "-b", "main", str(bare))
    git(scratch, "init", "-q", "-b", "main", str(work))
    git(work, "remote", "add", "origin", bare.as_uri())
    session = work / relpath
    session.parent.mkdir(parents=True, exist_ok=True)
    repo = Repository(work)
    result = Replay()
    reads: list[int] = []
    written = 0  # bytes of the original the agent has written so far
    for number, version in enumerate(versions):
        data = version.read_bytes()
        if number:
            reads.append(session.stat().st_size)  # the resumed run reads the file first
        with open(session, "ab") as handle:  # the agent appends its new entries
            handle.write(data[written:])
        written = len(data)
        if keep is not None:
            run_flow(repo, [session], keep_turns=keep)
        git(work, "add", "-A")
        git(work, "commit", "-qm", f"agent run {version.stem}")
        pushed = ["refs/heads/main"] + ([ARCHIVE] if repo.rev_parse(ARCHIVE) else [])
        if number == len(versions) - 1:
            result.last_push = push_pack_bytes(work, refs(bare), pushed)
        git(work, "push", "-q", "--no-verify", "origin", *(f"{ref}:{ref}" for ref in pushed))
    repo.close()
    result.working_file = session.stat().st_size
    result.read_per_run = sum(reads) / len(reads) if reads else 0.0
    git(bare, "gc", "-q", "--aggressive", "--prune=now")
    result.full = pack_size(bare)
    without = scratch / "without-archive.git"
    shutil.copytree(bare, without)
    subprocess.run(["git", "update-ref", "-d", ARCHIVE], cwd=without, check=False)
    git(without, "reflog", "expire", "--expire=now", "--all")
    git(without, "gc", "-q", "--aggressive", "--prune=now")
    result.full_without_archive = pack_size(without)
    shallow = scratch / "shallow"
    git(scratch, "clone", "-q", "--depth", "1", bare.as_uri(), shallow.name)
    result.depth1 = pack_size(shallow)
    return result


def kb(count: float) -> str:
    return f"{count / 1024:,.0f} KB"


def change(value: float, base: float) -> str:
    return f"{(value - base) / base:+.0%}" if base else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=Path, default=HISTORY)
    parser.add_argument("--keep", type=int, nargs="+", default=[1, 4])
    args = parser.parse_args()
    if not args.history.is_dir():
        raise SystemExit(f"no session histories at {args.history} (the shared corpus)")
    with tempfile.TemporaryDirectory(prefix="gitclaw-growth-") as temp:
        home = Path(temp) / "home"
        home.mkdir()
        (home / ".gitconfig").write_text("[gc]\n\tauto = 0\n")
        os.environ.update(HERMETIC_GIT, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
        header = (
            "| history | mode | full clone | archive's share | depth-1 clone | working file "
            "| read per resumed run | last push |"
        )
        print(header)
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for folder in sorted(p for p in args.history.iterdir() if p.is_dir()):
            versions = sorted(folder.glob("v*.jsonl"))
            tsv = (folder / "commits.tsv").read_text().splitlines()
            relpath = tsv[0].split("\t")[2] if tsv else "state/sessions/session.jsonl"
            modes: list[tuple[str, int | None]] = [("plain", None)]
            modes += [(f"keep {keep}", keep) for keep in args.keep]
            plain: Replay | None = None
            for label, keep in modes:
                scratch = Path(temp) / f"{folder.name}-{label.replace(' ', '')}"
                scratch.mkdir()
                found = replay(versions, relpath, keep, scratch)
                base = plain if plain is not None else found
                share = found.full - found.full_without_archive
                print(
                    f"| {folder.name} ({len(versions)} runs) | {label} "
                    f"| {kb(found.full)} ({change(found.full, base.full)}) "
                    f"| {kb(share)} ({share / base.full:.0%} of plain) "
                    f"| {kb(found.depth1)} ({change(found.depth1, base.depth1)}) "
                    f"| {kb(found.working_file)} ({change(found.working_file, base.working_file)})"
                    f" | {kb(found.read_per_run)} ({change(found.read_per_run, base.read_per_run)})"
                    f" | {kb(found.last_push)} ({change(found.last_push, base.last_push)}) |",
                    flush=True,
                )
                if plain is None:
                    plain = found


if __name__ == "__main__":
    main()
