"""The SessionStore contract, run against every implementation."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, SessionId
from thalos_bot.domain.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    message_to_json,
)
from thalos_bot.storage.database import Database
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.pg.database import PgDatabase
from thalos_bot.storage.pg.sessions import PgSessionStore
from thalos_bot.storage.protocol import ContextState, SessionRecord, SessionStore
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore

pytestmark = pytest.mark.anyio

T0 = datetime(2025, 6, 1, 12, 0, 0, 123_456, tzinfo=UTC)
SID = SessionId("s_contract")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SessionStore]:
    if request.param == "memory":
        memory: SessionStore = MemorySessionStore()
        yield memory
        await memory.aclose()
        return
    if request.param == "postgres":
        url = request.getfixturevalue("migrated_url")
        async with await PgDatabase.open(url) as pg:
            postgres: SessionStore = PgSessionStore(pg)
            yield postgres
            await postgres.aclose()
            assert not pg.closed  # the store does not own the database
        return
    async with await Database.open(tmp_path / "bot.db") as db:
        sqlite: SessionStore = SqliteSessionStore(db)
        yield sqlite
        await sqlite.aclose()


def _record(session_id: SessionId = SID, at: datetime = T0) -> SessionRecord:
    return SessionRecord(
        id=session_id,
        agent_id=AgentId("helper"),
        owner="alice",
        status="open",
        created_at=at,
        updated_at=at,
    )


def _rich_turn() -> list[Message]:
    return [
        Message.user("What's the weather in Zürich? ☀️"),
        Message(
            "assistant",
            (
                TextBlock("Let me look."),
                ToolUseBlock(
                    "toolu_1",
                    "weather__forecast",
                    {
                        "city": "Zürich",
                        "days": 3,
                        "options": {"units": "°C", "flags": [True, None, 1.5]},
                        "note": "日本語 and emoji 🌧",
                    },
                ),
            ),
        ),
        Message(
            "user",
            (
                ToolResultBlock("toolu_1", "rain, 14 °C", is_error=False),
                ToolResultBlock("toolu_2", "quota exceeded", is_error=True),
            ),
        ),
        Message("assistant", (TextBlock("Rain, 14 °C."),)),
    ]


async def test_create_and_get_round_trip(store: SessionStore) -> None:
    local = datetime(2025, 6, 1, 14, 0, 0, 654_321, tzinfo=timezone(timedelta(hours=2)))
    record = SessionRecord(
        id=SID,
        agent_id=AgentId("helper"),
        owner="alice",
        status="open",
        created_at=local,
        updated_at=local + timedelta(microseconds=1),
        turns=2,
        usage=TokenUsage(1, 2, 3, 4),
    )
    await store.create(record)
    got = await store.get(SID)
    assert got == record
    assert got is not None
    assert got.created_at.utcoffset() == timedelta(0)
    assert got.updated_at - got.created_at == timedelta(microseconds=1)
    assert await store.get(SessionId("s_unknown")) is None


async def test_a_new_session_has_an_empty_history(store: SessionStore) -> None:
    await store.create(_record())
    assert await store.history(SID) == []


async def test_history_round_trips_every_block_kind(store: SessionStore) -> None:
    await store.create(_record())
    turn = _rich_turn()
    await store.commit_turn(SID, turn, TokenUsage(), T0)
    history = await store.history(SID)
    assert history == turn
    result = history[2].content[1]
    assert isinstance(result, ToolResultBlock)
    assert result.is_error


async def test_the_first_message_of_a_turn_merges_into_a_same_role_last_message(
    store: SessionStore,
) -> None:
    await store.create(_record())
    # A cancelled turn ends on the user's tool results ...
    await store.commit_turn(
        SID,
        [
            Message.user("list files"),
            Message("assistant", (ToolUseBlock("t1", "fs__ls", {"path": "/"}),)),
            Message("user", (ToolResultBlock("t1", "cancelled", is_error=True),)),
        ],
        TokenUsage(),
        T0,
    )
    # ... and the next turn starts with the user's words.
    await store.commit_turn(
        SID,
        [
            Message.user("never mind"),
            Message("assistant", (TextBlock("OK."),)),
            Message("assistant", (TextBlock(" Anything else?"),)),
        ],
        TokenUsage(),
        T0,
    )
    history = await store.history(SID)
    assert [m.role for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2] == Message(
        "user",
        (ToolResultBlock("t1", "cancelled", is_error=True), TextBlock("never mind")),
    )
    assert history[3].text == "OK. Anything else?"


async def test_usage_accumulates_and_turns_are_counted(store: SessionStore) -> None:
    await store.create(_record())
    later = T0 + timedelta(minutes=5, microseconds=7)
    await store.commit_turn(SID, [Message.user("one")], TokenUsage(10, 20, 30, 40), T0)
    await store.commit_turn(SID, [], TokenUsage(1, 2, 3, 4), later)
    got = await store.get(SID)
    assert got is not None
    assert got.turns == 2
    assert got.usage == TokenUsage(11, 22, 33, 44)
    assert got.created_at == T0
    assert got.updated_at == later
    assert await store.history(SID) == [Message.user("one")]


async def test_a_failed_commit_changes_nothing(store: SessionStore) -> None:
    await store.create(_record())
    await store.commit_turn(SID, [Message.user("hi")], TokenUsage(1, 1), T0)
    unserialisable = Message("assistant", (ToolUseBlock("t1", "x__y", {"bad": object()}),))
    with pytest.raises(TypeError):
        await store.commit_turn(
            SID,
            [Message.user("again"), unserialisable],
            TokenUsage(5, 5),
            T0 + timedelta(seconds=1),
        )
    got = await store.get(SID)
    assert got is not None
    assert (got.turns, got.usage, got.updated_at) == (1, TokenUsage(1, 1), T0)
    assert await store.history(SID) == [Message.user("hi")]


async def test_close_is_terminal(store: SessionStore) -> None:
    await store.create(_record())
    closed_at = T0 + timedelta(hours=1)
    await store.close(SID, closed_at)
    got = await store.get(SID)
    assert got is not None
    assert got.status == "closed"
    assert got.updated_at == closed_at
    await store.close(SID, closed_at + timedelta(hours=1))
    again = await store.get(SID)
    assert again == got
    with pytest.raises(AgentError) as caught:
        await store.commit_turn(SID, [Message.user("late")], TokenUsage(), closed_at)
    assert caught.value.code is ErrorCode.SESSION_CLOSED
    assert await store.history(SID) == []


async def test_an_unknown_session_is_reported(store: SessionStore) -> None:
    unknown = SessionId("s_nobody")
    with pytest.raises(AgentError) as on_commit:
        await store.commit_turn(unknown, [Message.user("hi")], TokenUsage(), T0)
    with pytest.raises(AgentError) as on_close:
        await store.close(unknown, T0)
    with pytest.raises(AgentError) as on_history:
        await store.history(unknown)
    assert on_commit.value.code is ErrorCode.SESSION_NOT_FOUND
    assert on_close.value.code is ErrorCode.SESSION_NOT_FOUND
    assert on_history.value.code is ErrorCode.SESSION_NOT_FOUND
    assert await store.get(unknown) is None


async def test_creating_an_existing_id_is_refused(store: SessionStore) -> None:
    await store.create(_record())
    other = SessionRecord(
        id=SID,
        agent_id=AgentId("other"),
        owner="mallory",
        status="open",
        created_at=T0,
        updated_at=T0,
    )
    with pytest.raises(AgentError) as caught:
        await store.create(other)
    assert caught.value.code is ErrorCode.INVALID_REQUEST
    assert await store.get(SID) == _record()


async def test_naive_timestamps_are_refused(store: SessionStore) -> None:
    naive = datetime(2025, 6, 1, 12, 0)  # noqa: DTZ001
    with pytest.raises(ValueError, match="timezone-aware"):
        await store.create(_record(at=naive))
    assert await store.get(SID) is None


async def test_sessions_are_independent(store: SessionStore) -> None:
    other = SessionId("s_other")
    await store.create(_record())
    await store.create(_record(other))
    await store.commit_turn(SID, [Message.user("mine")], TokenUsage(1), T0)
    await store.close(other, T0)
    assert await store.history(other) == []
    mine = await store.get(SID)
    theirs = await store.get(other)
    assert mine is not None
    assert theirs is not None
    assert (mine.status, mine.turns) == ("open", 1)
    assert (theirs.status, theirs.turns) == ("closed", 0)


async def test_sqlite_sessions_resume_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    later = T0 + timedelta(seconds=30, microseconds=1)
    async with await Database.open(path) as db:
        store = SqliteSessionStore(db)
        await store.create(_record())
        await store.create(_record(SessionId("s_closed")))
        await store.commit_turn(SID, _rich_turn(), TokenUsage(100, 50, 25, 5), T0)
        await store.commit_turn(SID, [Message.user("and tomorrow?")], TokenUsage(1, 1), later)
        await store.close(SessionId("s_closed"), later)
        before = (await store.get(SID), await store.history(SID))
        closed_before = await store.get(SessionId("s_closed"))
        await store.aclose()
        assert not db.closed  # the store does not own the database

    async with await Database.open(path) as reopened:
        store = SqliteSessionStore(reopened)
        after = (await store.get(SID), await store.history(SID))
        assert after == before
        assert after[1][-1] == Message.user("and tomorrow?")
        record = after[0]
        assert record is not None
        assert (record.turns, record.usage, record.updated_at) == (
            2,
            TokenUsage(101, 51, 25, 5),
            later,
        )
        assert await store.get(SessionId("s_closed")) == closed_before
        # The resumed session keeps growing where it left off.
        await store.commit_turn(
            SID, [Message("assistant", (TextBlock("Sun."),))], TokenUsage(), later
        )
        assert (await store.history(SID))[-1].text == "Sun."
        assert len(await store.history(SID)) == len(before[1]) + 1


# --- the context state and loading from its boundary -------------------------------------


async def _ten_turns(store: SessionStore) -> None:
    await store.create(_record())
    for index in range(10):
        turn = [Message.user(f"question {index}"), Message("assistant", (TextBlock("a" * 50),))]
        await store.commit_turn(SID, turn, TokenUsage(1, 1), T0)


async def test_a_new_session_has_an_empty_context(store: SessionStore) -> None:
    await store.create(_record())
    loaded = await store.load_context(SID)
    assert loaded.context == ContextState()
    assert loaded.messages == []
    assert loaded.first_index == 0


async def test_context_loads_from_the_summary_boundary_on(store: SessionStore) -> None:
    await _ten_turns(store)
    state = ContextState("They asked nine questions.", 18, 1234, 1100)
    await store.save_context(SID, state)
    loaded = await store.load_context(SID)
    assert loaded.context == state
    assert loaded.first_index == 18
    assert [m.text for m in loaded.messages] == ["question 9", "a" * 50]
    assert len(await store.history(SID)) == 20, "the full history stays stored"
    record = await store.get(SID)
    assert record is not None
    assert record.context_tokens == 1234


async def test_saving_the_context_again_replaces_it(store: SessionStore) -> None:
    await _ten_turns(store)
    await store.save_context(SID, ContextState("old", 4, 10, 10))
    await store.save_context(SID, ContextState("new", 8, 20, 30))
    assert (await store.load_context(SID)).context == ContextState("new", 8, 20, 30)


async def test_a_size_cap_loads_only_the_newest_messages(store: SessionStore) -> None:
    await _ten_turns(store)
    everything = await store.load_context(SID, max_chars=10**9)
    assert everything.first_index == 0
    assert len(everything.messages) == 20
    one_size = len(message_to_json(Message("assistant", (TextBlock("a" * 50),))))
    loaded = await store.load_context(SID, max_chars=one_size)
    assert loaded.first_index == 19
    assert [m.text for m in loaded.messages] == ["a" * 50]
    tiny = await store.load_context(SID, max_chars=1)
    assert tiny.first_index == 19, "the last message is always loaded"
    await store.save_context(SID, ContextState("s", 19, 0, 0))
    assert (await store.load_context(SID, max_chars=10**9)).first_index == 19


async def test_context_of_an_unknown_session_is_an_error(store: SessionStore) -> None:
    with pytest.raises(AgentError) as caught:
        await store.load_context(SessionId("s_unknown"))
    assert caught.value.code is ErrorCode.SESSION_NOT_FOUND
    with pytest.raises(AgentError) as caught:
        await store.save_context(SessionId("s_unknown"), ContextState())
    assert caught.value.code is ErrorCode.SESSION_NOT_FOUND


async def test_the_context_survives_reopening_the_database(tmp_path: Path) -> None:
    path = tmp_path / "reopen.db"
    async with await Database.open(path) as db:
        store = SqliteSessionStore(db)
        await _ten_turns(store)
        await store.save_context(SID, ContextState("kept", 2, 5, 6))
    async with await Database.open(path) as db:
        loaded = await SqliteSessionStore(db).load_context(SID)
    assert loaded.context == ContextState("kept", 2, 5, 6)
    assert loaded.first_index == 2
    assert len(loaded.messages) == 18


async def test_a_turn_commits_its_context_state_with_it(store: SessionStore) -> None:
    await store.create(_record())
    state = ContextState("", 0, 321, 300)
    await store.commit_turn(SID, [Message.user("hi")], TokenUsage(1), T0, context=state)
    assert (await store.load_context(SID)).context == state
    record = await store.get(SID)
    assert record is not None
    assert record.context_tokens == 321
    await store.commit_turn(SID, [Message.user("again")], TokenUsage(1), T0)
    assert (await store.load_context(SID)).context == state, "no state given: unchanged"
