"""The console script: interrupts are handled from the first statement, so that Ctrl-C at
start-up (imports, regex compiles, option callbacks) is one true line and exit 130."""

from __future__ import annotations

import sys

from gitclaw_compress import interrupts


def main() -> None:
    interrupts.install()
    code: int | str | None = 0
    try:
        interrupts.checkpoint("start")
        from gitclaw_compress.cli import cli

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
