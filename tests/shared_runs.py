"""One run of a real agent CLI for every test of the session that asks for the same one.

A resume is decided by the CLI, the transcript's bytes and how it is asked (each run has a
home and a fake server of its own); the folder it runs in reaches the request only as paths.
A test that resumes an original to compare it with its compressed copy by structure (messages,
tool calls, sealed reasoning, size) can take the run another test made of the same bytes.
The result is kept pickled in a folder of the session, so each taker gets its own copy.
"""

from __future__ import annotations

import atexit
import hashlib
import pickle
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

Run = TypeVar("Run")

_folder: list[Path] = []  # made on first use, removed when the session ends


def _store() -> Path:
    if not _folder:
        made = Path(tempfile.mkdtemp(prefix="gitclaw-shared-runs-"))
        atexit.register(shutil.rmtree, made, ignore_errors=True)
        _folder.append(made)
    return _folder[0]


def shared_run(how: tuple[str, ...], data: bytes, run: Callable[[], Run]) -> Run:
    """`run()`'s result, or a copy of the one an earlier call with the same `how` and `data`
    returned. A run that raises is not kept (the next call runs again)."""
    digest = hashlib.sha256(repr(how).encode() + b"\0" + data).hexdigest()
    kept = _store() / f"{digest}.pickle"
    if kept.exists():
        result: Run = pickle.loads(kept.read_bytes())
        return result
    result = run()
    kept.write_bytes(pickle.dumps(result))
    return result
