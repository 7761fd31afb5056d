"""Secrets of many kinds for the scan tests, BUILT AT RUN TIME from pieces and a seeded
random generator: the source holds nothing that looks like a live secret."""

from __future__ import annotations

import base64
import random
import string

import orjson

LETTERS = string.ascii_letters + string.digits


def _random(alphabet: str, length: int, seed: int) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(length))


def _b64url(value: object) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(value)).decode().rstrip("=")


def _key_block(seed: int) -> str:
    rnd = random.Random(seed)
    body = base64.b64encode(bytes(rnd.randrange(256) for _ in range(600))).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    kind = "RSA " + "PRIVATE" + " KEY"
    return f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----"


def planted(seed: int = 0) -> dict[str, tuple[str, str]]:
    """kind -> (the text a transcript holds, the secret inside it)."""
    s = seed * 100
    aws = _random(LETTERS + "/+", 40, s + 1)
    aws_id = "AK" + "IA" + _random(string.ascii_uppercase + "234567", 16, s + 14)
    github = "gh" + "p_" + _random(LETTERS, 36, s + 2)
    gitlab = "gl" + "pat-" + _random(LETTERS, 20, s + 3)
    slack = "xo" + "xb-" + "2" * 10 + "-" + "3" * 13 + "-" + _random(LETTERS, 24, s + 4)
    stripe = "sk" + "_live_" + _random(LETTERS, 24, s + 5)
    openai = "sk-" + _random(LETTERS, 20, s + 6) + "T3Blbk" + "FJ" + _random(LETTERS, 20, s + 7)
    anthropic = "sk-" + "ant-" + "api03-" + _random(LETTERS + "-_", 93, s + 8) + "AA"
    google = "AI" + "za" + _random(LETTERS + "-_", 35, s + 9)
    twilio = "S" + "K" + _random("0123456789abcdef", 32, s + 10)
    password = _random(LETTERS, 18, s + 11)
    header = _b64url({"alg": "HS256", "typ": "JWT"})
    claims = _b64url({"sub": "user-" + str(seed), "iat": 1767225600})
    jwt = f"ey{header[2:]}.{claims}.{_random(LETTERS + '-_', 43, s + 12)}"
    key = _key_block(s + 13)
    return {
        "aws": (f"aws_access_key_id = {aws_id}\naws_secret_access_key = {aws}", aws),
        "github": (f"export GITHUB_TOKEN={github}", github),
        "gitlab": (f"token: {gitlab}", gitlab),
        "slack": (f"SLACK_BOT_TOKEN={slack}", slack),
        "stripe": (f"stripe.api_key = '{stripe}'", stripe),
        "openai": (f"OPENAI_API_KEY={openai}", openai),
        "anthropic": (f"ANTHROPIC_API_KEY={anthropic}", anthropic),
        "google": (f"GOOGLE_API_KEY={google}", google),
        "twilio": (f"TWILIO_API_KEY={twilio}", twilio),
        "database": (f"DATABASE_URL=postgres://admin:{password}@10.1.2.3:5432/app", password),
        "jwt": (f"Authorization: Bearer {jwt}", jwt),
        "private-key": (f"cat id_rsa\n{key}\n", key),
        "aws-key-id": ("", aws_id),  # planted with "aws" above
    }


def recall_kinds(seed: int = 0) -> dict[str, tuple[str, list[str]]]:
    """The kinds the recall table plants: kind -> (the text a transcript holds, every secret
    in it that must be found). Real shapes, built at run time from pieces."""
    s = seed * 100 + 50
    base = planted(seed)
    aws_id = base["aws-key-id"][1]
    fine = "github" + "_pat_" + _random(LETTERS, 22, s + 1) + "_" + _random(LETTERS, 59, s + 2)
    host = "db-" + _random(string.ascii_lowercase, 6, s + 3) + ".eu-west-1.rds.amazonaws.com"
    password = _random(LETTERS, 20, s + 4)
    signing = _random("0123456789abcdef", 40, s + 5)
    env_token = "tp-" + _random(string.ascii_lowercase + string.digits, 48, s + 6)
    yaml_password = _random(LETTERS + string.digits, 24, s + 7)
    json_key = _random(LETTERS + string.digits, 32, s + 8)
    kinds: dict[str, tuple[str, list[str]]] = {
        "aws-key-id": (f"aws_access_key_id = {aws_id}", [aws_id]),
        "aws-key-pair": (base["aws"][0], [aws_id, base["aws"][1]]),
        "github-classic": (base["github"][0], [base["github"][1]]),
        "github-fine-grained": (f"git remote set-url origin https://{fine}@github.com/o/r", [fine]),
        "slack": (base["slack"][0], [base["slack"][1]]),
        "stripe": (base["stripe"][0], [base["stripe"][1]]),
        "openai": (base["openai"][0], [base["openai"][1]]),
        "anthropic": (base["anthropic"][0], [base["anthropic"][1]]),
        "google": (base["google"][0], [base["google"][1]]),
        "private-key": (base["private-key"][0], [base["private-key"][1]]),
        "jwt": (base["jwt"][0], [base["jwt"][1]]),
        "database-url": (f"DATABASE_URL=postgres://app:{password}@{host}:5432/app", [password]),
        "assignment-env": (f"SESSION_SIGNING_SECRET={signing}", [signing]),
        "assignment-export": (f"export ANTHROPIC_AUTH_TOKEN={env_token}", [env_token]),
        "assignment-yaml": (f"database:\n  password: {yaml_password}\n", [yaml_password]),
        "assignment-json": (f'{{"service": "billing", "api_key": "{json_key}"}}', [json_key]),
    }
    return kinds
