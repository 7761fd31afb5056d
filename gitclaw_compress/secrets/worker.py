"""The scan beside a compress run: `python -m gitclaw_compress.secrets.worker`.

It loads the rules first (the slow part, about a second), while the parent still finds and
reads the sessions; then it reads {"root", "paths", "baseline"} as JSON on stdin and answers
{"files", "findings"} (as `scan --json`), or {"error"} in one line. Never a secret."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson


def main() -> None:
    from gitclaw_compress.errors import GitClawError

    try:
        from gitclaw_compress.secrets.engine import _engine

        _engine()
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
