"""Where every benchmark reads the shared corpus: one place, as `CORPUS` in tests/conftest.py.

`GITCLAW_TEST_CORPUS` points both elsewhere (the figure tests run the benchmarks with the
environment they were given); otherwise it is ../shared/corpus beside the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path

CORPUS_ENV = "GITCLAW_TEST_CORPUS"
CORPUS = Path(
    os.environ.get(CORPUS_ENV)
    or Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
)
