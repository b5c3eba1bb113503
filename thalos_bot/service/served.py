"""The webhooks as the daemon hands them to a transport that serves them on its listener
(see :mod:`thalos_bot.channels.listeners.served`)."""

from __future__ import annotations

from starlette.applications import Starlette

from thalos_bot.channels.listeners.body import BodyCap, BodyTooLargeError, too_large
from thalos_bot.channels.listeners.served import Served
from thalos_bot.hooks.intake import HOOK_BODY, HookIntake


def hooks_served(hooks: HookIntake) -> Served:
    """``[[hooks]]`` outside the transport's login (a hook's signature is its
    credential), each body capped at :data:`~thalos_bot.hooks.intake.HOOK_BODY`."""
    app = Starlette(routes=hooks.routes(), exception_handlers={BodyTooLargeError: too_large})
    return Served(BodyCap(app, lambda _: HOOK_BODY), hooks.paths.__contains__)
