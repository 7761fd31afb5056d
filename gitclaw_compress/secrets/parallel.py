"""`guard` in a child process (secrets/worker.py) that loads the rules and scans on another
core while this one compresses into temp files; then it records the lines the run wrote."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gitclaw_compress.config import Config
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.secrets.check import (
    ScanResult,
    SecretsFound,
    baseline_for,
    known_clean,
    settle,
)
from gitclaw_compress.secrets.findings import Finding
from gitclaw_compress.store.archive import Repository


def _result(document: dict[str, Any]) -> ScanResult:
    result = ScanResult(files=document.get("files", 0))
    for item in document["findings"]:
        finding = Finding(
            item["file"],
            item["line"],
            item["entry"],
            tuple(item["path"]),
            item["rule"],
            item["hash"],
            item["masked"],
            item["sealed"],
        )
        result.findings.append(finding)
        if item["accepted"]:
            result.accepted.add(finding.hash)
    return result


class ParallelGuard:
    """`start()` as soon as the sessions are known; `wait()` before anything is replaced or
    committed (it raises as `guard` would); `record()` after the files are written, so that
    the next run finds the lines this one wrote scanned; `cancel()` always, at the end."""

    def __init__(self, repo: Repository, config: Config, enabled: bool) -> None:
        self._repo = repo
        self._config = config
        self._enabled = enabled and bool(config["scan.enabled"])
        self._process: subprocess.Popen[bytes] | None = None
        self._answered: ScanResult | None = None

    def start(self, paths: Sequence[Path]) -> None:
        """Scan these sessions beside the compression. Nothing to scan (none, or every line
        scanned clean before, as on a no-op `step`) starts no process at all."""
        if not self._enabled or not paths or known_clean(self._repo, paths):
            return
        self._process = subprocess.Popen(
            [sys.executable, "-m", "gitclaw_compress.secrets.worker"],
            cwd=self._repo.root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._send(
            {
                "root": str(self._repo.root),
                "paths": [str(path.absolute()) for path in paths],
                "baseline": str(baseline_for(self._repo, self._config).path),
            },
            last=False,
        )

    def _send(self, request: dict[str, Any], *, last: bool) -> None:
        import orjson

        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(orjson.dumps(request) + b"\n")
            self._process.stdin.flush()
            if last:
                self._process.stdin.close()
        except BrokenPipeError:
            pass  # it died; the answer says how

    def _answer(self, *, last: bool) -> ScanResult:
        import orjson

        process = self._process
        assert process is not None and process.stdout is not None
        out, err = process.stdout.readline(), b""
        if last or not out:
            if process.stdin is not None and not process.stdin.closed:
                process.stdin.close()
            process.stdin = None
            rest, err = process.communicate()
            out = out or rest
            self._process = None
        try:
            document = orjson.loads(out)
        except orjson.JSONDecodeError:
            document = {}
        if "findings" not in document:
            self.cancel()
            last_line = (err.decode("utf-8", "replace").strip().splitlines() or ["no answer"])[-1]
            raise GitClawError(f"the secret scan failed: {document.get('error') or last_line}")
        return _result(document)

    def wait(self, warn: list[str]) -> None:
        if self._process is None or self._answered is not None:
            return
        answered = self._answer(last=False)
        self._answered = answered
        settle(answered, self._config, warn)

    def record(self, written: Sequence[Path], warn: list[str]) -> None:
        """Scan the lines the run wrote into `written` that no scan saw (the lines compress
        rewrote) and record the clean ones; the worker has its rules loaded already. A
        finding there (a stub can cut a value where a rule then matches) is reported."""
        if self._process is None:
            return
        self.wait(warn)
        if not written:
            self._close()
            return
        self._send({"paths": [str(path.absolute()) for path in written]}, last=True)
        result = self._answer(last=True)
        seen = {f.hash for f in self._answered.findings} if self._answered else set()
        result.findings = [f for f in result.findings if f.hash not in seen]
        if result.open and self._config["scan.block"]:
            raise SecretsFound(result, "the lines this run wrote", written=True)
        settle(result, self._config, warn)

    def _close(self) -> None:
        """No more work: the worker ends when its input does."""
        process, self._process = self._process, None
        if process is not None:
            assert process.stdin is not None
            process.stdin.close()
            process.stdin = None
            process.communicate()

    def cancel(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.communicate()
            self._process = None
