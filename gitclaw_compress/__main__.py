# SIGINT and SIGTERM wait from here on (entry.main lets them in once its imports are done):
# `python -m gitclaw_compress` then has no window of its own before entry.main's first line.
import _signal  # type: ignore[import-not-found]

_signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM))

from gitclaw_compress.entry import main  # noqa: E402

main()
