"""What the core needs of a token estimator, declared where the core is, so that the core is
handed one and imports none: its name (said in what the budget policies decide) and the
estimated tokens of one neutral message. tokens/ builds them (`tokens.estimate.get_estimator`
gives one by the name in the settings); the use cases and commands pick it and hand it down.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from gitclaw_compress.model import Message


class Estimator(Protocol):
    """Estimates the tokens of a message as the model receives it."""

    @property
    def name(self) -> str: ...

    def message_tokens(self, message: Message) -> int: ...


def estimate_all(messages: Iterable[Message], estimator: Estimator) -> int:
    """Set `Message.tokens` on each message; their sum."""
    total = 0
    for message in messages:
        message.tokens = estimator.message_tokens(message)
        total += message.tokens
    return total
