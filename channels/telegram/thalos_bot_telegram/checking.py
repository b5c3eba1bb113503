"""The sender's part in checking a send in doubt (see :mod:`thalos_bot_telegram.uncertain`).

:class:`Checking` is mixed into :class:`~thalos_bot_telegram.sender.ChatSender`: it puts a
sendMessage (or sendPhoto) whose outcome is unknown in doubt, takes up one an earlier
process left in doubt, and makes the check's steps, one per round of the sender (a
probe, fetching the updates Telegram holds, or waiting for another chat's send), until
the message is found or ruled out. Nothing else goes to the chat meanwhile.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from time import monotonic
from typing import TYPE_CHECKING, TypeVar

import anyio
import structlog
from telegram import Bot

from thalos_bot.channels.delivery.failure import Classified, Failure
from thalos_bot.channels.delivery.photo import PhotoView, SendPhoto
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.delivery.view import Send, View
from thalos_bot.channels.pacing.gate import Lane
from thalos_bot_telegram.counter import Counter, Pending
from thalos_bot_telegram.questions import Ask, Outbox, Question
from thalos_bot_telegram.uncertain import InDoubt, Plan, QuestionFields, TextFields, Verdict

if TYPE_CHECKING:
    from thalos_bot.channels.delivery.rounds import Rendering

log = structlog.get_logger(__name__)

T = TypeVar("T")

EXPECTED_IN_PROBES = frozenset({Failure.NOT_MODIFIED, Failure.GONE, Failure.NOT_EDITABLE})
"""A probe's answers that say something about the message, not about a fault."""


class Checking:
    """The check of a send in doubt, as steps of the chat's sender."""

    bot: Bot
    chat_id: int
    outbox: Outbox
    rendering: Rendering
    counter: Callable[[], Counter]
    in_doubt: InDoubt | None

    if TYPE_CHECKING:

        async def _call(
            self,
            lane: Lane,
            method: str,
            call: Callable[[], Awaitable[T]],
            expected: frozenset[Failure] = ...,
        ) -> T | Classified: ...

        def _delivered(self, view: View, step: Send, ref: str) -> None: ...

    def _recheck(self, view: View | PhotoView) -> bool:
        """Take up the check of a send (or a kept clip's upload, probed by its caption)
        an earlier process left in doubt."""
        assert view.doubt is not None
        noted = view.doubt
        view.doubt = None
        floor, fields = noted.get("floor"), noted.get("fields")
        counter = self.counter()
        pending = counter.take_resumed(self.chat_id)
        step: object = (
            view.next_step(self.rendering.mode)
            if isinstance(view, PhotoView)
            else view.next_step(self.rendering.mode, monotonic(), self.rendering.limit)
        )
        if (
            not isinstance(step, Send | SendPhoto)
            or not isinstance(floor, int)
            or not isinstance(fields, dict)
            or "text" not in fields
        ):
            counter.not_sent(pending)
            return False
        text: TextFields = {"text": str(fields["text"])}
        if isinstance(step, SendPhoto):
            note = "an upload left in doubt before the restart is checked first"
        else:
            note = "a send left in doubt before the restart is checked before sending again"
            if "parse_mode" in fields:
                text["parse_mode"] = str(fields["parse_mode"])
        self.in_doubt = InDoubt(view, step, text, floor, counter, pending)
        log.info("telegram_send_uncertain", chat=self.chat_id, floor=floor, note=note)
        return True

    def doubt_numbered(
        self,
        view: View | PhotoView | Question,
        step: Send | SendPhoto | Ask,
        text: TextFields | QuestionFields,
        floor: int | None,
        sent: tuple[Counter, Pending],
    ) -> None:
        counter, pending = sent
        if floor is None:
            # No id is known in the chat's counter yet (nothing was received since the
            # start, none kept from before), so there is no safe place to start
            # checking: send it again.
            counter.not_sent(pending)
            log.warning(
                "telegram_send_unverifiable",
                chat=self.chat_id,
                note="no message id known in this chat; the message is sent again",
            )
            return
        counter.doubt(pending)
        self.in_doubt = InDoubt(view, step, text, floor, counter, pending)
        log.info(
            "telegram_send_uncertain",
            chat=self.chat_id,
            floor=floor,
            note="checking whether the message arrived before sending it again",
        )

    async def _probe(self) -> None:
        doubt = self.in_doubt
        assert doubt is not None
        plan = doubt.plan()
        if plan is Plan.CATCH_UP:
            catch_up = doubt.counter.catch_up
            doubt.caught_up(fetched=True if catch_up is None else await catch_up())
            return
        if plan is Plan.WAIT:
            # Another chat's send that may hold a lower id is unresolved: wait for it
            # (waking for the typing indicator meanwhile).
            typing = self.outbox.open_answer is not None
            delay = max(0.0, self.outbox.typing_at - monotonic()) if typing else None
            with anyio.move_on_after(delay):
                await doubt.counter.changed()
            return
        if plan is not Plan.PROBE:
            self._checked(doubt, Verdict.MISSING if plan is Plan.MISSING else Verdict.GAVE_UP)
            return
        candidate = doubt.candidate
        if isinstance(doubt.view, PhotoView):
            caption = doubt.fields["text"]
            result: object = await self._call(
                "message",
                "editMessageCaption",
                lambda: self.bot.edit_message_caption(
                    chat_id=self.chat_id, message_id=candidate, caption=caption
                ),
                expected=EXPECTED_IN_PROBES,
            )
        else:
            result = await self._call(
                "message",
                "editMessageText",
                lambda: self.bot.edit_message_text(
                    chat_id=self.chat_id, message_id=candidate, **doubt.fields
                ),
                expected=EXPECTED_IN_PROBES,
            )
        failure = result.failure if isinstance(result, Classified) else None
        verdict = doubt.judge(failure)
        if verdict is Verdict.AGAIN:
            return  # after the wait the failure imposed, the same id is probed again
        if verdict is Verdict.NEXT:
            if failure is Failure.NOT_EDITABLE:
                self.outbox.saw(candidate)  # the user's message
            return
        if not isinstance(result, Classified):
            log.warning("telegram_send_check_edited", chat=self.chat_id, message_id=candidate)
        self._checked(doubt, verdict)

    def _checked(self, doubt: InDoubt, verdict: Verdict) -> None:
        """The check is over: the message arrived at :attr:`InDoubt.candidate`, or not."""
        self.in_doubt = None
        if isinstance(doubt.view, QuestionView):
            doubt.view.checking = False
        arrived = verdict is Verdict.ARRIVED
        candidate = doubt.candidate
        if arrived:
            doubt.counter.sent(doubt.pending, candidate)
        else:
            doubt.counter.not_sent(doubt.pending)
        if verdict is Verdict.GAVE_UP:
            log.error(
                "telegram_send_unresolved",
                chat=self.chat_id,
                probes=doubt.probes,
                note="the message could not be found or ruled out; it is sent again",
            )
            return
        log.info(
            "telegram_send_checked",
            chat=self.chat_id,
            arrived=arrived,
            message_id=candidate if arrived else None,
            probes=doubt.probes,
        )
        if arrived and isinstance(doubt.view, PhotoView):
            self.outbox.saw(candidate)
            doubt.view.sent = True
        elif arrived and isinstance(doubt.view, QuestionView):
            self.outbox.saw(candidate)
            doubt.view.shown(str(candidate))
        elif arrived and isinstance(doubt.step, Send) and isinstance(doubt.view, View):
            self._delivered(doubt.view, doubt.step, str(candidate))
        # else: it did not arrive; the next round sends the view's latest text
