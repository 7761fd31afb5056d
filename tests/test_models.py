from __future__ import annotations

from typing import Any

import pytest

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.model_limits import (
    BUILTIN_FAMILIES,
    DEFAULT_RESERVE_TOKENS,
    FALLBACK_LIMITS,
    OUTPUT_RESERVE_CAP,
    ModelLimits,
    builtin_limits,
    lookup_model,
    normalize_model_id,
    usable_tokens,
)

# (model id as sessions record it, family, context window, max output)
EXAMPLES = [
    # Claude
    ("claude-opus-4-6", "claude-opus-4.6+", 1_000_000, 128_000),
    ("anthropic/claude-opus-4.7", "claude-opus-4.6+", 1_000_000, 128_000),
    ("claude-sonnet-4-6", "claude-sonnet-4.6+", 1_000_000, 64_000),
    ("claude-opus-4-5-20251101", "claude-opus-4.5", 200_000, 64_000),
    ("claude-opus-4-20250514", "claude-opus-4", 200_000, 32_000),
    ("claude-opus-4-1", "claude-opus-4", 200_000, 32_000),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4", 200_000, 64_000),
    ("claude-haiku-4-5", "claude-haiku-4", 200_000, 64_000),
    ("openrouter/anthropic/claude-3.7-sonnet:thinking", "claude-3.7-sonnet", 200_000, 64_000),
    ("anthropic.claude-3-5-sonnet-20240620-v1:0", "claude-3.5", 200_000, 8_192),
    ("claude-3-5-haiku-latest", "claude-3.5", 200_000, 8_192),
    ("us.anthropic.claude-3-haiku-20240307-v1:0", "claude-3", 200_000, 4_096),
    ("claude-instant-1.2", "claude", 200_000, 32_000),
    # OpenAI
    ("gpt-5.2-chat-latest", "gpt-5-chat", 128_000, 16_384),
    ("gpt-5.3-codex-spark", "gpt-5.3-codex-spark", 128_000, 32_000),
    ("gpt-5.4-pro", "gpt-5.4-pro+", 1_050_000, 128_000),
    ("gpt-5-pro", "gpt-5-pro", 400_000, 128_000),
    ("gpt-5.4-mini", "gpt-5.4-mini", 400_000, 128_000),
    ("gpt-5.4", "gpt-5.4+", 272_000, 128_000),
    ("openai/gpt-5.5", "gpt-5.4+", 272_000, 128_000),
    ("gpt-5", "gpt-5", 400_000, 128_000),
    ("gpt-5.1-codex-max", "gpt-5", 400_000, 128_000),
    ("gpt-4.1-nano", "gpt-4.1", 1_047_576, 32_768),
    ("gpt-4o-2024-08-06", "gpt-4o", 128_000, 16_384),
    ("chatgpt-4o-latest", "gpt-4o", 128_000, 16_384),
    ("gpt-4-turbo", "gpt-4-turbo", 128_000, 4_096),
    ("gpt-4-0613", "gpt-4", 8_192, 8_192),
    ("openrouter/openai/gpt-oss-120b:free", "gpt-oss", 131_072, 32_768),
    ("o1-mini", "o1-mini", 128_000, 65_536),
    ("o3", "o-series", 200_000, 100_000),
    ("o4-mini", "o-series", 200_000, 100_000),
    # Google
    ("gemini-live-2.5-flash", "gemini-live", 128_000, 8_000),
    ("gemini-3-pro-preview", "gemini-3-pro", 1_000_000, 64_000),
    ("gemini-3.1-pro-preview", "gemini-3", 1_048_576, 65_536),
    ("google/gemini-2.5-pro", "gemini-2.5", 1_048_576, 65_536),
    ("gemini-2.0-flash-001", "gemini-2.0", 1_048_576, 8_192),
    ("gemini-1.5-pro", "gemini-1.5", 1_000_000, 8_192),
    ("gemini-flash-latest", "gemini", 1_048_576, 65_536),
    # xAI
    ("grok-code-fast-1", "grok-code", 256_000, 10_000),
    ("grok-4-1-fast-non-reasoning", "grok-4-fast", 2_000_000, 30_000),
    ("grok-4.20-0309-reasoning", "grok-4-fast", 2_000_000, 30_000),
    ("grok-4.3", "grok-4.3", 1_000_000, 30_000),
    ("x-ai/grok-4", "grok-4", 256_000, 64_000),
    ("grok-2-vision-1212", "grok-vision", 8_192, 4_096),
    ("grok-3-mini", "grok-3", 131_072, 8_192),
    ("grok-2-latest", "grok", 131_072, 8_192),
    # MiniMax
    ("minimax/minimax-m1", "minimax-m1", 1_000_000, 40_000),
    ("openrouter/minimax/minimax-m2.5", "minimax-m2", 196_608, 131_072),
    ("MiniMax-M2.7", "minimax-m2", 196_608, 131_072),
    # Mistral
    ("codestral-latest", "codestral", 256_000, 4_096),
    ("devstral-small-2507", "devstral", 128_000, 16_384),
    ("mistral-large-2411", "mistral-large-24xx", 131_072, 16_384),
    ("mistral-large-latest", "mistral-large", 262_144, 16_384),
    ("mistral-medium-2505", "mistral-medium", 131_072, 16_384),
    ("mistralai/mixtral-8x22b-instruct", "mixtral-8x22b", 64_000, 4_096),
    ("open-mixtral-8x7b", "mixtral", 32_000, 4_096),
    ("magistral-medium-latest", "mistral", 128_000, 16_384),
    # others
    ("moonshotai/kimi-k2.5", "kimi-k2", 262_144, 32_768),
    ("z-ai/glm-4.5-air", "glm-4.5", 131_072, 98_304),
    ("z-ai/glm-4.6", "glm-4.6+", 200_000, 131_072),
    ("qwen/qwen3-coder", "qwen3-coder", 262_144, 65_536),
]


@pytest.mark.parametrize(("model_id", "family", "window", "max_output"), EXAMPLES)
def test_builtin_family_lookup(model_id: str, family: str, window: int, max_output: int) -> None:
    limits, source = lookup_model(model_id)
    assert source == f"builtin:{family}"
    assert limits == ModelLimits(window, max_output)


def test_every_family_is_reachable() -> None:
    # A family that an earlier, broader pattern shadows would never be used.
    covered = {family for _, family, _, _ in EXAMPLES}
    assert covered == {family.name for family in BUILTIN_FAMILIES}


def test_family_names_are_unique() -> None:
    names = [family.name for family in BUILTIN_FAMILIES]
    assert len(names) == len(set(names))


def test_models_seen_in_real_pi_sessions() -> None:
    # The (provider, model) pairs that the corpus' assistant messages record.
    seen = {
        "gpt-5.4": 272_000,
        "gemini-2.5-pro": 1_048_576,
        "claude-opus-4-6": 1_000_000,
        "minimax/minimax-m2.5": 196_608,
    }
    for model_id, window in seen.items():
        limits, source = lookup_model(model_id)
        assert source.startswith("builtin:")
        assert limits.context_window == window


@pytest.mark.parametrize(
    ("model_id", "normalized"),
    [
        ("openrouter/anthropic/claude-3.7-sonnet:thinking", "claude-3.7-sonnet"),
        ("anthropic.claude-3-5-sonnet-20240620-v1:0", "anthropic.claude-3-5-sonnet"),
        ("claude-3-5-sonnet-v2@20241022", "claude-3-5-sonnet-v2"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("  MiniMax/MiniMax-M2.5 ", "minimax-m2.5"),
        ("accounts/fireworks/models/gpt-oss-20b", "gpt-oss-20b"),
        ("grok-4.20-0309-reasoning", "grok-4.20-0309-reasoning"),
    ],
)
def test_normalize_model_id(model_id: str, normalized: str) -> None:
    assert normalize_model_id(model_id) == normalized


@pytest.mark.parametrize("model_id", ["fake-model", "llama-3.3-70b", "", "gpt-4-32k", "foo/o"])
def test_unknown_models_fall_back(model_id: str) -> None:
    assert lookup_model(model_id) == (ModelLimits(128_000, 16_384), "fallback")


def test_lookalikes_do_not_match_the_o_series() -> None:
    assert builtin_limits("gpt-4o-mini")[1] == "builtin:gpt-4o"
    assert builtin_limits("foo3-mini")[1] == "fallback"


# --- overrides --------------------------------------------------------------------------------


def test_override_by_exact_id_wins_over_the_table() -> None:
    overrides = {"claude-opus-4-6": ModelLimits(200_000, 32_000)}
    assert lookup_model("claude-opus-4-6", overrides) == (ModelLimits(200_000, 32_000), "override")
    assert lookup_model("claude-opus-4-7", overrides)[1] == "builtin:claude-opus-4.6+"


def test_override_matches_after_normalizing_both_sides() -> None:
    overrides = {"MiniMax-M2.5": {"context_window": 204_800, "max_output": 131_072}}
    limits, source = lookup_model("openrouter/minimax/minimax-m2.5", overrides)
    assert (limits, source) == (ModelLimits(204_800, 131_072), "override")


def test_override_accepts_pi_models_json_names() -> None:
    overrides = {"fake-model": {"contextWindow": 64_000, "maxTokens": 4_096}}
    assert lookup_model("fake-model", overrides) == (ModelLimits(64_000, 4_096), "override")


def test_override_without_max_output_takes_the_table_value_capped_at_the_window() -> None:
    assert lookup_model("gpt-5.4", {"gpt-5.4": {"context_window": 1_050_000}}) == (
        ModelLimits(1_050_000, 128_000),
        "override",
    )
    assert lookup_model("gpt-5.4", {"gpt-5.4": {"context_window": 100_000}}) == (
        ModelLimits(100_000, 100_000),
        "override",
    )
    assert lookup_model("my-local", {"my-local": {"context_window": 32_768}}) == (
        ModelLimits(32_768, FALLBACK_LIMITS.max_output),
        "override",
    )


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        ({"context_window": 1000, "max_tokens": 10}, "'max_tokens'"),
        ({"max_output": 10}, "missing context_window"),
        ({"context_window": "big"}, "context_window must be a positive integer"),
        ({"context_window": 0}, "context_window must be a positive integer"),
        ({"context_window": True}, "context_window must be a positive integer"),
        ({"context_window": 1000, "max_output": -1}, "max_output must be a positive integer"),
        (128_000, "must be an object"),
    ],
)
def test_malformed_overrides_name_the_problem(value: Any, needle: str) -> None:
    with pytest.raises(GitClawError) as info:
        lookup_model("some-model", {"some-model": value})
    assert "'some-model'" in str(info.value)
    assert needle in str(info.value)


def test_a_malformed_override_for_another_model_is_not_read() -> None:
    assert lookup_model("gpt-5", {"other": {"bogus": 1}})[1] == "builtin:gpt-5"


@pytest.mark.parametrize(("window", "max_output"), [(0, 1), (1, 0), (-5, 10)])
def test_model_limits_must_be_positive(window: int, max_output: int) -> None:
    with pytest.raises(GitClawError):
        ModelLimits(window, max_output)


# --- usable tokens ----------------------------------------------------------------------------


def test_usable_tokens_caps_the_output_reserve() -> None:
    limits = ModelLimits(1_000_000, 128_000)
    assert usable_tokens(limits, 16_384) == 1_000_000 - OUTPUT_RESERVE_CAP - 16_384


def test_usable_tokens_uses_a_small_max_output_as_is() -> None:
    limits = ModelLimits(200_000, 8_192)
    assert usable_tokens(limits, DEFAULT_RESERVE_TOKENS) == 200_000 - 8_192 - 16_384


def test_usable_tokens_for_the_fallback() -> None:
    assert usable_tokens(FALLBACK_LIMITS, 0) == 128_000 - 16_384


def test_usable_tokens_never_goes_negative() -> None:
    assert usable_tokens(ModelLimits(8_192, 8_192), 16_384) == 0


@pytest.mark.parametrize("reserve", [-1, True, 1.5])
def test_usable_tokens_rejects_a_bad_reserve(reserve: Any) -> None:
    with pytest.raises(GitClawError):
        usable_tokens(ModelLimits(128_000, 4_096), reserve)
