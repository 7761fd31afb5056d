"""Summarizing compaction on a file: plan, ask the LLM (or not), append the agent's record.

The whole round runs under the same per-file lock as `compress`. The file is read once;
the new entry is appended by writing the old bytes and the new line to a temp file and
renaming it over the original (:class:`AtomicFile`), and only after the summary exists: when
the LLM fails, nothing was written and the file is exactly as it was. Existing lines are never
changed; a missing final newline is the only byte added before the new line.

:func:`maybe_summarize` is the opt-in stage of `compress`: it runs a round when the context
reaches ``summary.whenLevel``, and turns an LLM failure into one warning unless
``summary.blockCommitOnFailure`` is set.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gitclaw_compress.config import Config
from gitclaw_compress.core.context import (
    LEVELS,
    Context,
    context_fullness,
    measure_context,
    read_context,
)
from gitclaw_compress.core.lines import RawLine, lines_from_bytes, parse_entry
from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats import Format, detect
from gitclaw_compress.formats.base import Unsupported
from gitclaw_compress.model import (
    MODIFIED_FILES,
    READ_FILES,
    SUMMARY,
    SUMMARY_META,
    TEXT,
    Message,
    Part,
    SummaryRequest,
)
from gitclaw_compress.store.access import line_originals
from gitclaw_compress.store.archive import Repository
from gitclaw_compress.store.fileio import AtomicFile, clean_stale_temps
from gitclaw_compress.summary.compose import extractive_summary, llm_summary
from gitclaw_compress.summary.facts import Facts, extract_facts, render_facts
from gitclaw_compress.summary.llm import CompletionRequest, LLMClient, ProviderSettings, make_client
from gitclaw_compress.summary.plan import KeepPolicy, NoSummary, SummaryPlan, plan_summary
from gitclaw_compress.summary.prompt import PromptLimits, build_prompt
from gitclaw_compress.tokens.estimate import TokenEstimator, estimate_message, get_estimator

ClientFactory = Callable[[ProviderSettings], LLMClient]


@dataclass
class SummaryReport:
    path: str
    status: str  # summarized | nothing-to-summarize | not-smaller (nothing written)
    round: int = 0
    mode: str | None = None  # llm | extractive
    provider: str | None = None  # the provider used, "none" for the extractive summary
    model: str | None = None
    keep: str = ""
    entries_summarized: int = 0
    first_kept_entry_id: str | None = None
    compaction_id: str | None = None
    tokens_before: int = 0  # recorded usage plus estimates, also written in the record
    tokens_before_estimated: int = 0
    # The context once the record is written, measured as `status` then measures it.
    tokens_after: int = 0
    tokens_before_label: str = ""  # where each figure comes from (ContextSize.brief)
    tokens_after_label: str = ""
    summary_chars: int = 0
    attempts: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    reason: str | None = None
    refused: bool = False  # there is something to summarize, but a summary would break it
    warnings: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def provider_settings(config: Config) -> ProviderSettings | None:
    """The LLM settings, or None when ``summary.provider`` is ``none``."""
    provider = config["summary.provider"]
    if provider == "none":
        return None
    return ProviderSettings(
        provider=provider,
        base_url=config["summary.base_url"] or None,
        model=config["summary.model"],
        api_key_env=config["summary.api_key_env"] or None,
        max_tokens=config["summary.max_tokens"],
        timeout_s=float(config["summary.timeout_s"]),
        max_retries=config["summary.max_retries"],
    )


# What each agent's own compaction keeps after its summary, the default of `summarize`:
# pi keeps the newest 20,000 tokens (keepRecentTokens); Claude Code's compaction keeps no
# message (the summary alone); Codex's keeps no turn but copies the newest requests, up to
# 20,000 tokens, before its summary; Copilot CLI's record cannot keep any (NO_KEPT_TAIL).
AGENT_KEEP: dict[str, KeepPolicy] = {
    "pi": KeepPolicy(tokens=20_000),
    "claude": KeepPolicy(turns=0),
    "codex": KeepPolicy(turns=0, requests=True),
    "copilot": KeepPolicy(turns=0),
}
OTHER_AGENT_KEEP = KeepPolicy(tokens=20_000)


def keep_policy(
    config: Config, keep_turns: int | None = None, keep_tokens: int | None = None
) -> KeepPolicy | None:
    """Command-line choice first, then ``summary.keepTurns`` (if > 0), then keepTokens (if
    > 0); None: the agent's own rule (`agent_keep`)."""
    if keep_turns is not None and keep_tokens is not None:
        raise GitClawError("give --keep-turns or --keep-tokens, not both")
    if keep_turns is not None:
        return KeepPolicy(turns=keep_turns)
    if keep_tokens is not None:
        return KeepPolicy(tokens=keep_tokens)
    if config["summary.keepTurns"] > 0:
        return KeepPolicy(turns=config["summary.keepTurns"])
    if config["summary.keepTokens"] > 0:
        return KeepPolicy(tokens=config["summary.keepTokens"])
    return None


def agent_keep(fmt: Format) -> KeepPolicy:
    """What the format's agent keeps after its own compaction (`AGENT_KEEP`)."""
    return AGENT_KEEP.get(fmt.name, OTHER_AGENT_KEEP)


def summary_tokens(summary: str, estimator: TokenEstimator) -> int:
    """Estimated tokens of a summary as the model receives it."""
    return estimate_message(Message(SUMMARY, [Part(TEXT, summary)], 0), estimator)


def iso_now() -> str:
    """The current time as JavaScript's toISOString writes it: milliseconds and Z."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def _stat_key(stat: os.stat_result) -> tuple[int, int, int]:
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino)


def summarize_file(
    repo: Repository,
    path: Path,
    config: Config,
    *,
    keep: KeepPolicy | None = None,
    offline: bool = False,
    client_factory: ClientFactory = make_client,
    now: Callable[[], str] = iso_now,
) -> SummaryReport:
    """Run one round on ``path`` and append its compaction entry (see the module doc)."""
    rel = repo.relative(path)
    if not path.is_file():
        raise GitClawError(f"{rel}: no such session file")
    chosen = keep or keep_policy(config)
    estimator = get_estimator(config["tokens.estimator"])
    with repo.lock(rel, rel):
        clean_stale_temps(path)
        stat = path.stat()
        data = path.read_bytes()
        lines = lines_from_bytes(data)
        fmt = detect(lines, rel)
        keep = chosen or agent_keep(fmt)
        try:
            originals = line_originals(repo, rel, config["archive.ref"])
            context = read_context(fmt, lines, estimator, originals)
            plan = plan_summary(context, keep, estimator, fmt.resume)
        except Unsupported as error:
            raise error.at(rel) from None
        report = _planned(rel, keep, plan, context, estimator)
        if isinstance(plan, NoSummary):
            return report
        facts = extract_facts(plan.history, plan.people)
        # What the summary replaces: this round's messages and the previous summary.
        replaced = plan.tokens_before_estimated - plan.kept_tokens - plan.instructions_tokens
        if (reason := _fewer_than_facts(plan, facts, estimator, replaced)) is not None:
            report.reason = reason
            return report
        meta: dict[str, Any] = {"round": plan.round}
        wanted = _request(plan, facts, len(lines), now(), meta, keep)
        # The format refuses what its agent cannot resume from before any LLM call.
        _record(fmt, lines, wanted, rel)
        summary = _summary_text(plan, facts, config, rel, client_factory, report, meta, offline)
        if not _smaller(report, plan, summary, estimator, replaced):
            return report
        meta["mode"] = report.mode
        meta["provider"] = report.provider
        meta["entriesSummarized"] = len(plan.summarized)
        record = _record(fmt, lines, replace(wanted, summary=summary), rel)
        # The context after, as `status` will measure the file written: one figure, one source.
        written = lines_from_bytes(_appended(data, record))
        after = measure_context(read_context(fmt, written, estimator), estimator)
        report.tokens_after, report.tokens_after_label = after.tokens, after.brief()
        _append(path, stat, data, record, rel)
    report.status = "summarized"
    report.compaction_id = _record_id(fmt, record[-1]) or f"L{len(lines) + len(record)}"
    return report


def _planned(
    rel: str,
    keep: KeepPolicy,
    plan: SummaryPlan | NoSummary,
    context: Context,
    estimator: TokenEstimator,
) -> SummaryReport:
    """The report of what the plan found: why there is no round, or what the round takes."""
    report = SummaryReport(rel, "nothing-to-summarize", keep=keep.describe())
    if isinstance(plan, NoSummary):
        report.reason, report.refused = plan.reason, plan.refused
        report.status = plan.status
        return report
    report.round = plan.round
    report.entries_summarized = len(plan.summarized)
    if plan.keeps:
        report.first_kept_entry_id = plan.first_kept.entry_id or f"L{plan.first_kept.line}"
    report.tokens_before = plan.tokens_before
    report.tokens_before_label = measure_context(context, estimator).brief()
    report.tokens_before_estimated = plan.tokens_before_estimated
    return report


def _request(
    plan: SummaryPlan,
    facts: Facts,
    line_count: int,
    timestamp: str,
    meta: dict[str, Any],
    keep: KeepPolicy,
) -> SummaryRequest:
    """The record the agent is asked to write, its summary still empty; its metadata
    (`meta`) gains the mode, provider and model once they are known."""
    return SummaryRequest(
        summary="",
        first_kept=plan.first_kept.line if plan.keeps else line_count + 1,
        leaf=plan.leaf.number,
        tokens_before=plan.tokens_before,
        timestamp=timestamp,
        details={
            READ_FILES: facts.read_files,
            MODIFIED_FILES: facts.modified_files,
            SUMMARY_META: meta,
        },
        copy_requests=keep.requests and not plan.keeps,
    )


def _fewer_than_facts(
    plan: SummaryPlan, facts: Facts, estimator: TokenEstimator, replaced: int
) -> str | None:
    """Why no summary can be smaller than what it replaces: its facts alone are not."""
    floor = summary_tokens(render_facts(facts, plan.round), estimator)
    if floor < replaced:
        return None
    return (
        f"the {replaced:,} tokens before the cut are fewer than the facts of a summary "
        f"(~{floor:,}); keep fewer turns or tokens"
    )


def _smaller(
    report: SummaryReport,
    plan: SummaryPlan,
    summary: str,
    estimator: TokenEstimator,
    replaced: int,
) -> bool:
    """Whether the context with the summary is smaller than without it; the report says
    what the summary costs, and why nothing is written when it is not smaller."""
    stays = plan.kept_tokens + plan.instructions_tokens  # sent as before, after and around it
    report.tokens_after = summary_tokens(summary, estimator) + stays
    report.summary_chars = len(summary)
    if report.tokens_after < plan.tokens_before_estimated:
        return True
    report.status = "not-smaller"
    report.reason = (
        f"the summary (~{report.tokens_after - stays:,} tokens) would not "
        f"be smaller than the {replaced:,} tokens it replaces; nothing was written"
    )
    return False


def _summary_text(
    plan: SummaryPlan,
    facts: Facts,
    config: Config,
    rel: str,
    client_factory: ClientFactory,
    report: SummaryReport,
    meta: dict[str, Any],
    offline: bool,
) -> str:
    """The summary of `summarize_file`: extractive when offline or with no provider set,
    else the LLM's (its model noted in `meta`); its mode and provider noted in `report`."""
    settings = None if offline else provider_settings(config)
    if settings is None:
        report.mode, report.provider = "extractive", "none"
        return extractive_summary(plan, facts)
    summary = _ask(plan, facts, settings, config, rel, client_factory, report)
    meta["model"] = report.model
    return summary


def _ask(
    plan: SummaryPlan,
    facts: Facts,
    settings: ProviderSettings,
    config: Config,
    rel: str,
    client_factory: ClientFactory,
    report: SummaryReport,
) -> str:
    """The summary the LLM writes, with what the call cost noted in `report`; a failed call
    is one line saying the file is unchanged."""
    limits = PromptLimits(
        tool_result_chars=config["summary.toolResultMaxChars"],
        max_input_tokens=config["summary.maxInputTokens"],
    )
    system, user = build_prompt(plan, facts, limits, settings.max_tokens)
    request = CompletionRequest.from_settings(settings, system=system, user=user)
    try:
        result = client_factory(settings).complete(request)
    except GitClawError as error:
        raise GitClawError(
            f"{rel}: no summary written, the file is unchanged: {error} "
            "(or use --offline for an extractive summary)"
        ) from None
    summary = llm_summary(plan, facts, result.text, model=result.model, provider=settings.provider)
    report.mode, report.provider, report.model = "llm", settings.provider, result.model
    report.attempts = result.attempts
    report.input_tokens = result.usage.input_tokens
    report.output_tokens = result.usage.output_tokens
    if result.stop_reason in ("length", "max_tokens"):
        report.warnings.append(
            f"{rel}: the summary stopped at summary.max_tokens "
            f"({settings.max_tokens}); the extracted facts are complete"
        )
    return summary


def _record(fmt: Format, lines: list[RawLine], wanted: SummaryRequest, rel: str) -> list[bytes]:
    """The lines of the agent's record, or its refusal in one line naming the file."""
    try:
        return fmt.summary_record(lines, wanted)
    except Unsupported as error:
        raise error.at(rel) from None
    except GitClawError as error:
        raise GitClawError(f"{rel}: {error}; nothing was written") from None


def _record_id(fmt: Format, line: bytes) -> str | None:
    """The id of the record's last line, as `show` finds it."""
    entry = parse_entry(line)
    return fmt.entry_id(entry) if entry is not None else None


def _appended(data: bytes, record: list[bytes]) -> bytes:
    """The file with the record's lines after it."""
    newline = b"\n" if data and not data.endswith(b"\n") else b""
    return data + newline + b"".join(line + b"\n" for line in record)


def _append(path: Path, stat: os.stat_result, data: bytes, record: list[bytes], rel: str) -> None:
    """Write ``data`` plus the ``record`` lines to a temp file and rename it over ``path``."""
    output = AtomicFile(path)
    try:  # AtomicFile.write names the file when the disk is full, as compress does
        output.write(_appended(data, record))
        output.seal()
        if _stat_key(path.stat()) != _stat_key(stat):
            raise GitClawError(f"{rel}: changed while it was being summarized; run again")
        output.replace()
    except BaseException:
        output.discard()
        raise


# --------------------------------------------------------------------------------------
# The opt-in stage of `compress`
# --------------------------------------------------------------------------------------


@dataclass
class StageOutcome:
    path: str
    ran: bool
    level: str | None = None
    percent: float | None = None
    report: SummaryReport | None = None
    warning: str | None = None

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "path": self.path,
            "ran": self.ran,
            "level": self.level,
            "percent": None if self.percent is None else round(self.percent, 1),
            "warning": self.warning,
        }
        document["summary"] = self.report.as_json() if self.report else None
        return document


def maybe_summarize(
    repo: Repository,
    path: Path,
    config: Config,
    *,
    client_factory: ClientFactory = make_client,
) -> StageOutcome:
    """The hook stage: summarize when the context level reaches ``summary.whenLevel``.

    Disabled unless ``summary.enabled``. A failure (the LLM, a lock, a bad file) becomes
    ``warning`` and the file stays as it was, unless ``summary.blockCommitOnFailure`` is
    set: then the error is raised. A format that cannot summarize (`Unsupported`) is a
    warning that says so, never a blocked commit.
    """
    rel = repo.relative(path)
    outcome = StageOutcome(rel, ran=False)
    if not config["summary.enabled"]:
        return outcome
    try:
        lines = lines_from_bytes(path.read_bytes())
        try:
            originals = line_originals(repo, rel, config["archive.ref"])
            settings = config.context_settings()
            fullness = context_fullness(
                lines, detect(lines, rel), settings, get_estimator(settings.estimator), originals
            )
        except Unsupported as error:
            raise error.at(rel) from None
        outcome.level, outcome.percent = fullness.level, fullness.percent
        if LEVELS.index(fullness.level) < LEVELS.index(config["summary.whenLevel"]):
            return outcome
        outcome.ran = True
        outcome.report = summarize_file(repo, path, config, client_factory=client_factory)
    except Unsupported as error:
        # The format cannot summarize: nothing failed, so the commit is never blocked.
        outcome.warning = f"summary stage skipped: {error.at(rel)}"
    except (GitClawError, OSError) as error:
        if config["summary.blockCommitOnFailure"]:
            if isinstance(error, GitClawError):
                raise
            raise GitClawError(f"{rel}: summary stage failed: {error}") from None
        message = str(error)
        outcome.warning = "summary stage failed: " + (
            message if message.startswith(rel) else f"{rel}: {message}"
        )
    return outcome


def summary_stage(
    repo: Repository,
    paths: Iterable[Path],
    config_of: Callable[[Path], Config],
    *,
    client_factory: ClientFactory = make_client,
) -> list[StageOutcome]:
    """:func:`maybe_summarize` on each path whose config enables the stage."""
    outcomes = []
    for path in paths:
        config = config_of(path)
        if config["summary.enabled"]:
            outcomes.append(maybe_summarize(repo, path, config, client_factory=client_factory))
    return outcomes


def describe_stage(outcome: StageOutcome) -> str | None:
    """One line for people, or None when the stage did not run."""
    if outcome.report is not None:
        return describe(outcome.report)
    return None


def describe(report: SummaryReport) -> str:
    """One line for people."""
    if report.status == "not-smaller" or report.refused:
        return f"not summarized {report.path}: {report.reason}"
    if report.status != "summarized":
        return f"nothing to summarize in {report.path}: {report.reason}"
    how = (
        "extractive, no LLM" if report.mode == "extractive" else f"{report.provider} {report.model}"
    )
    kept = (
        f"kept {report.keep} from entry {report.first_kept_entry_id}"
        if report.first_kept_entry_id is not None
        else "kept nothing after it"
        if report.keep == "nothing"
        else f"kept {report.keep}"
    )
    return (
        f"summarized {report.path}: round {report.round}, {report.entries_summarized} entries "
        f"({how}); context {report.tokens_before:,} tokens ({report.tokens_before_label}) -> "
        f"{report.tokens_after:,} ({report.tokens_after_label}); "
        f"{kept}; compaction entry {report.compaction_id}"
    )
