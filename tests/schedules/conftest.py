"""A schedule store over a database file, a manual clock, and a recording delivery."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest

from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.schedules.delivery import DeliveryKind
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database


class ManualClock:
    def __init__(self, now: datetime | None = None) -> None:
        self.now = now or datetime(2026, 6, 1, 8, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> None:
        self.now += timedelta(**kwargs)


@dataclass
class Delivered:
    channel_id: ChannelId
    conversation_id: ConversationId
    text: str
    kind: DeliveryKind


@dataclass
class RecordingDelivery:
    sent: list[Delivered] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    async def deliver(
        self,
        channel_id: ChannelId,
        conversation_id: ConversationId,
        text: str,
        *,
        kind: DeliveryKind,
    ) -> None:
        self.sent.append(Delivered(channel_id, conversation_id, text, kind))
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, count: int, timeout: float = 10.0) -> None:
        with anyio.fail_after(timeout):
            while len(self.sent) < count:
                await self._changed.wait()


async def open_db(path: Path) -> Database:
    return await Database.open(path, migrations=ALL_MIGRATIONS)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await open_db(tmp_path / "thalos.db")
    try:
        yield database
    finally:
        await database.aclose()
