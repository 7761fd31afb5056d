# CJK test strings use full-width punctuation on purpose.
# ruff: noqa: RUF001
from __future__ import annotations

import base64
import importlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gitclaw_compress.errors import GitClawError
from gitclaw_compress.formats.pi.view import usage_context_tokens, view
from gitclaw_compress.tokens import estimate as tokens
from gitclaw_compress.tokens.estimate import (
    ESTIMATOR_NAMES,
    IMAGE_TOKENS,
    PART_TOKEN_CAP,
    CharClasses,
    CjkAware,
    TokenEstimator,
    char_classes,
    count_cjk,
    estimate_message,
    get_estimator,
    message_texts,
    o200k_available,
    utf16_length,
)


def pi_messages(message: dict[str, Any]) -> list[Any]:
    """The neutral messages pi's `message` entry holding `message` gives the model."""
    return view(
        2, {"type": "message", "id": "0000abcd", "parentId": None, "message": message}
    ).messages


def estimate_message_tokens(message: dict[str, Any], estimator: TokenEstimator) -> int:
    """The estimate of a pi message, through pi's neutral view of it."""
    return sum(estimate_message(m, estimator) for m in pi_messages(message))


def message_parts(message: dict[str, Any]) -> tuple[list[str], int]:
    [neutral] = pi_messages(message)
    return message_texts(neutral)


needs_o200k = pytest.mark.skipif(
    not o200k_available(),
    reason="optional dependency toktok-rs is not installed: pip install 'gitclaw-compress[tokens]'",
)


# --- chars4 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100), ("中文中文中", 2)],
)
def test_chars4_is_ceil_of_chars_over_4(text: str, expected: int) -> None:
    assert get_estimator("chars4").count(text) == expected


def test_chars4_counts_utf16_code_units_like_javascript() -> None:
    # Three emoji are 3 code points but 6 UTF-16 code units: JavaScript's length is 6.
    text = "\U0001f600" * 3
    assert len(text) == 3
    assert utf16_length(text) == 6
    assert get_estimator("chars4").count(text) == 2


def test_chars4_caps_each_part() -> None:
    chars4 = get_estimator("chars4")
    assert chars4.count("a" * (4 * PART_TOKEN_CAP - 4)) == PART_TOKEN_CAP - 1
    assert chars4.count("a" * (4 * PART_TOKEN_CAP)) == PART_TOKEN_CAP
    assert chars4.count("a" * (4 * PART_TOKEN_CAP + 1)) == PART_TOKEN_CAP
    assert chars4.count("a" * (40 * PART_TOKEN_CAP)) == PART_TOKEN_CAP


# --- bytes4 -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("abcdefgh", 2), ("abcdefghi", 3), ("éééé", 2), ("中中中中", 3), ("\U0001f600", 1)],
)
def test_bytes4_is_ceil_of_utf8_bytes_over_4(text: str, expected: int) -> None:
    assert get_estimator("bytes4").count(text) == expected


def test_bytes4_survives_lone_surrogates() -> None:
    # json.loads accepts "\ud800"; such a string must not crash the estimators.
    text = json.loads('"a\\ud800b"')
    assert get_estimator("bytes4").count(text) == 2  # 1 + 3 + 1 bytes
    assert get_estimator("chars4").count(text) == 1
    assert get_estimator("cjk").count(text) >= 1


# --- cjk --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Hello, world 123\n",
        "中文，Привет! é 😀",
        "x" * 100 + " tail",
        '{"role":"user","content":"日本語のテキスト"}',
        "한국어 문장입니다.",
        "=" * 40 + "\n" + " " * 12 + "indented",
    ],
)
def test_char_classes_add_up_to_the_length(text: str) -> None:
    c = char_classes(text)
    assert c.repeat + c.blob + c.cjk + c.word + c.letter + c.symbol == len(text)


def classes(**counts: int) -> CharClasses:
    fields = dict.fromkeys(CharClasses._fields, 0)
    fields.update(counts)
    return CharClasses(**fields)


def test_char_classes_sorts_characters() -> None:
    assert char_classes("ab c") == classes(word=4)
    assert char_classes("12;\n") == classes(symbol=4)
    assert char_classes("中文かなカナ한글。") == classes(cjk=9)
    assert char_classes("Привет") == classes(letter=6)
    blob = base64.b64encode(bytes(range(256)) * 3).decode()
    assert char_classes(blob + " ok") == classes(blob=len(blob), word=3)
    # a short run of base64 characters is ordinary text, not a blob
    assert char_classes("abc123") == classes(word=3, symbol=3)
    # runs of 8+ identical non-alphanumeric characters, each counted once as a run
    assert char_classes("-" * 64 + "x" + "\n" * 8) == classes(repeat=72, runs=2, word=1)
    assert char_classes("-" * 7) == classes(symbol=7)


def test_count_cjk() -> None:
    assert count_cjk("plain ascii") == 0
    assert count_cjk("中文 and かな and 한글") == 6
    assert count_cjk("𠀀") == 1  # CJK Extension B, outside the BMP


def test_cjk_estimate_uses_the_documented_weights() -> None:
    cjk = get_estimator("cjk")
    assert cjk.count("") == 0
    assert cjk.count("中文") == math.ceil(2 * CjkAware.CJK_TOKENS_PER_CHAR)
    assert cjk.count("hello world") == math.ceil(11 / CjkAware.WORD_CHARS_PER_TOKEN)
    assert cjk.count("{}") == math.ceil(2 * CjkAware.SYMBOL_TOKENS_PER_CHAR)
    blob = "A" * 300
    assert cjk.count(blob) == math.ceil(300 / CjkAware.BLOB_CHARS_PER_TOKEN)
    assert cjk.count("-" * 200) == math.ceil(CjkAware.TOKENS_PER_RUN)


def test_cjk_estimate_counts_cjk_text_higher_than_chars4() -> None:
    text = "这个工具会读取代理的会话文件，把很早以前的工具输出替换成简短的说明。"
    assert get_estimator("cjk").count(text) > 2 * get_estimator("chars4").count(text)


# --- registry ---------------------------------------------------------------------------------


def test_registry_names() -> None:
    assert ESTIMATOR_NAMES == ("chars4", "bytes4", "cjk", "o200k")
    assert tuple(tokens._FACTORIES) == ESTIMATOR_NAMES  # the config offers what exists
    for name in ("chars4", "bytes4", "cjk"):
        assert get_estimator(name).name == name


def test_unknown_estimator_names_it_and_lists_valid_ones() -> None:
    with pytest.raises(GitClawError) as info:
        get_estimator("gpt2")
    message = str(info.value)
    assert "'gpt2'" in message
    for name in ESTIMATOR_NAMES:
        assert name in message


def test_o200k_without_the_package_tells_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = importlib.import_module

    def fake_import(name: str, package: str | None = None) -> Any:
        if name == "toktok":
            raise ModuleNotFoundError("No module named 'toktok'")
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", fake_import)
    with pytest.raises(GitClawError) as info:
        get_estimator("o200k")
    assert "pip install 'gitclaw-compress[tokens]'" in str(info.value)
    assert "toktok-rs" in str(info.value)


# --- o200k (exact) ----------------------------------------------------------------------------

# Reference counts from OpenAI's tiktoken 0.14.0, o200k_base, special tokens counted as text.
O200K_REFERENCE = [
    ("hello world", 2),
    ("<|endoftext|>", 7),
    ("这个工具会读取代理的会话文件。", 10),
    ("def f(x):\n    return x * 2\n", 11),
    ('{"role":"user","content":"hi"}', 9),
    ("Привет, мир!", 5),
    ("", 0),
]


@needs_o200k
@pytest.mark.parametrize(("text", "expected"), O200K_REFERENCE)
def test_o200k_matches_tiktoken(text: str, expected: int) -> None:
    assert get_estimator("o200k").count(text) == expected


@needs_o200k
def test_o200k_counts_lone_surrogates_as_replacement_characters() -> None:
    text = json.loads('"a\\ud800b"')
    assert get_estimator("o200k").count(text) == 3  # tiktoken counts "a\ufffdb": 3


@needs_o200k
def test_o200k_count_many_matches_count() -> None:
    o200k = tokens.O200k()
    texts = [t for t, _ in O200K_REFERENCE]
    assert o200k.count_many(texts) == [o200k.count(t) for t in texts]


@needs_o200k
def test_o200k_works_offline_without_touching_a_socket(tmp_path: Any) -> None:
    # A fresh interpreter with no proxies, an empty tiktoken cache and offline hub flags, and
    # an audit hook that fails on any socket or DNS use from Python.
    code = """
import sys
def hook(event, args):
    if event.startswith(("socket.", "urllib.")):
        raise RuntimeError("network use: " + event)
sys.addaudithook(hook)
from gitclaw_compress.tokens.estimate import get_estimator
print(get_estimator("o200k").count("hello world"))
"""
    env = {
        key: value
        for key, value in os.environ.items()
        if key.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    }
    env.update(
        TIKTOKEN_CACHE_DIR=str(tmp_path),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        HOME=str(tmp_path),
        XDG_CACHE_HOME=str(tmp_path),
        PYTHONPATH=str(Path(tokens.__file__).resolve().parent.parent),
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "2"
    assert list(tmp_path.iterdir()) == []  # nothing was cached or downloaded


# --- messages ---------------------------------------------------------------------------------

IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def chars4_tokens(*parts: str) -> int:
    return sum(math.ceil(len(p) / 4) for p in parts)


def test_user_string_content() -> None:
    message = {"role": "user", "content": "Fix the login bug please", "timestamp": 1}
    assert estimate_message_tokens(message, get_estimator("chars4")) == 6


def test_user_blocks_with_an_image() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "look at this"}, IMAGE]}
    assert estimate_message_tokens(message, get_estimator("chars4")) == 3 + IMAGE_TOKENS


def test_assistant_text_thinking_and_tool_call() -> None:
    args = {"path": "src/app.py", "content": "print('héllo')\n"}
    message = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "I should write the file.", "thinkingSignature": "x"},
            {"type": "text", "text": "Writing it now."},
            {"type": "toolCall", "id": "c1", "name": "write", "arguments": args},
        ],
        "usage": {"input": 10, "output": 5, "totalTokens": 15},
        "stopReason": "toolUse",
    }
    args_json = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
    expected = chars4_tokens("I should write the file.", "Writing it now.", "write", args_json)
    assert estimate_message_tokens(message, get_estimator("chars4")) == expected
    # the signature and usage are not counted
    parts, images = message_parts(message)
    assert parts == ["I should write the file.", "Writing it now.", "write", args_json]
    assert images == 0


def test_tool_result_text_and_image() -> None:
    message = {
        "role": "toolResult",
        "toolCallId": "c1",
        "toolName": "read",
        "content": [{"type": "text", "text": "x" * 4000}, IMAGE, IMAGE],
        "details": {"diff": "y" * 10_000},
        "isError": False,
    }
    expected = 1000 + 2 * IMAGE_TOKENS
    assert estimate_message_tokens(message, get_estimator("chars4")) == expected


def test_bash_execution_custom_and_summaries() -> None:
    chars4 = get_estimator("chars4")
    bash = {"role": "bashExecution", "command": "ls -la", "output": "a" * 20, "exitCode": 0}
    assert estimate_message_tokens(bash, chars4) == 2 + 5
    custom = {"role": "custom", "customType": "note", "content": "remember this"}
    assert estimate_message_tokens(custom, chars4) == 4
    summary = {"role": "compactionSummary", "summary": "s" * 8}
    assert estimate_message_tokens(summary, chars4) == 2


def test_unknown_role_and_malformed_content_count_nothing() -> None:
    chars4 = get_estimator("chars4")
    assert estimate_message_tokens({"role": "system", "content": "x" * 100}, chars4) == 0
    assert estimate_message_tokens({"role": "user", "content": None}, chars4) == 0
    assert estimate_message_tokens({"role": "user", "content": [1, "x", {"type": 3}]}, chars4) == 0


def test_chars4_message_estimate_is_within_rounding_of_pi() -> None:
    # pi sums a message's characters and rounds up once; here each part is rounded up.
    texts = ["abc", "defgh", "ijklmnopq", "r"]
    message = {"role": "assistant", "content": [{"type": "text", "text": t} for t in texts]}
    pi_estimate = math.ceil(sum(len(t) for t in texts) / 4)
    ours = estimate_message_tokens(message, get_estimator("chars4"))
    assert pi_estimate <= ours < pi_estimate + len(texts)


def test_tool_call_arguments_beyond_64_bit_integers_still_count() -> None:
    args = {"n": 2**70}
    message = {
        "role": "assistant",
        "content": [{"type": "toolCall", "name": "x", "arguments": args}],
    }
    assert estimate_message_tokens(message, get_estimator("chars4")) == 1 + math.ceil(
        len('{"n":1180591620717411303424}') / 4
    )


@needs_o200k
def test_message_estimate_with_o200k_uses_exact_counts() -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "hello world"}, IMAGE]}
    assert estimate_message_tokens(message, get_estimator("o200k")) == 2 + IMAGE_TOKENS


# --- usage ------------------------------------------------------------------------------------


def assistant(usage: Any, stop_reason: str = "stop") -> dict[str, Any]:
    return {"role": "assistant", "content": [], "usage": usage, "stopReason": stop_reason}


def test_usage_prefers_total_tokens() -> None:
    usage = {"input": 1525, "output": 257, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1782}
    assert usage_context_tokens(assistant(usage)) == 1782


def test_usage_sums_components_when_total_is_missing_or_zero() -> None:
    usage = {"input": 100, "output": 20, "cacheRead": 3000, "cacheWrite": 400, "totalTokens": 0}
    assert usage_context_tokens(assistant(usage)) == 3520
    del usage["totalTokens"]
    assert usage_context_tokens(assistant(usage)) == 3520


@pytest.mark.parametrize(
    "message",
    [
        assistant({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}),
        assistant({"input": 10, "totalTokens": 10}, stop_reason="error"),
        assistant({"input": 10, "totalTokens": 10}, stop_reason="aborted"),
        assistant(None),
        assistant("lots"),
        assistant({"input": True, "output": -5, "totalTokens": "12"}),
        {"role": "user", "content": "hi", "usage": {"totalTokens": 12}},
        {"role": "assistant", "content": []},
    ],
)
def test_usage_is_none_when_absent_zero_or_not_trusted(message: dict[str, Any]) -> None:
    assert usage_context_tokens(message) is None
