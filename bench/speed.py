"""Issue 35's speed targets, each printed as a ratio measured in one run.

    python bench/speed.py [--targets cpu,memory,bytes] [--formats claude,codex,pi,copilot]
                          [--size-mb 60] [--repeat 5] [--baseline REF|DIR]

Every command is the real one, `python -m gitclaw_compress ...` in a hermetic git repository
(own HOME, no system git config, fixed author and dates), its CPU the user + system time of
the process and of the processes it waits for (`wait4` of `/usr/bin/time`, which also gives
the peak RSS of the command alone: a child forked from a large bench would count the bench).
Child processes run with bytecode caching on, as an installed tool has it.

Two sets of content per format:
- `corpus`: the format's files of ../shared/corpus (bench/shared_corpus.py), once each, as one
  session (the first file's first line, then every other line of every file);
- `synthetic`: the same content repeated to `--size-mb` (at least 50), each repetition after
  the first a distinct copy (`synthetic_store.Variant`: other ids, other letters, other
  base64 bytes), so no line repeats another byte for byte.

Targets (`--targets`, each a function registered with `@target`; a new one is a function
`(Bench) -> list[Row]` with its name):
- `cpu`: `compress --force --keep-turns 1` with the secret scan off (`scan.enabled: false`)
  of the committed session, and `restore -o FILE` of the result, each against the floor
  (a Python process that parses, re-serializes and writes every line with orjson) measured
  in the same round on the same bytes; rounds interleave floor, compress, restore so the
  load of a shared machine hits them alike. Goals: compress <= 2x, restore <= 1.5x. With
  `--baseline` the other version runs in the same rounds (in a repository of its own).
- `memory`: peak RSS of the synthetic session's compress (scan off), restore, compress again
  (the file then differs from HEAD) and compress with the scan on, at a tenth of
  `--size-mb` and at `--size-mb`; goal: the larger no more than 1.2x the smaller.
- `bytes`: every corpus file, committed, compressed at `--keep-turns 1` and at the default,
  and at `--keep-turns 1` after an edit of line 2 (the file then differs from HEAD): sha256
  of the output, the archive ref's tree and the sha256 of the restored file. With
  `--baseline REF` (a commit of this repository, unpacked by `git archive`) both versions
  run and must agree ("bytes unchanged"); without, it prints one digest of them all, to
  compare between runs.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

# The transcript paths and the orjson floor of bench/cpu_floor.py.
from cpu_floor import FLOOR, PATHS
from shared_corpus import CORPUS
from synthetic_store import Variant, corpus_sessions

MB = 1024 * 1024
SOURCE = Path(__file__).resolve().parent.parent
NAMES = {"claude": "Claude Code", "codex": "Codex", "pi": "pi", "copilot": "Copilot CLI"}

CLEAN_LINES = "secrets-clean-lines"  # secrets/cleanlines.py: where lines found clean are noted
NO_SCAN = b'{"scan": {"enabled": false}}\n'
HERMETIC_GIT = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
}
# What would move where the tool or git reads and writes (see MACHINE_ENV in tests/conftest.py).
DROPPED = ("PYTHONDONTWRITEBYTECODE", "CI", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")


@dataclass
class Usage:
    cpu: float  # seconds, user + system
    peak_mb: float


@dataclass
class Row:
    """One figure of the report: a ratio (or a check) and its goal."""

    target: str
    content: str
    ratio: float | None
    goal: float | None = None
    detail: str = ""

    def text(self) -> str:
        if self.ratio is None:
            return f"{self.target:<28} {self.content:<34} {self.detail}"
        verdict = "" if self.goal is None else (" ok" if self.ratio <= self.goal else " OVER")
        goal = "" if self.goal is None else f" (goal <= {self.goal}x){verdict}"
        return f"{self.target:<28} {self.content:<34} {self.ratio:5.2f}x{goal}  {self.detail}"


Target = Callable[["Bench"], list[Row]]
TARGETS: dict[str, Target] = {}


def target(name: str) -> Callable[[Target], Target]:
    """Register a target under `name`: `--targets` picks them, in the order registered."""

    def register(function: Target) -> Target:
        TARGETS[name] = function
        return function

    return register


@dataclass
class Bench:
    """What the targets of one run share: the folder, the options, the versions."""

    folder: Path
    formats: tuple[str, ...]
    size_mb: int
    repeat: int
    baseline: Path | None = None  # source tree of the other version
    _sessions: dict[tuple[str, str, int], Path] = field(default_factory=dict)
    _count: int = 0

    def env(self, version: str = "this", home: Path | None = None) -> dict[str, str]:
        """The hermetic environment of one version (its source tree first on the path)."""
        env = {k: v for k, v in os.environ.items() if k not in DROPPED}
        env = {k: v for k, v in env.items() if not k.startswith(("GIT_", "GITCLAW_COMPRESS_"))}
        source = SOURCE if version == "this" else self.baseline
        home = home or self.folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        env.update(HERMETIC_GIT, HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
        env["PYTHONPATH"] = str(source)
        # The scan's compiled rules, kept from run to run as on a user's machine.
        env["GITCLAW_COMPRESS_RULE_CACHE"] = str(self.folder / "rules")
        return env

    def versions(self) -> list[str]:
        return ["this"] if self.baseline is None else ["this", "baseline"]

    def repository(self, name: str, env: dict[str, str], scan: bool = False) -> Path:
        """A fresh git repository; the scan off unless asked (compression.json, committed)."""
        self._count += 1
        root = self.folder / f"{self._count:03d}-{name}"
        root.mkdir(parents=True)
        git(root, env, "init", "-q")
        if not scan:
            (root / "compression.json").write_bytes(NO_SCAN)
        return root

    def session(self, kind: str, content: str, size_mb: int = 0) -> Path:
        """The session file of `kind` for `content` ("corpus" or "synthetic"), built once."""
        key = (kind, content, size_mb)
        if key not in self._sessions:
            path = self.folder / "sessions" / f"{kind}-{content}-{size_mb}.jsonl"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "wb") as out:
                for chunk in session_chunks(kind, size_mb * MB if content == "synthetic" else 0):
                    out.write(chunk)
            self._sessions[key] = path
        return self._sessions[key]

    def committed(self, kind: str, source: Path, version: str, scan: bool = False) -> Committed:
        """`source` committed where its agent keeps it, in a repository of its own."""
        env = self.env(version)
        root = self.repository(f"{kind}-{version}", env, scan)
        path = root / PATHS[kind]
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, path)
        # The corpus's one finding (a `.env` token a Claude Code transcript printed) would
        # hold the session when the scan is on: accept it, as its owner would.
        # The record of clean lines it leaves goes, so that compress scans every line.
        if scan:
            subprocess.run(
                tool("scan", PATHS[kind], "--accept-all"),
                cwd=root,
                env=env,
                capture_output=True,
                check=False,
            )
            shutil.rmtree(root / ".git" / "gitclaw-compress" / CLEAN_LINES, ignore_errors=True)
        git(root, env, "add", "-A")
        git(root, env, "commit", "-qm", "agent run")
        return Committed(root, path, env, hashlib.sha256(source.read_bytes()).hexdigest())


@dataclass
class Committed:
    root: Path
    path: Path
    env: dict[str, str]
    sha256: str

    def compress(self, *options: str) -> Usage:
        return measure(tool("compress", *options, str(self.path)), self.root, self.env)

    def restore(self, out: Path) -> Usage:
        usage = measure(tool("restore", str(self.path), "-o", str(out)), self.root, self.env)
        if file_sha256(out) != self.sha256:
            raise SystemExit(f"restore of {self.path} is not the original")
        return usage

    def reset(self) -> None:
        git(self.root, self.env, "checkout", "-q", "--", str(self.path))


def session_chunks(kind: str, size: int) -> Iterator[bytes]:
    """The corpus files of `kind` as one session, then distinct copies of their lines up to
    `size` bytes (none when `size` is 0)."""
    files = corpus_sessions(kind)
    first, _, body = files[0].read_bytes().partition(b"\n")
    bodies = [body] + [f.read_bytes().partition(b"\n")[2] for f in files[1:]]
    bodies = [b if b.endswith(b"\n") else b + b"\n" for b in bodies if b]
    yield first + b"\n"
    written = len(first) + 1 + sum(map(len, bodies))
    yield from bodies
    number = 1
    while written < size:
        variant = Variant(number)
        for body in bodies:
            copy = variant.session(body.rstrip(b"\n")) + b"\n"
            written += len(copy)
            yield copy
        number += 1


def tool(*args: str) -> list[str]:
    return [sys.executable, "-m", "gitclaw_compress", *args]


def git(root: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, env=env, check=True, capture_output=True)
    return done.stdout.decode().strip()


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as src:
        while chunk := src.read(MB):
            digest.update(chunk)
    return digest.hexdigest()


def measure(argv: list[str], cwd: Path, env: dict[str, str]) -> Usage:
    """CPU (from wait4 of /usr/bin/time: the command and what it waited for) and the
    command's own peak RSS (time's %M)."""
    with tempfile.NamedTemporaryFile("r") as peak, tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M", "-o", peak.name, *argv],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            errors.seek(0)
            raise SystemExit(f"{argv[:5]} exited {process.returncode}: {errors.read()[-2000:]!r}")
        kilobytes = int(peak.read().split()[-1])
    return Usage(usage.ru_utime + usage.ru_stime, kilobytes / 1024)


def ratio_row(name: str, content: str, cpu: list[float], floor: list[float], goal: float) -> Row:
    """The median of the rounds' ratios, with their spread and the median seconds."""
    ratios = [c / f for c, f in zip(cpu, floor, strict=True)]
    detail = (
        f"{statistics.median(cpu):.2f} s vs floor {statistics.median(floor):.2f} s, "
        f"spread {min(ratios):.2f}-{max(ratios):.2f}"
    )
    return Row(name, content, statistics.median(ratios), goal, detail)


def cpu_rounds(bench: Bench, kind: str, source: Path) -> dict[str, list[float]]:
    """Interleaved rounds of floor, compress and restore (each version) on `source`."""
    out = bench.folder / "out.jsonl"
    repos = {version: bench.committed(kind, source, version) for version in bench.versions()}
    cpu: dict[str, list[float]] = {"floor": []}
    for version, repo in repos.items():
        # The first compress in a repository costs more than a later one: run it unmeasured.
        repo.compress("--force", "--keep-turns", "1")
        repo.reset()
        cpu[f"compress {version}"], cpu[f"restore {version}"] = [], []
    for _ in range(bench.repeat):
        floor = [sys.executable, "-c", FLOOR, str(source), str(out)]
        cpu["floor"].append(measure(floor, bench.folder, bench.env()).cpu)
        for version, repo in repos.items():
            cpu[f"compress {version}"].append(repo.compress("--force", "--keep-turns", "1").cpu)
            cpu[f"restore {version}"].append(repo.restore(out).cpu)
            repo.reset()
    return cpu


@target("cpu")
def cpu_target(bench: Bench) -> list[Row]:
    rows = []
    for content in ("corpus", "synthetic"):
        for kind in bench.formats:
            source = bench.session(kind, content, bench.size_mb if content == "synthetic" else 0)
            label = f"{NAMES[kind]}, {content} {source.stat().st_size / MB:.1f} MB"
            cpu = cpu_rounds(bench, kind, source)
            for version in bench.versions():
                suffix = "" if bench.baseline is None else f" ({version})"
                for name, goal in (("compress", 2.0), ("restore", 1.5)):
                    row = ratio_row(
                        f"{name} / floor{suffix}",
                        label,
                        cpu[f"{name} {version}"],
                        cpu["floor"],
                        goal,
                    )
                    print(row.text(), flush=True)
                    rows.append(row)
    return rows


@target("memory")
def memory_target(bench: Bench) -> list[Row]:
    rows = []
    small_mb = max(1, bench.size_mb // 10)
    for kind in bench.formats:
        peaks: dict[str, list[float]] = {}
        for size_mb in (small_mb, bench.size_mb):
            source = bench.session(kind, "synthetic", size_mb)
            for name, peak in memory_peaks(bench, kind, source).items():
                peaks.setdefault(name, []).append(peak)
        for name, (small, large) in peaks.items():
            detail = f"{large:.0f} MB for {bench.size_mb} MB vs {small:.0f} MB for {small_mb} MB"
            row = Row(f"peak RSS, {name}", NAMES[kind], large / small, 1.2, detail)
            print(row.text(), flush=True)
            rows.append(row)
    return rows


def memory_peaks(bench: Bench, kind: str, source: Path) -> dict[str, float]:
    """Peak RSS (MB) of each command on `source`: compress of the committed file, restore,
    compress again (the file then differs from HEAD), and compress with the scan on."""
    out = bench.folder / "out.jsonl"
    repo = bench.committed(kind, source, "this")
    peaks = {"compress": repo.compress("--force", "--keep-turns", "1").peak_mb}
    peaks["restore"] = repo.restore(out).peak_mb
    peaks["compress again"] = repo.compress("--force", "--keep-turns", "1").peak_mb
    scanned = bench.committed(kind, source, "this", scan=True)
    peaks["compress, scan on"] = scanned.compress("--force", "--keep-turns", "1").peak_mb
    return peaks


# The cases of the bytes target: keep-turns option, and whether the file differs from HEAD
# (line 2 gains a trailing space, still JSON): then which lines HEAD's blob still holds is
# worked out line by line, not from a hash of the file's prefix.
BYTES_CASES = (("1", False), ("", False), ("1", True))


def compressed_digest(
    bench: Bench, kind: str, source: Path, version: str, keep: str, edited: bool
) -> str:
    """sha256 of the output, the archive's tree and the restored file's sha256."""
    repo = bench.committed(kind, source, version)
    if edited:
        first, second, rest = repo.path.read_bytes().split(b"\n", 2)
        repo.path.write_bytes(b"\n".join((first, second + b" ", rest)))
        repo.sha256 = file_sha256(repo.path)  # what restore must give back
    options = ["--force"] + (["--keep-turns", keep] if keep else [])
    repo.compress(*options)
    tree = (
        subprocess.run(  # none when nothing was worth compressing
            ["git", "rev-parse", "--verify", "--quiet", "refs/gitclaw/archive^{tree}"],
            cwd=repo.root,
            env=repo.env,
            capture_output=True,
            check=False,
        )
        .stdout.decode()
        .strip()
    )
    out = bench.folder / "out.jsonl"
    repo.restore(out)
    return f"{file_sha256(repo.path)} {tree} {file_sha256(out)}"


@target("bytes")
def bytes_target(bench: Bench) -> list[Row]:
    total = hashlib.sha256()
    cases = differ = 0
    for kind in bench.formats:
        for source in corpus_sessions(kind):
            for keep, edited in BYTES_CASES:
                digests = {
                    v: compressed_digest(bench, kind, source, v, keep, edited)
                    for v in bench.versions()
                }
                total.update(digests["this"].encode())
                cases += 1
                if len(set(digests.values())) > 1:
                    differ += 1
                    case = f"keep {keep or 'default'}{', edited' if edited else ''}"
                    print(f"  differs: {kind}/{source.name} {case}: {digests}")
    if bench.baseline is None:
        detail = f"{cases} cases, digest {total.hexdigest()[:16]} (no --baseline to compare)"
    else:
        detail = f"{cases} cases, {differ} differ: " + ("unchanged" if not differ else "CHANGED")
    row = Row("bytes unchanged", "corpus, keep 1, default, edited", None, None, detail)
    print(row.text(), flush=True)
    return [row]


def unpacked(ref: str, folder: Path) -> Path:
    """The source tree of `ref` (this repository's commit), unpacked by `git archive`; a
    folder is taken as it is (a source tree unpacked before)."""
    if Path(ref).is_dir():
        return Path(ref).resolve()
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=SOURCE, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--formats", default="claude,codex,pi,copilot")
    parser.add_argument("--size-mb", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--baseline", help="a commit or source tree to compare with (bytes; cpu in its rounds)"
    )
    options = parser.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"no corpus at {CORPUS}: set GITCLAW_TEST_CORPUS")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        baseline = (
            unpacked(options.baseline, Path(folder) / "baseline") if options.baseline else None
        )
        bench = Bench(
            Path(folder) / "run",
            tuple(options.formats.split(",")),
            options.size_mb,
            options.repeat,
            baseline,
        )
        for name in options.targets.split(","):
            TARGETS[name](bench)
    print(f"load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
