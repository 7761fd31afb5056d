"""The console script: interrupts are handled from the first statement, so that Ctrl-C at
start-up (imports, regex compiles, option callbacks) is one true line and exit 130.

SIGINT and SIGTERM are blocked from the first statement until the handler and the
imports are in place. A KeyboardInterrupt raised inside the import of a native module
leaves that module half made: orjson's init imports Python modules and does not check
that they came, so an interrupt there gave a segfault later (exit -11, no message). A
signal that comes while blocked waits, and lands once the imports are done.
"""

from __future__ import annotations

# Built into the interpreter: importing it runs no Python code (`signal` imports enum).
import _signal  # type: ignore[import-not-found]


def main() -> None:
    if hasattr(_signal, "pthread_sigmask"):  # not on Windows: no signal mask there
        _signal.pthread_sigmask(_signal.SIG_BLOCK, (_signal.SIGINT, _signal.SIGTERM))
    import sys

    from gitclaw_compress import interrupts

    interrupts.install()
    code: int | str | None = 0
    try:
        interrupts.checkpoint("start")
        from gitclaw_compress.cli import cli

        interrupts.imports_done()  # a signal that came meanwhile lands here
        interrupts.checkpoint("imported")
        try:
            cli.main(prog_name="gitclaw-compress")
        except SystemExit as done:
            code = done.code
        interrupts.checkpoint("exit")
        sys.stdout.flush()
    except (KeyboardInterrupt, interrupts.Interrupted):
        interrupts.report_and_exit()
    if interrupts.received and code != 130:  # swallowed on the way (a finalizer): say it
        interrupts.report_and_exit()
    interrupts.received = False  # reported by the command (exit 130) or never came

    sys.exit(code)
