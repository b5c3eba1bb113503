"""The ``/sync`` loop: invites, timeline events, and the position kept across restarts
(the daemon's, and pairing's in :mod:`.pair_command`: one loop).

Each batch is handled in order and taken by the pump (its files fetched and checked
first) before its ``next_batch`` is written to the state folder: a restart goes on from
the first batch not taken whole. Each event of that batch the pump takes is written down
too, before the pump has it (the kit's ``Inlet.taken``), so a start that gets the batch
again skips it: a stop or a kill mid-batch, even one in the turn the pump began as the
position was still being written, answers nothing twice (the turn journal tells the cut
turn instead). The very first sync only learns the rooms (and takes the invites
waiting): what came before the bot ever ran is history, not questions.

- An invite is taken only from an allowed user (a direct room, or one in ``rooms``).
- A reaction or a reply to an open approval question is its answer (:mod:`.approvals`).
- With encryption on (:mod:`.encryption`), a batch's to-device events come first, then
  the events whose key just came, then the timeline, decrypted; steps of an emoji
  verification go to the verifier. Without it, an encrypted room is told once
  that the bot cannot read it, and never answered in plaintext (:mod:`.sealing`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import anyio
import structlog

from thalos_bot.channels.admission.guard import UpdateGuard
from thalos_bot.channels.approvals.reactions import reaction_verdict
from thalos_bot.channels.connection_state import ConnectionLostError
from thalos_bot.channels.intake.files import Intake, WithFiles
from thalos_bot.channels.ports import InboundMessage
from thalos_bot.channels.reconnect import Reconnecting
from thalos_bot_matrix.approvals import CHOICES, MatrixApprovals, verdict_of_reply
from thalos_bot_matrix.client import JSON, MatrixClient, MatrixError, UnreachableError
from thalos_bot_matrix.events import (
    content_of,
    events_in,
    invite_sender,
    reaction,
    reply_target,
    rooms_in,
    strip_reply_fallback,
    text_field,
)
from thalos_bot_matrix.inbound import Admission
from thalos_bot_matrix.sealing import marked, opened, synced, told
from thalos_bot_matrix.state import SyncState

if TYPE_CHECKING:
    from thalos_bot_matrix.crypto import Crypto

log = structlog.get_logger(__name__)

GUARD = UpdateGuard("matrix")
"""A failure handling one event (its admission, its hand-over, an answer to a question)
stays with that event: logged as ``matrix_update_failed``, and the sync goes on."""

FILTER = json.dumps(
    {
        "presence": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
        "room": {
            "timeline": {"limit": 100},
            "ephemeral": {"not_types": ["*"]},
            "account_data": {"not_types": ["*"]},
            "state": {"lazy_load_members": True},
        },
    },
    separators=(",", ":"),
)
MESSAGE = "m.room.message"


@dataclass(eq=False)
class SyncLoop:
    """The loop the daemon (:class:`Syncer`) and pairing (:mod:`.pair_command`) both
    run: a homeserver down or refusing waited out, each batch's keys taken, then its
    invites and timeline events handed to the subclass, then its position written."""

    client: MatrixClient
    me: str
    state: SyncState
    timeout: float
    link: Reconnecting
    crypto: Crypto | None
    done: bool = field(default=False, init=False)
    """Set when no further batch is wanted (the position of the one under way is kept)."""
    _unkept: bool = field(default=False, init=False)
    _unwritten: set[str] = field(default_factory=set, init=False)
    """The timeline events of the batch under way, whose position is not written yet."""

    async def run(self) -> None:
        """Sync until done; however it ends (a stop mid-batch), what was taken is written."""
        try:
            while not self.done:
                first = self.state.next_batch is None
                try:
                    batch = await self.client.sync(
                        self.state.next_batch, 0 if first else self.timeout, FILTER
                    )
                except MatrixError as exc:
                    await self.refused(exc)
                    continue
                except UnreachableError:
                    await self.link.failed("unreachable")
                    continue
                self.link.opened()  # healthy now, however long the batch's files then take
                try:
                    await self.handle(batch, history=first)
                except ConnectionLostError:  # another replica's now: its keys are not written here
                    log.warning("matrix_sync_fenced")
                    return
                await self.settled()
                token = batch.get("next_batch")
                if isinstance(token, str):
                    self.state.next_batch = token
                    self.state.taken.clear()
                    self._unkept = True
                    await self.keep()
                    self._unwritten.clear()
        finally:
            with anyio.CancelScope(shield=True):
                await self.kept()

    async def refused(self, exc: MatrixError) -> None:
        """The homeserver refused a sync: asked again after its wait (a 429's own)."""
        await self.link.failed(str(exc), exc.retry_after)

    async def settled(self) -> None:
        """Waited for before a batch's position is written."""

    async def keep(self) -> None:
        """Write the position and what was taken since, if that changed (the loop's end
        calls it too, shielded: a stop mid-batch keeps what went to the pump). The loop's
        and the pump's go to the same file: the kit's KeptState writes one at a time, in
        order, each what the state held when it was asked."""
        if self._unkept:
            self._unkept = False
            try:
                await self.state.save(self.me)
            except BaseException:
                self._unkept = True  # a save cut short (the stop): the last keep writes it
                raise

    async def kept(self) -> None:
        """:meth:`keep`, for what was handed over already: a file that cannot be written
        is said, and the loop goes on (a kill now would hand it over again)."""
        try:
            await self.keep()
        except OSError as exc:
            log.warning("matrix_sync_state_not_written", error=type(exc).__name__)

    async def handle(self, batch: JSON, *, history: bool) -> None:
        for room_id, event in await synced(self.crypto, batch):
            await self._guarded(room_id, event)  # their key came: once, now
        for room_id, room in rooms_in(batch, "invite"):
            await self._invited(room_id, *invite_sender(room, self.me))
        for room_id, room in rooms_in(batch, "join"):
            for event in events_in(room, "state"):
                self._note_state(room_id, event)
            timeline = room.get("timeline")
            if not history and isinstance(timeline, dict) and timeline.get("limited") is True:
                # Over 100 events came while away: the oldest are not fetched (docs).
                log.warning("matrix_timeline_gap", room=room_id)
            for event in events_in(room, "timeline"):
                self._note_state(room_id, event)
                if not history:
                    if isinstance(event_id := event.get("event_id"), str):
                        self._unwritten.add(event_id)
                    await self._guarded(room_id, event)

    async def _guarded(self, room_id: str, event: JSON) -> None:
        try:
            await self._event(room_id, event)
        except Exception as exc:  # noqa: BLE001 - one event must not stop the loop
            GUARD.failed(exc, conversation=None, notify=None, room=room_id)

    def _note_state(self, room_id: str, event: JSON) -> None:
        if event.get("type") == "m.room.encryption" and event.get("state_key") == "":
            self.state.encrypted.add(room_id)

    async def _invited(self, room_id: str, sender: str | None, direct: bool, sealed: bool) -> None:
        """An invite: its sender, whether direct, whether encrypted (taken: :meth:`_join`)."""

    async def _join(self, room_id: str, *, direct: bool, encrypted: bool) -> bool:
        """Join on an invite taken; False when the homeserver would not."""
        try:
            await self.client.join(room_id)
        except (MatrixError, UnreachableError) as exc:
            log.warning("matrix_join_failed", room=room_id, error=str(exc))
            return False
        log.info("matrix_joined", room=room_id, direct=direct)
        if encrypted:
            self.state.encrypted.add(room_id)
        return True

    async def _event(self, room_id: str, event: JSON) -> None:
        """One timeline event (or one whose key just came)."""


@dataclass(eq=False)
class Syncer(SyncLoop):
    """The daemon's loop: allowed users' invites joined, messages admitted and handed
    to the pump (their files fetched first), approvals answered."""

    admission: Admission
    intake: Intake
    approvals: MatrixApprovals
    notify: Callable[[str, str], None]

    async def settled(self) -> None:
        await self.intake.settled()  # its files fetched, and all of it taken by the pump

    async def taken(self, message: InboundMessage) -> None:
        """The pump takes ``message``: written down before it has it, so that a start
        after a kill that gets the batch under way again does not hand it over again
        (the pump's turn for it, begun from then on, is told as cut instead). Nothing
        to write for an event whose batch's position is written already (one held for
        its key until a later batch: a restart forgets those)."""
        if message.message_ref is None or message.message_ref not in self._unwritten:
            return
        self.state.taken.add(message.message_ref)
        self._unkept = True
        await self.kept()

    async def _invited(self, room_id: str, sender: str | None, direct: bool, sealed: bool) -> None:
        if sender is None or sender not in self.admission.allowed_users:
            log.debug("matrix_invite_ignored", reason="inviter not allowed")
            return
        if not direct and room_id not in self.admission.rooms:
            log.info("matrix_invite_ignored", room=room_id, reason="not a direct chat nor in rooms")
            return
        joined = await self._join(room_id, direct=direct, encrypted=sealed)
        if joined and sealed and self.crypto is None:
            told(self.state, self.notify, room_id)

    async def _event(self, room_id: str, event: JSON) -> None:
        sender = event.get("sender")
        if not isinstance(sender, str) or sender == self.me:
            return
        event_id = event.get("event_id")
        if isinstance(event_id, str) and event_id in self.state.taken:
            log.info("matrix_event_taken_before", room=room_id, event_id=event_id)
            return
        allowed = sender in self.admission.allowed_users
        read = await opened(
            self.crypto, self.state, room_id, event, allowed=allowed, notify=self.notify
        )
        if read is None:
            return  # waiting for its key, refused, or a step of an emoji verification
        event = read
        kind, content = event.get("type"), content_of(event)
        if kind == "m.reaction":
            found = reaction(content)
            if found is not None:
                verdict = reaction_verdict(found[1])
                if (
                    not self.approvals.answer(room_id, found[0], verdict, user=sender, who=sender)
                    and allowed
                ):
                    # Replicas: perhaps another one's question.
                    self.approvals.relay(room_id, found[0], verdict, user=sender, who=sender)
            return
        if kind != MESSAGE:
            return
        target = reply_target(content)
        if target is not None and await self._answers(room_id, target, content, sender):
            return
        admitted = await self.admission.admit(room_id, sender, event)
        if isinstance(admitted, str):
            self.notify(room_id, admitted)
        elif isinstance(admitted, WithFiles):
            self.intake.take(replace(admitted, base=marked(self.crypto, self.state, admitted.base)))
        elif admitted is not None:  # passed after the room's files in work
            self.intake.pass_text(marked(self.crypto, self.state, admitted))

    async def _answers(self, room_id: str, target: str, content: JSON, sender: str) -> bool:
        """A reply that answers one of the bot's questions (never a message then): one
        asked here, or on replicas one asked by another replica, relayed to it."""
        verdict = verdict_of_reply(strip_reply_fallback(text_field(content, "body")))
        if self.approvals.answer(room_id, target, verdict, user=sender, who=sender):
            return True
        if (
            verdict is None
            or self.approvals.presses is None
            or sender not in self.admission.allowed_users
        ):
            return False
        found = await self.admission.reply_author(room_id, target)
        if found is None or found[0] != self.me or CHOICES not in found[1]:
            return False  # a reply to another message of the bot's: a message
        self.approvals.relay(room_id, target, verdict, user=sender, who=sender)
        return True
