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
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import astuple, dataclass, is_dataclass
from typing import Any

import structlog

from thalos_bot.tools.approval import Verdict

log = structlog.get_logger(__name__)

VERDICTS: frozenset[str] = frozenset({"approved", "approved-session", "denied"})


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
        if not fields or not all(isinstance(f, str) for f in fields) or fields[3] not in VERDICTS:
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
