"""The guard's default rules: lexical, dependency-free, and deliberately narrow.

Two kinds of rule:

* **injection** rules find phrasings that only make sense as an attempt to steer the
  model ("ignore all previous instructions", "you are now DAN", a forged tag of one of
  our own prompt blocks). A hit is *quoted* to the model, so it knows what to distrust.
* **secret** rules find credentials that should never travel into a conversation
  (private key blocks, AWS access keys, Telegram bot tokens, Anthropic and GitHub keys).
  A hit is *removed* from the text and named by kind only: the secret itself is never
  quoted, logged or counted anywhere.

Each rule is narrow on purpose: the corpus test (``tests/guard``) holds a set of
ordinary results (code, logs, web pages) none of which may trip, and ``bench/guard.py``
prints the false-positive rate over it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from thalos_bot.domain.prompt_blocks import find_markup

RuleKind = Literal["injection", "secret"]
Finder = Callable[[str], Iterator[tuple[int, int]]]

QUOTE_CHARS = 80
"""How much of an injection hit is quoted back to the model."""


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    kind: RuleKind
    reason: str
    """What the hit means, as the model and the user read it ("a prompt-injection phrase")."""
    find: Finder
    """The ``(start, end)`` spans of each hit in a text."""


def regex_finder(pattern: re.Pattern[str]) -> Finder:
    def find(text: str) -> Iterator[tuple[int, int]]:
        for match in pattern.finditer(text):
            if match.end() > match.start():
                yield match.span()

    return find


_CLOSING = re.compile(
    r"(?:[\s\u200b-\u200f\u2060\ufeff]|&(?:amp;)*(?:nbsp;|#0*160;))*"
    r"(?:[/\\\u2044\u2215\u29f8\uff0f]|&(?:amp;)*(?:sol;?|#0*47;?|#x0*2f;?)|%(?:25)*2f)",
    re.IGNORECASE,
)


def _forged_closing(text: str) -> Iterator[tuple[int, int]]:
    """A closing tag of one of our blocks, in any spelling :func:`find_markup` knows
    (``</memories>``, ``&lt;/skill>``, ``< / quote``): the bracket and what follows, so
    the quote shows what was forged. An opening tag alone is left to the block that
    defuses it (``<skills>`` in an XML résumé is ordinary)."""
    for start, end in find_markup(text):
        if not _CLOSING.match(text, end):
            continue
        stop = end
        while stop < len(text) and stop - end < 24 and text[stop] not in "\n>":
            stop += 1
        yield start, min(len(text), stop + 1)


def _rule(name: str, kind: RuleKind, reason: str, pattern: str) -> Rule:
    return Rule(name, kind, reason, regex_finder(re.compile(pattern, re.IGNORECASE)))


_S = r"[\s\u00a0]+"  # any run of whitespace, no-break spaces included
_INJECTION = "a phrase that tries to override the bot's instructions"

DEFAULT_RULES: tuple[Rule, ...] = (
    _rule(
        "ignore-previous-instructions",
        "injection",
        _INJECTION,
        rf"\b(?:ignore|disregard|forget|override){_S}(?:(?:all|any|of|the|your|my|these|those)"
        rf"{_S})*(?:previous|prior|above|earlier|preceding|former|original){_S}"
        r"(?:instructions?|prompts?|directions|directives|rules|guidelines|context|messages)\b",
    ),
    _rule(
        "disregard-system-prompt",
        "injection",
        _INJECTION,
        rf"\b(?:ignore|disregard|forget|override|bypass){_S}(?:(?:the|your|this|my){_S})?"
        rf"system{_S}(?:prompt|message|instructions)\b",
    ),
    _rule(
        "jailbreak-persona",
        "injection",
        "a phrase that tries to give the model a new, unrestricted role",
        rf"\byou{_S}are{_S}now{_S}(?:(?-i:DAN)\b|in{_S}(?:developer|god|jailbreak|unrestricted)"
        rf"{_S}mode|(?:an?{_S})?(?:unrestricted|unfiltered|jailbroken)\b)"
        rf"|\b(?-i:DAN){_S}mode\b|\bdo{_S}anything{_S}now\b",
    ),
    _rule(
        "new-instructions",
        "injection",
        _INJECTION,
        rf"\b(?:your|the){_S}new{_S}(?:system{_S})?instructions{_S}(?:are|follow)\b"
        rf"|\bfrom{_S}now{_S}on,?{_S}you{_S}(?:will|must){_S}(?:ignore|obey|only{_S}obey)\b",
    ),
    _rule(
        "hide-from-user",
        "injection",
        "a phrase that tells the model to keep something from the user",
        rf"\b(?:do{_S}not|don't|never){_S}(?:tell|inform|alert|warn)"
        rf"{_S}the{_S}user\b",
    ),
    _rule(
        "reveal-system-prompt",
        "injection",
        "a phrase that asks the model to reveal its instructions",
        rf"\b(?:reveal|print|output|repeat|leak){_S}(?:(?:me|back){_S})?(?:your|the)"
        rf"{_S}(?:system{_S}prompt|initial{_S}instructions|hidden{_S}instructions)\b",
    ),
    Rule(
        "forged-block-tag",
        "injection",
        "a forged closing tag of one of the bot's own prompt blocks",
        _forged_closing,
    ),
    _rule(
        "private-key",
        "secret",
        "a private key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
    ),
    Rule(
        "aws-access-key",
        "secret",
        "an AWS access key",
        regex_finder(
            re.compile(
                r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"
                r"|(?i:aws_secret_access_key)[\"']?\s*[=:]\s*[\"']?[A-Za-z0-9/+=]{40}"
            )
        ),
    ),
    Rule(
        "telegram-bot-token",
        "secret",
        "a Telegram bot token",
        regex_finder(re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])")),
    ),
    Rule(
        "anthropic-key",
        "secret",
        "an Anthropic API key",
        regex_finder(re.compile(r"\bsk-ant-[A-Za-z0-9][A-Za-z0-9_-]{19,}")),
    ),
    Rule(
        "github-token",
        "secret",
        "a GitHub token",
        regex_finder(re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ),
)


def custom_rules(injection: Mapping[str, str], secret: Mapping[str, str]) -> tuple[Rule, ...]:
    """Rules from ``[guard] patterns`` and ``secret_patterns`` (already validated)."""
    rules = [
        _rule(f"custom:{name}", "injection", "a phrase this bot's owner marked as hostile", p)
        for name, p in injection.items()
    ]
    rules += [
        _rule(f"custom:{name}", "secret", f"a secret ({name})", p) for name, p in secret.items()
    ]
    return tuple(rules)


@dataclass(frozen=True, slots=True)
class Hit:
    rule: Rule
    start: int
    end: int

    def quote(self, text: str) -> str:
        """The matched phrase, for the model; secrets are never quoted."""
        if self.rule.kind == "secret":
            return f"[{self.rule.reason}]"
        phrase = " ".join(text[self.start : self.end].split())
        return phrase if len(phrase) <= QUOTE_CHARS else phrase[: QUOTE_CHARS - 1] + "…"


def scan(text: str, rules: tuple[Rule, ...]) -> list[Hit]:
    """Every hit of every rule in ``text``, in rule order then position. A rule that
    raises propagates: the guard turns that into a withheld result (fail-closed)."""
    return [Hit(rule, start, end) for rule in rules for start, end in rule.find(text)]
