"""The turn journal: the pump notes each turn while it runs, and a start-up tells the
conversations whose turn a kill cut short (the kill itself: the contract suite's
``test_killed_mid_turn``, over every transport)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from tests.pump.harness import CHANNEL, running_pump
from tests.service.test_outbox_service import PlainAdapter
from thalos_bot.channels import notices
from thalos_bot.channels.ports import Notice
from thalos_bot.domain.errors import AgentError
from thalos_bot.domain.events import TokenUsage
from thalos_bot.domain.ids import AgentId, ChannelId, ConversationId, SessionId
from thalos_bot.providers.scripted import Await, Say, ScriptedProvider
from thalos_bot.service.interrupted import tell_cut_turns
from thalos_bot.service.outbox import Outbox
from thalos_bot.service.schema import ALL_MIGRATIONS
from thalos_bot.storage.database import Database
from thalos_bot.storage.outbox import SqliteOutbox
from thalos_bot.storage.protocol import OutboxAddress, OutboxEntry, SessionRecord
from thalos_bot.storage.sqlite_sessions import SqliteSessionStore
from thalos_bot.storage.turn_journal import SqliteTurnJournal

pytestmark = pytest.mark.anyio

CONSOLE = ChannelId("console")
T0 = datetime(2026, 12, 6, tzinfo=UTC)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with await Database.open(tmp_path / "thalos.db", migrations=ALL_MIGRATIONS) as opened:
        yield opened


async def test_a_turn_is_noted_while_it_runs_and_forgotten_once_answered(db: Database) -> None:
    journal = SqliteTurnJournal(db)
    reached, go_on = anyio.Event(), anyio.Event()

    async def pause() -> None:
        reached.set()
        await go_on.wait()

    provider = ScriptedProvider([[Say("half"), Await(pause), Say(" done")]])
    async with running_pump(provider, journal=journal) as h:
        h.source.send("hello")
        with anyio.fail_after(5):
            await reached.wait()
        [under_way] = await journal.left([CHANNEL])
        assert (under_way.conversation_id, under_way.replayed) == ("c1", False)
        go_on.set()
        await h.adapter.wait_for(lambda: h.adapter.final_texts() == ["half done"])
    assert await journal.left([CHANNEL]) == []


async def test_a_turn_cut_without_its_ending_stays_noted(db: Database) -> None:
    """The daemon failing (or a stop that had to force it) cancels the turn with nothing
    said: its entry stays for the next start to tell."""
    journal = SqliteTurnJournal(db)
    reached = anyio.Event()

    async def pause() -> None:
        reached.set()
        await anyio.sleep_forever()

    provider = ScriptedProvider([[Say("half"), Await(pause)]])
    with anyio.CancelScope() as scope:
        async with running_pump(provider, journal=journal) as h:
            h.source.send("hello")
            with anyio.fail_after(5):
                await reached.wait()
            scope.cancel()
    assert [cut.conversation_id for cut in await journal.left([CHANNEL])] == ["c1"]


async def test_a_command_is_not_a_turn(db: Database) -> None:
    journal = SqliteTurnJournal(db)
    async with running_pump(journal=journal) as h:
        await h.source.send("/help").wait()
    assert await journal.left([CHANNEL]) == []


async def test_the_turns_a_kill_left_are_told_once_at_the_start(db: Database) -> None:
    journal = SqliteTurnJournal(db)
    cut = await journal.begin(CONSOLE, ConversationId("a"), replayed=False)
    await journal.begin(CONSOLE, ConversationId("b"), replayed=True)  # email: read again
    other = await journal.begin(ChannelId("telegram"), ConversationId("c"), replayed=False)
    adapter = PlainAdapter()
    async with Outbox(SqliteOutbox(db), {CONSOLE: adapter}, keep=3600).running() as outbox:
        assert await tell_cut_turns(journal, outbox, [CONSOLE]) == 1
        assert await tell_cut_turns(journal, outbox, [CONSOLE]) == 0, "told once"
        with anyio.fail_after(5):
            while not adapter.shown:
                await anyio.sleep(0.01)  # the outbox's worker delivers it
    assert adapter.shown == [
        (ConversationId("a"), Notice(notices.interrupted_by_restart(), "warning"))
    ]
    # The channel not opened by this process keeps its entry (another process's turn).
    assert [entry.id for entry in await journal.left([ChannelId("telegram")])] == [other]
    assert cut != other


async def test_the_answer_kept_forgets_its_turn_in_the_same_commit(db: Database) -> None:
    """A kill between the turn's commit and the journal's own end must not tell the
    conversation to send again a message whose answer is on its way: the outbox row's
    insert forgets the entry it names, in the turn's transaction. A commit refused
    (the session closed) leaves the entry, as the turn was not kept."""
    journal, sessions = SqliteTurnJournal(db), SqliteSessionStore(db)
    await sessions.create(SessionRecord(SessionId("s1"), AgentId("a"), "ann", "open", T0, T0))
    kept = await journal.begin(CONSOLE, ConversationId("a"), replayed=False)
    refused = await journal.begin(CONSOLE, ConversationId("b"), replayed=False)

    def row(key: str, entry: int) -> OutboxEntry:
        return OutboxEntry(OutboxAddress(CONSOLE, ConversationId(key), key, begun=entry), "hi")

    await sessions.commit_turn(SessionId("s1"), [], TokenUsage(), T0, outbox=row("a", kept))
    assert [cut.id for cut in await journal.left([CONSOLE])] == [refused]
    await sessions.close(SessionId("s1"), T0)
    with pytest.raises(AgentError):
        await sessions.commit_turn(SessionId("s1"), [], TokenUsage(), T0, outbox=row("b", refused))
    assert [cut.id for cut in await journal.left([CONSOLE])] == [refused]


async def test_the_pump_names_its_turns_entry_in_the_answers_row(db: Database) -> None:
    journal = SqliteTurnJournal(db)
    async with running_pump(journal=journal, wrap=lambda adapter: adapter) as h:
        h.source.send("hello")
        await h.adapter.wait_for(lambda: bool(h.adapter.final_texts()))
        [entry] = h.runtime.store.outbox  # type: ignore[attr-defined]
    assert entry.address.begun is not None
