"""A plug-in's doctor check that cannot run says why: ``--offline``, or which of its
secrets' variables is unset (blank counts as unset)."""

from __future__ import annotations

import pytest

from thalos_bot.channels.checks import Check, skipped


def test_offline_and_each_unset_variable_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIT_ONE", "x")
    monkeypatch.setenv("KIT_TWO", "  ")
    monkeypatch.delenv("KIT_THREE", raising=False)
    assert skipped("API", "KIT_ONE", offline=True) == Check("API", "skip", "--offline")
    assert skipped("API", "KIT_ONE", offline=False) is None
    unset = skipped("API", "KIT_ONE", "KIT_TWO", "KIT_THREE", offline=False)
    assert unset == Check("API", "skip", "KIT_TWO, KIT_THREE are not set")
