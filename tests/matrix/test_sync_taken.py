"""A ``kill -9`` while a turn begins must not get its message handed over again.

The sync loop writes a batch's position only once the whole batch is handed over (its
files fetched), so the pump can begin a turn before that write. A kill then restarts
the sync from the old position: the message comes again. Unless it was written down as
taken before the pump had it, the next start answers it a second time, besides telling
the cut turn (the contract suite's ``test_killed_mid_turn``, failing now and then on a
loaded machine). The interleaving is forced here: the batch's image is held at the
homeserver, so its position cannot be written while the pump takes its text, and what
a kill at that instant leaves on disk is what the next start reads.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from tests.channels.contract.daemon import PNG
from tests.waits import settled
from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.files import Intake, IntakeSettings, RemoteFile
from thalos_bot.channels.pacing.backoff import Backoff
from thalos_bot.channels.people import Seats
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.domain.ids import ChannelId
from thalos_bot.domain.people import People
from thalos_bot.domain.security import SecurityContext
from thalos_bot_matrix.client import JSON
from thalos_bot_matrix.inbound import Admission
from thalos_bot_matrix.state import SyncState, folder
from thalos_bot_matrix.sync import Syncer

pytestmark = pytest.mark.anyio

ME, ANN, ROOM = "@bot:example.org", "@ann:example.org", "!dm:example.org"
STAMP = int(datetime(2026, 12, 6, tzinfo=UTC).timestamp() * 1000)
TEXT: JSON = {
    "type": "m.room.message",
    "event_id": "$text",
    "sender": ANN,
    "origin_server_ts": STAMP,
    "content": {"msgtype": "m.text", "body": "remember the milk"},
}
IMAGE: JSON = {
    "type": "m.room.message",
    "event_id": "$image",
    "sender": ANN,
    "origin_server_ts": STAMP + 1,
    "content": {
        "msgtype": "m.image",
        "body": "image.png",
        "url": "mxc://example.org/image",
        "info": {"mimetype": "image/png", "size": len(PNG)},
    },
}


class Homeserver:
    """``/sync`` as Synapse answers the loop: the rooms first (``s1``), then one batch
    (a text, then an image, in the direct room), then nothing new. The image's download
    waits until the test lets it through."""

    def __init__(self, events: tuple[JSON, ...] = (TEXT, IMAGE)) -> None:
        self.events = list(events)
        self.let_through = anyio.Event()
        self.caught_up = anyio.Event()

    async def sync(self, since: str | None, timeout: float, filter_: str) -> JSON:
        if since is None:
            return {"next_batch": "s1"}
        if since == "s1":
            timeline = {"events": self.events, "limited": False}
            return {"next_batch": "s2", "rooms": {"join": {ROOM: {"timeline": timeline}}}}
        self.caught_up.set()
        await anyio.sleep_forever()
        raise AssertionError("never returns")

    async def fetch(self, file: RemoteFile) -> bytes:
        """The image's bytes, as the channel's file source gives them."""
        assert file.ref == "mxc://example.org/image"
        await self.let_through.wait()
        return PNG


@asynccontextmanager
async def syncing(server: Homeserver, state_dir: Path) -> AsyncIterator[Inlet]:
    """The channel's sync loop over ``server``, its state in ``state_dir``, feeding the
    inlet it yields (read it as the pump does), stopped as the plug-in stops it."""
    client: Any = server
    inlet = Inlet(ChannelId("matrix"))
    unused: Any = SimpleNamespace()
    seats = Seats("matrix", People(), SecurityContext.of("owner"), ANN, allowed=(ANN,))
    admission = Admission(ME, frozenset({ANN}), seats, frozenset(), _nobody)
    async with anyio.create_task_group() as group:
        intake = Intake(
            server,
            group=group,
            hand_over=inlet.hand_over,
            notify=inlet.notify,
            transcriber=None,
            settings=IntakeSettings(0.0, 10_000),
            guard=UpdateGuard("matrix"),
            channel="matrix",
            taken=inlet.all_taken,
        )
        syncer = Syncer(
            client=client,
            me=ME,
            state=await SyncState.opened(state_dir, ME),
            timeout=30,
            link=Reconnecting("matrix_sync", Backoff(1.0, 30.0)),
            crypto=None,
            admission=admission,
            intake=intake,
            approvals=unused,
            notify=lambda *_: None,
        )
        inlet.taken = syncer.taken
        # As the plug-in does: the loop ends as the pump stops reading.
        inlet.receive_until_stopped(group, syncer.run, name="matrix-sync")
        yield inlet
        group.cancel_scope.cancel()
    inlet.close()


async def read_again(server: Homeserver, state_dir: Path) -> list[str | None]:
    """What a next start from ``state_dir`` hands the pump, until it caught up."""
    again: list[str | None] = []
    with anyio.fail_after(10):
        async with syncing(server, state_dir) as inlet:

            async def pump() -> None:
                async for arrival in inlet.messages():
                    assert isinstance(arrival, InboundMessage)
                    again.append(arrival.message_ref)

            async with anyio.create_task_group() as group:
                group.start_soon(pump)
                await server.caught_up.wait()
                group.cancel_scope.cancel()
    return again


async def _nobody(room_id: str, event_id: str) -> tuple[str, str] | None:
    return None  # no reply in these batches


def _state_file(state_dir: Path) -> Path:
    [path] = folder(state_dir).glob("sync-*.json")
    return path


async def test_a_kill_as_the_pump_takes_a_message_never_gets_it_handed_over_again(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    server = Homeserver()
    left: bytes | None = None
    with anyio.fail_after(10):
        async with syncing(server, first) as inlet, aclosing(inlet.messages()) as arrivals:
            async for arrival in arrivals:
                assert isinstance(arrival, InboundMessage)
                if arrival.message_ref == "$text":
                    # The pump has it: its turn (and journal entry) may begin now, and a
                    # kill come. What would the next start read?
                    left = _state_file(first).read_bytes()
                    server.let_through.set()
                else:
                    break
            await server.caught_up.wait()  # still reading: the loop goes on
    assert left is not None
    folder(second).mkdir(parents=True)
    (folder(second) / _state_file(first).name).write_bytes(left)

    server.caught_up = anyio.Event()
    again = await read_again(server, second)
    assert again == ["$image"], "the text, whose turn the kill cut, is not answered again"


async def test_a_stop_before_the_pump_took_the_whole_batch_leaves_the_rest_for_the_next_start(
    tmp_path: Path,
) -> None:
    """A graceful stop: the pump took the first message of a batch and stops reading
    while the second still waits in the inlet. The next start answers the second (and
    only it): the position never went past a message the pump did not take."""
    second: JSON = {**TEXT, "event_id": "$second", "origin_server_ts": STAMP + 1}
    server = Homeserver((TEXT, second))
    with anyio.fail_after(10):
        async with syncing(server, tmp_path) as inlet, aclosing(inlet.messages()) as arrivals:
            first = await anext(arrivals)
            assert isinstance(first, InboundMessage)
            assert first.message_ref == "$text"
            await settled()  # the loop went as far as it can
            # Then the pump stops reading (SIGTERM): the loop is stopped, its state kept.
    server.caught_up = anyio.Event()
    again = await read_again(server, tmp_path)
    assert again == ["$second"], "the message left in the inlet at the stop is answered"
