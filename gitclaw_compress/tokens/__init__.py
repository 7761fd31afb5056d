"""What the model sees on resume, in tokens: estimates, model windows, pi's context.

The defaults live here, not in the modules that use them, so that reading the config does
not compile the estimators' and the model table's patterns (a no-op `step` never needs them).
"""

from typing import Final

DEFAULT_ESTIMATOR: Final = "chars4"
ESTIMATOR_NAMES: Final = ("chars4", "bytes4", "cjk", "o200k")
# pi's default reserveTokens: pi compacts when the context passes window - reserve.
DEFAULT_RESERVE_TOKENS: Final = 16_384
