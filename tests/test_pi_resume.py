"""A compressed session still resumes in the real pi when pi talks to a model of another
provider (OpenAI chat completions): pi then turns thinking into text and drops signatures,
and the request must still be well formed and smaller.

The resume of every format (pi's synthetic sessions and every corpus session among them,
with the session's own model) is in test_resume_contract.py; this is the check only pi needs.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from agent_fixtures import PNG_BASE64, png
from conftest import cli, git
from fake_llm_sse import sealed_reasoning
from pi_harness import PiRun, chain_reaches_root, iter_corpus, require_pi, run_pi_resume
from synthetic import typical_session

from gitclaw_compress.core.lines import MARKER_BYTES, MARKER_KEY
from gitclaw_compress.core.marker import is_ui_only

SESSIONS = ".GITCLAW/state/sessions"
CORPUS = list(iter_corpus())


def ui_only_marker(line: bytes) -> bool:
    """Whether a line carries a marker with the UI-only flag (v1 `"ui":true`, v3 `:ui`)."""
    return MARKER_BYTES in line and is_ui_only(json.loads(line).get(MARKER_KEY))


def _compress(repo: Path, source: Path, keep_turns: int) -> Path:
    path = repo / SESSIONS / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    cli("compress", "--force", "--keep-turns", str(keep_turns), str(path), cwd=repo)
    return path


def _check_resume(
    original: Path, compressed: Path, tmp_path: Path, api: str
) -> tuple[PiRun, PiRun]:
    validate = chain_reaches_root(original)
    before = run_pi_resume(original, tmp_path=tmp_path / "before", api=api, validate=validate)
    after = run_pi_resume(compressed, tmp_path=tmp_path / "after", api=api, validate=validate)
    assert len(after.bodies) == 1, "pi sends exactly one request"
    # The fake server applies the rules real APIs enforce: tool calls paired with results,
    # no empty text blocks, signed thinking well formed.
    assert after.requests[0]["problems"] == []
    assert len(after.requests[0]["raw"]) < len(before.requests[0]["raw"])
    kept = sealed_reasoning(after.bodies[0])
    sent_before = sealed_reasoning(before.bodies[0])
    assert all(block in sent_before for block in kept), "a signed thinking block changed"
    return before, after


def test_compressed_synthetic_session_resumes_in_pi_with_another_provider(
    repo: Path, tmp_path: Path
) -> None:
    require_pi()
    source = tmp_path / "synthetic.jsonl"
    source.write_bytes(typical_session(turns=4, pasted_image=png()).data())
    compressed = _compress(repo, source, keep_turns=1)
    before, after = _check_resume(source, compressed, tmp_path, api="openai-completions")
    # The pasted image of the first turn reaches the model as a text stub that names it
    # (pi leaves images out for the fake openai-completions model, which takes no images).
    assert PNG_BASE64[:64] not in before.requests[0]["raw"]
    assert PNG_BASE64[:64] not in after.requests[0]["raw"]
    assert "User image elided: image/png" in after.requests[0]["raw"]


@pytest.mark.parametrize(
    "source",
    CORPUS or [pytest.param(None, marks=pytest.mark.skip(reason="no ../shared/corpus/pi"))],
    ids=[p.name for p in CORPUS] or ["no-corpus"],
)
def test_stubbing_ui_copies_leaves_the_first_request_byte_identical(
    source: Path, tmp_path: Path
) -> None:
    """With stubUiCopies (pi: toolResult.details in every turn) the request pi sends on
    resume is byte for byte the one it sends without the option."""
    require_pi()
    requests: dict[bool, str] = {}
    files: dict[bool, bytes] = {}
    for option in (False, True):
        repo = tmp_path / f"repo-{option}"
        repo.mkdir()
        git(repo, "init", "-q")
        config = repo / "compression.json"
        config.write_text(json.dumps({"session": {"stubUiCopies": option}}))
        compressed = _compress(repo, source, keep_turns=4)  # the default number of kept turns
        files[option] = compressed.read_bytes()
        if option and files[True] == files[False]:  # nothing to stub: pi would send the same
            requests[True] = requests[False]
            continue
        validate = chain_reaches_root(source)
        run = run_pi_resume(compressed, tmp_path=tmp_path / "run", api="native", validate=validate)
        # The one thing that varies per run: the harness's working folder, named at random,
        # which pi states as the cwd in its system prompt.
        requests[option] = re.sub(r"pi-run-[0-9a-f]+", "pi-run", run.requests[0]["raw"])
        shutil.rmtree(tmp_path / "run")
    if not any(ui_only_marker(line) for line in files[True].split(b"\n")):
        pytest.skip("no toolResult.details in this file's kept turns")
    assert len(files[True]) < len(files[False])
    assert requests[True] == requests[False]
