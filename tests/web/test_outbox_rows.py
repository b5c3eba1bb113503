"""The page's outbox rows through the daemon's outbox: an answer kept as a row is a
final bubble (markdown), a notice kept as a row (a detached failure) a warning notice in
plain text, as it was before finals went through the delivery engine."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.web.test_engine_finals import CHAT, daemon
from thalos_bot.domain.ids import ChannelId
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox

pytestmark = pytest.mark.anyio
WEB = ChannelId("web")


async def test_a_notice_row_is_a_warning_notice_and_an_answer_row_a_final(
    tmp_path: Path,
) -> None:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as db:
        with anyio.fail_after(10):
            async with daemon(tmp_path / "web") as page:
                outbox = Outbox(SqliteOutbox(db), {WEB: page}, keep=86400)
                async with outbox.running() as running:
                    await running.deliver(WEB, CHAT, "Your **reminder**.", kind="answer")
                    await running.deliver(WEB, CHAT, "The *9:00* job failed.", kind="notice")
                    while len(page.timeline(CHAT).events()) < 2:
                        await anyio.sleep(0.01)
                events = page.timeline(CHAT).events()
        async with db.read() as conn:
            cursor = await conn.execute("SELECT state FROM outbox")
            states = [row[0] for row in await cursor.fetchall()]
    assert [(e.kind, e.data["html"]) for e in events] == [
        ("final", "<p>Your <strong>reminder</strong>.</p>\n"),
        ("notice", "The *9:00* job failed."),
    ]
    assert events[1].data["tone"] == "warning"
    assert states == ["delivered", "delivered"]
