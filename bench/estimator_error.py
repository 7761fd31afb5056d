# The synthetic CJK passages use full-width punctuation on purpose.
# ruff: noqa: RUF001
"""Measure each token estimator's error against the exact o200k_base count.

Not a test: a script whose output goes into docs/tokens.md. Run it from the repository root:

    python bench/estimator_error.py            # corpus at <repo>/../shared/corpus
    python bench/estimator_error.py --corpus DIR
    python bench/estimator_error.py --fit      # also refit the cjk estimator's constants

It needs the optional package toktok-rs (the exact count). The corpus is read only. When the
corpus directory is absent, only the synthetic CJK category is measured.

Categories:
- prose: user and assistant text (and thinking text) of pi, Claude Code and Codex sessions.
- code: file contents written by write/edit tools (pi write/edit, Claude Write/Edit, Codex
  apply_patch) and read results of files with a code extension.
- json: tool results whose text parses as a JSON object or array.
- lines: every whole JSONL line of every session file, as stored.
- lines (no image): the same without the lines that hold a base64 run of 1000+ characters
  (images, mostly).
- cjk (corpus): corpus strings of 40 characters or more whose characters are at least 20% CJK.
- cjk (synthetic): the fixed Chinese, Japanese and Korean passages below, written for this
  script. They are synthetic, not taken from any session.
"""

from __future__ import annotations

import argparse
import datetime
import platform
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from shared_corpus import CORPUS

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gitclaw_compress.errors import GitClawError  # noqa: E402
from gitclaw_compress.formats.pi.view import (  # noqa: E402
    ROLES,
    neutral_message,
    usage_context_tokens,
)
from gitclaw_compress.tokens.estimate import (  # noqa: E402
    ESTIMATOR_NAMES,
    CjkAware,
    O200k,
    TokenEstimator,
    char_classes,
    count_cjk,
    estimate_message,
    get_estimator,
)

DEFAULT_CORPUS = CORPUS
SESSION_DIRS = ("pi", "claude", "codex")
MIN_TOKENS_FOR_ITEM_ERROR = 20
CATEGORIES = (
    "prose",
    "code",
    "json",
    "lines",
    "lines (no image)",
    "cjk (corpus)",
    "cjk (synthetic)",
)

CODE_EXTENSIONS = frozenset(
    (  # noqa: SIM905 (a word list reads better than 45 quoted items)
        ".py .pyi .ts .tsx .js .jsx .mjs .cjs .go .rs .java .kt .scala .swift .c .h .cc .cpp"
        " .hpp .cs .rb .php .sh .bash .zsh .ps1 .lua .css .scss .html .vue .svelte .sql .toml"
        " .yaml .yml .dart .ex .exs .hs .ml .r .jl .zig .nim"
    ).split()
)


# Synthetic CJK passages, written for this script (not from any session).
SYNTHETIC_CJK = {
    "zh": (
        "这个工具会读取代理的会话文件，把很早以前的工具输出替换成简短的说明，"
        "同时把原始内容保存在仓库里，以便以后可以完整地恢复。压缩之前，它会先估算"
        "每条消息大约占用多少个词元，再根据模型的上下文窗口决定保留哪些轮次。"
        "如果估算过低，模型可能在对话中途超出上下文限制；如果估算过高，又会删掉"
        "本来可以保留的内容。因此我们用精确的分词器在真实会话上测量了误差，并把"
        "结果写进文档。请注意：中文字符在大多数分词器中大约对应一个词元，标点符号"
        "通常单独成为一个词元，而英文单词和代码的比例则完全不同。"
    ),
    "ja": (
        "このツールはエージェントのセッションファイルを読み込み、古いツールの出力を短い"
        "説明に置き換えます。元の内容はリポジトリに保存されるので、あとで完全に元に戻す"
        "ことができます。圧縮の前に、各メッセージがおよそ何トークンを使うかを見積もり、"
        "モデルのコンテキストウィンドウに合わせて残すターンを決めます。見積もりが少なすぎる"
        "と、会話の途中で上限を超えてしまうかもしれません。ひらがな、カタカナ、漢字が混ざった"
        "文章では、一文字あたりのトークン数が英語とは大きく異なります。"
    ),
    "ko": (
        "이 도구는 에이전트의 세션 파일을 읽고 오래된 도구 출력을 짧은 설명으로 바꿉니다. "
        "원래 내용은 저장소에 보관되므로 나중에 그대로 복원할 수 있습니다. 압축하기 전에 "
        "각 메시지가 대략 몇 개의 토큰을 차지하는지 추정하고, 모델의 컨텍스트 창에 맞추어 "
        "남길 대화 차례를 정합니다. 추정치가 너무 낮으면 대화 도중에 한도를 넘을 수 있고, "
        "너무 높으면 남겨도 될 내용까지 지우게 됩니다."
    ),
    "zh+code": (
        "def 估算(消息: dict) -> int:\n"
        '    """返回消息的词元数量（估计值）。"""\n'
        "    总数 = 0\n"
        '    for 块 in 消息.get("content", []):\n'
        '        if 块["type"] == "text":  # 只统计文本块\n'
        '            总数 += len(块["text"]) // 4\n'
        "    return 总数\n"
        '{"role":"user","content":"请帮我修复登录页面的错误，日志显示数据库连接超时。"}\n'
    ),
}


@dataclass
class Samples:
    """Texts per category."""

    by_category: dict[str, list[str]] = field(default_factory=dict)

    def add(self, category: str, text: Any) -> None:
        if isinstance(text, str) and text:
            self.by_category.setdefault(category, []).append(text)


def _is_json_container(text: str) -> bool:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return False
    try:
        return isinstance(orjson.loads(stripped), dict | list)
    except orjson.JSONDecodeError:
        return False


def _is_code_path(path: Any) -> bool:
    return isinstance(path, str) and Path(path).suffix.lower() in CODE_EXTENSIONS


def _add_tool_output(samples: Samples, text: Any, path: Any) -> None:
    if not isinstance(text, str):
        return
    if _is_json_container(text):
        samples.add("json", text)
    elif _is_code_path(path):
        samples.add("code", text)


def _lines(path: Path) -> Iterator[tuple[str, Any]]:
    with path.open("rb") as fh:
        for raw in fh:
            raw = raw.rstrip(b"\r\n")
            if not raw:
                continue
            text = raw.decode("utf-8", "replace")
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                value = None
            yield text, value


_LONG_BASE64 = re.compile(r"[A-Za-z0-9+/=]{1000,}")


def _add_line(samples: Samples, line: str) -> None:
    samples.add("lines", line)
    if not _LONG_BASE64.search(line):
        samples.add("lines (no image)", line)


def _collect_pi(path: Path, samples: Samples) -> None:
    read_paths: dict[str, Any] = {}
    for line, entry in _lines(path):
        _add_line(samples, line)
        if not isinstance(entry, dict) or entry.get("type") != "message":
            continue
        message = entry.get("message") or {}
        role = message.get("role")
        content = message.get("content")
        if role == "user":
            if isinstance(content, str):
                samples.add("prose", content)
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "text":
                    samples.add("prose", block.get("text"))
        elif role == "assistant":
            for block in content if isinstance(content, list) else []:
                kind = block.get("type")
                if kind == "text":
                    samples.add("prose", block.get("text"))
                elif kind == "thinking":
                    samples.add("prose", block.get("thinking"))
                elif kind == "toolCall":
                    name = block.get("name")
                    args = block.get("arguments") or {}
                    if name == "read":
                        read_paths[block.get("id", "")] = args.get("path")
                    elif name == "write":
                        samples.add("code", args.get("content"))
                    elif name == "edit":
                        edits = args.get("edits") or [args]
                        for edit in edits:
                            samples.add("code", edit.get("oldText"))
                            samples.add("code", edit.get("newText"))
        elif role == "toolResult":
            read_path = read_paths.get(message.get("toolCallId", ""))
            for block in content if isinstance(content, list) else []:
                if block.get("type") == "text":
                    _add_tool_output(samples, block.get("text"), read_path)


def _collect_claude(path: Path, samples: Samples) -> None:
    read_paths: dict[str, Any] = {}
    for line, entry in _lines(path):
        _add_line(samples, line)
        if not isinstance(entry, dict):
            continue
        message = entry.get("message")
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            samples.add("prose", content)
            continue
        for block in content if isinstance(content, list) else []:
            kind = block.get("type")
            if kind == "text":
                samples.add("prose", block.get("text"))
            elif kind == "thinking":
                samples.add("prose", block.get("thinking"))
            elif kind == "tool_use":
                name = block.get("name")
                args = block.get("input") or {}
                if name == "Read":
                    read_paths[block.get("id", "")] = args.get("file_path")
                elif name == "Write":
                    samples.add("code", args.get("content"))
                elif name == "Edit":
                    samples.add("code", args.get("old_string"))
                    samples.add("code", args.get("new_string"))
            elif kind == "tool_result":
                result = block.get("content")
                read_path = read_paths.get(block.get("tool_use_id", ""))
                if isinstance(result, list):
                    result = "\n".join(b.get("text", "") for b in result if b.get("type") == "text")
                _add_tool_output(samples, result, read_path)


def _collect_codex(path: Path, samples: Samples) -> None:
    for line, entry in _lines(path):
        _add_line(samples, line)
        if not isinstance(entry, dict) or entry.get("type") != "response_item":
            continue
        payload = entry.get("payload") or {}
        kind = payload.get("type")
        if kind == "message" and payload.get("role") in ("user", "assistant"):
            for block in payload.get("content") or []:
                if block.get("type") in ("input_text", "output_text"):
                    samples.add("prose", block.get("text"))
        elif kind == "custom_tool_call" and payload.get("name") == "apply_patch":
            samples.add("code", payload.get("input"))
        elif kind == "function_call_output":
            _add_tool_output(samples, payload.get("output"), None)


def _walk_strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _walk_strings(item)


def _collect_cjk(path: Path, samples: Samples) -> None:
    for _line, entry in _lines(path):
        for text in _walk_strings(entry):
            if len(text) >= 40 and count_cjk(text) >= 0.2 * len(text):
                samples.add("cjk (corpus)", text)


def collect(corpus: Path | None) -> Samples:
    samples = Samples()
    collectors = {"pi": _collect_pi, "claude": _collect_claude, "codex": _collect_codex}
    if corpus is not None:
        for sub in SESSION_DIRS:
            for path in sorted((corpus / sub).glob("*.jsonl")):
                collectors[sub](path, samples)
                _collect_cjk(path, samples)
    for text in SYNTHETIC_CJK.values():
        samples.add("cjk (synthetic)", text)
    return samples


@dataclass
class Score:
    items: int
    exact: int
    estimated: int
    item_errors: list[float]

    @property
    def total_error(self) -> float:
        return 100.0 * (self.estimated - self.exact) / self.exact if self.exact else 0.0

    @property
    def mean_signed(self) -> float:
        errs = self.item_errors
        return sum(errs) / len(errs) if errs else 0.0

    @property
    def mean_abs(self) -> float:
        errs = self.item_errors
        return sum(abs(e) for e in errs) / len(errs) if errs else 0.0


def score(estimates: Iterable[int], exact: list[int]) -> Score:
    est = list(estimates)
    item_errors = [
        100.0 * (e - x) / x
        for e, x in zip(est, exact, strict=True)
        if x >= MIN_TOKENS_FOR_ITEM_ERROR
    ]
    return Score(len(exact), sum(exact), sum(est), item_errors)


def fit_cjk(samples: Samples, exact: dict[str, list[int]]) -> list[float]:
    """Least squares for the cjk estimator's weights, each category weighted equally.

    tokens ~ a*cjk + b*symbol + c*word + d*blob + e*runs, after taking off letter / 3.5 (the
    letter class is not fitted: the corpus has almost none). Returns [a, b, c, d, e].
    """
    letter_weight = 1 / CjkAware.LETTER_CHARS_PER_TOKEN
    n = 5
    ata = [[0.0] * n for _ in range(n)]
    atb = [0.0] * n
    for category, texts in samples.by_category.items():
        weight = 1.0 / (sum(exact[category]) or 1)
        for text, tokens in zip(texts, exact[category], strict=True):
            c = char_classes(text)
            x = (c.cjk, c.symbol, c.word, c.blob, c.runs)
            target = tokens - c.letter * letter_weight
            for i in range(n):
                atb[i] += weight * x[i] * target
                for j in range(n):
                    ata[i][j] += weight * x[i] * x[j]
    return _solve(ata, atb)


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gauss-Jordan elimination with partial pivoting (a tiny system; no numpy needed)."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if not m[col][col]:
            continue
        for r in range(n):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [v - f * p for v, p in zip(m[r], m[col], strict=True)]
    return [m[i][n] / m[i][i] if m[i][i] else 0.0 for i in range(n)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--fit", action="store_true", help="refit the cjk estimator's constants")
    args = parser.parse_args(argv)

    try:
        exact_estimator = O200k()
    except GitClawError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 3

    corpus: Path | None = args.corpus
    if corpus is None or not corpus.is_dir():
        print(f"note: corpus {corpus} is absent; measuring the synthetic CJK sample only\n")
        corpus = None
    samples = collect(corpus)

    exact = {cat: exact_estimator.count_many(texts) for cat, texts in samples.by_category.items()}
    names = [n for n in ESTIMATOR_NAMES if n != "o200k"]
    estimators: dict[str, TokenEstimator] = {n: get_estimator(n) for n in names}
    categories = [c for c in CATEGORIES if c in samples.by_category]

    print(f"Estimator error against exact o200k_base (toktok-rs {exact_estimator.version})")
    print(
        f"date {datetime.date.today().isoformat()}, Python {platform.python_version()}, "
        f"{platform.machine()}, corpus {'absent' if corpus is None else corpus}\n"
    )
    print("| category | items | exact tokens | chars/token |")
    print("|---|---:|---:|---:|")
    for cat in categories:
        texts = samples.by_category[cat]
        chars = sum(len(t) for t in texts)
        tokens = sum(exact[cat])
        print(f"| {cat} | {len(texts)} | {tokens:,} | {chars / tokens:.2f} |")

    scores = {
        (name, cat): score((est.count(t) for t in samples.by_category[cat]), exact[cat])
        for name, est in estimators.items()
        for cat in categories
    }
    print("\nTotal error %: (sum of estimates - sum of exact counts) / sum of exact counts.\n")
    _table(categories, estimators, lambda n, c: f"{scores[n, c].total_error:+.1f}")
    print(
        "\nPer item: mean signed error % / mean absolute error %, over items of "
        f"{MIN_TOKENS_FOR_ITEM_ERROR}+ exact tokens.\n"
    )
    _table(
        categories,
        estimators,
        lambda n, c: f"{scores[n, c].mean_signed:+.1f} / {scores[n, c].mean_abs:.1f}",
    )

    if corpus is not None:
        print(
            "\nAgainst recorded usage (pi sessions): estimate of the messages added between two"
            " assistant replies / growth of the prompt tokens the provider reported"
            " (input + cacheRead + cacheWrite). Below 1.00: the estimate misses what the provider"
            " counts besides the text: message framing, tool-call wrappers, reasoning items.\n"
        )
        _usage_table(corpus, {**estimators, "o200k": exact_estimator})

    if args.fit:
        cjk, symbol, word, blob, runs = fit_cjk(samples, exact)
        print(
            f"\nfit: CJK_TOKENS_PER_CHAR={cjk:.3f} SYMBOL_TOKENS_PER_CHAR={symbol:.3f} "
            f"WORD_CHARS_PER_TOKEN={1 / word:.2f} BLOB_CHARS_PER_TOKEN={1 / blob:.2f} "
            f"TOKENS_PER_RUN={runs:.2f}"
        )
    return 0


def _table(
    categories: list[str],
    estimators: dict[str, TokenEstimator],
    cell: Callable[[str, str], str],
) -> None:
    print("| estimator | " + " | ".join(categories) + " |")
    print("|---|" + "---:|" * len(categories))
    for name in estimators:
        print(f"| {name} | " + " | ".join(cell(name, cat) for cat in categories) + " |")


def _usage_table(corpus: Path, estimators: dict[str, TokenEstimator]) -> None:
    growth: dict[str, int] = {}
    pairs: dict[str, int] = {}
    estimated: dict[tuple[str, str], int] = {}
    for path in sorted((corpus / "pi").glob("*.jsonl")):
        messages = [
            entry["message"]
            for _line, entry in _lines(path)
            if isinstance(entry, dict) and entry.get("type") == "message"
        ]
        previous: int | None = None
        between: list[dict[str, Any]] = []
        for message in messages:
            usage = message.get("usage") if message.get("role") == "assistant" else None
            if not isinstance(usage, dict) or usage_context_tokens(message) is None:
                between.append(message)
                continue
            prompt = sum(int(usage.get(k) or 0) for k in ("input", "cacheRead", "cacheWrite"))
            if previous is not None and prompt > previous and between:
                model = str(message.get("model"))
                growth[model] = growth.get(model, 0) + prompt - previous
                pairs[model] = pairs.get(model, 0) + 1
                for name, est in estimators.items():
                    key = (model, name)
                    total = sum(
                        estimate_message(neutral_message(m, 0, None), est)
                        for m in between
                        if m.get("role") in ROLES
                    )
                    estimated[key] = estimated.get(key, 0) + total
            previous, between = prompt, [message]
    names = list(estimators)
    print("| model | pairs | reported growth | " + " | ".join(names) + " |")
    print("|---|---:|---:|" + "---:|" * len(names))
    for model in sorted(growth, key=lambda m: -growth[m]):
        ratios = " | ".join(f"{estimated[model, n] / growth[model]:.2f}" for n in names)
        print(f"| {model} | {pairs[model]} | {growth[model]:,} | {ratios} |")


if __name__ == "__main__":
    raise SystemExit(main())
