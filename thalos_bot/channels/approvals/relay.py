"""Approval presses relayed among replicas.

With turns on any replica (:mod:`thalos_bot.service.anywhere`) a question is asked by
the replica running the turn, through its send-only side, but a press on its buttons
reaches the connection's owner only (Slack's Socket Mode, Discord's gateway). The
plug-in hands its press to its :class:`~thalos_bot.channels.approvals.asking.Asking`
as on one process; an ``Asking`` without an open question of that token relays it
(:meth:`Presses.relay`) to every replica's ``Asking`` of the channel, which applies it
as a local press: a token it does not hold is ignored, and who may answer is checked
by its seats. Nothing secret travels: the token, the chat, the question's message, the
verdict, the presser's platform id and display name.

A relayed press is written to the shared store (kept, and announced with a ``NOTIFY``;
a replica that missed the notification reads it again: :mod:`thalos_bot.cluster.
stored_presses`); a store out of reach must not drop it, and the person was already
told it was passed on. :class:`PressLine` writes them one at a time, in the order
pressed, each one the store refuses again every :data:`RETRY_EVERY` seconds, for as
long as a question can still be open (the approval timeout, from the press); only
then is it dropped, logged (its question has closed as not answered in time, which
the chat shows).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import astuple, dataclass, is_dataclass
from typing import Any, TypeGuard, get_args

import anyio
import structlog

from thalos_bot.tools.approval import Verdict

log = structlog.get_logger(__name__)


def is_verdict(name: object) -> TypeGuard[Verdict]:
    """Whether ``name`` is an approval's verdict (as a page or a relayed press names it)."""
    return name in get_args(Verdict)


RETRY_EVERY = 1.0
"""Seconds between two tries to write a relayed press the store refused."""


def chat_key(chat: object) -> str:
    """A plug-in's address of a chat as a string, the same on every replica (a
    dataclass by its fields)."""
    if is_dataclass(chat) and not isinstance(chat, type):
        return json.dumps(astuple(chat), separators=(",", ":"))
    return str(chat)


@dataclass(frozen=True, slots=True)
class Press:
    """A press on a question's button, as the connection's owner decoded it."""

    token: str
    chat: str
    """The chat, as :func:`chat_key` encodes it."""
    message_id: str
    verdict: Verdict
    user: str
    who: str

    def encode(self) -> str:
        return json.dumps(
            {
                "token": self.token,
                "chat": self.chat,
                "message": self.message_id,
                "verdict": self.verdict,
                "user": self.user,
                "who": self.who,
            },
            separators=(",", ":"),
        )

    @classmethod
    def decode(cls, payload: str) -> Press | None:
        """None for a payload of another shape (logged)."""
        try:
            data: Any = json.loads(payload)
            fields = [data[k] for k in ("token", "chat", "message", "verdict", "user", "who")]
        except (ValueError, TypeError, KeyError):
            fields = []
        if not fields or not all(isinstance(f, str) for f in fields) or not is_verdict(fields[3]):
            log.warning("approval_press_unreadable")
            return None
        token, chat, message, verdict, user, who = fields
        return cls(token, chat, message, verdict, user, who)


class Presses:
    """One channel's presses among the replicas: what each ``Asking`` of the channel
    on this replica relays, and hears. ``send`` is set by the replicas' side (a
    ``NOTIFY``); until then a press relayed goes nowhere."""

    def __init__(self, channel: str) -> None:
        self.channel = channel
        self.send: Callable[[Press], None] | None = None
        self._hearing: list[Callable[[Press], None]] = []

    def relay(self, press: Press) -> bool:
        """Tell every replica (this one too); False when there are none to tell."""
        if self.send is None:
            return False
        self.send(press)
        return True

    def join(self, hear: Callable[[Press], None]) -> Callable[[], None]:
        """``hear`` is told each press relayed; returns what ends that."""
        self._hearing.append(hear)
        return lambda: self._hearing.remove(hear)

    def heard(self, payload: str) -> None:
        """A press a replica relayed (the NOTIFY's payload)."""
        press = Press.decode(payload)
        if press is None:
            return
        for hear in list(self._hearing):
            hear(press)


class PressLine:
    """The presses one replica relays, written in the order pressed (see the module).
    ``write`` writes one and says whether the store took it (it logs why not);
    ``within``: seconds from a press after which no question can still be open for it
    (the approval timeout)."""

    def __init__(
        self,
        write: Callable[[Press], Awaitable[bool]],
        channel: str,
        *,
        within: float,
        retry_every: float = RETRY_EVERY,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self._write = write
        self._channel = channel
        self._within = within
        self._retry_every = retry_every
        self._clock = clock
        self._queue: deque[tuple[float, Press]] = deque()
        self._queued = anyio.Event()
        self._empty = anyio.Event()
        self._empty.set()

    def put(self, press: Press) -> None:
        """Relay ``press`` after the ones before it (a :class:`Presses`' ``send``)."""
        self._queue.append((self._clock(), press))
        self._empty = anyio.Event()
        self._queued.set()

    def __len__(self) -> int:
        return len(self._queue)

    async def run(self) -> None:
        """Write what is put, in order; for ever."""
        while True:
            if not self._queue:
                self._empty.set()
                self._queued = anyio.Event()
                await self._queued.wait()
                continue
            await self._first()

    async def flush(self) -> None:
        """Until every press put so far is written or dropped (a stop waits, bounded)."""
        await self._empty.wait()

    async def _first(self) -> None:
        pressed, press = self._queue[0]
        tries = 0
        while not await self._write(press):
            tries += 1
            if self._clock() - pressed >= self._within:
                log.warning("approval_press_dropped", channel=self._channel, tries=tries)
                break
            await anyio.sleep(self._retry_every)
        else:
            if tries:
                log.info("approval_press_relayed_late", channel=self._channel, tries=tries)
        self._queue.popleft()
