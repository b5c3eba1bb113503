"""A transport's running side, as its manifest's ``runtime`` names it.

The core hands ``open`` the validated section as a plain model; :class:`Runtime` checks
it is the transport's own once, here, so the plug-in's opener takes its config typed.

:func:`delivering` is the part of that opener every transport over the delivery engine
shares: the channel's inlet and task group, the engine over the plug-in's wire, the
approvals hooked to both (a question goes out through the engine; once the channel
stops, open ones are withdrawn), and the kit's intake for its files. When the daemon
is done with the channel, what it was given is shown (within ``drain_timeout``), the
tasks stop and the inlet closes; the plug-in closes its own clients after.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar, runtime_checkable

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel

from thalos_bot.channels.approvals.asking import Post
from thalos_bot.channels.approvals.relay import Press, Presses
from thalos_bot.channels.delivery.channel import WireAdapter
from thalos_bot.channels.delivery.rounds import Rendering
from thalos_bot.channels.delivery.wire import Wire
from thalos_bot.channels.inlet import Inlet
from thalos_bot.channels.intake.files import FileSource, Intake
from thalos_bot.channels.pacing.gate import GlobalPacer
from thalos_bot.channels.people import Seats
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot.channels.registry import ChannelHost, ChannelPair
from thalos_bot.channels.settings import ChannelSettings
from thalos_bot.domain.ids import ChannelId, ConversationId
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest

C = TypeVar("C", bound=BaseModel)
A = TypeVar("A")
M = TypeVar("M")
P = TypeVar("P", bound="Approvals")

Opener = Callable[[C, ChannelHost], AbstractAsyncContextManager[ChannelPair]]


class Runtime(Generic[C]):
    def __init__(self, model: type[C], opener: Opener[C], sender: Opener[C] | None = None) -> None:
        """``sender``: the send-only side, for a manifest that says ``send_side``."""
        self.model = model
        self._opener = opener
        self._sender = sender

    def open(
        self, config: BaseModel, host: ChannelHost
    ) -> AbstractAsyncContextManager[ChannelPair]:
        return self._opener(self._own(config), host)

    def open_sending(
        self, config: BaseModel, host: ChannelHost
    ) -> AbstractAsyncContextManager[ChannelPair]:
        """The channel without its receiving connection: its pair's source is the
        kit's inlet, fed by the host (:mod:`thalos_bot.service.anywhere`)."""
        if self._sender is None:
            raise TypeError(f"{self.model.__name__}: this transport has no send-only side")
        return self._sender(self._own(config), host)

    def _own(self, config: BaseModel) -> C:
        if not isinstance(config, self.model):
            raise TypeError(f"{type(config).__name__} is not {self.model.__name__}")
        return config


class Approvals(Protocol):
    @property
    def ask(self) -> Callable[..., Awaitable[ApprovalAnswer]]: ...

    @property
    def withdraw_all(self) -> Callable[[], None]: ...


@runtime_checkable
class Relaying(Protocol):
    """Approvals that relay a press among replicas (the kit's ``Asking``, reactions)."""

    presses: Presses | None

    def relayed(self, press: Press) -> None: ...


@dataclass(frozen=True, slots=True)
class Delivering(Generic[A, M, P]):
    inlet: Inlet
    group: TaskGroup
    adapter: WireAdapter[A, M]
    approvals: P
    intake: Intake
    seats: Seats

    def pair(self, summary: str, link: Reconnecting) -> ChannelPair:
        """The channel as the daemon runs it, receiving over ``link``."""
        return ChannelPair(
            self.inlet,
            self.adapter,
            summary,
            receiving=link.receiving,
            retrying=link.retrying,
            health=link.health,
        )


@asynccontextmanager
async def delivering(
    host: ChannelHost,
    config: ChannelSettings,
    wire: Wire[A, M],
    rendering: Rendering,
    *,
    parse: Callable[[ConversationId], A],
    private: Callable[[A], bool],
    approvals: Callable[[Post[A, M], Seats], P],
    files: FileSource,
    pacer: GlobalPacer | None = None,
    flush_interval: float | None = None,
) -> AsyncIterator[Delivering[A, M, P]]:
    """``parse``: a conversation id as its chat (no threads: each conversation is a chat
    of its own); ``approvals`` is made from the engine's post and the section's seats."""
    channel = ChannelId(wire.name)
    inlet = Inlet(channel)
    try:
        async with anyio.create_task_group() as group:
            adapter = WireAdapter[A, M](
                wire,
                group,
                rendering,
                channel_id=channel,
                parse=lambda conversation: (parse(conversation), None),
                private=private,
                pacer=pacer,
                flush_interval=flush_interval,
            )
            seats = host.seats(wire.name, config)
            made = approvals(adapter.put, seats)
            asker: Callable[[A, ApprovalRequest], Awaitable[ApprovalAnswer]] = made.ask
            adapter.asker = asker
            inlet.stopped = made.withdraw_all  # no answer is heard any more
            # Approvals that show their ``asking``, or relay as reactions do.
            relaying = getattr(made, "asking", made)
            if isinstance(relaying, Relaying):
                relay_presses(host, relaying, group)
            limit = config.text_file_max_chars
            intake = host.intake(inlet, files, group, text_file_max_chars=limit)
            yield Delivering(inlet, group, adapter, made, intake, seats)
            await adapter.drain_at_shutdown(config.drain_timeout)
            group.cancel_scope.cancel()
    finally:
        inlet.close()


def relay_presses(host: ChannelHost, relaying: Relaying, group: TaskGroup) -> None:
    """Replicas: a press for a question asked on another is relayed to it, and one
    relayed is applied here when this side asked it (one process: nothing to do)."""
    if host.presses is not None:
        relaying.presses = host.presses
        group.start_soon(hearing, host.presses, relaying)


async def hearing(presses: Presses, relaying: Relaying) -> None:
    """Hear the presses relayed while the channel runs."""
    leave = presses.join(relaying.relayed)
    try:
        await anyio.sleep_forever()
    finally:
        leave()
