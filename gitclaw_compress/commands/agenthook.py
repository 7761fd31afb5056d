"""`hook`: what an agent runs when a session ends (written there by `install --agents`)."""

from __future__ import annotations

import io
import os
import sys

import click

from gitclaw_compress.formats.base import TITLES


@click.command(
    "hook",
    hidden=True,  # run by the agents, not by people
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("--pass", "run_pass", is_flag=True, help="Run the pass itself (the hook starts it).")
@click.argument("agent", type=click.Choice(list(TITLES)))
@click.argument("words", nargs=-1, type=click.UNPROCESSED)
def command(run_pass: bool, agent: str, words: tuple[str, ...]) -> None:
    """Run by AGENT's hook: start `gitclaw-compress stores AGENT` detached, and return.

    The payload comes on stdin (Claude Code, Copilot CLI) or as the last of WORDS (Codex,
    pi); before it, Codex's WORDS hold the notify program ours replaced, which runs next with
    the same payload. Never fails the agent: a problem goes to the log, and the exit is 0.
    """
    from gitclaw_compress.ops.agenthooks import run as hook

    if words[:1] == ("--",):  # click keeps it once AGENT was read
        words = words[1:]
    if run_pass:
        sys.exit(hook.run_pass(agent, os.environ))
    # Typed by hand in a terminal, or started without stdin: no payload to wait for.
    stdin = sys.stdin.buffer if sys.stdin is not None and not sys.stdin.isatty() else io.BytesIO()
    try:
        then = hook.run_hook(agent, words, stdin, os.environ)
    except Exception as error:  # never the agent's problem: the log says it
        try:
            with hook.open_log(os.environ) as handle:
                hook.log(handle, agent, f"the hook failed: {type(error).__name__}: {error}")
        except OSError:
            pass
        then = list(words) if len(words) > 1 else []  # a chained program, then the payload
    if then:
        sys.stdout.flush()
        try:
            os.execvp(then[0], then)
        except OSError as error:
            click.echo(f"gitclaw-compress: {then[0]}: {error.strerror}", err=True)
            sys.exit(127)
