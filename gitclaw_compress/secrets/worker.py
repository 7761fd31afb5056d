"""The scan beside a compress run: `python -m gitclaw_compress.secrets.worker`.

It starts loading the rules at once (the slow part, about 0.4 s of CPU, in a thread: the
engine releases the GIL), and meanwhile reads {"root", "paths", "baseline"} as JSON on stdin
and the sessions' new lines; it answers {"files", "findings"} (as `scan --json`), or
{"error"} in one line. Never a secret."""

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


def main() -> None:
    from gitclaw_compress.errors import GitClawError

    loader = threading.Thread(target=_preload, daemon=True)
    loader.start()
    try:
        request = orjson.loads(sys.stdin.buffer.read() or b"{}")
        if not request.get("paths"):
            return
        from gitclaw_compress.secrets.baseline import Baseline
        from gitclaw_compress.secrets.check import ScanResult, scan_sessions
        from gitclaw_compress.store.archive import Repository

        repo = Repository(Path(request["root"]))
        result = ScanResult()
        scan_sessions(repo, [Path(path) for path in request["paths"]], result)
        baseline = Baseline(Path(request["baseline"]))
        findings = [f.as_json(baseline.accepts(f)) for f in result.findings]
        sys.stdout.buffer.write(orjson.dumps({"files": result.files, "findings": findings}))
    except GitClawError as error:
        sys.stdout.buffer.write(orjson.dumps({"error": str(error)}))


if __name__ == "__main__":
    main()
