"""Token estimation behind one small interface.

An estimator has a ``name`` and ``count(text) -> int``. Four are built in:

- ``chars4``: ``ceil(chars / 4)``, capped at :data:`PART_TOKEN_CAP` per part. This is pi's own
  heuristic; "chars" are UTF-16 code units, as JavaScript's ``String.length`` counts them, so
  the number for one part equals pi's.
- ``bytes4``: ``ceil(utf8_bytes / 4)``.
- ``cjk``: a character-class estimate tuned against the exact o200k count (see :class:`CjkAware`).
- ``o200k``: the exact o200k_base count (GPT-4o/4.1/5, o-series). It needs the optional package
  ``toktok-rs``, which compiles the vocabulary into its binary, so it never downloads anything.

:func:`estimate_message` applies an estimator to a neutral message (`model.Message`) the way
pi's compaction does: every text part on its own, every image a fixed amount.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Final, NamedTuple, Protocol

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.model import IMAGE, TOOL_CALL, Message
from gitclaw_compress.tokens import DEFAULT_ESTIMATOR as DEFAULT_ESTIMATOR
from gitclaw_compress.tokens import ESTIMATOR_NAMES as ESTIMATOR_NAMES

PART_TOKEN_CAP: Final = 50_000
"""``chars4`` never counts more than this many tokens for one part (one call to ``count``)."""

IMAGE_TOKENS: Final = 1_200
"""An image block counts as 4800 characters in pi, that is 1200 tokens; every estimator uses it."""


O200K_PACKAGE: Final = "toktok-rs"
O200K_INSTALL_HINT: Final = "pip install 'gitclaw-compress[tokens]'  (or: pip install toktok-rs)"


class TextCounter(Protocol):
    """Counts (or estimates) the tokens of one piece of text."""

    def count(self, text: str) -> int: ...


class TokenEstimator(TextCounter, Protocol):
    """A named text counter that also counts a neutral message (`estimate_message` with
    itself): what the core is handed as its `core.estimator.Estimator`."""

    @property
    def name(self) -> str: ...

    def message_tokens(self, message: Message) -> int: ...


class CountsMessages:
    """`message_tokens` for an estimator that counts text: every built-in one."""

    def count(self, text: str) -> int:
        raise NotImplementedError

    def message_tokens(self, message: Message) -> int:
        return estimate_message(message, self)


def utf16_length(text: str) -> int:
    """The length JavaScript reports for ``text``: characters outside the BMP count twice."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


class Chars4(CountsMessages):
    """pi's heuristic: ``ceil(chars / 4)`` with chars counted as UTF-16 code units.

    One part never counts more than :data:`PART_TOKEN_CAP` tokens, so that a single huge blob
    (a base64 image pasted as text, a minified bundle) cannot dominate an estimate by itself.
    """

    name: Final = "chars4"

    def count(self, text: str) -> int:
        return min(math.ceil(utf16_length(text) / 4), PART_TOKEN_CAP)


class Bytes4(CountsMessages):
    """``ceil(bytes / 4)`` over the UTF-8 encoding. Not capped."""

    name: Final = "bytes4"

    def count(self, text: str) -> int:
        if text.isascii():
            return math.ceil(len(text) / 4)
        return math.ceil(len(text.encode("utf-8", "surrogatepass")) / 4)


# Han ideographs (with extensions and compatibility forms), kana, Hangul, Bopomofo, CJK
# symbols and punctuation, and full-width forms.
_CJK_CHARS: Final = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f"  # Bopomofo
    "\u3130-\u318f"  # Hangul compatibility Jamo
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff00-\uffef"  # Half-width and full-width forms
    "\U00020000-\U0003134f"  # CJK Extensions B to G
)
_CJK_RE: Final = re.compile(f"[{_CJK_CHARS}]")
# A run of base64 or similar (image data, signatures, hashes, long paths): no spaces, 64+ chars.
_BLOB_RE: Final = re.compile(r"[A-Za-z0-9+/=_-]{64,}")
# A run of 8+ identical characters that are neither letters nor digits: rules, indentation.
_REPEAT_RE: Final = re.compile(r"([^\w])\1{7,}")
_ASCII_WORD_RE: Final = re.compile(r"[A-Za-z \t]")
_LETTER_RE: Final = re.compile(r"[^\W\d_]")


def count_cjk(text: str) -> int:
    """How many characters of ``text`` are CJK, kana or Hangul (see ``_CJK_CHARS``)."""
    if text.isascii():
        return 0
    return len(_CJK_RE.findall(text))


class CharClasses(NamedTuple):
    """A text's characters split into the classes :class:`CjkAware` weighs.

    The character counts (all fields but ``runs``) add up to the text's length.
    """

    repeat: int  # in runs of 8+ identical characters that are not letters or digits
    runs: int  # how many such runs (each costs about one token, however long)
    blob: int  # in runs of 64+ base64-like characters
    cjk: int  # CJK ideographs, kana, Hangul, CJK and full-width punctuation
    word: int  # ASCII letters, spaces and tabs
    letter: int  # other letters (accented Latin, Cyrillic, Greek, Arabic, Indic, ...)
    symbol: int  # the rest: digits, punctuation, newlines, emoji, box drawing, ...


def char_classes(text: str) -> CharClasses:
    """Count the characters of ``text`` by class (see :class:`CharClasses`)."""
    repeat = runs = blob = cjk = letter = 0
    if len(text) >= 8:
        for match in _REPEAT_RE.finditer(text):
            runs += 1
            repeat += match.end() - match.start()
        if runs:
            text = _REPEAT_RE.sub("", text)
    if len(text) >= 64:
        for run in _BLOB_RE.findall(text):
            blob += len(run)
        if blob:
            text = _BLOB_RE.sub("", text)
    if not text.isascii():
        text, cjk = _CJK_RE.subn("", text)
    rest, word = _ASCII_WORD_RE.subn("", text)
    if not rest.isascii():
        rest, letter = _LETTER_RE.subn("", rest)
    return CharClasses(repeat, runs, blob, cjk, word, letter, len(rest))


class CjkAware(CountsMessages):
    """A character-class estimate, tuned against the exact o200k_base count.

    ``tokens = ceil(0.75 * cjk + 0.7 * symbol + word / 5.5 + letter / 3.5 + blob / 1.5
    + 1.5 * runs)`` with the classes of :class:`CharClasses`: a CJK character costs most of
    a token, so do digits and punctuation (JSON, code, logs); English words and spaces take
    about 5.5 characters per token, base64 about 1.5, and a run of one repeated character
    (a rule of dashes, deep indentation) one or two tokens in all.

    Origin of the constants: least squares against the exact o200k_base count (toktok-rs
    0.3.0) on 2026-11-21, over the local corpus (pi, Claude Code and Codex sessions: prose,
    code, JSON tool output, whole lines with and without images, CJK strings; each category
    weighted equally) plus the synthetic CJK passages of ``bench/estimator_error.py``, which
    refits them with ``--fit``. The fit gave 0.739, 0.696, 1/5.38, 1/1.48 and 1.43, rounded
    here. ``letter`` is not fitted (the corpus has almost none): five synthetic sentences in
    Russian, French, Greek, Arabic and Hindi gave 2.8 to 4.7 characters per token.
    """

    name: Final = "cjk"

    CJK_TOKENS_PER_CHAR: Final = 0.75
    SYMBOL_TOKENS_PER_CHAR: Final = 0.7
    WORD_CHARS_PER_TOKEN: Final = 5.5
    LETTER_CHARS_PER_TOKEN: Final = 3.5
    BLOB_CHARS_PER_TOKEN: Final = 1.5
    TOKENS_PER_RUN: Final = 1.5

    def count(self, text: str) -> int:
        if not text:
            return 0
        c = char_classes(text)
        estimate = (
            c.cjk * self.CJK_TOKENS_PER_CHAR
            + c.symbol * self.SYMBOL_TOKENS_PER_CHAR
            + c.word / self.WORD_CHARS_PER_TOKEN
            + c.letter / self.LETTER_CHARS_PER_TOKEN
            + c.blob / self.BLOB_CHARS_PER_TOKEN
            + c.runs * self.TOKENS_PER_RUN
        )
        return math.ceil(estimate)


class O200k(CountsMessages):
    """The exact o200k_base token count, through toktok-rs (vocabulary compiled in, offline).

    Special-token strings such as ``<|endoftext|>`` count as the ordinary text they are, as a
    provider counts them inside a message. Lone surrogates count as U+FFFD, as tiktoken does.
    """

    name: Final = "o200k"
    encoding: Final = "o200k_base"

    def __init__(self) -> None:
        try:
            module = importlib.import_module("toktok")
        except ImportError as exc:
            raise GitClawError(
                f"token estimator 'o200k' needs the optional package {O200K_PACKAGE}, which is "
                f"not installed: {O200K_INSTALL_HINT}"
            ) from exc
        self._batch_count: Callable[..., list[int]] = module.batch_count
        self.version: str = str(getattr(module, "__version__", "unknown"))

    def count(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: list[str]) -> list[int]:
        """Counts for many texts in one call (faster than one ``count`` each)."""
        try:
            return list(self._batch_count(texts, self.encoding, threads=1))
        except UnicodeEncodeError:
            cleaned = [_replace_lone_surrogates(t) for t in texts]
            return list(self._batch_count(cleaned, self.encoding, threads=1))


def _replace_lone_surrogates(text: str) -> str:
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_FACTORIES: Final[Mapping[str, Callable[[], TokenEstimator]]] = {
    "chars4": Chars4,
    "bytes4": Bytes4,
    "cjk": CjkAware,
    "o200k": O200k,
}


def get_estimator(name: str) -> TokenEstimator:
    """The estimator called ``name``; a GitClawError names an unknown one and lists the valid.

    ``o200k`` raises GitClawError with the pip command when toktok-rs is not installed.
    """
    factory = _FACTORIES.get(name)
    if factory is None:
        valid = ", ".join(ESTIMATOR_NAMES)
        raise GitClawError(f"unknown token estimator {name!r}: valid estimators are {valid}")
    return factory()


def o200k_available() -> bool:
    """Whether the exact ``o200k`` estimator can be used here."""
    return importlib.util.find_spec("toktok") is not None


# --- neutral messages -------------------------------------------------------------------------


def message_texts(message: Message) -> tuple[list[str], int]:
    """The texts an estimate counts for a message, and how many images it holds.

    Text, thinking and tool-result parts count their text; a tool call its name and its
    arguments (compact JSON); an image :data:`IMAGE_TOKENS` whatever its size.
    """
    texts: list[str] = []
    images = 0
    for part in message.parts:
        if part.kind == IMAGE:
            images += 1
        elif part.kind == TOOL_CALL:
            if part.name is not None:
                texts.append(part.name)
            texts.append(part.text)
        else:
            texts.append(part.text)
    return texts, images


def estimate_message(message: Message, estimator: TextCounter) -> int:
    """Estimated tokens of one message as the model receives it.

    Each text part is counted on its own and every image adds :data:`IMAGE_TOKENS`. This
    follows pi's ``estimateTokens`` with two small differences: pi sums the characters of a
    message before rounding up once (here each part is rounded up), and pi ignores images in
    user messages (here they count, since the model does receive them). Whether the message
    reaches the model at all (`Message.sent`) is the caller's concern.
    """
    texts, images = message_texts(message)
    if not texts:
        return images * IMAGE_TOKENS
    count_many = getattr(estimator, "count_many", None)
    if callable(count_many):
        counts: list[int] = count_many(texts)
        return sum(counts) + images * IMAGE_TOKENS
    return sum(estimator.count(text) for text in texts) + images * IMAGE_TOKENS


def estimate_messages(messages: Iterable[Message], estimator: TokenEstimator) -> int:
    """Set `Message.tokens` on each message; their sum."""
    total = 0
    for message in messages:
        message.tokens = estimate_message(message, estimator)
        total += message.tokens
    return total
