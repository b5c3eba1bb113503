"""No failure while handling one update ends the daemon.

A transport handles an update in a few places: as its poller or sync loop hands a batch
over (decoding, admission, then the hand-over to the intake or the pump), and in the
tasks the intake starts for a message with files. Whatever still goes wrong there is a
bug, and it stays with that one update: it is logged as ``<channel>_update_failed``
with the error's type and the ``file:line`` it was raised at (never its text, which
may quote the message), the person gets the generic "something went wrong" notice once
the conversation is known (an update that failed before admission gets none: its
sender may be a stranger), and every other update is served as usual. A notice that
cannot be sent is logged (``<channel>_notice_failed``), never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import structlog

from thalos_bot.domain.errors import AgentError, ErrorCode
from thalos_bot.domain.ids import ConversationId

log = structlog.get_logger(__name__)

Notify = Callable[[ConversationId, str], None]
"""Puts a notice in a conversation."""


def went_wrong() -> str:
    """The generic notice: what the pump says when a turn fails inside the bot."""
    return AgentError(ErrorCode.INTERNAL_ERROR).detail


def where(exc: BaseException) -> str | None:
    """file:line where ``exc`` was raised: enough to find the bug, no content."""
    tb = exc.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"


class UpdateGuard:
    """The guard of one channel (its name prefixes the log events)."""

    def __init__(self, channel: str) -> None:
        self._notice_failed = f"{channel}_notice_failed"
        self._update_failed = f"{channel}_update_failed"

    def tell(self, notify: Notify, conversation: ConversationId, text: str) -> None:
        """``notify``, but a notice that cannot be sent is logged and dropped."""
        try:
            notify(conversation, text)
        except Exception as exc:  # noqa: BLE001 - a notice must not take the update down
            log.error(  # noqa: TRY400 - no traceback: it may quote the message
                self._notice_failed, chat=conversation, error=type(exc).__name__, where=where(exc)
            )

    def failed(
        self,
        exc: BaseException,
        *,
        conversation: ConversationId | None,
        notify: Notify | None,
        **fields: object,
    ) -> None:
        """Log a failure while handling one update and tell the person, where one is
        known."""
        log.error(
            self._update_failed,
            chat=conversation,
            error=type(exc).__name__,
            where=where(exc),
            **fields,
        )
        if conversation is not None and notify is not None:
            self.tell(notify, conversation, went_wrong())
