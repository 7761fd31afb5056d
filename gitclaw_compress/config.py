"""compression.json: every option declared once, with its type, default and meaning.

Lookup order for a session: `--config FILE`, then `compression.json` in the session's agent
folder (the folder that holds `state/`), then `compression.json` at the repository root, then
the built-in defaults. Keys left out of a file take their defaults. An unknown key or a value
of the wrong type is an error that names the file and the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.settings import (
    DEFAULT_ESTIMATOR,
    DEFAULT_RESERVE_TOKENS,
    ESTIMATOR_NAMES,
    BudgetSettings,
    CompressSettings,
    ContextSettings,
    PreviewSettings,
)

CONFIG_NAME = "compression.json"

DEFAULT_SESSION_GLOBS = (
    "*/state/**/sessions/*.jsonl",
    # Claude Code: a committed ~/.claude/projects, subagent files, Entire's checkpoints.
    ".claude/projects/**/*.jsonl",
    "**/subagents/agent-*.jsonl",
    "*/*/*/full.jsonl",
    # Codex CLI rollouts: a committed CODEX_HOME at the root, or inside an agent's state.
    ".codex/sessions/**/rollout-*.jsonl",
    ".codex/archived_sessions/**/rollout-*.jsonl",
    "*/state/**/sessions/**/rollout-*.jsonl",
    "*/state/**/archived_sessions/**/rollout-*.jsonl",
    # Copilot CLI's events, committed from ~/.copilot at the root or under a state folder
    ".copilot/session-state/*/events.jsonl",
    "state/**/.copilot/session-state/*/events.jsonl",
    "*/state/**/.copilot/session-state/*/events.jsonl",
)
DEFAULT_MAPPING_GLOBS = ("*/state/issues/*.json", "*/state/pull-requests/*.json")


@dataclass(frozen=True, slots=True)
class Option:
    key: str  # "section.name"
    kind: type
    default: Any
    doc: str
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] | None = None


OPTIONS: tuple[Option, ...] = (
    # The keys of the GitClaw compression proposal.
    Option("session.enabled", bool, True, "Compress at all. `false` makes `compress` a no-op."),
    Option(
        "session.sizeThresholdKB",
        int,
        100,
        "Leave session files smaller than this many KiB alone (`--force` ignores it).",
        minimum=0,
    ),
    Option(
        "session.minGainPercent",
        int,
        1,
        "Leave a session alone when compressing it would shrink it by less than this "
        "percent (`--force` ignores it): a rewrite of the agent's file and an archive commit "
        "for a gain nobody would notice.",
        minimum=0,
        maximum=100,
    ),
    Option(
        "session.minGainBytes",
        int,
        1024,
        "Leave a session alone when compressing it would shrink it by fewer bytes than this "
        "(`--force` ignores it).",
        minimum=0,
    ),
    Option(
        "session.turnThresholdBeforeCompress",
        int,
        4,
        "Keep this many most recent turns byte for byte (`--keep-turns` overrides it). "
        "A turn starts at a user message.",
        minimum=0,
    ),
    Option(
        "session.toolCallMaxBytes",
        int,
        500,
        "Tool-call arguments larger than this (as JSON) are reduced to their small values "
        "and a stub.",
        minimum=0,
    ),
    Option(
        "session.toolResultMaxBytes",
        int,
        500,
        "Tool-result content and details larger than this are replaced by a stub with a "
        "head/tail preview.",
        minimum=0,
    ),
    Option(
        "session.stripThinking",
        bool,
        True,
        "Empty old thinking blocks (text and signature) for Anthropic, chat-completions and "
        "other APIs. OpenAI Responses reasoning is never touched.",
    ),
    Option(
        "session.eliminateRedundancy",
        bool,
        True,
        "Stub tool outputs that a later tool output repeats exactly, or that the next "
        "assistant reply quotes word for word.",
    ),
    Option(
        "session.keepBackup",
        bool,
        True,
        "Keep every dropped byte. Git is the backup: payloads go to the archive ref and no "
        "`.bak` file is written. `false` is refused, because nothing is ever dropped "
        "without a way back.",
    ),
    # Keys this product adds.
    Option(
        "session.keepUserImages",
        bool,
        False,
        "Keep the images a person pasted in old turns. By default every image before the "
        "kept turns, pasted or made by a tool, becomes a text stub (media type, size, the "
        "`show` command). User text is never changed. The old key `stripUserImages` is still "
        "read: `true` means `keepUserImages: false`, `false` means `keepUserImages: true`.",
    ),
    Option(
        "session.stubUiCopies",
        bool,
        False,
        "Also stub, in every turn including the kept ones, the values that only the agent's "
        "UI reads and the model never sees (Claude Code `toolUseResult`, pi "
        "`toolResult.details`, Codex `exec_command_end`/`patch_apply_*` copies of outputs "
        "and diffs and the copies of replies, plans and reasoning summaries, Copilot CLI "
        "`detailedContent`/`contents`). The request the agent sends on resume is unchanged "
        "byte for byte; its UI shows the stub in place of the copy.",
    ),
    Option(
        "session.deep",
        bool,
        False,
        "Deep compression (`--deep` turns it on for one run): also archive, before the "
        "agent's last compaction record, every value its CLI never sends again; stub UI-only "
        "copies in every turn (as `stubUiCopies`); stub tool outputs and arguments over "
        "`session.deepKeptMaxBytes` in the kept turns too; drop thinking blocks whole of old "
        "turns where the provider accepts a turn without them (Claude Code: signed ones too, "
        "and those of kept turns whose tool loop is closed). Every byte stays restorable. "
        "See docs/deep.md.",
    ),
    Option(
        "session.deepKeptMaxBytes",
        int,
        8192,
        "Under `session.deep`: tool outputs and arguments in the kept turns larger than "
        "this become stubs with their previews and the `show` command.",
        minimum=0,
    ),
    Option(
        "session.bashCommandMaxChars",
        int,
        200,
        "In large old tool calls, a shell `command` keeps this many characters.",
        minimum=0,
    ),
    Option(
        "session.redundancyMinBytes",
        int,
        400,
        "Tool outputs smaller than this are never stubbed as repeated or quoted.",
        minimum=0,
    ),
    Option(
        "session.previewLines",
        int,
        2,
        "Lines of the head and of the tail shown in a tool-output stub.",
        minimum=0,
    ),
    Option(
        "session.previewLineChars",
        int,
        120,
        "Each preview line is cut to this many characters.",
        minimum=8,
    ),
    # Token-aware layers: estimates, levels, model limits, budget pruning.
    Option(
        "tokens.estimator",
        str,
        DEFAULT_ESTIMATOR,
        "How tokens are estimated where no recorded usage applies: `chars4` (pi's own "
        "heuristic), `bytes4`, `cjk` or `o200k` (exact; needs `gitclaw-compress[tokens]`). "
        "See docs/tokens.md.",
        choices=ESTIMATOR_NAMES,
    ),
    Option(
        "tokens.reserve",
        int,
        DEFAULT_RESERVE_TOKENS,
        "Tokens kept free besides the reply: usable = window - min(max output, 32000) - "
        "reserve. pi compacts at window - 16384.",
        minimum=0,
    ),
    Option(
        "tokens.warningPercent",
        int,
        75,
        "`status` says warning when the context is at or above this % of the usable tokens.",
        minimum=1,
        maximum=100,
    ),
    Option(
        "tokens.criticalPercent",
        int,
        90,
        "`status` says critical at or above this % (at least tokens.warningPercent).",
        minimum=1,
        maximum=100,
    ),
    Option(
        "models.overrides",
        dict,
        {},
        'Limits per model id, over the built-in table: `{"gpt-5.4": {"context_window": '
        '272000, "max_output": 128000}}` (pi\'s `contextWindow`/`maxTokens` work too). A key '
        "matches the id as recorded or normalized (`minimax-m2.5` covers "
        "`openrouter/minimax/minimax-m2.5`).",
    ),
    Option(
        "prune.strategy",
        str,
        "turns",
        "What `compress` compresses: `turns` (everything before the last "
        "session.turnThresholdBeforeCompress turns), `tokens` (budget pruning of old tool "
        "outputs only) or `both` (the union of the two).",
        choices=("turns", "tokens", "both"),  # compress.STRATEGIES, checked by a test
    ),
    Option(
        "prune.protectTokens",
        int,
        40_000,
        "Budget pruning walks back from the newest message and never prunes the newest this "
        "many context tokens.",
        minimum=0,
    ),
    Option(
        "prune.minimumTokens",
        int,
        20_000,
        "Budget pruning happens only if it frees at least this many tokens (each prune "
        "changes old messages, which costs the provider's prompt cache).",
        minimum=0,
    ),
    Option(
        "prune.protectedTools",
        list,
        ["skill"],
        "Outputs of these tools are never pruned.",
    ),
    Option(
        "prune.protectTurns",
        int,
        1,
        "The floor: budget pruning and target mode never touch the newest this many turns.",
        minimum=0,
    ),
    Option(
        "prune.targetPercent",
        int,
        60,
        "Target mode (`prune --target`, for the critical level): compress older content, "
        "oldest first, until the context is at or under this % of the usable tokens.",
        minimum=1,
        maximum=100,
    ),
    Option(
        "archive.ref",
        str,
        "refs/gitclaw/archive",
        "The ref that keeps every dropped payload reachable. Push it with "
        "`git push origin 'refs/gitclaw/*:refs/gitclaw/*'`.",
    ),
    Option(
        "archive.remote",
        str,
        "origin",
        "The remote that `push`, `fetch`, `step --push` and the automatic fetch use.",
    ),
    Option(
        "archive.localOnly",
        bool,
        False,
        "The archive stays in this clone on purpose, with no remote: `doctor` then does not "
        "count compressed sessions whose archive.remote does not exist as a problem (a fresh "
        "clone could not restore them). `doctor` reads it for each session from the file "
        "`compress` uses for it (the agent folder's, such as .GITCLAW/compression.json, or "
        "the root's). Once that remote exists, `doctor` asks for the archive there again.",
    ),
    Option(
        "archive.autoFetch",
        bool,
        True,
        "When `restore`, `verify` or `show` needs a payload that this clone lacks (a "
        "`--depth 1` or single-branch clone), fetch the archive ref from archive.remote "
        "once, then go on. `false` prints the command that would fetch it instead.",
    ),
    Option(
        "scan.enabled",
        bool,
        True,
        "Scan session files for secrets in `compress`, `step`, `stores` and the pre-commit "
        "hooks, and "
        "the archive objects and the new commits' session lines in the pre-push hook (see "
        "docs/secrets.md).",
    ),
    Option(
        "scan.block",
        bool,
        True,
        "On a finding the baseline does not accept: hold that session (untouched; the others "
        "are compressed; exit 1), and refuse the push (nothing pushed). `false` turns each "
        "finding into a warning.",
    ),
    Option(
        "scan.baseline",
        str,
        ".gitclaw-secrets.json",
        "The baseline of accepted findings (by sha256, never the secret), relative to the "
        "repository root (for an agent's store: to `~/.config/gitclaw-compress/`). "
        "`gitclaw-compress scan --accept ID` writes it.",
    ),
    Option(
        "sessions.globs",
        list,
        list(DEFAULT_SESSION_GLOBS),
        "Where session files live, as globs relative to the repository root (`*` never "
        "crosses a `/`, `**/` spans any number of folders, hidden folders match). `compress` "
        "with no path, `--all` and `show ENTRY_ID` look here first; read from the root "
        "compression.json only.",
    ),
    Option(
        "sessions.mappingGlobs",
        list,
        list(DEFAULT_MAPPING_GLOBS),
        "Mapping files such as `<agent folder>/state/issues/<N>.json`, whose "
        "`sessionPath` (repository-relative) names the session of an issue. Used by "
        "`compress`/`step` with no path and by `--issue N`.",
    ),
    # The agents' own stores (`gitclaw-compress stores`; see docs/stores.md).
    Option(
        "stores.quietMinutes",
        int,
        5,
        "`stores` leaves a session alone until it has been left unwritten this many minutes "
        "(an agent may still be working in it). Read from the compression.json in "
        "`$XDG_CONFIG_HOME/gitclaw-compress/` (else `~/.config/gitclaw-compress/`).",
        minimum=0,
    ),
    Option(
        "stores.remote",
        str,
        "",
        "A remote of a store's archive that `stores` pushes the archive to after each run "
        "(as `--remote` does); empty: the archive stays on this machine.",
    ),
    # Summarizing compaction (`summarize`, and the opt-in stage of `compress`).
    Option(
        "summary.provider",
        str,
        "none",
        "The LLM that writes summaries: `openai` (any OpenAI-compatible chat completions "
        "server: OpenAI, OpenRouter, Ollama, vLLM, llama.cpp), `anthropic` (the Messages "
        "API), or `none` for the extractive summary that needs no LLM.",
        choices=("none", "openai", "anthropic"),
    ),
    Option(
        "summary.base_url",
        str,
        "",
        "The API's base URL; empty for the provider's own (`https://api.openai.com/v1`, "
        "`https://api.anthropic.com`). OpenRouter: `https://openrouter.ai/api/v1`; Ollama: "
        "`http://localhost:11434/v1`.",
    ),
    Option(
        "summary.model",
        str,
        "",
        "The model that writes summaries (required with a provider). A cheaper model than "
        "the agent's is the normal choice.",
    ),
    Option(
        "summary.api_key_env",
        str,
        "",
        "The environment variable that holds the API key. Empty: `ANTHROPIC_API_KEY` for "
        "anthropic, no key for openai (a local server).",
    ),
    Option(
        "summary.max_tokens",
        int,
        1500,
        "The most tokens the LLM may write for one summary.",
        minimum=1,
    ),
    Option(
        "summary.timeout_s",
        int,
        120,
        "Seconds to wait for the LLM to connect or send the next bytes.",
        minimum=1,
    ),
    Option(
        "summary.max_retries",
        int,
        3,
        "Retries after a timeout, a connection error, HTTP 429 or 5xx, with exponential "
        "backoff (or the server's Retry-After).",
        minimum=0,
    ),
    Option(
        "summary.keepTurns",
        int,
        0,
        "Keep this many most recent turns after the summary (`--keep-turns`). 0: "
        "`summary.keepTokens` decides.",
        minimum=0,
    ),
    Option(
        "summary.keepTokens",
        int,
        0,
        "Keep at least this many of the newest (estimated) tokens after the summary "
        "(`--keep-tokens`). 0 (with `keepTurns` 0): what the agent's own compaction keeps: "
        "pi the newest 20,000 tokens; Claude Code and Copilot CLI nothing, the summary "
        "alone; Codex no turn, only copies of the newest requests (up to 20,000 tokens) "
        "before the summary.",
        minimum=0,
    ),
    Option(
        "summary.toolResultMaxChars",
        int,
        2000,
        "In the prompt, each tool result keeps this many characters (head and tail).",
        minimum=0,
    ),
    Option(
        "summary.maxInputTokens",
        int,
        60000,
        "The conversation in the prompt is cut to about this many tokens (the oldest and "
        "the newest messages stay; the facts cover the rest).",
        minimum=1000,
    ),
    Option(
        "summary.enabled",
        bool,
        False,
        "Run `summarize` as a stage of `compress` when the context reaches `summary.whenLevel`.",
    ),
    Option(
        "summary.whenLevel",
        str,
        "critical",
        "The context level that triggers the stage, as `status` reports it: `warning` "
        "(tokens.warningPercent of the usable context) or `critical` (tokens.criticalPercent).",
        choices=("warning", "critical"),
    ),
    Option(
        "summary.blockCommitOnFailure",
        bool,
        False,
        "When the stage's LLM call fails, fail `compress` (and so the commit) instead of "
        "printing one warning line.",
    ),
)

OPTIONS_BY_KEY = {option.key: option for option in OPTIONS}
# Old keys still read, each as (the key it sets, how its value maps to that key's).
DEPRECATED_KEYS: dict[str, tuple[str, Any]] = {
    "session.stripUserImages": ("session.keepUserImages", lambda strip: not strip),
}
SECTIONS = sorted({option.key.split(".", 1)[0] for option in OPTIONS})


@dataclass(frozen=True, slots=True)
class Config:
    values: Mapping[str, Any]
    source: Path | None  # the file read, None for the built-in defaults

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def with_deep(self, deep: bool) -> Config:
        """This config with `session.deep` set (what `--deep` does for one run)."""
        if not deep or self.values["session.deep"]:
            return self
        return Config({**self.values, "session.deep": True}, self.source)

    def budget_settings(
        self, *, strategy: str | None = None, target_percent: int | None = None
    ) -> BudgetSettings:
        return BudgetSettings(
            strategy=self["prune.strategy"] if strategy is None else strategy,
            estimator=self["tokens.estimator"],
            protect_tokens=self["prune.protectTokens"],
            minimum_tokens=self["prune.minimumTokens"],
            protected_tools=frozenset(self["prune.protectedTools"]),
            protect_turns=self["prune.protectTurns"],
            target_percent=target_percent,
            reserve_tokens=self["tokens.reserve"],
            model_overrides=self["models.overrides"],
        )

    def gain_too_small(self, before: int, after: int) -> str | None:
        """Why shrinking a session from `before` to `after` bytes is too small a gain to
        rewrite it for (`session.minGainPercent`, `session.minGainBytes`), in words; None
        when it is worth it. `compress`, `stores` and `status` all ask this."""
        from gitclaw_compress.units import human_bytes, size_change

        gain = before - after
        percent, least = self["session.minGainPercent"], self["session.minGainBytes"]
        if gain * 100 >= percent * before and gain >= least:
            return None
        return (
            f"compressing would gain only {human_bytes(gain)} ({size_change(before, after)}), "
            f"under session.minGainPercent {percent}% or session.minGainBytes {least:,}; left "
            "as it is (--force compresses it)"
        )

    def context_settings(self) -> ContextSettings:
        return ContextSettings(
            estimator=self["tokens.estimator"],
            reserve_tokens=self["tokens.reserve"],
            model_overrides=self["models.overrides"],
            warning_percent=self["tokens.warningPercent"],
            critical_percent=self["tokens.criticalPercent"],
        )

    def compress_settings(
        self,
        keep_turns: int | None = None,
        *,
        strategy: str | None = None,
        target_percent: int | None = None,
        deep: bool | None = None,
    ) -> CompressSettings:
        """Settings for the core; `strategy`, `target_percent` and `deep` override the
        config."""
        return CompressSettings(
            keep_turns=self["session.turnThresholdBeforeCompress"]
            if keep_turns is None
            else keep_turns,
            tool_call_max_bytes=self["session.toolCallMaxBytes"],
            tool_result_max_bytes=self["session.toolResultMaxBytes"],
            strip_thinking=self["session.stripThinking"],
            eliminate_redundancy=self["session.eliminateRedundancy"],
            keep_user_images=self["session.keepUserImages"],
            stub_ui_copies=self["session.stubUiCopies"],
            deep=self["session.deep"] if deep is None else deep,
            deep_kept_max_bytes=self["session.deepKeptMaxBytes"],
            bash_command_max_chars=self["session.bashCommandMaxChars"],
            redundancy_min_bytes=self["session.redundancyMinBytes"],
            preview=PreviewSettings(
                lines=self["session.previewLines"], line_chars=self["session.previewLineChars"]
            ),
            budget=self.budget_settings(strategy=strategy, target_percent=target_percent),
        )


def defaults() -> Config:
    return Config({option.key: option.default for option in OPTIONS}, None)


def _check_value(option: Option, value: Any, where: str) -> Any:
    kind = option.kind
    # bool is an int in Python; JSON true must not pass as a number, nor 1 as a flag.
    ok = (
        type(value) is bool
        if kind is bool
        else (isinstance(value, kind) and not isinstance(value, bool))
    )
    if not ok:
        names = {
            bool: "true or false",
            int: "an integer",
            str: "a string",
            list: "a list",
            dict: "an object",
        }
        raise GitClawError(
            f"{where}: {option.key} must be {names.get(kind, kind.__name__)}, "
            f"got {orjson.dumps(value).decode()[:60]}"
        )
    if option.choices is not None and value not in option.choices:
        raise GitClawError(
            f"{where}: {option.key} must be one of {', '.join(option.choices)}, got {value!r}"
        )
    if option.minimum is not None and value < option.minimum:
        raise GitClawError(f"{where}: {option.key} must be at least {option.minimum}")
    if option.maximum is not None and value > option.maximum:
        raise GitClawError(f"{where}: {option.key} must be at most {option.maximum}")
    if option.key == "models.overrides":
        _check_overrides(value, f"{where}: {option.key}")
    if kind is list and not all(isinstance(item, str) for item in value):
        raise GitClawError(f"{where}: {option.key} must be a list of strings")
    if option.key == "session.keepBackup" and value is False:
        raise GitClawError(
            f"{where}: session.keepBackup=false is not supported: gitclaw-compress always keeps "
            "dropped content in the git archive; set it to true or remove it"
        )
    if option.key == "archive.ref":
        _check_archive_ref(value, where)
    return value


ARCHIVE_REF_PREFIX = "refs/gitclaw/"


def _check_archive_ref(value: str, where: str) -> None:
    """The archive lives under refs/gitclaw/ (never a branch), under a valid ref name
    (the rules of `git check-ref-format`)."""
    if not value.startswith(ARCHIVE_REF_PREFIX) or value == ARCHIVE_REF_PREFIX:
        raise GitClawError(
            f"{where}: archive.ref must be a ref under {ARCHIVE_REF_PREFIX}, got {value!r}"
        )
    bad = (
        any(part in ("", ".", "..") or part.startswith(".") for part in value.split("/"))
        or any(part.endswith(".lock") for part in value.split("/"))
        or ".." in value
        or "@{" in value
        or value.endswith((".", "/"))
        or any(ord(char) < 0x20 or char in " ~^:?*[\\\x7f" for char in value)
    )
    if bad:
        raise GitClawError(f"{where}: archive.ref {value!r} is not a valid git ref name")


def _check_overrides(value: dict[str, Any], where: str) -> None:
    """Each model override must be an object with a positive context_window (and max_output)."""
    from gitclaw_compress.model_limits import lookup_model  # its patterns cost a no-op step

    for model, limits in value.items():
        try:
            lookup_model(model, {model: limits})
        except GitClawError as error:
            raise GitClawError(f"{where}[{model!r}]: {error}") from None


def _translate_deprecated(key: str, value: Any, where: str) -> tuple[str, Any]:
    """An old key's value as the value of the key that replaced it."""
    target, translate = DEPRECATED_KEYS[key]
    _check_value(Option(key, OPTIONS_BY_KEY[target].kind, None, ""), value, where)
    return target, translate(value)


def parse_config(data: bytes, where: str) -> Config:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise GitClawError(f"{where}: not valid JSON ({error})") from None
    if not isinstance(document, dict):
        raise GitClawError(f"{where}: must be a JSON object with sections {', '.join(SECTIONS)}")
    values = dict(defaults().values)
    given: dict[str, str] = {}  # a key set in the file -> the name it was set by
    for section, body in document.items():
        if section.startswith("$") or section == "//":
            continue  # "$schema" and "//" comments are allowed at the top
        if section not in SECTIONS:
            raise GitClawError(
                f"{where}: unknown section {section!r} (known: {', '.join(SECTIONS)})"
            )
        if not isinstance(body, dict):
            raise GitClawError(f"{where}: {section} must be an object")
        for name, value in body.items():
            key = f"{section}.{name}"
            if name == "//":
                continue
            if key in DEPRECATED_KEYS:
                key, value = _translate_deprecated(key, value, where)
            option = OPTIONS_BY_KEY.get(key)
            if option is None:
                raise GitClawError(f"{where}: unknown key {key!r}")
            value = _check_value(option, value, where)
            if key in given and values[key] != value:
                raise GitClawError(
                    f"{where}: {section}.{name} contradicts {given[key]}; keep only {key}"
                )
            given[key] = f"{section}.{name}"
            values[key] = value
    if values["tokens.warningPercent"] > values["tokens.criticalPercent"]:
        raise GitClawError(
            f"{where}: tokens.warningPercent ({values['tokens.warningPercent']}) must not be "
            f"above tokens.criticalPercent ({values['tokens.criticalPercent']})"
        )
    return Config(values, Path(where))


def agent_folder(session: Path, repo_root: Path) -> Path | None:
    """The agent folder of a session: the nearest ancestor inside the repo holding `state/`."""
    for parent in session.resolve().parents:
        if parent == repo_root or repo_root not in parent.parents:
            return None
        if parent.name == "state":
            return parent.parent
    return None


def find_config_file(session: Path | None, repo_root: Path, explicit: Path | None) -> Path | None:
    if explicit is not None:
        if not explicit.is_file():
            from gitclaw_compress.special_files import refuse_special

            refuse_special(explicit, "a config file")  # reading it could wait for ever
            raise GitClawError(f"{explicit}: config file not found")
        return explicit
    if session is not None:
        folder = agent_folder(session, repo_root)
        if folder is not None and (folder / CONFIG_NAME).is_file():
            return folder / CONFIG_NAME
    candidate = repo_root / CONFIG_NAME
    return candidate if candidate.is_file() else None


def load_config(session: Path | None, repo_root: Path, explicit: Path | None = None) -> Config:
    path = find_config_file(session, repo_root, explicit)
    if path is None:
        return defaults()
    return parse_config(path.read_bytes(), str(path))


def default_document() -> dict[str, dict[str, Any]]:
    """The contents of the shipped compression.json: every option at its default."""
    document: dict[str, dict[str, Any]] = {}
    for option in OPTIONS:
        section, name = option.key.split(".", 1)
        document.setdefault(section, {})[name] = option.default
    return document


def options_markdown() -> str:
    """The table of options in docs/configuration.md (a test keeps the two in step)."""
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    names = {
        bool: "boolean",
        int: "integer",
        str: "string",
        list: "list of strings",
        dict: "object",
    }
    for option in OPTIONS:
        default = orjson.dumps(option.default).decode()
        rows.append(f"| `{option.key}` | {names[option.kind]} | `{default}` | {option.doc} |")
    return "\n".join(rows) + "\n"
