"""The settings of a run, as plain values: what `compress`, `prune` and the formats obey.

A leaf: imports nothing of the package, so that formats, the core and the config can all
use it without a cycle. `config.Config` builds these from compression.json.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

DEFAULT_ESTIMATOR: Final = "chars4"
ESTIMATOR_NAMES: Final = ("chars4", "bytes4", "cjk", "o200k")
# pi's default reserveTokens: pi compacts when the context passes window - reserve.
DEFAULT_RESERVE_TOKENS: Final = 16_384

STRATEGIES = ("turns", "tokens", "both")


@dataclass(frozen=True, slots=True)
class PreviewSettings:
    lines: int = 2  # lines shown from the head and from the tail
    line_chars: int = 120  # each preview line is cut to this many characters


@dataclass(frozen=True, slots=True)
class BudgetSettings:
    """The token-aware policies: budget pruning (`strategy` tokens/both) and target mode."""

    strategy: str = "turns"  # turns: keep the last N turns; tokens: budget pruning; both: union
    estimator: str = DEFAULT_ESTIMATOR
    protect_tokens: int = 40_000  # the newest this many context tokens are never pruned
    minimum_tokens: int = 20_000  # prune only if that frees at least this many tokens
    protected_tools: frozenset[str] = frozenset({"skill"})
    protect_turns: int = 1  # the floor: the newest N turns are never touched by these policies
    target_percent: int | None = None  # target mode: compress until context <= this % of usable
    reserve_tokens: int = DEFAULT_RESERVE_TOKENS
    model_overrides: Mapping[str, Any] = field(default_factory=dict)
    # (line number, its bytes) -> the original of a compressed line, or None: so that the
    # context measured counts recorded usage less what compression freed, as `status` does.
    originals: Callable[[int, bytes], bytes | None] | None = field(default=None, compare=False)

    @property
    def active(self) -> bool:
        return self.strategy != "turns" or self.target_percent is not None


@dataclass(frozen=True, slots=True)
class ContextSettings:
    """How the context is counted and judged (`status`, the summary stage's level): the
    estimator, the compaction reserve, model overrides and the level percentages."""

    estimator: str
    reserve_tokens: int
    model_overrides: Mapping[str, Any]
    warning_percent: int
    critical_percent: int


@dataclass(frozen=True, slots=True)
class CompressSettings:
    keep_turns: int = 4
    tool_call_max_bytes: int = 500
    tool_result_max_bytes: int = 500
    strip_thinking: bool = True
    eliminate_redundancy: bool = True
    keep_user_images: bool = False  # images a person pasted stay in old turns
    stub_ui_copies: bool = False  # values only the agent's UI reads go in every turn
    # Deep: also what the agent never sends again (before its last compaction record), UI
    # copies in every turn, outputs over `deep_kept_max_bytes` in the kept turns, and
    # readable thinking the provider does not need in old turns. See docs/deep.md.
    deep: bool = False
    deep_kept_max_bytes: int = 8192
    bash_command_max_chars: int = 200
    redundancy_min_bytes: int = 400
    preview: PreviewSettings = field(default_factory=PreviewSettings)
    budget: BudgetSettings = field(default_factory=BudgetSettings)

    @property
    def ui_copies(self) -> bool:
        """Whether values only the agent's UI reads go in every turn (deep implies it)."""
        return self.stub_ui_copies or self.deep
