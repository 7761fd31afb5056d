"""Which Anthropic models bind a signed thinking block to its prefix ("preserved thinking"): a
fact about models that the formats of the agents that talk to them ask. A leaf of its own, not
in model_limits.py, so that loading a format does not load that module's table of patterns."""

from __future__ import annotations

import re

# From Claude Fable 5.1 on, a model with preserved thinking signs each thinking and
# redacted_thinking block it writes against everything before it in the request (the
# top-level `system` and `tools` and every earlier message, `cache_control` left out). When
# the block comes back and that prefix changed, the API refuses the request with a 400 ("The
# block is bound to a different conversation") or, with
# `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`, drops that block and every
# later one. Anthropic lists Claude Fable 5.2, Mythos 5.2, Fable 5.1, Mythos 5.1, Opus 5.5,
# Sonnet 5.5 and Haiku 5.5; Mythos 5.1 records the binding without checking it, but a model
# that checks reads its blocks, so they count. Earlier models (Claude 3, the 4 family,
# Opus/Sonnet/Fable/Mythos 5 and Mythos Preview) sign without binding. A model id that
# `binds_prefix` cannot place (a newer family, a gateway's alias) counts as binding: that is
# the side on which nothing is ever refused. See docs/preserved-thinking.md.

# claude-<family>-<major>[-<minor>], then a date or a provider's suffix; minor is one or
# two digits (an eight-digit date is not a version).
_NAMED = re.compile(r"claude-([a-z]+)-(\d{1,2})(?:-(\d{1,2}))?(?![0-9])")
# claude-3-5-sonnet-…, claude-3-opus-…, claude-2.1, claude-instant-1.2: all before binding.
_OLD = re.compile(r"claude-(?:[0-3](?:[-.]\d)?-[a-z]|[0-3](?:\.\d)?$|[0-3](?:\.\d)?[^0-9]|instant)")
FIRST_BINDING = (5, 1)


def binds_prefix(model: object) -> bool:
    """Whether a signed thinking block written by `model` is bound to its prefix."""
    if not isinstance(model, str) or not model:
        return True
    name = model.lower()
    if "mythos-preview" in name or _OLD.search(name):
        return False
    named = _NAMED.search(name)
    if named is None:
        return True
    version = (int(named.group(2)), int(named.group(3) or 0))
    return version >= FIRST_BINDING
