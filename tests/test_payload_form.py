"""A dropped payload's base64 runs are kept decoded in the archive and come back as the same
text, byte for byte; whatever would not come back the same is kept as it was."""

from __future__ import annotations

import base64
import json
import os
import random
import string
import subprocess
from pathlib import Path

import pytest
from conftest import cli, git
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic import SessionBuilder, text, tool_call, typical_session

from gitclaw_compress.core.payload_form import (
    MAGIC,
    MIN_RUN,
    PayloadFormError,
    original_form,
    stored_form,
)

BIG = st.binary(min_size=MIN_RUN, max_size=4 * MIN_RUN)


def wrapped(text: bytes, width: int, separator: bytes = b"\\n") -> bytes:
    return separator.join(text[at : at + width] for at in range(0, len(text), width))


def decoded_bytes(stored: bytes) -> int:
    """How many bytes of `stored` are decoded base64 (0 when kept as it was)."""
    if not stored.startswith(MAGIC):
        return 0
    total, at = 0, stored.index(b"\n", len(MAGIC)) + 1
    while at < len(stored):
        end = stored.index(b"\n", at)
        fields = stored[at:end].split(b" ")
        at = end + 1 + int(fields[1])
        total += int(fields[1]) if fields[0] == b"b" else 0
    return total


@settings(max_examples=30, deadline=None)
@given(data=BIG, prefix=st.sampled_from([b'"', b'"data:image/png;base64,', b'{"data":"']))
def test_base64_of_random_bytes_is_kept_decoded_and_comes_back(data: bytes, prefix: bytes) -> None:
    payload = prefix + base64.b64encode(data) + b'"' + (b"}" if prefix.startswith(b"{") else b"")
    stored = stored_form(payload)
    assert decoded_bytes(stored) == len(data)
    assert len(stored) < len(payload)
    assert original_form(stored) == payload


@settings(max_examples=20, deadline=None)
@given(data=BIG, width=st.sampled_from([64, 76]), separator=st.sampled_from([b"\\n", b"\\r\\n"]))
def test_base64_cut_into_lines_comes_back_with_its_line_breaks(
    data: bytes, width: int, separator: bytes
) -> None:
    payload = b'"' + wrapped(base64.b64encode(data), width, separator) + separator + b'"'
    stored = stored_form(payload)
    assert decoded_bytes(stored) == len(data)
    assert original_form(stored) == payload


@settings(max_examples=20, deadline=None)
@given(data=BIG)
def test_unpadded_base64_comes_back_unpadded(data: bytes) -> None:
    text = base64.b64encode(data).rstrip(b"=")
    payload = b'"' + text + b'"'
    stored = stored_form(payload)
    assert decoded_bytes(stored) == len(data)
    assert original_form(stored) == payload


@settings(max_examples=30, deadline=None)
@given(payload=st.binary(max_size=3 * MIN_RUN))
def test_any_bytes_come_back(payload: bytes) -> None:
    assert original_form(stored_form(payload)) == payload


@settings(max_examples=20, deadline=None)
@given(data=st.binary(min_size=MIN_RUN, max_size=2 * MIN_RUN).filter(lambda d: len(d) % 3))
def test_non_canonical_base64_is_kept_as_it_was(data: bytes) -> None:
    """Stray bits in the last character decode to the same bytes, but those bytes encode
    to another text: such a run must not be decoded."""
    text = base64.b64encode(data)
    last = text.rstrip(b"=")[-1:]
    alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    stray = bytes([alphabet[alphabet.index(last) + 1]])  # a low bit set that encoding clears
    odd = text.rstrip(b"=")[:-1] + stray + b"=" * text.count(b"=")
    assert base64.b64decode(odd) == data  # the same bytes, another text
    payload = b'"' + odd + b'"'
    assert stored_form(payload) == payload


@pytest.mark.parametrize(
    "payload",
    [
        b'"' + b"A" * (MIN_RUN + 1) + b'"',  # a length no base64 text has
        b'"' + base64.b64encode(os.urandom(MIN_RUN)) + b"=" + b'"',  # a third "="
        b'"' + base64.b64encode(os.urandom(MIN_RUN)).replace(b"/", b"\\/") + b'"',  # "\/"
        b'"' + base64.b64encode(os.urandom(90))[:100] + b'"',  # too short to bother
        b'"' + b"x" * 5000 + b'"',  # text
        b'{"text":"' + "ünïcödé ✓ 日本語 ".encode() * 400 + b'"}',
    ],
)
def test_what_does_not_read_as_base64_is_kept_as_it_was_or_comes_back(payload: bytes) -> None:
    assert original_form(stored_form(payload)) == payload


def test_a_payload_stored_as_it_was_reads_as_before() -> None:
    """Archives written before this form hold every payload as it was: a JSON value, which
    never starts with the form's first byte."""
    for old in (b'"text"', b"[1,2]", b'{"a":"' + base64.b64encode(os.urandom(2000)) + b'"}'):
        assert original_form(old) == old


def test_a_newer_or_damaged_form_is_an_error_not_wrong_bytes() -> None:
    payload = b'"' + base64.b64encode(os.urandom(2 * MIN_RUN)) + b'"'
    stored = stored_form(payload)
    newer = stored.replace(MAGIC + b"1\n", MAGIC + b"2\n", 1)
    with pytest.raises(PayloadFormError, match="newer"):
        original_form(newer)
    with pytest.raises(PayloadFormError, match="damaged"):
        original_form(stored[:-10])
    with pytest.raises(PayloadFormError, match="damaged"):
        original_form(stored.replace(b'"b ', b'"q ', 1))


def test_an_image_is_archived_decoded_and_restores_byte_for_byte(repo: Path) -> None:
    """Through the real commands: the archived object of the old turn's image is its PNG
    bytes, `verify` is clean, `restore` gives the original back, a second compress is a no-op."""
    image = b"\x89PNG\r\n\x1a\n" + os.urandom(6000)
    session = repo / "s.jsonl"
    original = typical_session(turns=8, pasted_image=image).data()
    session.write_bytes(original)
    cli("compress", "--force", "s.jsonl", cwd=repo)
    assert session.read_bytes() != original
    objects = git(repo, "ls-tree", "-r", "refs/gitclaw/archive", "blobs").split()
    contents = [
        subprocess.run(
            ["git", "cat-file", "blob", oid], cwd=repo, capture_output=True, check=True
        ).stdout
        for oid in objects[2::4]
    ]
    decoded = [blob for blob in contents if blob.startswith(MAGIC)]
    assert decoded and all(image in blob for blob in decoded)
    assert b"".join(contents).count(base64.b64encode(image)[:200]) == 0
    json.loads(cli("verify", "--json", "s.jsonl", cwd=repo).stdout)
    compressed = session.read_bytes()
    cli("compress", "--force", "s.jsonl", cwd=repo)
    assert session.read_bytes() == compressed
    cli("restore", "s.jsonl", cwd=repo)
    assert session.read_bytes() == original


def test_a_secret_beside_an_image_is_redacted_from_the_archive_too(repo: Path) -> None:
    """The tool result that holds the image also holds a key: `redact` finds it in the
    archived payload (kept with its image decoded), writes the payload again without it, and
    restore gives the original with the key redacted and the image as it was."""
    image = b"\x89PNG\r\n\x1a\n" + random.Random(7).randbytes(6000)
    key = "gh" + "p_" + "".join(random.Random(8).choices(string.ascii_letters, k=36))
    session = SessionBuilder()
    session.user("Look at the screenshot")
    session.assistant(tool_call("c0", "read", {"path": "shot.png"}))
    session.tool_result("c0", "read", f"token={key}\n" + "x" * 400, images=[("image/png", image)])
    session.assistant(text("Seen."), stop="stop")
    for turn in range(6):
        session.user(f"Turn {turn}")
        session.assistant(text("ok " * 60), stop="stop")
    original = session.data()
    (repo / "s.jsonl").write_bytes(original)
    lenient = {"session": {"sizeThresholdKB": 1}, "scan": {"block": False}}
    (repo / "compression.json").write_text(json.dumps(lenient))
    cli("compress", "--force", "s.jsonl", cwd=repo)
    oids = git(repo, "ls-tree", "-r", "refs/gitclaw/archive", "blobs").split()[2::4]
    stored = [blob(repo, oid) for oid in oids]
    assert any(data.startswith(MAGIC) and key.encode() in data for data in stored)

    cli("redact", "s.jsonl", "--all", cwd=repo)
    git(repo, "reflog", "expire", "--expire=now", "--all")
    git(repo, "gc", "-q", "--prune=now")
    everything = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True
    ).stdout
    assert key.encode() not in everything
    restored = cli("restore", "s.jsonl", "-o", "-", cwd=repo).stdout
    assert key.encode() not in restored and b"[REDACTED:" in restored
    assert base64.b64encode(image) in restored
    assert restored.replace(b"[REDACTED:github-pat]", key.encode()) == original


def blob(repo: Path, oid: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", oid], cwd=repo, capture_output=True, check=True
    ).stdout
