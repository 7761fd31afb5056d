"""Recall and precision of the scan: every planted kind found in every format and slot (JSON
inside a string included), our assignment rule's exclusions, and the corpus's one finding."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import CORPUS
from secret_fixtures import LETTERS, _random
from secret_recall import BUILDERS, recall

from gitclaw_compress.secrets.assignments import in_text, secret_name


@pytest.mark.parametrize("fmt", list(BUILDERS))
def test_every_planted_kind_is_found_in_every_slot(fmt: str) -> None:
    missed = [plant for plant, found in recall(fmt).items() if not found]
    assert missed == []


@pytest.mark.parametrize(
    "name",
    [
        "SESSION_SIGNING_SECRET",
        "ANTHROPIC_AUTH_TOKEN",
        "api_key",
        "apiKey",
        "db_password",
        "aws_secret_access_key",
        "CLIENT_SECRET",
        "GITHUB_TOKEN",
        "credentials",
    ],
)
def test_names_that_say_secret(name: str) -> None:
    assert secret_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "key",
        "cache_key",
        "sort_key",
        "public_key",
        "aws_access_key_id",
        "max_tokens",
        "token_url",
        "input_tokens",
        "primaryKey",
        "next_page_token",
        "password_file",
    ],
)
def test_names_that_do_not(name: str) -> None:
    assert not secret_name(name)


VALUE = "q7" + _random(LETTERS, 22, 26)  # built at run time: letters and digits


@pytest.mark.parametrize(
    ("line", "found"),
    [
        (f"API_SECRET={VALUE}", True),
        (f"export API_TOKEN='{VALUE}'", True),
        (f"  password: {VALUE}", True),
        (f'{{"api_key": "{VALUE}"}}', True),
        (f"secret_key := {VALUE}", True),
        ("API_SECRET=${API_SECRET_FROM_VAULT_2}", False),
        ("API_TOKEN=<your-api-token-here-123>", False),
        ("API_TOKEN=xxxxxxxxxxxxxxxxxxxx1234", False),
        ("DB_PASSWORD=changeme1234567890abc", False),
        ("API_KEY=your_api_key_goes_here_1", False),
        ("API_TOKEN=" + VALUE[:8] + "...", False),
        ("API_TOKEN=process.env.API_TOKEN_2", False),
        ("SIGNING_SECRET=sha256:" + "ab12" * 16, False),
        ("API_KEY=123e4567-e89b-12d3-a456-426614174000", False),
        ("TOKEN_VERSION=v1.22.333-beta.4", False),
        ("API_TOKEN=aaaaaaaaaaaaaaaaaaaa1", False),  # under the entropy floor
        ("API_TOKEN = get_token_from_env_1()", False),
        (f"API_TOKEN\n{VALUE}", False),  # not an assignment
        (f"the token {VALUE}", False),
    ],
)
def test_assignments(line: str, found: bool) -> None:
    assert (list(in_text(line)) != []) == found


@pytest.mark.skipif(not CORPUS.is_dir(), reason="shared corpus not found")
def test_the_corpus_holds_one_secret_the_printed_env_token() -> None:
    """Every other finding on the corpus would be a false positive. The shared cc-test
    transcript printed a `.env` file holding an auth token (on one line, in two values)."""
    from gitclaw_compress.formats import detect_file
    from gitclaw_compress.secrets.scan import scan_file

    files = sorted(CORPUS.glob("*/*.jsonl")) + sorted(CORPUS.glob("pi-history/*/*.jsonl"))
    found = [f for path in files for f in scan_file(path, path.name, detect_file(path, path.name))]
    assert {(f.file, f.rule) for f in found} == {("cc-test__c058ba70.jsonl", "secret-assignment")}
    assert len({f.hash for f in found}) == 1


def _texts(data: bytes) -> list[str]:
    import orjson

    from gitclaw_compress.secrets.scan import value_strings

    out = []
    for line in data.splitlines():
        try:
            entry = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        out += [text for _, text in value_strings(entry)]
    return out


@pytest.fixture
def two_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    """The candidate rules loaded, as in any run after a machine's first: the first run in
    a rule cache (this test run's first scan) reads every value with the engine's rules."""
    from gitclaw_compress.secrets import engine

    engine._light()  # writes the candidate file, if this is the first scan of the run
    monkeypatch.setattr(engine, "_light_scanner", None)
    engine._light()
    assert not engine.first_load()


@pytest.mark.usefixtures("two_stages")
def test_the_candidate_stage_finds_what_the_engine_finds() -> None:
    """The scan reads every value with the candidate rules and gives the engine's own rules
    only the values a candidate matched: on planted secrets of every kind and seed, and on
    the corpus, its findings are exactly those of the engine's rules reading every value."""
    from secret_fixtures import planted, recall_kinds

    from gitclaw_compress.secrets.engine import _engine, _scan, scan_values

    texts = [text for build in BUILDERS.values() for text in _texts(build())]
    for seed in range(12):
        texts += [line for line, _ in planted(seed).values()]
        texts += [line for line, _ in recall_kinds(seed).values()]
    if CORPUS.is_dir():
        for path in sorted(CORPUS.glob("*/*.jsonl")):
            texts += _texts(path.read_bytes())
    values = list(enumerate(texts))  # a key for each value
    two_stages = {(h.key, h.rule, h.secret) for h in scan_values(values)}
    engine_alone = {(h.key, h.rule, h.secret) for h in _scan(values, _engine, None)}
    assert two_stages == engine_alone
    assert len(two_stages) > 300


def test_a_first_run_reads_every_value_with_the_engine_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a new rule cache the run compiles the engine's rules (to read their patterns) and
    reads with them, without compiling the candidates too: the findings are the engine's.
    It leaves the candidate file, with the cheaper candidates in place of the two slow
    patterns, for the next run."""
    import orjson
    from secret_fixtures import planted

    from gitclaw_compress.secrets import engine

    monkeypatch.setenv(engine.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(engine, "_light_scanner", None)
    monkeypatch.setattr(engine, "_scanner", None)
    assert engine.first_load()
    line, secret = planted(4)["github"]
    hits = engine.scan_values([(1, "nothing to see here at all"), (2, line)])
    assert [(hit.key, hit.secret) for hit in hits] == [(2, secret)]
    assert engine._light_scanner is engine._scanner is not None
    assert not engine.first_load()
    written = orjson.loads(engine._candidate_path(str(tmp_path)).read_bytes())["rules"]
    patterns = {rule["pattern"] for rule in written}
    assert set(engine.CHEAPER.values()) <= patterns
    assert all(rule["id"].startswith(engine.CANDIDATE) for rule in written)  # not ours


@pytest.mark.usefixtures("two_stages")
def test_the_engine_rules_load_only_for_a_value_a_candidate_matched(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from secret_fixtures import planted

    from gitclaw_compress.secrets import engine

    monkeypatch.setattr(engine, "_scanner", None)  # as in a fresh process
    clean = [(n, f"line {n}: lorem ipsum dolor sit amet, token counts {n}") for n in range(50)]
    clean.append((50, "API_SECRET=${FROM_THE_VAULT_1234}"))
    assert engine.scan_values(clean) == []
    assert engine._scanner is None  # the candidates alone read them
    line, secret = planted(2)["github"]
    hits = engine.scan_values([*clean, (99, line)])
    assert [(hit.key, hit.secret) for hit in hits] == [(99, secret)]
    assert engine._scanner is not None
