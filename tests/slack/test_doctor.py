"""``thalos-bot doctor`` for Slack: both tokens tried against the fake."""

from __future__ import annotations

import pytest

from tests.fakes.slack_api import SlackFake
from tests.slack.harness import make_config
from thalos_bot_slack import APP_TOKEN_ENV, BOT_TOKEN_ENV
from thalos_bot_slack.doctor import slack_checks

pytestmark = pytest.mark.anyio


async def test_both_tokens_work(fake: SlackFake) -> None:
    checks = await slack_checks(make_config(fake), offline=False)
    assert [c.outcome for c in checks] == ["ok", "ok"]
    assert fake.workspace.bot_user in checks[0].detail


async def test_a_wrong_and_a_swapped_token_are_named(
    fake: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BOT_TOKEN_ENV, "xoxb-not-the-one")
    monkeypatch.setenv(APP_TOKEN_ENV, fake.bot_token)
    bot, app = await slack_checks(make_config(fake), offline=False)
    assert bot.outcome == "fail"
    assert "invalid_auth" in bot.detail
    assert app.outcome == "fail"
    assert "not_allowed_token_type" in app.detail
    assert fake.bot_token not in app.detail, "never a token in the report"


async def test_offline_and_unset_tokens_skip(
    fake: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    (offline,) = await slack_checks(make_config(fake), offline=True)
    assert offline.outcome == "skip"
    monkeypatch.delenv(APP_TOKEN_ENV)
    (unset,) = await slack_checks(make_config(fake), offline=False)
    assert unset.outcome == "skip"
    assert APP_TOKEN_ENV in unset.detail
