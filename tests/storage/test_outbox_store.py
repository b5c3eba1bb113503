"""The outbox table: written with the turn, in one transaction; progress; pruning.
Run against every database (see ``backend`` in conftest)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.storage.conftest import Backend
from thalos_bot.domain.errors import AgentError
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.domain.messages import Message, TextBlock
from thalos_bot.storage.memory_sessions import MemorySessionStore
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry, SessionRecord, SessionStore

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SID = SessionId("s_outbox")
TG = ChannelId("telegram")


def _entry(key: str, text: str = "The answer.") -> OutboxEntry:
    return OutboxEntry(OutboxAddress(TG, ConversationId("42"), key), text)


def _turn() -> list[Message]:
    return [Message.user("question"), Message("assistant", (TextBlock("The answer."),))]


async def _session(store: SessionStore) -> None:
    await store.create(SessionRecord(SID, AgentId("helper"), "alice", "open", T0, T0))


async def test_a_committed_turn_leaves_a_pending_row(backend: Backend) -> None:
    sessions, outbox = backend.sessions, backend.outbox
    await _session(sessions)
    await sessions.commit_turn(SID, _turn(), TokenUsage(1, 1), T0, outbox=_entry("k1"))
    (row,) = await outbox.pending(TG)
    assert (row.id, row.conversation_id, row.text, row.kind) == (
        "k1",
        "42",
        "The answer.",
        "answer",
    )
    assert row.state == "pending"
    assert row.progress == {}
    assert await outbox.pending(ChannelId("console")) == []


async def test_a_turn_that_cannot_commit_leaves_no_row(backend: Backend) -> None:
    sessions, outbox = backend.sessions, backend.outbox
    await _session(sessions)
    await sessions.commit_turn(SID, _turn(), TokenUsage(), T0, outbox=_entry("k1"))
    # The same key again: the row cannot be written, so the turn is not kept either.
    with pytest.raises(Exception, match=backend.duplicate):
        await sessions.commit_turn(SID, _turn(), TokenUsage(), T0, outbox=_entry("k1"))
    assert len(await sessions.history(SID)) == 2
    record = await sessions.get(SID)
    assert record is not None
    assert record.turns == 1
    await sessions.close(SID, T0)
    with pytest.raises(AgentError):
        await sessions.commit_turn(SID, _turn(), TokenUsage(), T0, outbox=_entry("k2"))
    assert [r.id for r in await outbox.pending(TG)] == ["k1"]


async def test_the_memory_store_keeps_the_entry() -> None:
    store = MemorySessionStore()
    await _session(store)
    await store.commit_turn(SID, _turn(), TokenUsage(), T0, outbox=_entry("k1"))
    assert store.outbox == [_entry("k1")]


async def test_progress_and_state(backend: Backend) -> None:
    outbox = backend.outbox
    await outbox.add(_entry("a", "first"), T0)
    await outbox.add(_entry("b", "second"), T0 + timedelta(seconds=1))
    await outbox.save_progress("a", {"parts_done": 1, "floor": 7}, T0)
    assert [(r.id, dict(r.progress)) for r in await outbox.pending(TG)] == [
        ("a", {"parts_done": 1, "floor": 7}),
        ("b", {}),
    ]
    await outbox.finish("a", "delivered", T0)
    await outbox.finish("b", "failed", T0)
    await outbox.save_progress("a", {"parts_done": 9}, T0)  # too late: it is done
    assert await outbox.pending(TG) == []
    done = await outbox.get("a")
    assert done is not None
    assert done.state == "delivered"
    assert done.progress == {"parts_done": 1, "floor": 7}


async def test_prune_removes_only_rows_done_before_the_cut(backend: Backend) -> None:
    outbox = backend.outbox
    for key in ("old", "recent", "waiting"):
        await outbox.add(_entry(key), T0)
    await outbox.finish("old", "delivered", T0)
    await outbox.finish("recent", "failed", T0 + timedelta(days=6))
    assert await outbox.prune(T0 + timedelta(days=1)) == 1
    assert await outbox.get("old") is None
    assert await outbox.get("recent") is not None
    assert [r.id for r in await outbox.pending(TG)] == ["waiting"]


async def test_a_voice_row_is_kept_and_told_apart_while_pending(backend: Backend) -> None:
    outbox = backend.outbox
    voice = OutboxEntry(OutboxAddress(TG, ConversationId("42"), "k1-voice-1"), "{}", "voice")
    await outbox.add(voice, T0)
    await outbox.add(_entry("k2"), T0)
    kinds = {row.id: row.kind for row in await outbox.pending(TG)}
    assert kinds == {"k1-voice-1": "voice", "k2": "answer"}
    assert await outbox.kept(["k1-voice-1", "k2", "gone"]) == {"k1-voice-1", "k2"}
    await outbox.finish("k1-voice-1", "delivered", T0)
    assert await outbox.kept(["k1-voice-1", "k2"]) == {"k2"}
    assert await outbox.kept([]) == set()


async def test_the_kinds_are_checked(backend: Backend) -> None:
    bad = OutboxEntry(OutboxAddress(TG, ConversationId("42"), "k1"), "x", "song")  # type: ignore[arg-type]
    with pytest.raises(Exception, match=r"(?i)check"):
        await backend.outbox.add(bad, T0)
