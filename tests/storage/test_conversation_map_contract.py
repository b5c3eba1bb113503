"""The ConversationMap contract, run against every implementation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.storage.conversations import Binding, ConversationMap
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_conversations import MemoryConversationMap
from thalos_bot.storage.pg.conversations import PgConversationMap
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import SessionRecord, SessionStore
from thalos_bot.storage.sqlite_conversations import SqliteConversationMap
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 6, 1, 12, 0, 0, 500_001, tzinfo=UTC)
TELEGRAM = ChannelId("telegram")
CONSOLE = ChannelId("console")
CHAT = ConversationId("123456789")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def conversations(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[ConversationMap]:
    if request.param == "memory":
        yield MemoryConversationMap()
        return
    if request.param == "postgres":
        async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:
            yield PgConversationMap(pg)
        return
    async with await Database.open(tmp_path / "bot.db") as db:
        yield SqliteConversationMap(db)


def _binding(
    session: str = "s_one",
    channel: ChannelId = TELEGRAM,
    conversation: ConversationId = CHAT,
    at: datetime = T0,
) -> Binding:
    return Binding(
        channel_id=channel,
        conversation_id=conversation,
        session_id=SessionId(session),
        agent_id=AgentId("helper"),
        last_activity=at,
    )


async def test_an_unbound_conversation_has_no_binding(conversations: ConversationMap) -> None:
    assert await conversations.get(TELEGRAM, CHAT) is None


async def test_bind_and_get_round_trip(conversations: ConversationMap) -> None:
    local = datetime(2025, 6, 1, 9, 30, 0, 999_999, tzinfo=timezone(timedelta(hours=-4)))
    await conversations.bind(_binding(at=local))
    got = await conversations.get(TELEGRAM, CHAT)
    assert got == _binding(at=local)
    assert got is not None
    assert got.last_activity.utcoffset() == timedelta(0)


async def test_touch_records_activity(conversations: ConversationMap) -> None:
    await conversations.bind(_binding())
    later = T0 + timedelta(minutes=3, microseconds=3)
    await conversations.touch(TELEGRAM, CHAT, later)
    assert await conversations.get(TELEGRAM, CHAT) == _binding(at=later)


async def test_touch_and_unbind_of_an_unbound_conversation_do_nothing(
    conversations: ConversationMap,
) -> None:
    await conversations.touch(TELEGRAM, CHAT, T0)
    await conversations.unbind(TELEGRAM, CHAT)
    assert await conversations.get(TELEGRAM, CHAT) is None


async def test_unbind_removes_the_binding(conversations: ConversationMap) -> None:
    await conversations.bind(_binding())
    await conversations.unbind(TELEGRAM, CHAT)
    assert await conversations.get(TELEGRAM, CHAT) is None


async def test_rebinding_replaces_the_binding(conversations: ConversationMap) -> None:
    await conversations.bind(_binding("s_one"))
    replacement = Binding(
        channel_id=TELEGRAM,
        conversation_id=CHAT,
        session_id=SessionId("s_two"),
        agent_id=AgentId("coder"),
        last_activity=T0 + timedelta(seconds=1),
    )
    await conversations.bind(replacement)
    assert await conversations.get(TELEGRAM, CHAT) == replacement


async def test_conversations_are_keyed_by_channel_and_conversation(
    conversations: ConversationMap,
) -> None:
    other_chat = ConversationId("987")
    await conversations.bind(_binding("s_tg"))
    await conversations.bind(_binding("s_console", channel=CONSOLE))
    await conversations.bind(_binding("s_other", conversation=other_chat))
    await conversations.unbind(CONSOLE, CHAT)
    tg = await conversations.get(TELEGRAM, CHAT)
    other = await conversations.get(TELEGRAM, other_chat)
    assert tg is not None
    assert other is not None
    assert (tg.session_id, other.session_id) == ("s_tg", "s_other")
    assert await conversations.get(CONSOLE, CHAT) is None


async def test_sqlite_bindings_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    touched = T0 + timedelta(hours=1, microseconds=42)
    async with await Database.open(path) as db:
        conversations = SqliteConversationMap(db)
        await conversations.bind(_binding("s_kept"))
        await conversations.bind(_binding("s_gone", channel=CONSOLE))
        await conversations.touch(TELEGRAM, CHAT, touched)
        await conversations.unbind(CONSOLE, CHAT)
    async with await Database.open(path) as reopened:
        conversations = SqliteConversationMap(reopened)
        assert await conversations.get(TELEGRAM, CHAT) == _binding("s_kept", at=touched)
        assert await conversations.get(CONSOLE, CHAT) is None


@pytest.fixture(params=["sqlite", "postgres"])
async def reaching(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SessionStore, SqliteConversationMap | PgConversationMap]]:
    if request.param == "postgres":
        async with await PgDatabase.open(request.getfixturevalue("migrated_url")) as pg:
            yield PgSessionStore(pg), PgConversationMap(pg)
        return
    async with await Database.open(tmp_path / "bot.db") as db:
        yield SqliteSessionStore(db), SqliteConversationMap(db)


async def test_where_someone_last_talked_is_their_latest_binding(
    reaching: tuple[SessionStore, SqliteConversationMap | PgConversationMap],
) -> None:
    sessions, conversations = reaching
    for session, owner in (("s_a1", "ana"), ("s_a2", "ana"), ("s_b1", "ben")):
        await sessions.create(
            SessionRecord(SessionId(session), AgentId("helper"), owner, "open", T0, T0)
        )
    assert await conversations.latest_of("ana") is None  # no conversation bound yet
    await conversations.bind(_binding("s_a1", conversation=CHAT, at=T0))
    await conversations.bind(_binding("s_b1", conversation=ConversationId("777"), at=T0))
    assert await conversations.latest_of("ana") == (TELEGRAM, CHAT)
    group = ConversationId("-100200~ana")  # her own session in a group someone else began
    await conversations.bind(_binding("s_a2", conversation=group, at=T0 + timedelta(hours=1)))
    assert await conversations.latest_of("ana") == (TELEGRAM, ConversationId("-100200"))
    assert await conversations.latest_of("ben") == (TELEGRAM, ConversationId("777"))
    assert await conversations.latest_of("cy") is None
