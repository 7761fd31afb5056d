"""Counting tokens: estimates of neutral messages (`estimate.py`). The use cases pick one by
the name in the settings and hand it to the core, which reads the context an agent resumes
with (core/context.py) and imports none of them; the model windows are the leaf
`model_limits.py`.

The defaults live here, not in the modules that use them, so that reading the config does
not compile the estimators' and the model table's patterns (a no-op `step` never needs them).
"""

from gitclaw_compress.settings import DEFAULT_ESTIMATOR as DEFAULT_ESTIMATOR
from gitclaw_compress.settings import DEFAULT_RESERVE_TOKENS as DEFAULT_RESERVE_TOKENS
from gitclaw_compress.settings import ESTIMATOR_NAMES as ESTIMATOR_NAMES
