"""How long `status` takes on each corpus session, in-process. A script, not a test.

    python bench/status_timing.py [--repeat 5] [--estimator chars4] [PATH ...]

Times what `gitclaw-compress status PATH` does after start-up: read the file, build the
context, measure it, and run the three dry runs (compress, prune, prune --target). Without
paths it takes every file of ../shared/corpus/pi and ../shared/corpus/pi-history/*/v*.jsonl.
Prints the best and the median of --repeat runs, the level and the source of each.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from shared_corpus import CORPUS

from gitclaw_compress.commands.common import read_session
from gitclaw_compress.config import Config
from gitclaw_compress.ops.status import session_status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--estimator", default=None, help="tokens.estimator to use")
    args = parser.parse_args()
    paths = args.paths or [
        *sorted((CORPUS / "pi").glob("*.jsonl")),
        *sorted((CORPUS / "pi-history").glob("*/v*.jsonl")),
    ]
    if not paths:
        raise SystemExit(f"no sessions given and no corpus at {CORPUS}")
    print(f"{'file':<52} {'MB':>5} {'best ms':>8} {'median':>7}  level    ctx tokens  source")
    for path in paths:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            session = read_session(path, None)
            config = session.config
            if args.estimator:
                config = Config({**config.values, "tokens.estimator": args.estimator}, None)
            status = session_status(session.lines, config, session.ref)
            times.append(time.perf_counter() - start)
        name = path.name if path.parent.name == "pi" else f"{path.parent.name}/{path.name}"
        print(
            f"{name:<52} {path.stat().st_size / 2**20:>5.2f} {min(times) * 1000:>8.0f} "
            f"{statistics.median(times) * 1000:>7.0f}  {status.level:<8} "
            f"{status.context_tokens:>10,}  {status.source}"
        )


if __name__ == "__main__":
    main()
