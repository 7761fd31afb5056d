"""Our own rule: a secret-looking value assigned to a name that says it is one.

`SESSION_SIGNING_SECRET=…` in a `.env` file a tool printed, `export GITHUB_TOKEN=…`,
`password: …` in YAML, `"api_key": "…"` in JSON, or a JSON member whose key is such a name:
the engine's provider rules know none of these when the value has no provider prefix. And an
AWS access key id alone, which the engine reports only beside its secret key. Written
from what such lines look like, not from another project's rules:

- the name's last word is secret, token, key, password (passwd, pwd, pass), credential(s) or
  auth, or a name glued from them (`apikey`, `secretKey`); a key that only locates something
  (`cache_key`, `sort_key`, `public_key`, `key_id`, `max_tokens`) is not one;
- the value is one word of 16 to 512 characters with letters and digits and at least
  `ENTROPY_FLOOR` bits of entropy per character;
- placeholders (`${VAR}`, `$VAR`, `<your-key>`, `{{ x }}`, `xxxx`, `****`, `changeme`,
  example, dummy and test values, a cut `abc...`), references (`process.env.X`,
  `os.environ[…]`, a path, a URL), hashes named by their algorithm (`sha256:…`,
  `sha512-…`), ids (a UUID), versions (`1.2.3`) and code (`getToken()`, `snake_case_words`)
  are ruled out.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

RULE = "secret-assignment"
OWN_RULES = ("custom.secret-assignment", "custom.aws-access-key-id")  # in RULES_YAML
AWS_KEY_ID_RULE = OWN_RULES[1]
ENTROPY_FLOOR = 3.0  # bits per character: random 16+ characters of hex give about 3.5
SHORTEST = 16
LONGEST = 512

# The words a name ends with. A name is split into words at `_`, `-`, `.` and camelCase.
_LAST_WORDS = frozenset(
    {
        "secret",
        "secrets",
        "token",
        "key",
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "credential",
        "credentials",
        "apikey",
        "secretkey",
        "accesskey",
        "privatekey",
        "authkey",
        "authtoken",
        "accesstoken",
        "auth",
    }
)
# Words before the last that make the name a locator or a count, not a secret.
_NOT_SECRET_WORDS = frozenset(
    {
        "cache",
        "sort",
        "partition",
        "primary",
        "foreign",
        "public",
        "pub",
        "idempotency",
        "lookup",
        "map",
        "dict",
        "hash",
        "object",
        "row",
        "column",
        "table",
        "index",
        "unique",
        "composite",
        "shortcut",
        "hot",
        "keyboard",
        "next",
        "page",
        "continuation",
        "cursor",
        "pagination",
        "max",
        "min",
        "num",
        "count",
        "total",
        "input",
        "output",
        "cached",
        "reasoning",
        "prompt",
        "completion",
        "csrf",
        "xsrf",
        "publishable",
        "registry",
        "dedupe",
        "dedup",
        "routing",
        "message",
        "event",
        "file",
        "path",
    }
)

# NAME = value, NAME: value, "name": "value", export NAME=value, NAME := value; the name may
# be quoted; the value may be quoted and ends at a quote, space or a separator.
_ASSIGNMENT = re.compile(
    r"""(?<![\w.-])["']?([A-Za-z_][\w.-]{0,80})["']?[ \t]{0,4}(?::=|[:=])[ \t]{0,4}["'`]?"""
    r"""([^\s"'`,;<>(){}\[\]]{16,512})(?=["'`]|[\s,;})\]]|$)"""
)
_NAME_HINT = re.compile(r"(?i)secret|token|key|passw|pwd|pass\b|credential|auth")
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")

_PLACEHOLDER = re.compile(
    r"""(?ix)
    ^\$ | \$\{ | \{\{ | ^< | >$ | ^%\w+%$ | \.\.\. | …
    | x{4,} | \*{3,} | \#{4,} | 0{8,}
    | changeme | change_me | example | sample | dummy | placeholder | replace | your[_-]
    | fake | redacted | insert | ^test | mock | todo | secret_here | _here$
    | process\.env | os\.environ | getenv | env\.
    """
)
_HASH = re.compile(r"(?i)^(?:sha\d{1,3}|md5|blake2\w?|sha)[:=-]")
_UUID = re.compile(r"(?i)^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+){1,3}(?:[-+][\w.]+)?$")
_IDENTIFIER = re.compile(r"^[a-z]+(?:[_.-][a-z]+)+[0-9]*$|^[A-Z]+(?:_[A-Z]+)+[0-9]*$")
_ADDRESS = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|[/~.]|[A-Za-z]:\\)")


def _words(name: str) -> list[str]:
    words: list[str] = []
    for part in re.split(r"[_.\-]+", name):
        words.extend(word.lower() for word in _CAMEL.findall(part))
    return words


def secret_name(name: str) -> bool:
    """Whether `name` (a variable, a config key, a JSON key) says its value is a secret."""
    words = _words(name)
    if not words or words[-1] not in _LAST_WORDS:
        return False
    if len(words) == 1 and words[0] in ("key", "auth", "pass"):
        return False  # `key: …` alone names a map key, a shortcut, a column as often
    return not any(word in _NOT_SECRET_WORDS for word in words[:-1])


def _entropy(value: str) -> float:
    counts = Counter(value)
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in counts.values())


def secret_value(value: str) -> bool:
    """Whether `value` looks like a secret rather than a placeholder, reference, hash, id,
    version or word of code."""
    if not SHORTEST <= len(value) <= LONGEST:
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    if (
        _PLACEHOLDER.search(value)
        or _HASH.match(value)
        or _UUID.match(value)
        or _VERSION.match(value)
        or _IDENTIFIER.match(value)
        or _ADDRESS.match(value)
    ):
        return False
    return _entropy(value) >= ENTROPY_FLOOR


def in_text(text: str) -> Iterator[str]:
    """The secrets assigned in free text (a `.env` file, a shell line, YAML, JSON text)."""
    if not _NAME_HINT.search(text):
        return
    for match in _ASSIGNMENT.finditer(text):
        name, value = match.group(1), match.group(2)
        if secret_name(name) and secret_value(value):
            yield value


def confirmed(rule_id: str, before: str, secret: str) -> bool:
    """Whether the engine's candidate `secret` for one of our rules, preceded by `before` in
    its value, is one this module reports (the engine's patterns find candidates fast; this
    decides)."""
    if rule_id == AWS_KEY_ID_RULE:
        return not _PLACEHOLDER.search(secret)
    return secret in in_text(before[-CONTEXT:] + secret + " ")


def as_member(key: str, value: str) -> str | None:
    """The value of a JSON member whose key names a secret, when it looks like one."""
    if not cached_secret_name(key):
        return None
    value = value.strip()
    return value if secret_value(value) else None


cached_secret_name = lru_cache(maxsize=4096)(secret_name)  # a few names, asked per value

CONTEXT = 120  # characters before a candidate that hold its name
# The candidate pattern the engine runs (Vectorscan, so it costs about nothing beside the
# provider rules): a name ending in one of the words, `=` or `:`, one long word. `confirmed`
# then applies the rules above. Group 1 is what the engine reports as the secret.
RULES_YAML = """\
rules:
  - name: A secret-looking value assigned to a name that says secret, token, key or password
    id: custom.secret-assignment
    pattern: |
      (?xi)
      (?:secret|token|key|passw(?:or)?d|pwd|pass|passphrase|credentials?|auth)
      ["']?[\\x20\\t]{0,4}(?::=|[:=])[\\x20\\t]{0,4}["'`]?
      ([^\\s"'`,;<>(){}\\[\\]]{16,512})
    min_entropy: 3.0
    confidence: medium
    examples:
      - 'API_SECRET=1234567890abcdefABCDEF'
  # An AWS access key id alone (the engine's own rule reports one only beside its secret
  # key): a user or a tool that prints one has printed half a credential, and the id names
  # the account. The documentation's ids end in EXAMPLE and are ruled out by `confirmed`.
  - name: An AWS access key id
    id: custom.aws-access-key-id
    pattern: '\\b((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})\\b'
    min_entropy: 3.0
    confidence: medium
    examples:
      - 'aws_access_key_id = {example_key_id}'
""".replace("{example_key_id}", "AKIA" + "ABCDEFGHIJKLMNOP")  # built: no literal key id
