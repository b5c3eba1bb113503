"""Events a platform never sends again once received, kept until the pump takes them.

Some platforms forget an event as soon as the transport has it: Slack once its envelope
is acknowledged (within 3 seconds, before a file of the message can be fetched), signal-cli
once it fetched the message from Signal's servers. A stop or a crash between that and
the pump taking the message (its files still in work, or it waiting in the inlet) would
lose it: nothing hands it over again. So the transport hands each such message to the
intake here as it arrives (:meth:`Waiting.hand`, before acknowledging it, where the
platform waits for that), its event held; it keeps :meth:`Waiting.dump` with its own
state. The event is freed as the pump takes its message (:meth:`Waiting.taken`, the
inlet's ``taken`` hook: written before the pump has it, so a kill in its turn never
gets it handed over again) or as the intake refuses it (its notice said). The next
start reads what is still held through admission again (:meth:`Waiting.again`), before
anything new: what is no longer admitted is not held again.

An event is known by its message's conversation and ``message_ref``, which the
:class:`~thalos_bot.channels.ports.InboundMessage` the transport makes of it carries.
A transport that can name the message only once it is read (Telegram: its admission
addresses forum topics) holds it as it arrives by its own key (:meth:`Waiting.arrived`)
and says what it became (:meth:`Waiting.became`): a message (an album's parts are freed
together, as the one message they make is taken) or none (freed).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import structlog
from anyio.abc import TaskGroup

from thalos_bot.channels.intake.files import RemoteFile, WithFiles
from thalos_bot.channels.kept import KeptState
from thalos_bot.channels.ports import InboundMessage

if TYPE_CHECKING:
    from thalos_bot.channels.registry import ChannelHost
    from thalos_bot.channels.running import Delivering

log = structlog.get_logger(__name__)

MOST = 1_000
"""The most events held; past it the oldest is forgotten (a pump that never reads)."""

Event = dict[str, Any]
Admitted = TypeVar("Admitted")
ARRIVED = "arrived"
"""The conversation the keys of events not read yet are under."""


class Waiting:
    def __init__(self, channel: str, save: Callable[[], Awaitable[object]]) -> None:
        """``save``: writes the transport's state, :meth:`dump` with it."""
        self._save = save
        self._held: OrderedDict[str, Event] = OrderedDict()
        self._albums: dict[str, str] = {}
        """Each album part's album, by its key."""
        self._parts: dict[str, list[str]] = {}
        """The keys of each album's parts."""
        self._forgotten = f"{channel}_waiting_forgotten"
        self._handed = f"{channel}_waiting_handed_over"

    @classmethod
    async def kept(cls, channel: str, host: ChannelHost) -> Waiting:
        """Held alone in ``<channel>-waiting.json`` in the state folder (and beside the
        connection's lease on replicas), as the last process left it (one that cannot
        be written is said in the log)."""
        kept = KeptState(host.state_dir / f"{channel}-waiting.json", host.connection_state)
        unsaved = f"{channel}_waiting_unsaved"

        async def save() -> None:
            try:
                await kept.save({"waiting": waiting.dump()})
            except OSError as exc:
                log.warning(unsaved, error=type(exc).__name__)

        waiting = cls(channel, save)
        waiting.load((await kept.load()).get("waiting"))
        return waiting

    def load(self, raw: object) -> None:
        """What :meth:`dump` gave the last process (anything else holds nothing)."""
        if isinstance(raw, Mapping):
            self._held = OrderedDict(
                (str(key), dict(event)) for key, event in raw.items() if isinstance(event, dict)
            )

    def dump(self) -> dict[str, Event]:
        return dict(self._held)

    async def save(self) -> None:
        """Write the transport's state (what is held with it)."""
        await self._save()

    def hold(self, conversation: str, ref: str, event: Event) -> None:
        """``event`` (the message ``ref`` in ``conversation``) arrived; save it with
        the transport's state before acknowledging it."""
        self._held[_key(conversation, ref)] = event
        while len(self._held) > MOST:
            log.warning(self._forgotten, key=self._held.popitem(last=False)[0])

    async def arrived(self, events: Mapping[str, Event]) -> None:
        """Hold ``events`` before they are read, each by its key (unique in the
        channel), and save them."""
        for key, event in events.items():
            self.hold(ARRIVED, key, event)
        await self._save()

    def became(self, key: str, admitted: Admitted, group: TaskGroup) -> Admitted:
        """``admitted``, what the event that :meth:`arrived` under ``key`` became: a
        message (freed as it is taken, its files :meth:`watch` ed) or anything else
        (freed, written with the next save)."""
        event = self._held.pop(_key(ARRIVED, key), None)
        if event is None:
            return admitted  # not held (Telegram's webhook: its inbox keeps it)
        if isinstance(admitted, WithFiles):
            admitted = dataclasses.replace(admitted, base=self.watch(admitted.base, group))
        base = admitted.base if isinstance(admitted, WithFiles) else admitted
        if not isinstance(base, InboundMessage) or base.message_ref is None:
            return admitted
        new = _key(base.conversation_id, base.message_ref)
        self._held[new] = event
        if isinstance(admitted, WithFiles) and admitted.group is not None:
            self._albums[new] = _key(base.conversation_id, admitted.group)
            self._parts.setdefault(self._albums[new], []).append(new)
        return admitted

    def again(self, key: Callable[[Event], str] | None = None) -> list[Event]:
        """What the last process held, oldest first, to read through admission again
        before anything new. With ``key`` each is held again as just :meth:`arrived`
        (not saved again); without, none is held any more until :meth:`hand` holds it
        again (one no longer admitted is forgotten with the next save)."""
        events = [event for _, event in self.held()]
        again = [] if key is None else [(_key(ARRIVED, key(event)), event) for event in events]
        self._held = OrderedDict(again)
        return events

    def held(self) -> list[tuple[str, Event]]:
        """The events the last process received and never got to the pump, oldest
        first, by key (:meth:`again` hands them over)."""
        if self._held:
            log.info(self._handed, events=len(self._held))
        return list(self._held.items())

    def hand(
        self,
        served: Delivering[Any, Any, Any],
        message: InboundMessage,
        files: tuple[RemoteFile, ...],
        event: Event | None,
    ) -> None:
        """Give ``message`` (and its ``files``) to the channel's intake, ``event`` (what
        the platform sent of it; None: nothing to keep) held until the pump takes it
        or the intake refuses it. Save before acknowledging the event."""
        if event is not None and message.message_ref is not None:
            self.hold(message.conversation_id, message.message_ref, event)
        if files:
            message = self.watch(message, served.group)
        served.intake.receive(message, files)

    async def taken(self, message: InboundMessage) -> None:
        """The pump takes ``message`` (or the intake refused it): freed, and written
        down before this returns."""
        ref = message.message_ref
        key = None if ref is None else _key(message.conversation_id, ref)
        if key is None or key not in self._held:
            return
        album = self._albums.get(key)
        for each in [key] if album is None else self._parts.pop(album, [key]):
            self._held.pop(each, None)
            self._albums.pop(each, None)
        await self._save()

    def watch(self, message: InboundMessage, group: TaskGroup) -> InboundMessage:
        """``message``, to be given to the intake with its files: freed also if the
        intake refuses it (then never taken)."""
        handled = message.handled or anyio.Event()
        group.start_soon(self._refused, message, handled)
        return dataclasses.replace(message, handled=handled)

    async def _refused(self, message: InboundMessage, handled: anyio.Event) -> None:
        await handled.wait()
        await self.taken(message)  # nothing left to free once the pump took it


def _key(conversation: str, ref: str) -> str:
    return f"{conversation} {ref}"
