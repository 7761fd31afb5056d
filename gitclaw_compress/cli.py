"""The command-line edge: registers the commands and turns GitClawError into one line.

Exit codes: 0 success; 1 problems found (verify failed, `--check` would change files);
2 usage error (as JSON under --json too); 3 the command could not do its job and changed
nothing; 130 interrupted. A reader of stdout that goes away (`| head`) ends a command quietly
with 0.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, NoReturn

import click
import orjson

from gitclaw_compress import __version__, interrupts
from gitclaw_compress.errors import EXIT_ERROR, JSON_META_KEY, GitClawError

# Set to 1 to get the traceback of an unexpected error instead of its one line.
TRACEBACK_ENV = "GITCLAW_COMPRESS_TRACEBACK"


def _unreadable(name: object) -> bool:
    """A file that is there but that this user may not read (a denied read, not a write)."""
    if not isinstance(name, (str, bytes, os.PathLike)):
        return False
    return os.path.isfile(name) and not os.access(name, os.R_OK)


def describe_os_error(error: OSError) -> str:
    """One line for a failed file operation: the file first, then what the system said."""
    what = error.strerror or str(error)
    where = error.filename if error.filename is not None else "file operation"
    from gitclaw_compress.store.fileio import TEMP_PREFIX

    if os.path.basename(str(where)).startswith(TEMP_PREFIX):  # name the folder, not our temp
        where = os.path.dirname(str(where))
    if error.filename2 is not None:
        where = f"{where} -> {error.filename2}"
    hint = ""
    if _unreadable(error.filename):
        hint = "; gitclaw-compress cannot read it; nothing was changed"
    elif isinstance(error, PermissionError) or error.errno in (1, 30):  # EPERM, EROFS
        hint = "; gitclaw-compress needs to write there (and in .git)"
    return f"{where}: {what.lower() if what[:1].isupper() else what}{hint}"


JSON_FLAG = "--json"
# What a command whose reader went away (`| head`) exits with: 0, the reader's choice is not
# a failure. (One large write that the reader cuts short ends quietly with 0 in CPython
# anyway, so 141 could not be promised every time.)
EXIT_BROKEN_PIPE = 0


def quiet_broken_pipe() -> NoReturn:
    """The reader of stdout went away (`| head`): stop without a word.

    stdout is pointed at /dev/null first, so that the interpreter's last flush of what is
    still buffered does not complain either.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_BROKEN_PIPE)


def usage_line(error: click.exceptions.UsageError) -> str:
    """A usage error in one line: what is wrong, and the --help that says how it goes."""
    message = error.format_message().rstrip(".")
    message = f"{message[:1].lower()}{message[1:]}"
    if error.ctx is None:
        return f"{message}; see `gitclaw-compress --help`"
    usage = " ".join(error.ctx.get_usage().removeprefix("Usage:").split())
    return f"{message} (usage: {usage}; `{error.ctx.command_path} --help` says more)"


def fail(ctx: click.Context, message: str, exit_code: int) -> NoReturn:
    """The one way a command fails: one line on stderr, and JSON on stdout under --json."""
    message = " ".join(message.split())  # one line, whatever the message held
    if ctx.meta.get(JSON_META_KEY):
        click.echo(orjson.dumps({"ok": False, "error": message, "exit_code": exit_code}))
    click.echo(f"gitclaw-compress: error: {message}", err=True)
    ctx.exit(exit_code)


# Each command's module and object: a command is imported only when it runs (or for --help),
# so that a no-op `step` in a hook does not pay for the LLM client or the token tables.
COMMANDS = {
    "compress": ("compress", "command"),
    "step": ("step", "command"),
    "restore": ("restore", "command"),
    "verify": ("verify", "command"),
    "show": ("show", "command"),
    "stats": ("stats", "command"),
    "status": ("status", "command"),
    "context": ("context", "command"),
    "prune": ("prune", "command"),
    "push": ("sync", "push_command"),
    "fetch": ("sync", "fetch_command"),
    "summarize": ("summarize", "command"),
    "scan": ("scan", "command"),
    "redact": ("redact", "command"),
    "doctor": ("doctor", "command"),
    "stores": ("stores", "command"),
    "install": ("hooks", "install_command"),
    "uninstall": ("hooks", "uninstall_command"),
    "pre-push": ("hooks", "pre_push_command"),
    "hook": ("agenthook", "command"),
}


# Commands that never change a session, the index or the archive: their errors do not say
# "nothing was changed" (a message shared with the commands that write says it).
READ_ONLY = frozenset({"verify", "show", "stats", "status", "context", "doctor"})
UNCHANGED = "; nothing was changed"


def said_by(command: str | None, message: str) -> str:
    """An error as `command` says it: a read-only one drops "nothing was changed"."""
    if command in READ_ONLY:
        return message.replace(UNCHANGED, "")
    return message


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        with interrupts.signals_held():  # the command's imports, whole or not at all
            module = importlib.import_module(f"gitclaw_compress.commands.{spec[0]}")
        command: click.Command = getattr(module, spec[1])
        return command

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            interrupts.checkpoint("parse")
            return super().make_context(*args, **kwargs)
        except KeyboardInterrupt:  # in an option callback: click would print "Aborted!"
            raise interrupts.Interrupted from None
        except click.exceptions.UsageError as error:  # no such command, a bad group option
            words = args[1] if len(args) > 1 else kwargs.get("args", [])
            as_json = JSON_FLAG in list(words)
            if as_json:
                click.echo(orjson.dumps({"ok": False, "error": usage_line(error), "exit_code": 2}))
            click.echo(f"gitclaw-compress: error: {usage_line(error)}", err=True)
            raise click.exceptions.Exit(error.exit_code) from None

    def invoke(self, ctx: click.Context) -> Any:
        args = [*ctx._protected_args, *ctx.args]
        interrupts.forget_changes()  # one run per invocation (several in one test process)
        try:
            interrupts.checkpoint("invoke")
            return super().invoke(ctx)
        except click.exceptions.UsageError as error:
            # Raised before the command's own --json was read: look for it in the words.
            if JSON_FLAG in args[: args.index("--") if "--" in args else len(args)]:
                ctx.meta[JSON_META_KEY] = True
            # One line, as every error (click's own is three: Usage, Try, Error).
            fail(ctx, usage_line(error), error.exit_code)
        except BrokenPipeError:
            quiet_broken_pipe()
        except GitClawError as error:
            for line in getattr(error, "details", ()):  # e.g. each secret finding, masked
                click.echo(line, err=True)
            fail(ctx, said_by(ctx.invoked_subcommand, str(error)), error.exit_code)
        except OSError as error:
            fail(ctx, describe_os_error(error), EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo(f"{interrupts.listed()}gitclaw-compress: {interrupts.message()}", err=True)
            ctx.exit(130)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as error:  # a bug; still one line, never a traceback for the user
            if os.environ.get(TRACEBACK_ENV) == "1":
                raise
            fail(
                ctx,
                f"unexpected {type(error).__name__}: {error} (a bug in gitclaw-compress; "
                f"rerun with {TRACEBACK_ENV}=1 for the traceback and report it)",
                EXIT_ERROR,
            )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gitclaw-compress")
def cli() -> None:
    """Restorable compression of agent sessions kept in git.

    Old turns lose their bulk (tool outputs, written files, images; in pi, thinking); every dropped
    byte goes to the git archive ref, and `restore` brings the original back byte for byte.
    """
