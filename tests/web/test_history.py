"""The web conversation's kept history: what a page opened after a restart is shown."""

from __future__ import annotations

import stat
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from thalos_bot.domain.ids import ConversationId
from thalos_bot_web.history import History
from thalos_bot_web.timeline import Event, Timeline

ANN = ConversationId("ann")


def followed(folder: Path, keep: int = 50) -> Timeline:
    timeline = Timeline(keep)
    History(folder).follow(ANN, timeline)
    return timeline


@asynccontextmanager
async def writing(history: History) -> AsyncIterator[Timeline]:
    """Ann's timeline, followed by ``history`` with its writer running (stopped after)."""
    async with anyio.create_task_group() as group:
        group.start_soon(history.run)
        await anyio.sleep(0)  # the writer waits
        timeline = Timeline(50)
        history.follow(ANN, timeline)
        yield timeline
        group.cancel_scope.cancel()


def turn(timeline: Timeline, n: int) -> None:
    timeline.append("user", {"html": f"q{n}", "files": []})
    timeline.append("turn", {"turn": f"t{n}"})
    timeline.append("partial", {"turn": f"t{n}", "html": "a"}, turn=f"t{n}")
    timeline.append("activity", {"turn": f"t{n}", "text": "using fs"})
    timeline.append("final", {"turn": f"t{n}", "html": f"a{n}"}, turn=f"t{n}")


def test_finished_turns_are_kept_without_their_partials(tmp_path: Path) -> None:
    timeline = followed(tmp_path / "web")
    turn(timeline, 1)
    timeline.append("image", {"url": "/media/k", "caption": "chart"})
    timeline.append("approval", {"id": "q", "tool": "fs", "preview": "x"})
    kinds = [k.kind for k in History(tmp_path / "web").load(ANN)]
    assert kinds == ["user", "turn", "activity", "final", "image"]
    (image,) = [k for k in History(tmp_path / "web").load(ANN) if k.kind == "image"]
    assert image.data == {"url": "", "caption": "chart"}, "the bytes went with the process"
    (path,) = (tmp_path / "web").iterdir()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "ann" not in path.name, "the file is named by a digest"


def test_a_turn_cut_off_by_a_restart_leaves_nothing_half_shown(tmp_path: Path) -> None:
    timeline = followed(tmp_path / "web")
    timeline.append("user", {"html": "q", "files": []})
    timeline.append("turn", {"turn": "t"})
    timeline.append("activity", {"turn": "t", "text": "using fs"})
    timeline.append("notice", {"html": "still working", "tone": "info"})
    kinds = [k.kind for k in History(tmp_path / "web").load(ANN)]
    assert kinds == ["user", "notice"]


def test_the_file_stays_bounded_and_keeps_whole_turns(tmp_path: Path) -> None:
    timeline = followed(tmp_path / "web", keep=50)
    for n in range(100):
        turn(timeline, n)
    (path,) = (tmp_path / "web").iterdir()
    assert len(path.read_text().splitlines()) <= 50
    kept = History(tmp_path / "web").load(ANN)
    assert kept[-1].data["html"] == "a99"
    placed = {k.data["turn"] for k in kept if k.kind == "turn"}
    assert all(k.turn in placed for k in kept if k.kind == "final")
    assert all(k.data["turn"] in placed for k in kept if k.kind == "activity")


@pytest.mark.anyio
async def test_the_file_is_written_off_the_event_loop_once_per_burst(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each event of a burst (a user message, notices, a final) does not rewrite the
    whole file on the event loop: the writer writes it in a worker thread, once for the
    events appended meanwhile."""
    history = History(tmp_path / "web")
    written = History._write
    threads: list[threading.Thread] = []

    def spy(self: History, conversation: ConversationId, events: list[Event]) -> None:
        threads.append(threading.current_thread())
        written(self, conversation, events)

    monkeypatch.setattr(History, "_write", spy)
    with anyio.fail_after(10):
        async with writing(history) as timeline:
            for n in range(20):
                timeline.append("notice", {"html": f"n{n}", "tone": "info"})
            while len(history.load(ANN)) < 20:
                await anyio.sleep(0.01)
    assert threads, "written"
    assert threading.main_thread() not in threads, "never on the event loop's thread"
    assert len(threads) < 20, "one write for the burst, not one per event"


@pytest.mark.anyio
async def test_what_is_due_when_the_writer_stops_is_written(tmp_path: Path) -> None:
    history = History(tmp_path / "web")
    async with writing(history) as timeline:
        timeline.append("user", {"html": "last words", "files": []})
        # (stopped at the block's end, before the writer had its turn)
    assert [k.data["html"] for k in history.load(ANN)] == ["last words"]


@pytest.mark.anyio
async def test_kept_returns_once_the_file_holds_the_event_not_at_an_earlier_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A final appended while the writer writes an earlier snapshot (the person's
    message) is waited for until a write that holds it ends."""
    history = History(tmp_path / "web")
    written = History._write
    entered, go = threading.Event(), threading.Event()

    def held(self: History, conversation: ConversationId, events: list[Event]) -> None:
        entered.set()
        go.wait(10)  # a bound: a test that fails still ends
        written(self, conversation, events)

    monkeypatch.setattr(History, "_write", held)
    with anyio.fail_after(10):
        async with writing(history) as timeline:
            timeline.append("user", {"html": "q", "files": []})
            await anyio.to_thread.run_sync(entered.wait)  # its write began, without the final
            timeline.append("final", {"turn": "t", "html": "a"}, turn="t")
            go.set()
            await history.kept(ANN)
            kinds = [k.kind for k in history.load(ANN)]
    assert kinds == ["user", "final"]
