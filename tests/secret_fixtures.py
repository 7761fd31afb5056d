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
