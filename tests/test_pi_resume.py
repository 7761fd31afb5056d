"""A compressed session still resumes in the real pi when pi talks to a model of another
provider (OpenAI chat completions): pi then turns thinking into text and drops signatures,
and the request must still be well formed and smaller.

The resume of every format (pi's synthetic sessions and every corpus session among them,
with the session's own model) is in test_resume_contract.py; this is the check only pi needs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import cli, git
from fake_llm_sse import sealed_reasoning
from pi_harness import chain_reaches_root, require_pi, run_pi_resume
from synthetic import typical_session

SESSIONS = ".GITCLAW/state/sessions"


def _compress(repo: Path, source: Path, keep_turns: int) -> Path:
    path = repo / SESSIONS / source.name
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, path)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "agent run")
    cli("compress", "--force", "--keep-turns", str(keep_turns), str(path), cwd=repo)
    return path


def _check_resume(original: Path, compressed: Path, tmp_path: Path, api: str) -> None:
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


def test_compressed_synthetic_session_resumes_in_pi_with_another_provider(
    repo: Path, tmp_path: Path
) -> None:
    require_pi()
    source = tmp_path / "synthetic.jsonl"
    source.write_bytes(typical_session(turns=4).data())
    compressed = _compress(repo, source, keep_turns=1)
    _check_resume(source, compressed, tmp_path, api="openai-completions")
