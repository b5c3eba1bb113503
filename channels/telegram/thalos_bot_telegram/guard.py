"""No failure while handling one update ends the daemon: the kit's guard
(:mod:`thalos_bot.channels.admission.guard`) with Telegram's name on its log events
(``telegram_update_failed``, ``telegram_notice_failed``).

An update is handled synchronously as the poller hands a batch over (admission, then
the hand-over to the intake or the pump), in the tasks the intake starts for a message
with files, and a press on an approval button on its own (see
:meth:`~thalos_bot_telegram.approvals.TelegramApprovals.on_callback`).
"""

from __future__ import annotations

from thalos_bot.channels.admission.guard import Notify, UpdateGuard, went_wrong, where

__all__ = ["Notify", "failed", "tell", "went_wrong", "where"]

GUARD = UpdateGuard("telegram")
tell = GUARD.tell
failed = GUARD.failed
