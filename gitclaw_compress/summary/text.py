"""Small text helpers of the summary layer: cutting, one-line forms, sentences, tool calls."""

from __future__ import annotations

import re

import orjson

from gitclaw_compress.formats.shared.rules import DESCRIPTOR_ARGUMENTS, FILE_ARGUMENTS

SNIPPET_CHARS = 200

_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


def cut_text(text: str, limit: int) -> str:
    """``text`` up to ``limit`` characters, with "…" when cut."""
    text = text.strip()
    return text if len(text) <= limit else text[: max(limit - 1, 0)].rstrip() + "…"


def one_line(text: str, limit: int = SNIPPET_CHARS) -> str:
    return cut_text(" ".join(text.split()), limit)


def trim_middle(text: str, limit: int) -> str:
    """Keep the head (two thirds) and the tail of ``text``, saying how much was trimmed."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    trimmed = len(text) - head - tail
    end = text[-tail:] if tail else ""
    return f"{text[:head]}\n[... {trimmed:,} characters trimmed ...]\n{end}"


def sentences(text: str, pattern: re.Pattern[str]) -> list[str]:
    """The sentences of ``text`` (20 to 300 characters) that match ``pattern``."""
    found = []
    for sentence in _SENTENCE_SPLIT.split(text):
        sentence = " ".join(sentence.split()).lstrip("-*#> ").strip()
        if 20 <= len(sentence) <= 300 and pattern.search(sentence):
            found.append(sentence.replace('"', "'"))
    return found


def first_sentence(text: str) -> str:
    return _SENTENCE_SPLIT.split(text)[0]


def arguments_of(arguments_json: str) -> object:
    """A tool call's arguments from their compact JSON (the text of a TOOL_CALL part)."""
    try:
        return orjson.loads(arguments_json)
    except orjson.JSONDecodeError:
        return arguments_json


def json_text(value: object) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def describe_call(name: str, arguments: object) -> str:
    """``bash `npm test```: the tool and its most telling argument, on one line (a long
    path keeps its end, anything else its start)."""
    if isinstance(arguments, dict):
        for key in DESCRIPTOR_ARGUMENTS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                first = " ".join(value.strip().split("\n", 1)[0].split())
                if key in FILE_ARGUMENTS and len(first) > 80:
                    first = "…" + first[-79:]
                shown = cut_text(first, 80).replace("`", "'")
                return f"{name} `{shown}`"
    return name


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
