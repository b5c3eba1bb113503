"""Approvals on a platform with buttons (Telegram, Slack, Discord): the kit's flow
(:class:`~thalos_bot.channels.approvals.asking.Asking`), one button per choice, each
carrying its verdict and the question's token in the data the platform hands back on a
press (:class:`ButtonData`). A press is read from that data alone, so the connection's
owner reads it alike whichever replica asked (the kit relays it there).

A plug-in contributes the question's text, how its buttons are laid out
(:class:`ButtonApprovals`' ``markup``), and how its press event is read: the button's
data, the chat, the question's message and who pressed, handed to
:meth:`ButtonApprovals.pressed`; it tells the presser what that returns, its own way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from thalos_bot.channels.approvals.asking import CHOICES, Asking, Post
from thalos_bot.channels.delivery.question import QuestionView
from thalos_bot.channels.people import Seats
from thalos_bot.tools.approval import ApprovalAnswer, ApprovalRequest, Verdict

A = TypeVar("A")
M = TypeVar("M")


@dataclass(frozen=True, slots=True)
class Button:
    verdict: Verdict
    label: str
    """The kit's label of the choice (:data:`~.asking.CHOICES`)."""
    token: str
    """The question's."""
    data: str
    """What the button carries (see :class:`ButtonData`)."""


class ButtonData:
    """How a question's button carries its verdict and the question's token: ``layout``
    with one ``{verdict}`` (spelled as ``codes`` say: by default the verdict itself) and
    one ``{token}``, kept apart by a ``:`` (which neither holds). A layout, once buttons
    with it are in chats, is kept: a press on an old button is read as it was."""

    def __init__(self, layout: str, codes: Mapping[Verdict, str] | None = None) -> None:
        if layout.count("{verdict}") != 1 or layout.count("{token}") != 1:
            raise ValueError(f"button layout {layout!r}: needs one {{verdict}} and one {{token}}")
        self._layout = layout
        self._codes = dict(codes or {verdict: verdict for verdict, _ in CHOICES})
        self._verdicts = {code: verdict for verdict, code in self._codes.items()}
        pattern = re.escape(layout).replace(re.escape("{verdict}"), "(?P<verdict>[^:]+)")
        self._pattern = re.compile(pattern.replace(re.escape("{token}"), "(?P<token>[^:]+)"))

    def of(self, verdict: Verdict, token: str) -> str:
        """What the question ``token``'s button for ``verdict`` carries."""
        return self._layout.format(verdict=self._codes[verdict], token=token)

    def buttons(self, token: str) -> list[Button]:
        """The question ``token``'s buttons, one per choice, in the kit's order."""
        return [
            Button(verdict, label, token, self.of(verdict, token)) for verdict, label in CHOICES
        ]

    def read(self, data: str) -> tuple[str, Verdict] | None:
        """The token and the verdict ``data`` carries; None when no question's button
        carries it."""
        found = self._pattern.fullmatch(data)
        verdict = self._verdicts.get(found["verdict"]) if found else None
        return (found["token"], verdict) if found and verdict else None


class ButtonApprovals(Generic[A, M]):
    """A channel's approvals asked with buttons. ``channel`` prefixes the log events;
    ``question`` is the question's text in the platform's dialect, and ``markup`` lays
    out its buttons (given that text, as Slack's blocks repeat it)."""

    def __init__(
        self,
        post: Post[A, M],
        channel: str,
        seats: Seats,
        data: ButtonData,
        *,
        question: Callable[[ApprovalRequest], str],
        markup: Callable[[str, list[Button]], M],
    ) -> None:
        self.asking = Asking[A, M](post, channel, seats)
        self.withdraw_all = self.asking.withdraw_all
        self._data = data
        self._question, self._markup = question, markup

    async def ask(
        self, chat: A, request: ApprovalRequest, *, thread: str | None = None
    ) -> ApprovalAnswer:
        """Asked in the thread (a forum topic) of the chat, if any."""
        token, text = Asking.token(), self._question(request)
        view = QuestionView(text, self._markup(text, self._data.buttons(token)), thread)
        return await self.asking.ask(chat, request, token, view)

    def pressed(
        self, data: str, chat: A | None, message_id: str, *, user: str, who: str
    ) -> str | None:
        """``user`` pressed the button carrying ``data`` on the message ``message_id``
        ("": the platform did not say which) of the chat (None: no chat this channel
        serves, where nothing is answered); what to tell them, as :meth:`Asking.answer`
        returns it. Data no question's button carries answers no open question."""
        if chat is None:
            return None
        read = self._data.read(data) if message_id else None
        token, verdict = read or (None, None)
        return self.asking.answer(token, chat, message_id, verdict, user=user, who=who)
