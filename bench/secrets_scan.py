"""Secret scan on the shared corpus: findings per format, whole-process `scan` throughput on
the largest file, and `compress` of it with and without the scan (median of RUNS).

    python bench/secrets_scan.py [RUNS]
"""

from __future__ import annotations

import collections
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
TOOL = [sys.executable, "-m", "gitclaw_compress"]


def _forget(repo: Path) -> None:
    """Drop the scan's caches of clean files and objects: measure a first scan."""
    for cache in (repo / ".git" / "gitclaw-compress").glob("secrets-clean*"):
        cache.unlink()


def _run(cwd: Path, *args: str) -> float:
    _forget(cwd)
    start = time.perf_counter()
    subprocess.run([*TOOL, *args], cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - start


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    from gitclaw_compress.formats import detect_file
    from gitclaw_compress.secrets.scan import scan_file

    files = sorted(CORPUS.glob("*/*.jsonl"))
    by_format: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for path in files:
        fmt = detect_file(path, path.name)
        for finding in scan_file(path, path.name, fmt):
            by_format[fmt.name][finding.rule] += 1
        by_format[fmt.name]["(files)"] += 1
    for name, counts in sorted(by_format.items()):
        print(f"{name}: {dict(counts)}")
    largest = max(files, key=lambda p: p.stat().st_size)
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        rel = ".GITCLAW/state/sessions/big.jsonl"
        (repo / rel).parent.mkdir(parents=True)
        on = repo / "on.json"
        off = repo / "off.json"
        on.write_text('{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1}}')
        off.write_text(
            '{"session":{"sizeThresholdKB":1,"turnThresholdBeforeCompress":1},'
            '"scan":{"enabled":false}}'
        )
        scans, with_scan, without = [], [], []
        for _ in range(runs):
            shutil.copyfile(largest, repo / rel)
            scans.append(_run(repo, "scan", "--no-archive", rel))
            shutil.copyfile(largest, repo / rel)
            without.append(_run(repo, "compress", rel, "--config", str(off)))
            shutil.copyfile(largest, repo / rel)
            with_scan.append(_run(repo, "compress", rel, "--config", str(on)))
        shutil.copyfile(largest, repo / rel)
        _run(repo, "scan", "--no-archive", rel)
        start = time.perf_counter()
        subprocess.run([*TOOL, "scan", "--no-archive", rel], cwd=repo, capture_output=True)
        warm = time.perf_counter() - start
        size = largest.stat().st_size / 1e6
        scan_s = statistics.median(scans)
        print(f"largest: {largest.name} {size:.2f} MB")
        print(f"scan (whole process): {scan_s:.2f} s = {size / scan_s:.1f} MB/s")
        print(f"compress without scan: {statistics.median(without):.2f} s")
        print(f"compress with scan: {statistics.median(with_scan):.2f} s")
        print(f"scan of a file scanned clean before: {warm:.2f} s")
    print("rule cache:", os.environ.get("GITCLAW_COMPRESS_RULE_CACHE", "(default)"))


if __name__ == "__main__":
    main()
