# SIGINT and SIGTERM wait from here on (entry.main lets them in once its imports are done):
# `python -m gitclaw_compress` then has no window of its own before entry.main's first line.
import _signal  # type: ignore[import-not-found]

if hasattr(_signal, "pthread_sigmask"):  # not on Windows: no signal mask there
    _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM))

from gitclaw_compress.entry import main

main()
