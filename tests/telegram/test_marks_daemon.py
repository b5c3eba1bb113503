"""The real ``thalos-bot run``, restarted: a scheduled result is the first thing the new
process sends to a chat, Telegram posts it but drops the connection, and the user still
sees it exactly once, because the chat's highest message id was kept in ``thalos.db``
and the send is checked from there instead of made again blindly."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from tests.fakes.telegram_api import TelegramFake
from tests.telegram.harness import USER
from tests.telegram.test_outbox_restart import ANSWER, QUESTION, _start, _stop, _write_config
from thalos_bot.domain.address import Address
from thalos_bot.domain.security import SecurityContext
from thalos_bot.schedules.store import NewSchedule, ScheduleStore
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database

pytestmark = pytest.mark.slow

TASK = "Summarise my week."


async def _schedule_now(path: Path) -> None:
    """A one-shot run due as the daemon starts (made a minute ago, for now)."""
    async with await Database.open(path, migrations=ALL_MIGRATIONS) as db:
        now = datetime.now(UTC)
        await ScheduleStore(db).create(
            NewSchedule(
                SecurityContext.of("owner"),
                "assistant",
                TASK,
                Address.parse(f"telegram:{USER}"),
                at=now,
            ),
            now - timedelta(minutes=1),
        )


def _states(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        return [state for (state,) in db.execute("SELECT state FROM outbox")]


def test_a_scheduled_result_sent_first_after_a_restart_shows_once(
    tmp_path: Path, fake: TelegramFake
) -> None:
    _write_config(tmp_path, fake)
    database = tmp_path / "state" / "thalos.db"
    process = _start(tmp_path, fake)
    try:
        fake.push_text(USER, USER, QUESTION)
        fake.wait_for_blocking(lambda: fake.texts(USER) == [ANSWER], timeout=30)
    finally:
        _stop(process)
    known = [m.message_id for m in fake.messages(USER, include_incoming=True)]

    anyio.run(_schedule_now, database)
    fake.timeout_next("sendMessage", close=True)  # posted, then the connection drops
    process = _start(tmp_path, fake)
    try:
        fake.wait_for_blocking(lambda: _states(database) == ["delivered", "delivered"], 30)
    finally:
        log = _stop(process)

    texts = fake.texts(USER)
    assert len(texts) == 2, texts
    assert texts[0] == ANSWER
    result = texts[1]
    assert [c.params["text"] for c in fake.calls("sendMessage")].count(result) == 1
    (probe,) = fake.calls("editMessageText")
    shown = fake.messages(USER)[-1].message_id
    assert probe.params["message_id"] == shown, "found where it arrived: no other probe"
    assert shown > max(known), "checked above what the first run knew"
    assert probe.status == 400  # "message is not modified": it is there
    assert "telegram_send_unverifiable" not in log
