"""The kit's small shared pieces: a channel's kept state (a private file, and the
fenced shared store on replicas), the set of messages seen, reactions as verdicts."""

from __future__ import annotations

import stat
import threading
from collections.abc import Mapping
from contextlib import aclosing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from thalos_bot.channels import kept as kept_module
from thalos_bot.channels.admission.seen import Seen
from thalos_bot.channels.approvals.reactions import reaction_verdict
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.kept import KeptState, read_json, write_private
from thalos_bot.channels.ports import InboundMessage, Sender
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.domain.security import SecurityContext


class Shared:
    def __init__(self, holding: bool = True) -> None:
        self.state: dict[str, Any] | None = None
        self.holding = holding

    async def load_state(self) -> dict[str, Any] | None:
        return self.state

    async def save_state(self, state: Mapping[str, Any]) -> bool:
        if self.holding:
            self.state = dict(state)
        return self.holding


@pytest.mark.anyio
async def test_kept_state_is_a_private_file(tmp_path: Path) -> None:
    kept = KeptState(tmp_path / "a" / "kept.json")
    assert await kept.load() == {}
    assert await kept.save({"n": 1})
    assert await KeptState(tmp_path / "a" / "kept.json").load() == {"n": 1}
    assert stat.S_IMODE((tmp_path / "a" / "kept.json").stat().st_mode) == 0o600


@pytest.mark.anyio
async def test_on_replicas_the_last_owners_state_wins_and_a_fenced_save_writes_nothing(
    tmp_path: Path,
) -> None:
    shared = Shared()
    await KeptState(tmp_path / "one.json", shared).save({"owner": "one"})
    mine = KeptState(tmp_path / "two.json", shared)
    await mine.save({"owner": "two, long ago"})
    shared.state = {"owner": "one"}  # another replica saved since
    assert await mine.load() == {"owner": "one"}
    shared.holding = False
    assert not await mine.save({"owner": "two, stale"})
    assert await KeptState(tmp_path / "two.json").load() == {"owner": "two, long ago"}


@pytest.mark.anyio
async def test_kept_state_saves_one_at_a_time_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two saves at once (Telegram's poller and the pump's taken hook) would write the
    one temporary file together: the second waits for the first."""
    overlapped: list[bool] = []
    second_in = threading.Event()

    def write(path: Path, data: Mapping[str, Any]) -> None:
        if data["n"] == "first":
            # Without the turn, the second write comes in here meanwhile (no wait
            # decides the outcome: with it, this just ends).
            overlapped.append(second_in.wait(0.5))
        else:
            second_in.set()
        write_private(path, data)

    monkeypatch.setattr(kept_module, "write_private", write)
    kept = KeptState(tmp_path / "state.json")
    async with anyio.create_task_group() as group:
        group.start_soon(kept.save, {"n": "first"})
        await anyio.wait_all_tasks_blocked()
        group.start_soon(kept.save, {"n": "second"})
    assert overlapped == [False]
    assert read_json(tmp_path / "state.json") == {"n": "second"}


def test_seen_admits_each_id_once_and_forgets_the_oldest() -> None:
    seen = Seen(bound=2)
    assert seen.first_time("a")
    assert not seen.first_time("a")
    assert seen.first_time("b")
    assert seen.first_time("c")
    assert seen.first_time("a")  # forgotten: the bound is two


def test_seen_goes_on_from_the_ids_kept_the_newest_within_its_bound() -> None:
    kept = Seen(bound=2, ids=["a", "b", "c"])
    assert list(kept) == ["b", "c"]
    assert "c" in kept
    assert "a" not in kept
    assert not kept.first_time("b")
    assert kept.first_time("a")
    assert list(kept) == ["c", "a"]


def test_a_reaction_is_a_verdict_with_or_without_its_variation_selector() -> None:
    assert reaction_verdict("✅") == "approved"
    assert reaction_verdict("✔\ufe0f") == "approved"
    assert reaction_verdict("🔁") == "approved-session"
    assert reaction_verdict("👎") == "denied"
    assert reaction_verdict("🎉") is None


def test_a_kept_file_that_cannot_be_read_is_said_in_the_log(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    broken = tmp_path / "broken.json"
    broken.write_text('{"seen": [', encoding="utf-8")
    listed = tmp_path / "listed.json"
    listed.write_text("[1, 2]", encoding="utf-8")
    with capture_logs() as logs:
        assert read_json(missing) == {}
        assert read_json(broken) == {}
        assert read_json(listed) == {}
    said = [(entry["event"], entry["path"]) for entry in logs]
    assert said == [
        ("kept_file_unreadable", str(broken)),
        ("kept_file_unreadable", str(listed)),
    ]


def _message(ref: str) -> InboundMessage:
    sender = Sender(SecurityContext.of("owner"), "owner")
    return InboundMessage(
        ChannelId("x"), ConversationId("c"), sender, ref, datetime.now(UTC), message_ref=ref
    )


@pytest.mark.anyio
async def test_the_inlet_tells_each_message_the_pump_takes_and_none_it_never_read() -> None:
    """``inlet.taken`` hears what the pump read (a source keeps it with its position);
    what was still waiting when the pump stopped was never taken."""
    inlet = Inlet(ChannelId("x"))
    taken: list[str | None] = []

    async def note(message: InboundMessage) -> None:
        taken.append(message.message_ref)

    inlet.taken = note
    inlet.hand_over(_message("a"))
    inlet.notify(ConversationId("c"), "a notice is no message")
    inlet.hand_over(_message("b"))
    async for arrival in inlet.messages():
        if isinstance(arrival, InboundMessage):
            assert taken == ["a"]
        else:
            break  # the pump stops reading after the notice: "b" stays untaken
    inlet.close()
    assert taken == ["a"]


@pytest.mark.anyio
async def test_steps_added_with_stop_first_run_before_what_stopped_did_already() -> None:
    """A source stops receiving (Matrix's sync) before the kit withdraws the open
    questions, and a replica's drain stops taking rows before both."""
    ran: list[str] = []
    inlet = Inlet(ChannelId("x"), lambda: ran.append("withdraw"))
    inlet.stop_first(lambda: ran.append("receiving"))
    inlet.stop_first(lambda: ran.append("taking"))
    inlet.notify(ConversationId("c"), "read, then the pump stops")
    async with aclosing(inlet.messages()) as arrivals:
        async for _ in arrivals:
            assert ran == []
            break
    inlet.close()
    assert ran == ["taking", "receiving", "withdraw"]


@pytest.mark.anyio
async def test_a_receive_loop_runs_until_the_pump_stops_reading_then_the_rest_stops() -> None:
    """Matrix's sync and Telegram's poll: cancelled as the pump stops, before the open
    questions are withdrawn; the channel's other tasks go on (the answers drain)."""
    ran: list[str] = []
    inlet = Inlet(ChannelId("x"), lambda: ran.append("withdraw"))

    async def receive() -> None:
        try:
            inlet.notify(ConversationId("c"), "heard")
            await anyio.sleep_forever()
        finally:
            ran.append("receive ended")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            inlet.receive_until_stopped(group, receive, name="x-receive")
            async with aclosing(inlet.messages()) as arrivals:
                async for _ in arrivals:
                    break
    inlet.close()
    assert ran == ["withdraw", "receive ended"], "the loop ended with the stop"


class _Writing:
    """A source's ``taken`` that writes the message down only when the test says."""

    def __init__(self) -> None:
        self.begun = anyio.Event()
        self.go_on = anyio.Event()
        self.written: list[str | None] = []

    async def __call__(self, message: InboundMessage) -> None:
        self.begun.set()
        await self.go_on.wait()
        self.written.append(message.message_ref)


@pytest.mark.anyio
async def test_the_pump_has_a_message_only_once_its_source_wrote_it_down() -> None:
    """A ``kill -9`` once the pump has a message (its turn noted in the turn journal)
    must find it written down by its source, or the next start hands it over again and
    it is answered twice (Matrix's sync position, written while the turn began)."""
    inlet = Inlet(ChannelId("x"))
    writing = _Writing()
    inlet.taken = writing
    inlet.hand_over(_message("a"))
    had: list[list[str | None]] = []

    async def pump() -> None:
        async for _ in inlet.messages():
            had.append(list(writing.written))  # what a kill at this instant leaves
            return

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            await writing.begun.wait()
            assert had == [], "the pump has nothing while it is written down"
            writing.go_on.set()
    inlet.close()
    assert had == [["a"]]


@pytest.mark.anyio
async def test_a_stop_while_a_message_is_written_down_still_hands_it_over() -> None:
    """Written down as taken, it must reach the pump (which, stopping, tells its sender
    to ask again): a stop cutting it off there would lose it without a word."""
    inlet = Inlet(ChannelId("x"))
    writing = _Writing()
    inlet.taken = writing
    inlet.hand_over(_message("a"))
    had: list[str] = []

    async def pump() -> None:
        async for arrival in inlet.messages():
            had.append(arrival.conversation_id)  # noqa: PERF401 - the stop cuts this loop

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            await writing.begun.wait()
            group.cancel_scope.cancel()  # the pump stops reading
            writing.go_on.set()
    inlet.close()
    assert (writing.written, had) == (["a"], ["c"])
