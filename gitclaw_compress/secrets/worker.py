"""The scan beside a compress run: `python -m gitclaw_compress.secrets.worker`.

It starts loading the rules at once (the slow part, about 0.4 s of CPU, in a thread: the
engine releases the GIL), and meanwhile reads {"root", "paths", "baseline"} as one JSON line
on stdin and the sessions' new lines; it answers {"files", "findings"} (as `scan --json`) in
one line, or {"error"}. Then it may read one more line, {"paths"}: the files the run wrote,
whose new lines it scans and records the same way. Never a secret."""

from __future__ import annotations

import contextlib
import sys
import threading
from pathlib import Path

import orjson


def _preload() -> None:
    from gitclaw_compress.errors import GitClawError
    from gitclaw_compress.secrets.engine import _engine

    with contextlib.suppress(GitClawError):  # the scan calls it again and reports it
        _engine()


def _answer(document: dict[str, object]) -> None:
    sys.stdout.buffer.write(orjson.dumps(document) + b"\n")
    sys.stdout.buffer.flush()


def main() -> None:
    from gitclaw_compress.errors import GitClawError

    loader = threading.Thread(target=_preload, daemon=True)
    loader.start()
    try:
        request = orjson.loads(sys.stdin.buffer.readline() or b"{}")
        if not request.get("paths"):
            return
        from gitclaw_compress.secrets.baseline import Baseline
        from gitclaw_compress.secrets.check import ScanResult, scan_sessions
        from gitclaw_compress.store.archive import Repository

        repo = Repository(Path(request["root"]))
        baseline = Baseline(Path(request["baseline"]))
        while request.get("paths"):
            result = ScanResult()
            scan_sessions(repo, [Path(path) for path in request["paths"]], result)
            findings = [f.as_json(baseline.accepts(f)) for f in result.findings]
            _answer({"files": result.files, "findings": findings})
            request = orjson.loads(sys.stdin.buffer.readline() or b"{}")
    except GitClawError as error:
        _answer({"error": str(error)})


if __name__ == "__main__":
    main()
