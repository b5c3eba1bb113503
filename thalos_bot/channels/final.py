"""The optional port for channels that can confirm a message arrived.

The outbox (:mod:`thalos_bot.service.outbox`) hands such a channel each final answer or
notice together with a :class:`DeliveryJournal`: the channel notes in it how far the
delivery got (so that a restarted daemon can check what arrived before sending again)
and says when the channel confirmed it. A channel without this port gets a plain
``deliver`` and counts as confirmed once that returns (the console).

A spoken answer's clips are outbox rows too: a channel with :class:`ConfirmingClips`
gets each with its journal, as a final's text; another gets it as a plain delivery.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from thalos_bot.channels.ports import Notice
from thalos_bot.domain.events import VoiceClip
from thalos_bot.domain.ids import ConversationId


class DeliveryJournal(Protocol):
    """One outbox row, as the channel delivering it sees it."""

    @property
    def progress(self) -> Mapping[str, object]:
        """What the channel last saved (empty before its first attempt), JSON values."""
        ...

    async def save(self, progress: Mapping[str, object]) -> None:
        """Persist ``progress`` (JSON values) before a call whose outcome may be unknown."""
        ...

    async def confirm(self) -> None:
        """The channel confirmed the whole message: the row is delivered."""
        ...

    async def refuse(self) -> None:
        """The channel refused the message for good (e.g. the user blocked the bot)."""
        ...


@runtime_checkable
class ConfirmingAdapter(Protocol):
    async def deliver_final(
        self,
        conversation_id: ConversationId,
        text: str,
        journal: DeliveryJournal,
        *,
        ends_turn: bool,
    ) -> None:
        """Queue ``text`` for the conversation before the first ``await`` (so it keeps
        its place among the other deliveries) and return without waiting for the
        channel; call ``journal.confirm()`` once the channel confirmed it. ``ends_turn``:
        it is the final answer of the turn streaming there now (it replaces that turn's
        preview); otherwise a message of its own. A journal with progress resumes a
        delivery an earlier process began."""
        ...


@runtime_checkable
class ConfirmingNotices(Protocol):
    async def deliver_notice(
        self, conversation_id: ConversationId, notice: Notice, journal: DeliveryJournal
    ) -> None:
        """Show a notice row (a detached failure, an admin's notice) as the channel's
        notice, with its tone, rather than as an answer; call ``journal.confirm()`` once
        it is shown. A channel without this port gets notice rows as finals."""
        ...


@runtime_checkable
class PassingFinals(Protocol):
    def passes_final(self, conversation_id: ConversationId) -> bool:
        """Whether a live turn's final for this conversation is delivered as its event
        (and its row marked delivered) rather than through ``deliver_final``: a request
        of the channel's API waits for it, with the turn's usage."""
        ...


@runtime_checkable
class ConfirmingClips(Protocol):
    async def deliver_clip(
        self, conversation_id: ConversationId, clip: VoiceClip, journal: DeliveryJournal
    ) -> None:
        """Queue ``clip`` (the platform's voice message) for the conversation before the
        first ``await`` and return; call ``journal.confirm()`` once the upload is
        confirmed, ``journal.refuse()`` when it is refused for good. The journal is
        saved before the upload; one with progress is an upload an earlier process may
        have made: checked (or repeated as the same request) before any new one."""
        ...
