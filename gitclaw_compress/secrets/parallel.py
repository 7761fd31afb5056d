"""`guard` beside the compression: a thread loads the rules and scans while the main thread
compresses into temp files. The engine releases the GIL while it loads its rules (the slow
part, about 0.4 s of CPU), so the two run on two cores; no second interpreter, no second
reading of the imports. Then it records the lines the run wrote as scanned.

A session with a line of `HUGE_LINE` bytes or more is scanned after the compression instead,
in the calling thread: each of the two holds such a line as bytes and decoded (up to 4 bytes
a character), and side by side their peaks would add up."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitclaw_compress import interrupts
from gitclaw_compress.config import Config
from gitclaw_compress.core.lines import HUGE_LINE, has_line_of
from gitclaw_compress.progress import SILENT, Progress
from gitclaw_compress.store.archive import Repository

if TYPE_CHECKING:  # the scan's modules load only when there is something to scan
    from gitclaw_compress.secrets.check import ScanResult


def has_huge_line(path: Path) -> bool:
    """Whether the file has a line of `HUGE_LINE` bytes or more (a smaller file is not read;
    one that cannot be read is left to the scan, which says why)."""
    try:
        if path.stat().st_size < HUGE_LINE:
            return False
        with open(path, "rb") as handle:
            return has_line_of(handle, HUGE_LINE)
    except OSError:
        return False


def load_scan() -> None:
    """Import every module the scan thread runs, here in the main thread with SIGINT and
    SIGTERM held back (the caller's block), so that the thread imports nothing. An
    interrupt that lands inside the import machinery can leave an import lock held (a
    finalizer there swallows the KeyboardInterrupt, and the run goes on): a scan thread
    that then imports waits for that lock forever, and the main thread for the scan."""
    import codecs
    import importlib

    from gitclaw_compress.formats import registry
    from gitclaw_compress.secrets.engine import _sdk, engine_version

    registry()  # every format: the thread tells them apart by content
    for name in _SCAN_MODULES:
        importlib.import_module(f"gitclaw_compress.secrets.{name}")
    codecs.lookup("unicode_escape")  # a codec's module loads on first use (`cleanlines`)
    _sdk()
    engine_version()


# What the scan thread imports (tests/test_interrupts.py checks that it imports nothing).
_SCAN_MODULES = ("assignments", "baseline", "check", "cleanlines", "findings", "scan")


def join_interruptibly(thread: threading.Thread) -> None:
    """Wait for a helper thread, but raise KeyboardInterrupt as soon as a SIGINT or SIGTERM
    came, even one a finalizer swallowed (the handler records each): Ctrl-C ends the run
    whatever the helper waits for."""
    while True:
        if interrupts.received:
            raise KeyboardInterrupt
        thread.join(0.1)  # returns as soon as the thread ends; the slice bounds the check
        if not thread.is_alive():
            return


RULES_LOADING = "loading the secret rules"
SCANNING = "scanning for secrets"


def compiling_rules(cpu_seconds: float) -> str:
    """What a run that compiles the rules waits for, and about how long: the compile's CPU
    time, stretched by the load on this machine's cores (a shared runner takes longer)."""
    import os

    try:
        load = os.getloadavg()[0]
    except OSError:  # pragma: no cover - a platform without a load average
        load = 0.0
    seconds = cpu_seconds * max(1.0, load / (os.cpu_count() or 1))
    return (
        f"compiling the secret rules (the first two runs on a machine: about {seconds:.0f} s "
        "here; later runs load them in a tenth of a second)"
    )


def _waiting_for() -> str:
    """What the run waits for: the rules, while they load (compiled on a machine's first
    two runs), or the scan itself."""
    from gitclaw_compress.secrets import engine

    if engine.light_loaded():
        return SCANNING
    ahead = engine.compile_ahead()
    return compiling_rules(ahead) if ahead else RULES_LOADING


class ParallelGuard:
    """`start()` as soon as the sessions are known; `wait()` before anything is replaced or
    committed (it raises as `guard` would); `record()` after the files are written, so that
    the next run finds the lines this one wrote scanned; `cancel()` always, at the end."""

    def __init__(
        self,
        repo: Repository,
        config: Config,
        enabled: bool,
        *,
        dry_run: bool = False,
        progress: Progress = SILENT,
    ) -> None:
        self._repo = repo
        self._progress = progress  # says what `wait` waits for, on a terminal
        self._config = config
        self._dry_run = dry_run  # scan, to say what the run would hold; record nothing
        self._enabled = enabled and bool(config["scan.enabled"])
        self._started = False
        # A store's commands are run from anywhere: the way on names the session's path.
        self._names_files = repo.kind == "store"
        self._thread: threading.Thread | None = None
        self._deferred: list[Path] | None = None  # scanned by `wait`, after the compression
        self._result: ScanResult | None = None
        self._failure: BaseException | None = None
        self._settled = False  # wait() has answered
        self._accepted: frozenset[str] = frozenset()

    @property
    def started(self) -> bool:
        return self._started

    @property
    def parallel(self) -> bool:
        """Whether the scan runs beside the compression (not after it)."""
        return self._thread is not None

    def start(self, paths: Sequence[Path]) -> None:
        """Scan these sessions beside the compression. Nothing to scan (none, or every line
        scanned clean before, as on a no-op `step`) starts nothing, loads no engine and
        imports no more of the scan than `cleanlines`."""
        if not self._enabled or not paths:
            return
        from gitclaw_compress.secrets.cleanlines import accepted_hashes, known_clean

        # Where the baseline is (a store's: in the tool's config folder, not in the store).
        self._accepted = accepted_hashes(self._repo.config_root, self._config["scan.baseline"])
        if known_clean(self._repo, paths, self._accepted, save=not self._dry_run):
            return
        chosen = list(paths)
        self._settled = False
        self._started = True
        if any(has_huge_line(path) for path in chosen):
            self._deferred = chosen
            return
        # A daemon: a run that stops early (an error, Ctrl-C) does not wait for the rules.
        self._thread = threading.Thread(target=self._scan, args=(chosen,), daemon=True)
        # Started with SIGINT and SIGTERM blocked, which it keeps: they go to the main
        # thread, so a block that holds them back there really holds them back.
        with interrupts.signals_held():
            load_scan()
            self._thread.start()
        interrupts.checkpoint("scan-started")

    def _scan(self, paths: list[Path]) -> None:
        from gitclaw_compress.secrets.engine import _light  # loaded by `load_scan`

        try:
            _light()  # first, while the GIL is free for the compression: then read and scan
            self._result = self._run(paths)
        except BaseException as error:  # handed to the main thread by wait()
            self._failure = error

    def _run(self, paths: Sequence[Path]) -> ScanResult:
        from gitclaw_compress.secrets.check import ScanResult, baseline_for, scan_sessions

        result = ScanResult()
        baseline = baseline_for(self._repo, self._config)
        scan_sessions(
            self._repo, paths, result, frozenset(baseline.entries), save=not self._dry_run
        )
        result.accepted = {f.hash for f in result.findings if baseline.accepts(f)}
        return result

    def cancel(self) -> None:
        """The run stopped or ended: forget the scan. A thread still loading the rules is a
        daemon; it does not keep the process alive."""
        self._started = False
        self._thread = None
        self._deferred = None

    def wait(self, warn: list[str]) -> None:
        if not self._started or self._settled:
            return
        if self._deferred is not None:  # a huge line: scanned now that nothing else is held
            paths, self._deferred = self._deferred, None
            from gitclaw_compress.secrets.engine import _light

            self._progress.begin(_waiting_for(), 0)
            try:
                _light()  # the rules first, as the thread does: not while a line is held
                self._result = self._run(paths)
            except BaseException:
                self._started = False
                raise
            finally:
                self._progress.clear()
            self._settled = True
        else:
            assert self._thread is not None
            if self._thread.is_alive():  # seconds, or tens of them on a machine's first run
                self._progress.begin(_waiting_for(), 0)
            try:
                join_interruptibly(self._thread)
            finally:
                self._progress.clear()
            self._settled = True
            if self._failure is not None:
                failure, self._failure = self._failure, None
                self._started, self._thread = False, None
                raise failure
        assert self._result is not None
        from gitclaw_compress.secrets.check import settle

        settle(self._result, self._config, warn, accept_names_files=self._names_files)

    def record(self, written: Sequence[Path], warn: list[str]) -> None:
        """Scan the lines the run wrote into `written` that no scan saw (the lines compress
        rewrote), with the rules loaded already, and record the clean ones. A finding there
        (a stub can cut a value where a rule then matches) is reported."""
        if not self._started:
            return
        self.wait(warn)
        if not written:
            return
        from gitclaw_compress.secrets.check import SecretsFound, settle

        result = self._run(written)
        seen = {f.hash for f in self._result.findings} if self._result else set()
        result.findings = [f for f in result.findings if f.hash not in seen]
        if result.open and self._config["scan.block"]:
            raise SecretsFound(result, "the lines this run wrote", written=True)
        settle(result, self._config, warn, accept_names_files=self._names_files)
