"""Mask secrets in what the tool prints (`show`, `context`): each one becomes its mask, at
most its first and last two characters, so output never carries a secret by our hand."""

from __future__ import annotations

import orjson

from gitclaw_compress.core.lines import RawLine
from gitclaw_compress.secrets.findings import mask
from gitclaw_compress.secrets.scan import scan_lines

PARTIAL = 6  # a cut secret's start at the end of a preview is masked from this length on


def mask_line(data: bytes) -> tuple[bytes, int]:
    """The JSON line with each secret in its string values masked, and how many."""
    secrets = {finding.secret for finding in scan_lines([RawLine(1, data, False)], None, "")}
    for secret in sorted(secrets, key=len, reverse=True):
        data = data.replace(orjson.dumps(secret)[1:-1], orjson.dumps(mask(secret))[1:-1])
    return data, len(secrets)


def mask_texts(texts: list[str], lines: list[RawLine]) -> list[str]:
    """Each text (a preview cut from `lines`) with the secrets of `lines` masked, also one
    that the cut left incomplete at the end of a text."""
    secrets = sorted(
        {finding.secret for finding in scan_lines(lines, None, "")}, key=len, reverse=True
    )
    out = []
    for text in texts:
        for secret in secrets:
            text = text.replace(secret, mask(secret))
            for size in range(min(len(secret) - 1, len(text)), PARTIAL - 1, -1):
                if text.endswith(secret[:size]):
                    text = text[:-size] + mask(secret)
                    break
        out.append(text)
    return out
