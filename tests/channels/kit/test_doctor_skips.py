"""A plug-in's doctor check that cannot run says why: ``--offline``, or which of its
secrets' variables is unset (blank counts as unset); one whose server did not answer
says where and why."""

from __future__ import annotations

import pytest

from thalos_bot.channels.checks import NETWORK_FIX, Check, skipped, unreachable


def test_offline_and_each_unset_variable_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIT_ONE", "x")
    monkeypatch.setenv("KIT_TWO", "  ")
    monkeypatch.delenv("KIT_THREE", raising=False)
    assert skipped("API", "KIT_ONE", offline=True) == Check("API", "skip", "--offline")
    assert skipped("API", "KIT_ONE", offline=False) is None
    unset = skipped("API", "KIT_ONE", "KIT_TWO", "KIT_THREE", offline=False)
    assert unset == Check("API", "skip", "KIT_TWO, KIT_THREE are not set")


def test_a_server_that_did_not_answer_is_said_with_where_and_why() -> None:
    refused = ConnectionRefusedError(111, "Connection refused")
    assert unreachable("API", "http://127.0.0.1:9", refused) == Check(
        "API",
        "fail",
        "cannot reach http://127.0.0.1:9: the connection was refused (nothing listens there)",
        NETWORK_FIX,
    )
    said = unreachable("API", "https://hs.example", "HTTP 502", "check homeserver")
    assert said.detail == "cannot reach https://hs.example: HTTP 502", "a reason is said as given"
    assert said.fix == "check homeserver"
