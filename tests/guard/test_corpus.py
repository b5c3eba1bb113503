"""The default rules against the corpus: every known injection and every fake secret
trips; no ordinary result (code, logs, web pages, mail, data) does."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.guard.corpus import fake_secrets, injections, ordinary
from thalos_bot.guard.guard import ResultGuard
from thalos_bot.guard.rules import DEFAULT_RULES, scan


@pytest.mark.parametrize("text", injections())
def test_every_known_injection_trips(text: str) -> None:
    hits = scan(text, DEFAULT_RULES)
    assert hits, f"not caught: {text!r}"
    assert all(h.rule.kind == "injection" for h in hits)


@pytest.mark.parametrize("rule", sorted(fake_secrets()))
def test_every_kind_of_secret_trips_and_is_never_quoted(rule: str) -> None:
    text, secret = fake_secrets()[rule]
    assert rule in {h.rule.name for h in scan(text, DEFAULT_RULES)}
    screened = ResultGuard("annotate").screen(text, source="the tool t")
    assert screened.verdict == "annotate"
    assert secret not in screened.text
    assert "removed by guard" in screened.text
    withheld = ResultGuard("withhold").screen(text, source="the tool t")
    assert secret not in withheld.text


@pytest.mark.parametrize("path", ordinary(), ids=lambda p: p.name)
def test_no_ordinary_result_trips(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    hits = scan(text, DEFAULT_RULES)
    assert not hits, [(h.rule.name, h.quote(text)) for h in hits]
    assert ResultGuard().screen(text, source="the tool t").text == text


def test_the_corpus_is_big_enough_to_mean_something() -> None:
    assert len(injections()) >= 30
    assert len(ordinary()) >= 20
