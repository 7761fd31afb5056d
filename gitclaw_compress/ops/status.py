"""`status`: how full a session's context is, and what `compress` and `prune` would save.

Pure: lines and a Config in, a report out. The savings are dry runs of the same core that
`compress` and `prune` run, so they are what those commands would do now.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from gitclaw_compress.config import Config
from gitclaw_compress.core.compressor import (
    CompressSettings,
    IntactBlob,
    IntactCommit,
    ObjectId,
    git_blob_id,
    measure_run,
    plan_lines,
)
from gitclaw_compress.core.context import (
    ContextSize,
    Fullness,
    OriginalLine,
    context_fullness,
)
from gitclaw_compress.core.lines import RawLine
from gitclaw_compress.formats import detect
from gitclaw_compress.formats.base import Format
from gitclaw_compress.tokens.estimate import TokenEstimator, get_estimator


@dataclass
class Saving:
    """What one command would do to the file now (a dry run)."""

    command: str  # the command line that does it
    bytes_before: int
    bytes_after: int
    lines: int  # lines it would change
    tokens_saved: int  # estimated context tokens it would free
    context_tokens_after: int  # the size `status` gives after it
    context_source_after: str  # where that figure comes from, in words
    decision: str = ""  # what a budget policy decided, in words
    # [first, last]: lines it leaves as the model saw them for preserved thinking
    preserved_thinking: list[int] | None = None


@dataclass
class SessionStatus:
    path: str
    model: str | None
    limits_source: str  # override | recorded | builtin:<family> | fallback
    context_window: int
    max_output: int
    reserve: int
    usable_tokens: int
    context_tokens: int
    source: str  # usage, usage+estimate or estimate
    estimator: str
    estimated_tokens: int  # the estimate of every message sent, whatever the source
    percent: float
    level: str
    warning_percent: int
    critical_percent: int
    messages: int  # messages in the context
    usage_entry: str | None = None
    usage_tokens: int | None = None
    trailing_tokens: int = 0
    compressed_tokens: int = 0  # taken off the recorded usage: what compression freed since
    note: str | None = None
    below_size_threshold: bool = False
    savings: dict[str, Saving] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def _saving(
    command: str,
    lines: list[RawLine],
    settings: CompressSettings,
    session_ref: str,
    tokens_now: dict[int, int],
    size: ContextSize,
    intact_commit: IntactCommit | None,
    object_id: ObjectId,
    intact_blob: IntactBlob | None,
    fmt: Format,
    estimator: TokenEstimator,
    config: Config | None = None,
) -> Saving:
    plan = plan_lines(
        lines,
        settings,
        session_ref=session_ref,
        fmt=fmt,
        estimator=estimator,
        object_id=object_id,
        intact_commit=intact_commit,
        intact_blob=intact_blob,
    )
    run = measure_run(
        lines,
        plan,
        settings,
        session_ref=session_ref,
        estimator=estimator,
        tokens_now=tokens_now,
        object_id=object_id,
        intact_commit=intact_commit,
        intact_blob=intact_blob,
    )
    small = (
        config.gain_too_small(run.bytes_before, run.bytes_after)
        if config is not None and run.lines_changed
        else None
    )
    if small is not None:  # the command leaves the file as it is (without --force)
        after, source = size.after_run((), 0)
        return Saving(command, run.bytes_before, run.bytes_before, 0, 0, after, source, small)
    saved = run.tokens_saved
    after, source = size.after_run(run.savings, saved)
    return Saving(
        command=command,
        bytes_before=run.bytes_before,
        bytes_after=run.bytes_after,
        lines=run.lines_changed,
        tokens_saved=saved,
        context_tokens_after=after,
        context_source_after=source,
        decision=plan.budget.decision if plan.budget is not None else "",
        preserved_thinking=plan.preserved_thinking,
    )


def session_status(
    lines: list[RawLine],
    config: Config,
    session_ref: str,
    *,
    keep_turns: int | None = None,
    savings: bool = True,
    intact_commit: IntactCommit | None = None,
    object_id: ObjectId = git_blob_id,
    intact_blob: IntactBlob | None = None,
    fmt: Format | None = None,
    originals: OriginalLine | None = None,
) -> SessionStatus:
    """The status of one session; `savings=False` skips the dry runs (compress, compress
    --deep unless the config is deep already, prune, prune --target).

    `intact_commit` (the commit where a line is intact), `intact_blob` (the blob a v3 marker
    names) and `object_id` (SHA-1 or SHA-256 blob ids) are what `compress` records in
    markers, so that the byte counts of the dry runs are exact.
    """
    fmt = fmt or detect(lines, session_ref)
    estimator = get_estimator(config["tokens.estimator"])  # the one every figure counts with
    fullness = context_fullness(lines, fmt, config.context_settings(), estimator, originals)
    status = _status_of(fullness, lines, config, session_ref)
    if not savings:
        return status
    tokens_now = fullness.context.tokens_by_line()
    for name, (command, settings) in _dry_runs(config, session_ref, keep_turns).items():
        if settings.budget.active:  # it measures the context as above
            policy = dataclasses.replace(settings.budget, originals=originals)
            settings = dataclasses.replace(settings, budget=policy)
        status.savings[name] = _saving(
            command,
            lines,
            settings,
            session_ref,
            tokens_now,
            fullness.size,
            intact_commit,
            object_id,
            intact_blob,
            fmt,
            estimator,
            # compress leaves a small gain alone; prune forces its run (commands/prune.py)
            config if name in ("compress", "deep") else None,
        )
    return status


def _status_of(
    fullness: Fullness, lines: list[RawLine], config: Config, session_ref: str
) -> SessionStatus:
    """The status without its dry runs: the context, its size and level, its model's limits."""
    context, size, budget = fullness.context, fullness.size, fullness.budget
    return SessionStatus(
        path=session_ref,
        model=context.model,
        limits_source=budget.limits_source,
        context_window=budget.context_window,
        max_output=budget.max_output,
        reserve=config["tokens.reserve"],
        usable_tokens=budget.usable,
        context_tokens=size.tokens,
        source=size.source,
        estimator=size.estimator,
        estimated_tokens=size.estimated,
        percent=fullness.percent,
        level=fullness.level,
        warning_percent=config["tokens.warningPercent"],
        critical_percent=config["tokens.criticalPercent"],
        messages=len(context.messages),
        usage_entry=size.usage_entry,
        usage_tokens=size.usage_tokens,
        trailing_tokens=size.trailing_tokens,
        compressed_tokens=size.compressed_tokens,
        note=size.note,
        below_size_threshold=sum(len(line.encode()) for line in lines)
        < config["session.sizeThresholdKB"] * 1024,
    )


def _dry_runs(
    config: Config, session_ref: str, keep_turns: int | None
) -> dict[str, tuple[str, CompressSettings]]:
    """The runs `status` measures, by name: the command line and its settings (compress,
    compress --deep unless the config is deep already, prune, prune --target)."""
    ref = shlex.quote(session_ref)
    turns = "" if keep_turns is None else f" --keep-turns {keep_turns}"
    compress = f"gitclaw-compress compress{turns}"
    runs = {"compress": (f"{compress} {ref}", config.compress_settings(keep_turns))}
    if not config["session.deep"]:  # what deep would save next to the default
        runs["deep"] = (
            f"{compress} --deep {ref}",
            config.compress_settings(keep_turns, deep=True),
        )
    runs["prune"] = (f"gitclaw-compress prune {ref}", config.compress_settings(strategy="tokens"))
    target = config["prune.targetPercent"]
    runs["target"] = (
        f"gitclaw-compress prune --target {ref}",
        config.compress_settings(target_percent=target),
    )
    return runs
