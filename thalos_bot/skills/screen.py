"""Screening a skill's text for what a planted skill hides: findings a review shows.

A skill is text the model follows, so a malicious one needs no code: it hides an
instruction where the operator reading it will not see it, or it asks for secrets.
Each text file of the skill is screened for

- **hidden characters**: zero-width characters, bidirectional controls and other
  invisible format characters (category ``Cf``), which hide or reorder text on screen;
- **hidden comments**: an HTML comment (``<!-- … -->``) with words in it, which a
  Markdown view does not show but the model reads;
- **secret requests**: a line that asks to send, show or read a secret (an API key, a
  token, a password, a private key), that reads a variable of the environment whose
  name says it holds one, or that reads a file where secrets are kept.

A finding never loads or refuses a skill by itself: a skill with findings is held until
the operator has reviewed it (``thalos-bot skills review``), even on a first sync.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from thalos_bot.skills.manifest import Manifest

MAX_FINDINGS = 20
"""The most findings kept for one skill; more are counted in the last one."""

_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")
_ALLOWED_FORMAT = frozenset("\ufeff")  # a byte-order mark at the start is harmless

_VALUABLE = (  # a pattern of words, not a password
    r"(?:api[\s_-]?keys?|access[\s_-]?keys?|secret[\s_-]?keys?|private[\s_-]?keys?|tokens?"
    r"|passwords?|passphrases?|credentials?|secrets?|session[\s_-]?cookies?|bearer)"
)
_ASKING_VERB = (
    r"(?:send|paste|share|give|provide|print|echo|show|reveal|post|upload|include|copy"
    r"|forward|email|append|attach|tell|output|dump|exfiltrate|collect|read)"
)
_ASKING = re.compile(
    rf"\b{_ASKING_VERB}\b[^.\n]{{0,60}}\b{_VALUABLE}\b"
    rf"|\b{_VALUABLE}\b[^.\n]{{0,40}}\b(?:to|into)\s+(?:https?://|the\s+url|this\s+url|me)\b",
    re.IGNORECASE,
)
_ENV_SECRET = re.compile(
    r"(?:\$\{?|%|os\.environ\S*|getenv\(\s*['\"]?|process\.env\.)"
    r"[A-Za-z_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Za-z0-9_]*",
    re.IGNORECASE,
)
_ENV_DUMP = re.compile(r"\b(?:printenv|env\s*\||set\s*\||/proc/self/environ)", re.IGNORECASE)
_SECRET_FILE = re.compile(
    r"(?:~|\$HOME)/\.(?:ssh|aws|gnupg|netrc|docker/config)|\bid_(?:rsa|ed25519|ecdsa)\b"
    r"|/etc/thalos-bot|\bsecrets?\.env\b|(?:^|[\s/'\"])\.env\b",
    re.IGNORECASE,
)
_COMMENT = re.compile(r"<!--(.*?)(?:-->|\Z)", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing a review must show: ``kind`` is ``hidden-character``,
    ``hidden-comment`` or ``secret-request``."""

    kind: str
    path: str
    line: int
    detail: str

    def describe(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.detail}"


def _char_name(char: str) -> str:
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed')}"


def _hidden_characters(path: str, text: str) -> Iterable[Finding]:
    for number, line in enumerate(text.split("\n"), start=1):
        hidden = sorted(
            {
                c
                for c in line
                if c in _BIDI or (unicodedata.category(c) == "Cf" and c not in _ALLOWED_FORMAT)
            }
        )
        if hidden:
            names = ", ".join(_char_name(c) for c in hidden)
            yield Finding("hidden-character", path, number, f"invisible characters ({names})")


def _hidden_comments(path: str, text: str) -> Iterable[Finding]:
    for match in _COMMENT.finditer(text):
        words = " ".join(match.group(1).split())
        if any(c.isalnum() for c in words):
            line = text.count("\n", 0, match.start()) + 1
            shown = words if len(words) <= 80 else words[:79] + "…"
            yield Finding("hidden-comment", path, line, f"an HTML comment says {shown!r}")


def _secret_requests(path: str, text: str) -> Iterable[Finding]:
    for number, line in enumerate(text.split("\n"), start=1):
        for pattern, what in (
            (_ASKING, "asks for a secret"),
            (_ENV_SECRET, "reads a secret from the environment"),
            (_ENV_DUMP, "dumps the environment"),
            (_SECRET_FILE, "reads a file where secrets are kept"),
        ):
            match = pattern.search(line)
            if match is not None:
                yield Finding("secret-request", path, number, f"{what}: {match.group(0)!r}")
                break


def screen_text(path: str, text: str) -> list[Finding]:
    """The findings of one file's text."""
    return [
        *_hidden_characters(path, text),
        *_hidden_comments(path, text),
        *_secret_requests(path, text),
    ]


def screen(manifest: Manifest) -> tuple[Finding, ...]:
    """The findings of every text file of a skill, at most :data:`MAX_FINDINGS`."""
    found: list[Finding] = []
    for item in manifest.files:
        if item.text is not None:
            found.extend(screen_text(item.path, item.text))
    if len(found) > MAX_FINDINGS:
        more = len(found) - MAX_FINDINGS + 1
        found = [*found[: MAX_FINDINGS - 1], Finding("more", "…", 0, f"{more} more findings")]
    return tuple(found)
