"""Context windows and output limits of the model families that real sessions use.

:func:`lookup_model` maps a model id as sessions record it (``claude-opus-4-6``,
``openrouter/minimax/minimax-m2.5``, ``anthropic.claude-3-5-sonnet-20240620-v1:0``) to
:class:`ModelLimits`, and says where the numbers came from. :func:`usable_tokens` turns limits
into the context a session may fill before it must be compacted.

Source of the numbers: the model table that pi itself uses, ``models.generated.js`` of the npm
package ``@mariozechner/pi-ai`` 0.73.1 (the pi release the session-format doc was checked
against), read on 2026-11-21. Where a provider and a reseller disagree, the model maker's own
API entry (anthropic, openai, google, xai, mistral) was taken. Lines marked "approximate" are
not a single published number: the comment says what was chosen and why. Limits change; a
configuration override (see :func:`lookup_model`) always wins over this table.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.settings import DEFAULT_RESERVE_TOKENS as DEFAULT_RESERVE_TOKENS


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """A model's context window and the most tokens it may write in one reply."""

    context_window: int
    max_output: int

    def __post_init__(self) -> None:
        for field, value in (
            ("context_window", self.context_window),
            ("max_output", self.max_output),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise GitClawError(f"model limit {field} must be a positive integer, not {value!r}")


FALLBACK_LIMITS: Final = ModelLimits(context_window=128_000, max_output=16_384)
"""For a model no family matches: a 128,000-token window, the smallest that current coding
models have, with 16,384 output tokens, what 128k-window models typically allow (gpt-4o,
gpt-5-chat); usable_tokens reserves that much for the reply on top of the compaction reserve."""

OUTPUT_RESERVE_CAP: Final = 32_000
"""usable_tokens never reserves more than this for the reply, however large max_output is."""


@dataclass(frozen=True, slots=True)
class ModelFamily:
    name: str
    pattern: re.Pattern[str]
    limits: ModelLimits


def _family(name: str, pattern: str, context_window: int, max_output: int) -> ModelFamily:
    # A family matches where its pattern starts a word of the normalized id: "o3" matches
    # "o3-mini" but not "gpt-4o3", "gpt-4o" does not match "chatgpt-4o".
    compiled = re.compile(rf"(?<![a-z0-9])(?:{pattern})")
    return ModelFamily(name, compiled, ModelLimits(context_window, max_output))


# Ordered: the first family whose pattern matches wins, so specific ones come first.
# Version separators may be "-" or "." (claude-opus-4-6, anthropic/claude-opus-4.6).
BUILTIN_FAMILIES: Final[tuple[ModelFamily, ...]] = (
    # --- Anthropic Claude (provider "anthropic" in pi-ai 0.73.1) ---
    _family("claude-opus-4.6+", r"claude-opus-4[.-][6-9](?!\d)", 1_000_000, 128_000),
    _family("claude-sonnet-4.6+", r"claude-sonnet-4[.-][6-9](?!\d)", 1_000_000, 64_000),
    _family("claude-opus-4.5", r"claude-opus-4[.-]5(?!\d)", 200_000, 64_000),
    _family("claude-opus-4", r"claude-opus-4|claude-4-opus", 200_000, 32_000),  # 4.0 and 4.1
    _family("claude-sonnet-4", r"claude-sonnet-4|claude-4-sonnet", 200_000, 64_000),  # 4.0, 4.5
    _family("claude-haiku-4", r"claude-haiku-4", 200_000, 64_000),
    _family("claude-3.7-sonnet", r"claude-3[.-]7-sonnet", 200_000, 64_000),
    _family("claude-3.5", r"claude-3[.-]5-(?:sonnet|haiku)", 200_000, 8_192),
    _family("claude-3", r"claude-3-(?:opus|sonnet|haiku)", 200_000, 4_096),
    # approximate: any other Claude; every Claude since 3.0 has at least a 200k window.
    _family("claude", r"claude", 200_000, 32_000),
    # --- OpenAI GPT and o-series (provider "openai") ---
    _family("gpt-5-chat", r"gpt-5(?:\.\d+)?-chat", 128_000, 16_384),
    _family("gpt-5.3-codex-spark", r"gpt-5\.3-codex-spark", 128_000, 32_000),
    _family("gpt-5.4-pro+", r"gpt-5\.[4-9]-pro", 1_050_000, 128_000),
    # gpt-5-pro allows 272,000 output tokens, the later 5.x-pro 128,000.
    _family("gpt-5-pro", r"gpt-5(?:\.[0-3])?-pro", 400_000, 128_000),
    _family("gpt-5.4-mini", r"gpt-5\.[4-9]-(?:mini|nano)", 400_000, 128_000),
    _family("gpt-5.4+", r"gpt-5\.[4-9](?!\d)", 272_000, 128_000),  # gpt-5.4, gpt-5.5
    _family("gpt-5", r"gpt-5", 400_000, 128_000),  # 5, 5.1, 5.2, 5.3, -codex, -mini, -nano
    _family("gpt-4.1", r"gpt-4\.1", 1_047_576, 32_768),
    _family("gpt-4o", r"(?:chat)?gpt-4o", 128_000, 16_384),
    _family("gpt-4-turbo", r"gpt-4-turbo|gpt-4-\d{4}-preview", 128_000, 4_096),
    _family("gpt-4", r"gpt-4(?:-\d{4})?$", 8_192, 8_192),
    # approximate: 131,072 is the model's window on every host; the output limit is the
    # host's (4,096 to 131,072 in pi-ai), 32,768 is Cerebras' and Fireworks'.
    _family("gpt-oss", r"gpt-oss", 131_072, 32_768),
    # approximate: retired models, not in pi-ai 0.73.1; from OpenAI's model pages.
    _family("o1-mini", r"o1-(?:mini|preview)", 128_000, 65_536),
    _family("o-series", r"o[1-9](?:-|$)", 200_000, 100_000),  # o1, o1-pro, o3, o3-mini, o4-mini
    # --- Google Gemini (provider "google") ---
    _family("gemini-live", r"gemini-live", 128_000, 8_000),
    _family("gemini-3-pro", r"gemini-3-pro", 1_000_000, 64_000),
    _family("gemini-3", r"gemini-3", 1_048_576, 65_536),  # 3-flash, 3.1-pro, 3.1-flash-lite
    _family("gemini-2.5", r"gemini-2\.5", 1_048_576, 65_536),
    _family("gemini-2.0", r"gemini-2\.0", 1_048_576, 8_192),
    _family("gemini-1.5", r"gemini-1\.5", 1_000_000, 8_192),
    _family("gemini", r"gemini", 1_048_576, 65_536),  # gemini-flash-latest and the like
    # --- xAI Grok (provider "xai") ---
    _family("grok-code", r"grok-code", 256_000, 10_000),
    _family("grok-4-fast", r"grok-4[.-]20|grok-4[.-]1-fast|grok-4-fast", 2_000_000, 30_000),
    _family("grok-4.3", r"grok-4[.-]3(?!\d)", 1_000_000, 30_000),
    _family("grok-4", r"grok-4", 256_000, 64_000),
    _family("grok-vision", r"grok-2-vision|grok-vision", 8_192, 4_096),
    _family("grok-3", r"grok-3", 131_072, 8_192),  # grok-3, grok-3-mini, -fast
    _family("grok", r"grok", 131_072, 8_192),  # grok-2, grok-beta
    # --- MiniMax ---
    _family("minimax-m1", r"minimax-m1", 1_000_000, 40_000),
    # MiniMax's own API says 204,800; OpenRouter (which the sessions seen use) 196,608.
    # The smaller is taken.
    _family("minimax-m2", r"minimax-m2", 196_608, 131_072),  # m2, m2.1, m2.5, m2.7
    # --- Mistral (provider "mistral"). approximate output: Mistral's entries give the whole
    # window as output limit, or 16,384 where they give less; 16,384 is used for the large
    # windows, OpenRouter's 4,096 for mixtral. ---
    _family("codestral", r"codestral", 256_000, 4_096),
    _family("devstral", r"devstral", 128_000, 16_384),  # devstral-2512 has 262,144; others 128k
    _family("mistral-large-24xx", r"mistral-large-24", 131_072, 16_384),
    _family("mistral-large", r"mistral-large", 262_144, 16_384),
    _family("mistral-medium", r"mistral-medium", 131_072, 16_384),  # 2508 and later: 262,144
    _family("mixtral-8x22b", r"(?:open-)?mixtral-8x22b", 64_000, 4_096),  # OpenRouter's output
    _family("mixtral", r"(?:open-)?mixtral", 32_000, 4_096),
    _family("mistral", r"mistral|magistral|ministral|pixtral", 128_000, 16_384),
    # --- others often reached through OpenRouter ---
    _family("kimi-k2", r"kimi-k2", 262_144, 32_768),  # kimi-coding's output limit
    _family("glm-4.5", r"glm-4\.5", 131_072, 98_304),
    _family("glm-4.6+", r"glm-4\.[6-9]|glm-5", 200_000, 131_072),
    _family("qwen3-coder", r"qwen3-coder", 262_144, 65_536),
)

_DATE_SUFFIX: Final = re.compile(r"(?:[-@]\d{8}|-\d{4}-\d{2}-\d{2})(?=$|[-:])")
_BEDROCK_VERSION: Final = re.compile(r"-v\d+(?::\d+)?$")


def normalize_model_id(model_id: str) -> str:
    """The id without provider prefix, ``:variant`` suffix, Bedrock version or date, lowercased.

    ``openrouter/anthropic/claude-3.7-sonnet:thinking`` gives ``claude-3.7-sonnet``,
    ``anthropic.claude-3-5-sonnet-20240620-v1:0`` gives ``anthropic.claude-3-5-sonnet`` (the
    family patterns do not care about a dotted vendor prefix), ``gpt-4o-2024-08-06`` gives
    ``gpt-4o``.
    """
    text = model_id.strip().lower()
    text = text.rsplit("/", 1)[-1]
    text = _BEDROCK_VERSION.sub("", text)
    text = text.split(":", 1)[0]
    return _DATE_SUFFIX.sub("", text)


def _limits_from_override(
    key: str, value: ModelLimits | Mapping[str, Any], base: ModelLimits
) -> ModelLimits:
    if isinstance(value, ModelLimits):
        return value
    if not isinstance(value, Mapping):
        raise GitClawError(
            f"model override {key!r} must be an object with context_window and max_output, "
            f"not {type(value).__name__}"
        )
    aliases = {
        "context_window": "context_window",
        "contextWindow": "context_window",
        "max_output": "max_output",
        "maxTokens": "max_output",
    }
    fields: dict[str, Any] = {}
    for name, item in value.items():
        field = aliases.get(name)
        if field is None:
            raise GitClawError(
                f"model override {key!r} has unknown key {name!r}: "
                "use context_window and max_output"
            )
        fields[field] = item
    if "context_window" not in fields:
        raise GitClawError(f"model override {key!r} is missing context_window")
    window = fields["context_window"]
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise GitClawError(
            f"model override {key!r}: context_window must be a positive integer, not {window!r}"
        )
    max_output = fields.get("max_output", min(base.max_output, window))
    if isinstance(max_output, bool) or not isinstance(max_output, int) or max_output <= 0:
        raise GitClawError(
            f"model override {key!r}: max_output must be a positive integer, not {max_output!r}"
        )
    return ModelLimits(window, max_output)


def builtin_limits(model_id: str) -> tuple[ModelLimits, str]:
    """The built-in table's limits for ``model_id``: ``(limits, "builtin:<family>")``, or
    ``(FALLBACK_LIMITS, "fallback")`` when no family matches."""
    normalized = normalize_model_id(model_id)
    for family in BUILTIN_FAMILIES:
        if family.pattern.search(normalized):
            return family.limits, f"builtin:{family.name}"
    return FALLBACK_LIMITS, "fallback"


def lookup_model(
    model_id: str,
    overrides: Mapping[str, ModelLimits | Mapping[str, Any]] | None = None,
) -> tuple[ModelLimits, str]:
    """The limits of ``model_id`` and where they came from.

    The second item is ``"override"``, ``"builtin:<family>"`` (e.g.
    ``"builtin:claude-opus-4.6+"``) or ``"fallback"``.

    ``overrides`` maps model ids to :class:`ModelLimits` or to objects with
    ``context_window`` and optionally ``max_output`` (pi's models.json names
    ``contextWindow`` and ``maxTokens`` work too; a missing max_output is taken from the
    built-in table, capped at the window). An override key matches the id exactly or after
    :func:`normalize_model_id` on both sides, so ``"minimax-m2.5"`` covers
    ``"openrouter/minimax/minimax-m2.5"``. A malformed override is a GitClawError naming it.
    """
    base, source = builtin_limits(model_id)
    if overrides:
        normalized = normalize_model_id(model_id)
        match = overrides.get(model_id)
        key = model_id
        if match is None:
            for candidate, value in overrides.items():
                if normalize_model_id(candidate) == normalized:
                    key, match = candidate, value
                    break
        if match is not None:
            return _limits_from_override(key, match, base), "override"
    return base, source


def usable_tokens(limits: ModelLimits, reserve: int) -> int:
    """The context a session may fill: ``window - min(max_output, 32000) - reserve``.

    The reply needs room (at most :data:`OUTPUT_RESERVE_CAP` of it is set aside) and so
    does the compaction reserve (pi's default is :data:`DEFAULT_RESERVE_TOKENS`). Never
    below 0. A negative reserve is a GitClawError.
    """
    if isinstance(reserve, bool) or not isinstance(reserve, int) or reserve < 0:
        raise GitClawError(f"reserve tokens must be a non-negative integer, not {reserve!r}")
    usable = limits.context_window - min(limits.max_output, OUTPUT_RESERVE_CAP) - reserve
    return max(usable, 0)
